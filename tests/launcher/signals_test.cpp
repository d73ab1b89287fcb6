// Signals sent to the launcher: forwarded to every worker; stop signals end the job with
// 128+N (130 for Ctrl-C); extra handled signals such as SIGUSR1 are only forwarded.
#include <catch2/catch.hpp>

#include <csignal>

#include "tests/support/test_support.hpp"

using namespace ddp::test;
using namespace std::chrono_literals;

namespace {

// Workers that note which signal they got in DIR/got.RANK, then exit with `code`.
std::string trapping_worker(const TempDir& dir, const std::string& sig, int code) {
  return "trap 'echo " + sig + " > " + dir.path() + "/got.$RANK; exit " + std::to_string(code) + "' " + sig +
         "; touch " + dir.path() + "/up.$RANK; while true; do sleep 0.05; done";
}

bool all_up(const TempDir& dir, int n) {
  for (int i = 0; i < n; ++i)
    if (!file_exists(dir / ("up." + std::to_string(i)))) return false;
  return true;
}

}  // namespace

TEST_CASE("SIGTERM to the launcher is forwarded to every worker, exit 143") {
  TempDir dir;
  Background launcher({launcher_path(), "--nproc-per-node=3", "sh", "-c", trapping_worker(dir, "TERM", 0)});
  REQUIRE(wait_until([&] { return all_up(dir, 3); }, 30s));
  launcher.signal(SIGTERM);
  auto r = launcher.wait(60s);
  CHECK(r.exit_code == 128 + SIGTERM);
  for (int i = 0; i < 3; ++i) CHECK(read_file(dir / ("got." + std::to_string(i))) == "TERM\n");
  CHECK_THAT(r.err, Catch::Contains("received SIGTERM"));
  CHECK_THAT(r.err, !Catch::Contains("Root cause"));  // a requested stop is not a crash
}

TEST_CASE("Ctrl-C (SIGINT) stops the job with exit code 130") {
  TempDir dir;
  Background launcher({launcher_path(), "--nproc-per-node=2", "sh", "-c", trapping_worker(dir, "INT", 1)});
  REQUIRE(wait_until([&] { return all_up(dir, 2); }, 30s));
  launcher.signal(SIGINT);
  auto r = launcher.wait(60s);
  CHECK(r.exit_code == 130);
  CHECK(read_file(dir / "got.1") == "INT\n");
}

TEST_CASE("SIGUSR1 in --signals-to-handle is forwarded without stopping the job") {
  TempDir dir;
  Background launcher({launcher_path(), "--nproc-per-node=2", "--signals-to-handle=SIGTERM,SIGINT,SIGUSR1", "sh", "-c",
                       trapping_worker(dir, "USR1", 0)});
  REQUIRE(wait_until([&] { return all_up(dir, 2); }, 30s));
  launcher.signal(SIGUSR1);
  auto r = launcher.wait(60s);
  CHECK(r.exit_code == 0);  // the workers checkpointed and exited 0: success
  CHECK(read_file(dir / "got.0") == "USR1\n");
  CHECK(read_file(dir / "got.1") == "USR1\n");
  CHECK_THAT(r.err, Catch::Contains("forwarding SIGUSR1"));
}

TEST_CASE("a second stop signal kills workers that ignore the first") {
  TempDir dir;
  Background launcher({launcher_path(), "--nproc-per-node=2", "sh", "-c",
                       "trap '' INT TERM; touch " + dir.path() + "/up.$RANK; while true; do sleep 0.05; done"});
  REQUIRE(wait_until([&] { return all_up(dir, 2); }, 30s));
  launcher.signal(SIGINT);
  REQUIRE(wait_until([&] { return launcher.err_so_far().find("received SIGINT") != std::string::npos; }, 30s));
  launcher.signal(SIGINT);
  auto r = launcher.wait(20s);  // far less than the 30 s grace period
  CHECK(r.exit_code == 130);
  CHECK_THAT(r.err, Catch::Contains("second SIGINT: killing the workers now"));
}
