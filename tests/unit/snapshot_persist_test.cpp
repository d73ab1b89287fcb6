// Persisting snapshots to disk (docs/snapshots.md, "Written to disk"): the pure plan (train's
// file name, the temporary name, what is skipped, which earlier file goes), the durable write
// and the folder check on real files, a settled read of a region, the persister's thread on a
// real region (a requested persist, an interval one, an unwritable folder: one warning), and
// the flags' usage errors.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

#include "contract/snapshot_file.hpp"
#include "launcher/os/durable_file.hpp"
#include "launcher/report/event_log.hpp"
#include "launcher/snapshot/persist_plan.hpp"
#include "launcher/snapshot/snapshot_persister.hpp"
#include "tests/support/files.hpp"
#include "tests/support/processes.hpp"

using namespace ddp::launch;
using namespace ddp::launch::report;
using namespace ddp::launch::snapshot;
using namespace std::chrono_literals;
using ddp::test::TempDir;
namespace fs = std::filesystem;

namespace {

void save(const std::string& region, uint64_t step, const std::string& payload) {
  const int fd = ::open(region.c_str(), O_RDWR | O_CREAT, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(ddp::snapshot::write_snapshot(fd, step, payload.data(), payload.size()).error == 0);
  ::close(fd);
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("persist plan: train's checkpoint name, a temporary name beside it, the previous file removed") {
  CHECK(persisted_file_name(200) == "ckpt_000000200.pt");
  CHECK(persisted_file_name(1234567890) == "ckpt_1234567890.pt");
  const PersistPlan first = plan_persist("/d", 200, std::nullopt, false, "node1", 42);
  CHECK(first.action == PersistPlan::Action::kWrite);
  CHECK(first.path == "/d/ckpt_000000200.pt");
  CHECK(first.temp_path == "/d/.ckpt_000000200.pt.tmp-node1-42");
  CHECK(first.remove.empty());
  const PersistPlan next = plan_persist("/d", 300, PersistedFile{200, first.path}, false, "node1", 42);
  CHECK(next.action == PersistPlan::Action::kWrite);
  CHECK(next.remove == "/d/ckpt_000000200.pt");
}

TEST_CASE("persist plan: skips the step it wrote last, an older step, and another writer's file") {
  const PersistedFile mine{300, "/d/ckpt_000000300.pt"};
  CHECK(plan_persist("/d", 300, mine, true, "h", 1).action == PersistPlan::Action::kAlreadyPersisted);
  CHECK(plan_persist("/d", 250, mine, false, "h", 1).action == PersistPlan::Action::kOlder);
  // train wrote ckpt_000000400.pt itself: not ours to replace (and ours stays).
  const PersistPlan theirs = plan_persist("/d", 400, mine, true, "h", 1);
  CHECK(theirs.action == PersistPlan::Action::kOnDisk);
  CHECK(theirs.remove.empty());
  CHECK(plan_persist("/d", 400, std::nullopt, true, "h", 1).action == PersistPlan::Action::kOnDisk);
  // Ours, removed by someone since: written again.
  CHECK(plan_persist("/d", 300, PersistedFile{300, "/elsewhere/ckpt_000000300.pt"}, false, "h", 1).action ==
        PersistPlan::Action::kWrite);
}

TEST_CASE("persist plan: the console line and the reasons' names") {
  CHECK(persist_notice(200, "/d/ckpt_000000200.pt", 23300000, 0.4123) ==
        "wrote the in-memory snapshot of step 200 to /d/ckpt_000000200.pt (23.3 MB, 0.41 s)");
  CHECK(std::string(to_string(PersistReason::kInterval)) == "interval");
  CHECK(std::string(to_string(PersistReason::kFailure)) == "failure");
  CHECK(std::string(to_string(PersistReason::kEnd)) == "end");
  CHECK(std::string(to_string(PersistReason::kStop)) == "stop");
}

TEST_CASE("durable file: written whole under its name, the temporary gone; an error removes the temporary") {
  TempDir dir;
  CHECK(os::write_file_durably(dir / ".a.tmp", dir / "a", "payload") == "");
  CHECK(ddp::test::read_file(dir / "a") == "payload");
  CHECK(names_in(dir.path()) == std::vector<std::string>{"a"});
  CHECK(os::write_file_durably(dir / ".a.tmp", dir / "a", "second") == "");  // replaces it
  CHECK(ddp::test::read_file(dir / "a") == "second");
  ddp::test::write_file(dir / "file", "");
  CHECK_THAT(os::write_file_durably(dir / "file/.b.tmp", dir / "file/b", "x"), Catch::Contains("cannot create"));
  fs::create_directory(dir / "target_is_a_folder");
  ddp::test::write_file(dir / "target_is_a_folder/inside", "");
  CHECK_THAT(os::write_file_durably(dir / ".c.tmp", dir / "target_is_a_folder", "x"), Catch::Contains("rename"));
  CHECK(!ddp::test::file_exists(dir / ".c.tmp"));
}

TEST_CASE("durable file: the folder is created if missing; a path under a regular file is refused") {
  TempDir dir;
  CHECK(os::prepare_writable_dir(dir / "new/sub") == "");
  CHECK(fs::is_directory(dir / "new/sub"));
  CHECK(names_in(dir / "new/sub").empty());  // the probe is gone
  ddp::test::write_file(dir / "file", "");
  CHECK_THAT(os::prepare_writable_dir(dir / "file/sub"), Catch::Contains("cannot create the folder"));
  CHECK_THAT(os::prepare_writable_dir(dir / "file"), Catch::Contains("Not a directory"));
}

TEST_CASE("settled read: the newest complete snapshot, none for an empty region") {
  TempDir dir;
  const std::string region = dir / "region";
  ddp::test::write_file(region, "");
  const int fd = ::open(region.c_str(), O_RDONLY);
  CHECK(!ddp::snapshot::read_settled_snapshot(fd));
  save(region, 7, "seven");
  save(region, 8, "eight");
  const auto s = ddp::snapshot::read_settled_snapshot(fd);
  REQUIRE(s);
  CHECK(s->step == 8);
  CHECK(s->payload == "eight");
  ::close(fd);
}

TEST_CASE("persister: a requested persist writes the newest snapshot, the event, and replaces its own file") {
  TempDir dir, run;
  const std::string region = run / "region", out = dir / "ckpt";
  fs::create_directory(out);
  ddp::test::write_file(out + "/ckpt_000000001.pt", "train's own");  // not ours: kept
  {
    EventLog events(run.path());
    SnapshotPersister persister({out, 0}, &events);
    persister.request(PersistReason::kFailure);  // no region yet: nothing
    persister.set_source(region);
    save(region, 10, "ten");
    persister.request(PersistReason::kFailure);
    REQUIRE(ddp::test::wait_until([&] { return ddp::test::file_exists(out + "/ckpt_000000010.pt"); }, 30s));
    save(region, 20, "twenty");
    persister.request(PersistReason::kEnd);
    persister.request(PersistReason::kEnd);  // the same step: skipped
    persister.finish();
  }
  CHECK(names_in(out) == std::vector<std::string>{"ckpt_000000001.pt", "ckpt_000000020.pt"});
  CHECK(ddp::test::read_file(out + "/ckpt_000000020.pt") == "twenty");
  const std::string log = ddp::test::read_file(run / "events.jsonl");
  CHECK(ddp::test::count_matching(log, "\"event\":\"snapshot_persisted\"") == 2);
  CHECK_THAT(log, Catch::Contains("\"step\":20,\"path\":\"" + out + "/ckpt_000000020.pt\",\"bytes\":6"));
  CHECK_THAT(log, Catch::Contains("\"why\":\"failure\""));
  CHECK_THAT(log, Catch::Contains("\"why\":\"end\""));
}

TEST_CASE("persister: every interval while it runs") {
  TempDir dir, run;
  const std::string region = run / "region";
  save(region, 3, "three");
  SnapshotPersister persister({dir.path(), 0.05}, nullptr);
  persister.set_source(region);
  REQUIRE(ddp::test::wait_until([&] { return ddp::test::file_exists(dir / "ckpt_000000003.pt"); }, 30s));
  save(region, 4, "four");
  REQUIRE(ddp::test::wait_until([&] { return ddp::test::file_exists(dir / "ckpt_000000004.pt"); }, 30s));
  persister.finish();
  CHECK(names_in(dir.path()) == std::vector<std::string>{"ckpt_000000004.pt"});
}

TEST_CASE("persister: a folder that became unwritable: one warning, the event, no temporary left") {
  TempDir dir, run;
  const std::string region = run / "region", out = dir / "ckpt";
  fs::create_directory(out);
  save(region, 5, "five");
  const std::string err = ddp::test::stderr_of(run / "stderr", [&] {
    EventLog events(run.path());
    SnapshotPersister persister({out, 0}, &events);
    persister.set_source(region);
    fs::remove(out);
    ddp::test::write_file(out, "");  // a file where the folder was: fails for root too
    persister.request(PersistReason::kFailure);
    persister.request(PersistReason::kEnd);
    persister.finish();
  });
  CHECK(ddp::test::count_matching(err, "warning: cannot write the in-memory snapshot of step 5") == 1);
  CHECK(ddp::test::read_file(out).empty());
  CHECK_THAT(ddp::test::read_file(run / "events.jsonl"), Catch::Contains("\"event\":\"snapshot_persist_failed\""));
}
