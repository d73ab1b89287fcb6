// process.hpp and child_registry.hpp on real children: wait-status decoding, signal names, program lookup,
// sessions and PDEATHSIG, a child that vanished (ECHILD); cpu_time.hpp on this process.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <csignal>
#include <ctime>
#include <algorithm>
#include <sstream>
#include <thread>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/os/child_registry.hpp"
#include "launcher/os/cpu_time.hpp"
#include "launcher/os/process.hpp"
#include "launcher/report/failure_report.hpp"
#include "tests/support/test_support.hpp"

using namespace ddp::launch;
using namespace ddp::launch::os;
using namespace ddp::launch::report;

namespace {

ChildRegistry children;  // this test process's

ExitStatus run_sh(const std::string& script) {
  SpawnSpec spec;
  spec.executable = "/bin/sh";
  spec.argv = {"sh", "-c", script};
  return children.wait(children.spawn(spec));
}

}  // namespace

TEST_CASE("exit codes and signals are decoded") {
  auto ok = run_sh("exit 0");
  CHECK(ok.success());
  auto three = run_sh("exit 3");
  CHECK(three.code == 3);
  CHECK(three.launcher_exit_code() == 3);
  CHECK(three.describe() == "exit code 3");
  auto killed = run_sh("kill -9 $$");
  CHECK(killed.signaled);
  CHECK(killed.signal == SIGKILL);
  CHECK(killed.launcher_exit_code() == 137);
  CHECK(killed.describe() == "signal 9 (SIGKILL)");
}

TEST_CASE("signal names and numbers") {
  CHECK(signal_name(SIGTERM) == "SIGTERM");
  CHECK(signal_name(SIGUSR1) == "SIGUSR1");
  CHECK(signal_number("SIGUSR2") == SIGUSR2);
  CHECK(signal_number("usr1") == SIGUSR1);
  CHECK(signal_number("15") == SIGTERM);
  CHECK(signal_number("SIGFOO") == -1);
  CHECK(signal_number("") == -1);
}

TEST_CASE("programs are found on PATH with clear errors otherwise") {
  CHECK(resolve_program("sh", "/nonexistent:/bin") == "/bin/sh");
  try {
    resolve_program("no-such-program-xyz", "/bin");
    FAIL("expected an error");
  } catch (const LaunchError& e) {
    CHECK(e.exit_code() == exit_code::kProgramNotFound);
  }
  ddp::test::TempDir dir;
  ddp::test::write_file(dir / "script", "#!/bin/sh\n");
  try {
    resolve_program(dir / "script", "");
    FAIL("expected an error");
  } catch (const LaunchError& e) {
    CHECK(e.exit_code() == exit_code::kProgramNotExecutable);
    CHECK_THAT(e.what(), Catch::Contains("chmod +x"));
  }
  CHECK_THROWS_AS(resolve_program(dir.path(), ""), LaunchError);  // a directory
}

TEST_CASE("a worker leads its own session and process group") {
  ddp::test::TempDir dir;
  SpawnSpec spec;
  spec.executable = "/bin/sh";
  spec.argv = {"sh", "-c", "ps -o pid=,pgid=,sid= -p $$ > " + (dir / "ids")};
  pid_t pid = children.spawn(spec);
  children.wait(pid);
  auto fields = ddp::test::read_file(dir / "ids");
  CHECK(std::count(fields.begin(), fields.end(), ' ') >= 2);
  std::istringstream in(fields);
  long p = 0, g = 0, s = 0;
  in >> p >> g >> s;
  CHECK(p == pid);
  CHECK(g == pid);
  CHECK(s == pid);
}

TEST_CASE("spawning something that cannot exec fails in the parent") {
  SpawnSpec spec;
  spec.executable = "/nonexistent/prog";
  spec.argv = {"prog"};
  CHECK_THROWS_AS(children.spawn(spec), LaunchError);
}

TEST_CASE("a process group is signalled as a whole") {
  ddp::test::TempDir dir;
  SpawnSpec spec;
  spec.executable = "/bin/sh";
  spec.argv = {"sh", "-c", "sleep 300 & echo $! > " + (dir / "child") + "; wait"};
  pid_t pid = children.spawn(spec);
  REQUIRE(
      ddp::test::wait_until([&] { return !ddp::test::read_file(dir / "child").empty(); }, std::chrono::seconds(10)));
  pid_t child = std::stoi(ddp::test::read_file(dir / "child"));
  signal_group(pid, SIGTERM);
  auto status = children.wait(pid);
  CHECK(status.signaled);
  CHECK(ddp::test::wait_until([&] { return !ddp::test::process_alive(child); }, std::chrono::seconds(10)));
}

TEST_CASE("a child reaped behind the launcher's back is unknown, not SIGKILL") {
  SpawnSpec spec;
  spec.executable = "/bin/sh";
  spec.argv = {"sh", "-c", "exit 0"};
  pid_t pid = children.spawn(spec);
  REQUIRE(children.wait(pid).success());  // someone else reaps it first
  auto reaped = children.reap(pid);       // then the launcher asks: waitpid fails with ECHILD
  REQUIRE(reaped);
  for (const ExitStatus& status : {*reaped, children.wait(pid)}) {
    CHECK(status.vanished);
    CHECK_FALSE(status.signaled);
    CHECK_FALSE(status.success());
    CHECK(status.launcher_exit_code() == exit_code::kInternalError);
    CHECK(status.describe() == "exit status unknown: the process vanished (ECHILD)");
    CHECK(signal_hint(status, false).empty());
  }
  WorkerOutcome root;
  root.pid = pid;
  root.status = *reaped;
  std::string report = format_failure_report(ReportContext{"prog", "host", 0, 0}, root, {});
  CHECK_THAT(report, Catch::Contains("exit      : exit status unknown: the process vanished (ECHILD)\n"));
  CHECK_THAT(report, !Catch::Contains("SIGKILL") && !Catch::Contains("out-of-memory"));
}

TEST_CASE("process_group_cpu_ticks: rises while a process of the group computes; an empty group is 0") {
  const long mine = static_cast<long>(::getpgrp());
  const long none = 999999999;  // above pid_max: no such group
  auto before = process_group_cpu_ticks({mine, none});
  const std::clock_t start = std::clock();  // this process's CPU time: 0.1 s of it, however loaded
  volatile unsigned long spin = 0;
  while (std::clock() - start < CLOCKS_PER_SEC / 10) spin = spin + 1;
  auto after = process_group_cpu_ticks({mine, none});
  CHECK(after.at(mine) > before.at(mine));
  CHECK(after.at(none) == 0);
}
