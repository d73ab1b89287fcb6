// EventLog on real files: one JSON line per event; a log that cannot be written (a full
// device, an unwritable place) warns once on stderr and never throws.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>

#include "launcher/report/event_log.hpp"
#include "tests/support/test_support.hpp"

using namespace ddp::launch;
using namespace ddp::launch::report;
using namespace ddp::test;

TEST_CASE("event log: one JSON object per line, in order, with event, time and attempt first") {
  TempDir dir;
  {
    EventLog log(dir.path(), 1);
    log.write("start", {{"program", "train \"x\""}, {"nproc", 2}});
    log.set_attempt(1);
    log.write("restart", {{"final", false}, {"step_s", 0.5}});
  }
  const std::string text = read_file(dir / "events.jsonl");
  CHECK_THAT(text, Catch::Matches("\\{\"event\":\"start\",\"time\":\"20[0-9-]{8}T[0-9:]{8}\\.[0-9]{3}Z\",\"attempt\":0,"
                                  "\"node\":1,\"program\":\"train \\\\\"x\\\\\"\",\"nproc\":2\\}\n"
                                  "\\{\"event\":\"restart\",\"time\":\"[^\"]+\",\"attempt\":1,\"node\":1,"
                                  "\"final\":false,\"step_s\":0.5\\}\n"));
}

TEST_CASE("event log: a write that fails warns once and the caller goes on") {
  TempDir dir;
  std::filesystem::create_symlink("/dev/full", dir / "events.jsonl");  // every write: ENOSPC
  const std::string err = stderr_of(dir / "stderr.txt", [&] {
    EventLog log(dir.path());
    for (int i = 0; i < 3; ++i) log.write("worker_exit", {{"rank", i}});
  });
  CHECK_THAT(err, Catch::Contains("warning: cannot write the event log " + (dir / "events.jsonl") +
                                  ": No space left on device; the job goes on without it"));
  CHECK(err.find("warning:") == err.rfind("warning:"));  // once
}

TEST_CASE("event log: a run directory it cannot create the file in warns once; disabled writes nothing") {
  TempDir dir;
  std::filesystem::create_directory(dir / "events.jsonl");  // a directory where the file should be
  const std::string err = stderr_of(dir / "stderr.txt", [&] {
    EventLog log(dir.path());
    log.write("start");
    EventLog disabled;
    disabled.write("start");
  });
  CHECK_THAT(err, Catch::Contains("warning: cannot open the event log"));
  CHECK(err.find("warning:") == err.rfind("warning:"));
}
