// Supervision with real processes: fail-fast teardown, no orphans after the launcher is
// SIGKILLed, restarts, exit codes, and error files reaching the report.
#include <catch2/catch.hpp>

#include <csignal>
#include <filesystem>

#include "tests/support/test_support.hpp"

using namespace ddp::test;
using namespace std::chrono_literals;

namespace {

std::vector<pid_t> read_pids(const TempDir& dir, const std::string& stem, int n) {
  std::vector<pid_t> pids;
  for (int i = 0; i < n; ++i) {
    std::string text = read_file(dir / (stem + std::to_string(i)));
    if (!text.empty()) pids.push_back(std::stoi(text));
  }
  return pids;
}

bool all_dead(const std::vector<pid_t>& pids) {
  for (pid_t p : pids)
    if (process_alive(p)) return false;
  return true;
}

// The single run directory under a --log-dir.
std::string only_run_dir(const TempDir& logs) {
  std::vector<std::string> dirs;
  for (const auto& e : std::filesystem::directory_iterator(logs.path())) dirs.push_back(e.path().string());
  REQUIRE(dirs.size() == 1);
  return dirs[0];
}

}  // namespace

TEST_CASE("one rank exits 3: its siblings are stopped and the launcher exits 3") {
  TempDir dir;
  // Every worker records its pid and a child's pid; rank 1 fails once all are up.
  std::string script = "echo $$ > " + dir.path() + "/pid.$RANK; sleep 1000 & echo $! > " + dir.path() +
                       "/child.$RANK; "
                       "if [ $RANK = 1 ]; then while [ $(ls " +
                       dir.path() +
                       " | grep -c '^child') -lt 4 ]; do sleep 0.05; done; exit 3; fi; "
                       "wait";
  auto r = launch({"--nproc-per-node=4", "sh", "-c", script}, {}, 120s);
  INFO(r.err);
  CHECK(r.exit_code == 3);
  auto pids = read_pids(dir, "pid.", 4);
  auto children = read_pids(dir, "child.", 4);
  REQUIRE(pids.size() == 4);
  REQUIRE(children.size() == 4);
  CHECK(all_dead(pids));
  CHECK(wait_until([&] { return all_dead(children); }, 10s));  // grandchildren too
  CHECK_THAT(r.err, Catch::Contains("rank 1 (local_rank 1, pid " + std::to_string(pids[1]) +
                                    ") failed with exit code 3; stopping the other 3 workers"));
  CHECK_THAT(r.err, Catch::Contains("Root cause"));
  CHECK_THAT(r.err, Catch::Contains("rank      : 1 (local_rank: 1)"));
  CHECK(count_matching(r.err, "stopped by ddp-launch") == 3);
}

TEST_CASE("a worker that ignores SIGTERM is killed after the shutdown timeout") {
  TempDir dir;
  auto r = launch({"--nproc-per-node=2", "--shutdown-timeout=1", "sh", "-c",
                   "trap '' TERM; if [ $RANK = 0 ]; then while [ ! -e " + (dir / "deaf") +
                       " ]; do sleep 0.02; done; "
                       "exit 4; fi; touch " +
                       (dir / "deaf") + "; while true; do sleep 0.1; done"},
                  {}, 60s);
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.err, Catch::Contains("still running 1 s after SIGTERM: sending SIGKILL"));
  CHECK_THAT(r.err, Catch::Contains("signal 9 (SIGKILL)"));
}

TEST_CASE("SIGKILL of the launcher leaves no worker and no worker child alive") {
  TempDir dir;
  std::string script =
      "echo $$ > " + dir.path() + "/pid.$RANK; sleep 1000 & echo $! > " + dir.path() + "/child.$RANK; wait";
  Background launcher({launcher_path(), "--nproc-per-node=3", "sh", "-c", script});
  REQUIRE(wait_until([&] { return read_pids(dir, "child.", 3).size() == 3 && read_pids(dir, "pid.", 3).size() == 3; },
                     30s));
  auto pids = read_pids(dir, "pid.", 3);
  auto children = read_pids(dir, "child.", 3);
  CHECK(!all_dead(pids));
  launcher.signal(SIGKILL);
  auto r = launcher.wait(30s);
  CHECK(r.exit_code == 128 + SIGKILL);
  CHECK(wait_until([&] { return all_dead(pids); }, 10s));      // PR_SET_PDEATHSIG
  CHECK(wait_until([&] { return all_dead(children); }, 10s));  // the watchdog's group kill
}

TEST_CASE("max-restarts restarts the whole group with the restart count incremented") {
  TempDir dir;
  std::string script = "echo $TORCHELASTIC_RESTART_COUNT >> " + dir.path() +
                       "/attempts.$RANK; "
                       // rank 1 fails once rank 0 is up in this attempt (so rank 0 is seen restarting)
                       "if [ $RANK = 1 ] && [ $TORCHELASTIC_RESTART_COUNT -lt 2 ]; then "
                       "while ! grep -qx $TORCHELASTIC_RESTART_COUNT " +
                       dir.path() +
                       "/attempts.0; do sleep 0.02; done; "
                       "exit 1; fi; "
                       "if [ $RANK = 0 ] && [ $TORCHELASTIC_RESTART_COUNT -lt 2 ]; then sleep 30; fi";
  auto r = launch({"--nproc-per-node=2", "--max-restarts=3", "sh", "-c", script}, {}, 120s);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(read_file(dir / "attempts.1") == "0\n1\n2\n");
  CHECK(read_file(dir / "attempts.0") == "0\n1\n2\n");  // the healthy rank restarted too
  CHECK(count_matching(r.err, "restarting all 2 workers") == 2);
  CHECK_THAT(r.err, Catch::Contains("restart 2 of 3"));
}

TEST_CASE("restarts run out: the report says so and the exit code is the worker's") {
  auto r = launch({"--nproc-per-node=1", "--max-restarts=1", "sh", "-c", "exit 9"});
  CHECK(r.exit_code == 9);
  CHECK(count_matching(r.err, "restarting all 1 workers") == 1);
  CHECK_THAT(r.err, Catch::Contains("FAILED (after 1 restart, the most allowed)"));
}

TEST_CASE("a worker killed by a signal gives 128+N and a named signal") {
  auto r = launch({"--nproc-per-node=2", "sh", "-c", "if [ $RANK = 1 ]; then kill -SEGV $$; fi; sleep 30"});
  CHECK(r.exit_code == 128 + SIGSEGV);
  CHECK_THAT(r.err, Catch::Contains("signal 11 (SIGSEGV) - segmentation fault"));
}

TEST_CASE("a worker that exits 0 early does not stop the others") {
  TempDir dir;
  auto r =
      launch({"--nproc-per-node=2", "sh", "-c", "if [ $RANK = 1 ]; then sleep 0.5; touch " + (dir / "late") + "; fi"});
  CHECK(r.exit_code == 0);
  CHECK(file_exists(dir / "late"));
}

TEST_CASE("an @record-style error file reaches the report, with the traceback") {
  std::string record =
      R"({"message": {"message": "ValueError: bad learning rate", "extraInfo": )"
      R"({"py_callstack": "Traceback (most recent call last):\n  File \"train.py\", line 7, in main\nValueError: bad learning rate", "timestamp": "1700000000"}}})";
  TempDir dir;
  write_file(dir / "record.json", record);
  auto r = launch(
      {"--nproc-per-node=2", "sh", "-c",
       "if [ $RANK = 1 ]; then cp " + (dir / "record.json") + " \"$TORCHELASTIC_ERROR_FILE\"; exit 1; fi; sleep 30"},
      {{"TORCHELASTIC_ERROR_FILE", dir / "launcher_error.json"}});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("error     : ValueError: bad learning rate"));
  CHECK_THAT(r.err, Catch::Contains("    Traceback (most recent call last):"));
  CHECK_THAT(r.err, Catch::Contains("File \"train.py\", line 7, in main"));
  // The launcher's own error file (for schedulers) carries the root cause and its code.
  std::string mine = read_file(dir / "launcher_error.json");
  CHECK_THAT(mine, Catch::Contains("ValueError: bad learning rate"));
  CHECK_THAT(mine, Catch::Contains("\"errorCode\": 1"));
}

TEST_CASE("without an error file the report shows the failed worker's last stderr lines") {
  auto r = launch({"--nproc-per-node=1", "sh", "-c", "echo 'CUDA out of memory, pretend' >&2; exit 2"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("last stderr lines:\n    CUDA out of memory, pretend"));
}

TEST_CASE("twenty restarts in a row: every line of every attempt reaches the console and the logs") {
  // Attempts 0-19: every rank prints five lines, then local rank 0 fails once all are up
  // (the other three die together on SIGTERM: exits that coalesce into one SIGCHLD). The
  // last attempt prints for 2.6 s, longer than the pipe drain, so a drain armed by a stale
  // SIGCHLD would cut it short.
  constexpr int kRestarts = 20;
  TempDir dir;
  TempDir logs;
  const std::string script =
      "c=$TORCHELASTIC_RESTART_COUNT; "
      "for i in 1 2 3 4 5; do echo \"a$c r$RANK line $i\"; done; "
      "if [ $c -lt " +
      std::to_string(kRestarts) + " ]; then touch " + dir.path() +
      "/up.$c.$RANK; "
      "  if [ $LOCAL_RANK = 0 ]; then while [ $(ls " +
      dir.path() +
      " | grep -c \"^up\\.$c\\.\") -lt 4 ]; do sleep 0.01; done; exit 1; fi; "
      "  exec sleep 30; fi; "
      "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13; do echo \"a$c r$RANK tick $i\"; sleep 0.2; done; echo \"a$c r$RANK done\"";
  auto r = launch({"--nproc-per-node=4", "--max-restarts=" + std::to_string(kRestarts), "--log-dir", logs.path(), "sh",
                   "-c", script},
                  {}, 170s);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(count_matching(r.err, "restarting all 4 workers") == kRestarts);
  const std::string run = only_run_dir(logs);
  int missing = 0;
  for (int c = 0; c <= kRestarts; ++c) {
    for (int rank = 0; rank < 4; ++rank) {
      std::string expected;
      const std::string tag = "a" + std::to_string(c) + " r" + std::to_string(rank);
      for (int i = 1; i <= 5; ++i) expected += tag + " line " + std::to_string(i) + "\n";
      if (c == kRestarts) {
        for (int i = 1; i <= 13; ++i) expected += tag + " tick " + std::to_string(i) + "\n";
        expected += tag + " done\n";
      }
      const std::string log =
          read_file(run + "/attempt_" + std::to_string(c) + "/" + std::to_string(rank) + "/stdout.log");
      if (log != expected) {
        ++missing;
        UNSCOPED_INFO("attempt " << c << " rank " << rank << " log:\n" << log);
      }
      for (const auto& line : lines_of(expected))
        if (count_matching(r.out, "[rank" + std::to_string(rank) + "]: " + line + "\n") != 1) {
          ++missing;
          UNSCOPED_INFO("console lacks: " << line);
        }
    }
  }
  CHECK(missing == 0);
}

TEST_CASE("fail-fast stops the failed worker's own children at once, with the other workers") {
  // Rank 1 leaves a child holding its stdout and dies by SIGKILL. That child must get the
  // fail-fast SIGTERM with everyone else (it says so on the pipe it holds), not wait out
  // the pipe drain and then be SIGKILLed unheard.
  TempDir dir;
  const std::string script =
      "if [ $RANK = 1 ]; then "
      "  sh -c 'trap \"echo child stopped by TERM; exit 0\" TERM; echo $$ > " +
      dir.path() +
      "/child; "
      "         while true; do sleep 0.05; done' & "
      "  while [ ! -s " +
      dir.path() +
      "/child ]; do sleep 0.01; done; kill -9 $$; fi; "
      "exec sleep 300";
  auto r = launch({"--nproc-per-node=2", "sh", "-c", script}, {}, 120s);
  INFO(r.err);
  CHECK(r.exit_code == 128 + SIGKILL);
  CHECK_THAT(r.out, Catch::Contains("[rank1]: child stopped by TERM"));
  const std::string child = read_file(dir / "child");
  REQUIRE(!child.empty());
  CHECK_FALSE(process_alive(std::stoi(child)));
  CHECK(r.seconds < 60);  // generous: nothing waited for the 300 s sleeps
}

TEST_CASE("without --log-dir the error file a report names still exists after the launcher exits") {
  TempDir tmp;  // the launcher's TMPDIR: its temporary run directory goes here
  auto r = launch({"--nproc-per-node=2", "sh", "-c",
                   "if [ $RANK = 1 ]; then echo '{\"message\": \"ValueError: kept\"}' > \"$TORCHELASTIC_ERROR_FILE\"; "
                   "exit 1; fi; sleep 30"},
                  {{"TMPDIR", tmp.path()}});
  INFO(r.err);
  CHECK(r.exit_code == 1);
  const auto at = r.err.find("error_file: ");
  REQUIRE(at != std::string::npos);
  const std::string path = r.err.substr(at + 12, r.err.find('\n', at) - at - 12);
  CHECK(path.rfind(tmp.path() + "/ddp-launch-", 0) == 0);
  CHECK_THAT(read_file(path), Catch::Contains("ValueError: kept"));
  CHECK_THAT(r.err, Catch::Contains("kept the run directory " + tmp.path() + "/ddp-launch-"));
}

TEST_CASE("a successful job without --log-dir leaves no run directory behind") {
  TempDir tmp;
  auto r = launch({"--nproc-per-node=2", "true"}, {{"TMPDIR", tmp.path()}});
  CHECK(r.exit_code == 0);
  CHECK(std::filesystem::is_empty(tmp.path()));
}
