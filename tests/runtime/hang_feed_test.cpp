// libddp's progress feed under the real ddp-launch: a C++ worker that only calls libddp (no
// explicit heartbeat) is watched. A stopped or blocked rank → exit 119 with the verdict naming
// it and the collective the other waits in, and stacks files; long pauses (PauseProgress,
// save_checkpoint) get no verdict. Without a launcher, each field libddp writes is checked.
#include <catch2/catch.hpp>

#include <filesystem>
#include <regex>

#include "harness.hpp"
#include "tests/support/test_support.hpp"

using namespace ddp::test;
using namespace std::chrono_literals;

namespace {

struct FedRun {
  TempDir logs;
  TempDir out;
  RunResult r;
  std::string run_dir;

  FedRun(const std::string& scenario, const std::string& mode) {
    r = launch({"--nproc-per-node=2", "--hang-timeout=3", "--log-dir", logs.path(), self_exe(), "--worker", scenario},
               {{"DDP_TEST_HANG", mode}, {"DDP_TEST_OUT", out.path()}, {"OMP_NUM_THREADS", "1"}}, 150s);
    for (const auto& e : std::filesystem::directory_iterator(logs.path())) run_dir = e.path().string();
  }
  std::string stacks(int local_rank) const {
    return read_file(run_dir + "/attempt_0/" + std::to_string(local_rank) + "/stacks.txt");
  }
};

// The verdict for rank 1 behind at step 3 (three DDP steps), rank 0 in the next all_reduce:
// returns {rank 1's last completed #, rank 0's #} (0, 0 when the line is not there).
std::pair<long, long> verdict_numbers(const std::string& err) {
  static const std::regex kVerdict(
      "hang: no progress for [0-9]+ s; rank 1 \\(pid [0-9]+\\) at step 3, last completed all_reduce #([0-9]+), "
      "in no collective; rank 0 waits in all_reduce #([0-9]+) \\(4996 float32\\)");
  std::smatch m;
  if (!std::regex_search(err, m, kVerdict)) return {0, 0};
  return {std::stol(m[1]), std::stol(m[2])};
}

}  // namespace

TEST_CASE("hang feed: a libddp rank that stops itself is named with its collective, exit 119", "[hang]") {
  FedRun run("hang-feed", "stop");
  INFO(run.r.err);
  CHECK(run.r.exit_code == 119);
  const auto [completed, waited] = verdict_numbers(run.r.err);
  CHECK(completed > 3);  // DDP's own collectives (model check, broadcast, buckets) were fed
  CHECK(waited == completed + 1);
  CHECK_THAT(run.r.err, Catch::Contains(run.run_dir + "/attempt_0/1/stacks.txt"));
  CHECK_THAT(run.stacks(1), Catch::Contains("== native stacks of rank 1 (pid"));
  CHECK_THAT(run.stacks(1), Catch::Contains("hang_feed"));
  CHECK_THAT(run.r.err, Catch::Contains("hang_feed()"));  // the report's top frames
  CHECK_THAT(run.stacks(0), Catch::Contains("== native stacks of rank 0 (pid"));
  CHECK_THAT(run.stacks(0), Catch::Contains("ddp::all_reduce"));
}

TEST_CASE("hang feed: a libddp rank blocked before a collective shows its frame", "[hang]") {
  FedRun run("hang-feed", "block");
  INFO(run.r.err);
  CHECK(run.r.exit_code == 119);
  const auto [completed, waited] = verdict_numbers(run.r.err);
  CHECK(completed > 3);
  CHECK(waited == completed + 1);
  CHECK_THAT(run.stacks(1), Catch::Contains("stuck_before_all_reduce"));
  CHECK_THAT(run.r.err, Catch::Contains("ddp::test::stuck_before_all_reduce()"));  // the report's top frames
}

TEST_CASE("hang feed: PauseProgress and a slow save_checkpoint are no hang", "[hang]") {
  FedRun run("pause-save", "");
  INFO(run.r.err);
  CHECK(run.r.exit_code == 0);
  CHECK_THAT(run.r.err, !Catch::Contains("hang:"));
  CHECK(std::filesystem::exists(run.out.path() + "/pause_save.pt"));
}

TEST_CASE("hang feed: libddp writes collectives, steps and pauses into the record as laid out", "[hang]") {
  auto w = run_workers("feed-record", 2);
  INFO(w.describe());
  CHECK(w.all_ok());
}
