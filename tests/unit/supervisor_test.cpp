// The Supervisor on real child processes, driven directly: what the end-to-end tests can
// only catch by chance (a SIGCHLD left over from the previous attempt) made deterministic.
#include <catch2/catch.hpp>

#include <signal.h>

#include <boost/asio/io_context.hpp>

#include "launcher/os/watchdog.hpp"
#include "launcher/supervise/supervisor.hpp"
#include "tests/support/test_support.hpp"

using namespace ddp::launch;
using namespace ddp::launch::supervise;
using namespace ddp::launch::report;
using namespace ddp::launch::worker;
using namespace ddp::test;

namespace {

WorkerLaunch shell_worker(const std::string& script, const std::string& stdout_log) {
  WorkerLaunch l;
  l.spawn.executable = "/bin/sh";
  l.spawn.argv = {"sh", "-c", script};
  l.spawn.env = environment_with({});
  l.prefix = "[rank0]: ";
  l.stdout_to_console = false;
  l.stderr_to_console = false;
  l.stdout_log = stdout_log;
  return l;
}

}  // namespace

TEST_CASE("a SIGCHLD left over from the previous attempt does not cut the next attempt's output") {
  TempDir dir;
  boost::asio::io_context loop;
  os::ChildRegistry children;
  os::Watchdog watchdog(children);
  StopSignals signals(loop, {}, {});
  Supervisor supervisor(loop, children, watchdog, SupervisorConfig{}, signals);
  std::vector<WorkerLaunch> first;
  first.push_back(shell_worker("echo first", dir / "first.log"));
  REQUIRE(supervisor.run_attempt(std::move(first)).kind == AttemptResult::Kind::kSucceeded);
  // Several exits coalesce into one SIGCHLD; one can arrive after its child was reaped and
  // wait, queued, for the next attempt. Here it is made to happen every time.
  ::raise(SIGCHLD);
  std::vector<WorkerLaunch> second;
  second.push_back(shell_worker("echo early; sleep 2.5; echo late", dir / "second.log"));
  auto result = supervisor.run_attempt(std::move(second));
  CHECK(result.kind == AttemptResult::Kind::kSucceeded);
  CHECK(read_file(dir / "first.log") == "first\n");
  CHECK(read_file(dir / "second.log") == "early\nlate\n");  // the drain never armed early
}
