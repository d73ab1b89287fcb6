// Hang detection with real processes: Python workers feed their progress records through
// python/ddp_progress.py; one stops (SIGSTOP) and the launcher names it and the collective,
// writes every worker's stacks (native and Python), then exits 119 or restarts.
#include <catch2/catch.hpp>

#include <filesystem>
#include <regex>

#include "tests/support/test_support.hpp"

using namespace ddp::test;
using namespace std::chrono_literals;

namespace {

// A worker: three steps of one all_reduce each, then what the case asks for ($MODE).
const char* const kWorker = R"(
import os, signal, sys, time
sys.path.insert(0, os.environ["DDP_TEST_PYTHON_DIR"])
import ddp_progress as p
rank, mode = int(os.environ["RANK"]), os.environ["MODE"]
restart = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
for step in range(1, 4):
    p.collective_enter("all_reduce", 4996, "float32"); p.collective_exit(); p.heartbeat(step)
def stop_here():
    os.kill(os.getpid(), signal.SIGSTOP)
def stuck_in_all_reduce():
    time.sleep(1000)
if mode == "pause":
    with p.pause(timeout=60):
        time.sleep(5)
    sys.exit(0)
if mode == "restart" and restart > 0:
    sys.exit(0)
if mode == "desync":
    p.collective_enter("broadcast" if rank == 0 else "all_reduce", 10 if rank == 0 else 4996, "float32")
    stuck_in_all_reduce()
if rank == 1:
    stop_here()
p.collective_enter("all_reduce", 4996, "float32")
stuck_in_all_reduce()
)";

struct HangRun {
  TempDir dir;
  TempDir logs;
  RunResult r;
  std::string run_dir;

  HangRun(const std::string& mode, std::vector<std::string> extra = {}) {
    write_file(dir / "worker.py", kWorker);
    std::vector<std::string> args = {"--nproc-per-node=2", "--hang-timeout=3", "--log-dir", logs.path()};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back(dir / "worker.py");
    r = launch(args, {{"MODE", mode}, {"DDP_TEST_PYTHON_DIR", std::string(DDP_SOURCE_DIR) + "/python"}}, 120s);
    for (const auto& e : std::filesystem::directory_iterator(logs.path())) run_dir = e.path().string();
  }
  std::string stacks(int attempt, int local_rank) const {
    return read_file(run_dir + "/attempt_" + std::to_string(attempt) + "/" + std::to_string(local_rank) +
                     "/stacks.txt");
  }
};

}  // namespace

TEST_CASE("hang: a stopped rank is named with its collective, every worker's stacks are kept, exit 119") {
  HangRun run("stop");
  INFO(run.r.err);
  CHECK(run.r.exit_code == 119);
  CHECK_THAT(
      run.r.err,
      Catch::Matches(
          "(.|\\n)*hang: no progress for [0-9]+ s; rank 1 \\(pid [0-9]+\\) at step 3, last completed all_reduce #3, "
          "in no collective; rank 0 waits in all_reduce #4 \\(4996 float32\\)(.|\\n)*"));
  CHECK_THAT(run.r.err, Catch::Contains("exit      : stopped by ddp-launch: a hang (exit code 119)"));
  CHECK_THAT(run.r.err, Catch::Contains(run.run_dir + "/attempt_0/1/stacks.txt"));
  const std::string culprit = run.stacks(0, 1), waiter = run.stacks(0, 0);
  // Native stacks (eu-stack or gdb, scripts/install-deps.sh), then faulthandler's Python ones.
  CHECK_THAT(culprit, Catch::Contains("== native stacks of rank 1 (pid"));
  CHECK_THAT(culprit, Catch::Contains("#0 "));
  CHECK_THAT(culprit, Catch::Contains("in stop_here"));
  CHECK_THAT(waiter, Catch::Contains("== native stacks of rank 0 (pid"));
  CHECK_THAT(waiter, Catch::Contains("in stuck_in_all_reduce"));
  CHECK_THAT(run.r.err, Catch::Contains("in stop_here"));  // the report's top frames
}

TEST_CASE("hang: with --max-restarts 1 a hang restarts the job, which then finishes") {
  HangRun run("restart", {"--max-restarts=1"});
  INFO(run.r.err);
  CHECK(run.r.exit_code == 0);
  CHECK_THAT(run.r.err, Catch::Contains("attempt 0 failed (rank 1: hang); restarting all 2 workers"));
  CHECK_THAT(run.stacks(0, 1), Catch::Contains("in stop_here"));
}

TEST_CASE("hang: ranks in different collectives at the same sequence number are a desync") {
  HangRun run("desync");
  INFO(run.r.err);
  CHECK(run.r.exit_code == 119);
  CHECK_THAT(run.r.err, Catch::Contains("at collective #4 the ranks differ: rank 0 in broadcast #4 (10 float32); "
                                        "rank 1 in all_reduce #4 (4996 float32)"));
  CHECK_THAT(read_file(run.run_dir + "/events.jsonl"), Catch::Contains("\"kind\":\"desync\""));
}

TEST_CASE("hang: a pause longer than the limit is no hang") {
  HangRun run("pause");
  INFO(run.r.err);
  CHECK(run.r.exit_code == 0);
  CHECK_THAT(run.r.err, !Catch::Contains("hang:"));
}

// A normal ~60 s run: steps of one all_reduce each (~0.05 s); every 110 steps rank 0 saves
// a slow "checkpoint" (8 s) inside pause() while rank 1 waits in the checkpoint's
// all_reduce (for a file rank 0 writes when done); four of them. --hang-timeout 3: no
// verdict, exit 0.
TEST_CASE("hang: a 60 s run with slow checkpoint saves inside pause() gets no verdict") {
  TempDir dir;
  write_file(dir / "worker.py", R"(
import os, sys, time
sys.path.insert(0, os.environ["DDP_TEST_PYTHON_DIR"])
import ddp_progress as p
rank, here, step, saves = int(os.environ["RANK"]), os.environ["DIR"], 0, 0
while saves < 4:
    step += 1
    p.collective_enter("all_reduce", 4996, "float32"); time.sleep(0.05); p.collective_exit()
    p.heartbeat(step)
    if step % 110 == 0:  # a checkpoint
        saves += 1
        done = os.path.join(here, "saved.%d" % saves)
        if rank == 0:
            with p.pause(timeout=60):
                time.sleep(8)  # the slow save
            open(done, "w").close()
        else:
            p.collective_enter("all_reduce", 1, "float32")
            while not os.path.exists(done):
                time.sleep(0.1)
            p.collective_exit()
print("rank %d: %d steps, %d checkpoints" % (rank, step, saves), flush=True)
)");
  const EnvOverrides env = {{"DIR", dir.path()}, {"DDP_TEST_PYTHON_DIR", std::string(DDP_SOURCE_DIR) + "/python"}};
  auto r = launch({"--nproc-per-node=2", "--hang-timeout=3", dir / "worker.py"}, env, 170s);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, !Catch::Contains("hang:"));
  CHECK(file_exists(dir / "saved.4"));  // four slow saves happened
}

// Workers that feed no record are watched by what the launcher sees: output and CPU time.
TEST_CASE("hang: workers that feed nothing, print nothing and use no CPU are hung (no --log-dir)") {
  auto r = launch({"--nproc-per-node=2", "--hang-timeout=2", "sh", "-c", "sleep 1000"}, {}, 120s);
  INFO(r.err);
  CHECK(r.exit_code == 119);
  CHECK_THAT(r.err, Catch::Matches("(.|\\n)*hang: rank [01] \\(pid [0-9]+\\) fed no progress record; no output and no "
                                   "CPU time for [0-9]+ s; rank [01] silent too(.|\\n)*"));
  // The temporary run directory is kept: it holds both stacks files and the event log.
  std::smatch kept;
  REQUIRE(std::regex_search(r.err, kept, std::regex("kept the run directory (\\S+):")));
  const std::string run_dir = kept[1];
  for (int local_rank : {0, 1})
    CHECK_THAT(read_file(run_dir + "/attempt_0/" + std::to_string(local_rank) + "/stacks.txt"),
               Catch::Contains("== native stacks of rank " + std::to_string(local_rank)));
  const std::string events = read_file(run_dir + "/events.jsonl");
  CHECK_THAT(events, Catch::Contains("\"event\":\"failure\",") && Catch::Contains("\"kind\":\"hang\""));
  std::filesystem::remove_all(run_dir);
}

TEST_CASE("hang: a silent worker busy on the CPU (or its child), or one that prints, is alive") {
  const std::string busy = "import time\nt = time.monotonic()\nwhile time.monotonic() - t < 6: pass\n";
  auto silent =
      launch({"--nproc-per-node=2", "--hang-timeout=1", "sh", "-c", "python3 -c '" + busy + "'; sleep 0.1"}, {}, 120s);
  INFO(silent.err);
  CHECK(silent.exit_code == 0);
  CHECK_THAT(silent.err, !Catch::Contains("hang:"));
  auto printing = launch({"--nproc-per-node=2", "--hang-timeout=2", "sh", "-c",
                          "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo tick $i; sleep 0.5; done"},
                         {}, 120s);
  INFO(printing.err);
  CHECK(printing.exit_code == 0);
  CHECK_THAT(printing.err, !Catch::Contains("hang:"));
}

TEST_CASE("hang: --hang-timeout rejects bad values") {
  for (std::string bad : {"abc", "0.5", "-1"}) {
    auto r = launch({"--hang-timeout", bad, "true"}, {}, 30s);
    CHECK(r.exit_code == 121);
    CHECK_THAT(r.err, Catch::Contains("--hang-timeout must be 0 (off), auto, or a number of seconds >= 1"));
  }
}

TEST_CASE("hang: --hang-timeout auto (and PET_HANG_TIMEOUT=auto) is accepted and watches a normal run quietly") {
  CHECK(launch({"--nproc-per-node=2", "--hang-timeout", "auto", "true"}, {}, 30s).exit_code == 0);
  auto env = launch({"--nproc-per-node=2", "true"}, {{"PET_HANG_TIMEOUT", "auto"}}, 30s);
  CHECK(env.exit_code == 0);
  CHECK_THAT(env.err, !Catch::Contains("hang:"));
}

// The straggler run itself (notice and event): events_test.cpp.

TEST_CASE("straggler: --straggler-threshold rejects bad values") {
  for (std::string bad : {"abc", "1", "0.5", "-2", "inf"}) {
    auto r = launch({"--straggler-threshold", bad, "true"}, {}, 30s);
    CHECK(r.exit_code == 121);
    CHECK_THAT(r.err, Catch::Contains("--straggler-threshold must be 0 (off) or a factor above 1 (e.g. 2)"));
  }
}
