// Error files in PyTorch's @record formats, and the failure summary.
#include <catch2/catch.hpp>

#include <csignal>

#include "launcher/report/failure_report.hpp"

using namespace ddp::launch;
using namespace ddp::launch::os;
using namespace ddp::launch::report;

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

TEST_CASE("a failed attempt's outcomes: the root cause first, every other worker after") {
  std::vector<WorkerOutcome> outcomes(3);
  for (int i = 0; i < 3; ++i) outcomes[i].rank = i;
  outcomes[1].status = ExitStatus{false, 2, 0};
  std::string text = format_failure_report({"p", "h", 0, 0}, outcomes, 1);
  CHECK_THAT(text, Catch::Contains("rank      : 1 (local_rank: 0)"));
  CHECK_THAT(text, Catch::Contains("rank 0 (local_rank: 0, pid 0): exited 0"));
  CHECK_THAT(text, Catch::Contains("rank 2 (local_rank: 0, pid 0): exited 0"));
  CHECK(text.find("rank 1 (local_rank") == std::string::npos);  // not among the others
}

TEST_CASE("the remote report names the failed node and this node's stopped workers") {
  RemoteFailure r;
  r.node_rank = 2;
  r.host = "gpu2";
  r.rank = 9;
  r.local_rank = 1;
  r.pid = 77;
  r.exit = "exit code 3";
  r.error = "ValueError: x";
  r.traceback = "Traceback:\n  line 1";
  std::string text = format_remote_failure_report("train.py", r, 0, "gpu0");
  CHECK_THAT(text, Catch::Contains("train.py FAILED on node 2 (gpu2)"));
  CHECK_THAT(text, Catch::Contains("rank      : 9 (local_rank: 1)"));
  CHECK_THAT(text, Catch::Contains("pid       : 77"));
  CHECK_THAT(text, Catch::Contains("exit      : exit code 3"));
  CHECK_THAT(text, Catch::Contains("traceback :\n    Traceback:\n      line 1\n"));
  CHECK_THAT(text, Catch::Contains("This node (0, gpu0): its workers were stopped by ddp-launch"));
  RemoteFailure lost;
  lost.node_rank = 1;
  lost.exit = "node 1 (h1) was lost";
  CHECK(format_remote_failure_report("p", lost, 0, "h0").find("rank      :") == std::string::npos);
}

TEST_CASE("a communication error is told from a worker's own failure") {
  WorkerOutcome comm;
  comm.stderr_tail = {"Traceback (most recent call last):",
                      "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer "
                      "[10.0.0.2]:5341"};
  CHECK(looks_like_comm_error(comm));
  WorkerOutcome libddp;
  libddp.error = ErrorRecord{
      "ddp::CommError: allreduce failed on rank 1 of a gloo group of 2 (x): read: Connection "
      "reset by peer; a peer process probably exited or crashed",
      "", std::nullopt};
  CHECK(looks_like_comm_error(libddp));
  WorkerOutcome own;
  own.stderr_tail = {"ValueError: bad learning rate"};
  CHECK_FALSE(looks_like_comm_error(own));
  // The error file, when there is one, decides: not a line the worker printed earlier.
  own.stderr_tail.push_back("warning: Connection reset by peer, retrying");
  own.error = ErrorRecord{"ValueError: bad learning rate", "", std::nullopt};
  CHECK_FALSE(looks_like_comm_error(own));
}
