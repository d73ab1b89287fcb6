// Error files in PyTorch's @record formats, and the failure summary.
#include <catch2/catch.hpp>

#include <csignal>

#include "launcher/supervise/failure_report.hpp"

using namespace ddp::launch;

TEST_CASE("the nested @record format is read") {
  auto r = parse_error_record(R"({"message": {"message": "RuntimeError: boom",
      "extraInfo": {"py_callstack": "Traceback (most recent call last):\n  File \"t.py\"\nRuntimeError: boom",
                    "timestamp": "1716290582"}}})");
  REQUIRE(r);
  CHECK(r->message == "RuntimeError: boom");
  CHECK_THAT(r->traceback, Catch::StartsWith("Traceback"));
  CHECK(r->timestamp == 1716290582);
}

TEST_CASE("the flat format is read") {
  auto r = parse_error_record(R"({"message": "oops", "timestamp": 12})");
  REQUIRE(r);
  CHECK(r->message == "oops");
  CHECK(r->timestamp == 12);
  CHECK(r->traceback.empty());
}

TEST_CASE("malformed or foreign error files are ignored, never fatal") {
  CHECK_FALSE(parse_error_record(""));
  CHECK_FALSE(parse_error_record("{not json"));
  CHECK_FALSE(parse_error_record(R"({"foo": 1})"));
  CHECK_FALSE(parse_error_record(R"({"message": {"nomessage": 1}})"));
  CHECK_FALSE(parse_error_record("[1,2]"));
  CHECK_FALSE(read_error_file("/nonexistent/error.json"));
}

TEST_CASE("the report names the root cause first, then the others") {
  WorkerOutcome root;
  root.rank = 5;
  root.local_rank = 1;
  root.pid = 4242;
  root.status = ExitStatus{false, 3, 0};
  root.error_file = "/x/error.json";
  root.error = ErrorRecord{"ValueError: bad batch", "Traceback:\n  line 1\nValueError: bad batch", 1};
  WorkerOutcome stopped;
  stopped.rank = 4;
  stopped.status = ExitStatus{true, 0, SIGTERM};
  stopped.stopped_by_launcher = true;
  WorkerOutcome killed;
  killed.rank = 6;
  killed.status = ExitStatus{true, 0, SIGKILL};
  std::string text = format_failure_report({"train.py", "node7", 1, 1}, root, {stopped, killed});
  auto root_pos = text.find("Root cause");
  auto others_pos = text.find("Other workers");
  REQUIRE(root_pos != std::string::npos);
  REQUIRE(others_pos != std::string::npos);
  CHECK(root_pos < others_pos);
  CHECK_THAT(text, Catch::Contains("train.py FAILED (after 1 restart"));
  CHECK_THAT(text, Catch::Contains("rank      : 5 (local_rank: 1)"));
  CHECK_THAT(text, Catch::Contains("host      : node7"));
  CHECK_THAT(text, Catch::Contains("pid       : 4242"));
  CHECK_THAT(text, Catch::Contains("exit code 3"));
  CHECK_THAT(text, Catch::Contains("error     : ValueError: bad batch"));
  CHECK_THAT(text, Catch::Contains("    Traceback:"));
  CHECK_THAT(text, Catch::Contains("rank 4 (local_rank: 0, pid 0): signal 15 (SIGTERM) - stopped by ddp-launch"));
  CHECK_THAT(text, Catch::Contains("signal 9 (SIGKILL) - killed outright, often by the out-of-memory killer"));
}

TEST_CASE("without an error file the report shows the last stderr lines") {
  WorkerOutcome root;
  root.status = ExitStatus{true, 0, SIGSEGV};
  root.stderr_tail = {"loading", "about to crash"};
  std::string text = format_failure_report({"./train", "h", 0, 0}, root, {});
  CHECK_THAT(text, Catch::Contains("segmentation fault"));
  CHECK_THAT(text, Catch::Contains("    about to crash"));
  CHECK_THAT(text, Catch::Contains("<none written>"));
  CHECK_THAT(text, Catch::Contains("Other workers: none"));
}

TEST_CASE("the launcher's own error record carries errorCode") {
  WorkerOutcome root;
  root.status = ExitStatus{false, 7, 0};
  root.error = ErrorRecord{"E: x", "tb", 1};
  std::string json = launcher_error_record(root, {"p", "h", 0, 0});
  auto back = parse_error_record(json);
  REQUIRE(back);
  CHECK(back->message == "E: x");
  CHECK(back->traceback == "tb");
  CHECK_THAT(json, Catch::Contains("\"errorCode\": 7"));
}
