// Containment's parts: the /proc parsers and the tree walk, the cgroup v2 lookups, the notice,
// and on real processes the pidfd handle, the subreaper's adopted orphans, and the Supervisor
// ending what its workers left behind (each CTest case is a process of its own, so the
// subreaper bit a case sets ends with it).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/contain/containment.hpp"
#include "launcher/contain/leftover_report.hpp"
#include "launcher/os/cgroup.hpp"
#include "launcher/os/process_handle.hpp"
#include "launcher/os/process_table.hpp"
#include "launcher/os/watchdog.hpp"
#include "launcher/supervise/supervisor.hpp"
#include "tests/support/test_support.hpp"

using namespace ddp::launch;
using namespace ddp::test;
using namespace std::chrono_literals;

namespace {

os::ProcessEntry entry(pid_t pid, pid_t ppid) {
  os::ProcessEntry e;
  e.pid = pid;
  e.ppid = ppid;
  e.state = 'S';
  return e;
}

std::vector<pid_t> pids(const std::vector<os::ProcessEntry>& entries) {
  std::vector<pid_t> out;
  for (const auto& e : entries) out.push_back(e.pid);
  return out;
}

pid_t read_pid(const std::string& path) {
  pid_t pid = 0;
  wait_until([&] { return !read_file(path).empty() && read_file(path).back() == '\n'; }, 10s);
  const std::string text = read_file(path);
  if (!text.empty()) pid = static_cast<pid_t>(std::stol(text));
  return pid;
}

}  // namespace

TEST_CASE("a /proc stat line parses, a command name with spaces and parentheses included") {
  auto e = os::parse_proc_stat(
      "4242 (my (odd) name) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1234 56 "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0");
  REQUIRE(e);
  CHECK(e->pid == 4242);
  CHECK(e->comm == "my (odd) name");
  CHECK(e->state == 'S');
  CHECK(e->ppid == 17);
  CHECK(e->pgid == 4242);
  CHECK(e->sid == 4242);
  CHECK(e->start_ticks == 987654);
  CHECK_FALSE(os::parse_proc_stat("garbage"));
  CHECK_FALSE(os::parse_proc_stat("12 (short) S 1 2"));
}

TEST_CASE("descendants walk parent links and leave pruned subtrees out") {
  // 1 -> 10 -> {11 -> 12, 13}; 1 -> 20 -> 21; 10 -> 14 (pruned) -> 15
  std::vector<os::ProcessEntry> table{entry(1, 0),   entry(10, 1),  entry(11, 10), entry(12, 11), entry(13, 10),
                                      entry(14, 10), entry(15, 14), entry(20, 1),  entry(21, 20)};
  CHECK(pids(os::descendants(table, 10)) == std::vector<pid_t>{11, 12, 13, 14, 15});
  CHECK(pids(os::descendants(table, 10, {14})) == std::vector<pid_t>{11, 12, 13});
  CHECK(pids(os::descendants(table, 20)) == std::vector<pid_t>{21});
  CHECK(os::descendants(table, 12).empty());
  CHECK(os::descendants(table, 99).empty());
}

TEST_CASE("this process's table entry, environment and command line read from /proc") {
  auto self = os::read_process(::getpid());
  REQUIRE(self);
  CHECK(self->ppid == ::getppid());
  CHECK(self->start_ticks > 0);
  CHECK_FALSE(self->zombie());
  bool found = false;
  for (const auto& e : os::read_process_table()) found = found || e.pid == ::getpid();
  CHECK(found);
  CHECK(os::environ_value(::getpid(), "PATH").has_value());
  CHECK_FALSE(os::environ_value(::getpid(), "DDP_NO_SUCH_VARIABLE_HERE").has_value());
  CHECK_FALSE(os::command_line(::getpid()).empty());
  CHECK(os::command_line(::getpid(), 5).size() <= 5);
}

TEST_CASE("cgroup v2 lookups: the mount in mountinfo and the path in /proc/self/cgroup") {
  const std::string hybrid =
      "30 23 0:26 / /sys/fs/cgroup ro,nosuid shared:9 - tmpfs tmpfs ro,mode=755\n"
      "31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate\n"
      "32 30 0:28 / /sys/fs/cgroup/memory rw shared:11 - cgroup cgroup rw,memory\n";
  CHECK(os::cgroup2_mount(hybrid) == "/sys/fs/cgroup/unified");
  CHECK(os::cgroup2_mount("25 1 0:22 / /sys/fs/cgroup rw shared:4 - cgroup2 cgroup2 rw\n") == "/sys/fs/cgroup");
  CHECK(os::cgroup2_mount("25 1 0:22 / /my\\040cgroups rw - cgroup2 none rw\n") == "/my cgroups");
  CHECK_FALSE(os::cgroup2_mount("32 30 0:28 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"));
  CHECK(os::cgroup2_path("4:memory:/x\n0::/user.slice/session-3.scope\n") == "/user.slice/session-3.scope");
  CHECK(os::cgroup2_path("0::/\n") == "/");
  CHECK_FALSE(os::cgroup2_path("4:memory:/x\n"));
}

TEST_CASE("the leftovers notice names each process, how it ended, and shortens a long list") {
  contain::SweepReport r;
  CHECK(contain::leftover_notice(r).empty());
  contain::Leftover a{entry(812, 1), 0, "sleep 1000"};
  contain::Leftover b{entry(813, 1), std::nullopt, "helper"};
  r.stopped.push_back(a);
  r.killed.push_back(b);
  r.kill_after_s = 5;
  CHECK(contain::leftover_notice(r) ==
        "2 processes outlived their workers; ended by SIGTERM: pid 812 'sleep 1000' (rank 0); killed by SIGKILL "
        "after 5.0 s: pid 813 'helper' (from an unknown worker)");
  for (int i = 0; i < 10; ++i) r.stopped.push_back(a);
  CHECK_THAT(contain::leftover_notice(r), Catch::Contains("12 processes") && Catch::Contains("and 5 more"));
  contain::SweepReport one;
  one.remaining.push_back(a);
  CHECK_THAT(contain::leftover_notice(one), Catch::StartsWith("1 process outlived its workers; still there 10 s"));
}

TEST_CASE("a process handle signals the process it was opened on, and knows when it ended") {
  Background child({"sleep", "30"});
  auto seen = os::read_process(child.pid());
  REQUIRE(seen);
  auto handle = os::ProcessHandle::open(*seen);
  REQUIRE(handle);
  CHECK_FALSE(handle->ended());
  os::ProcessEntry reused = *seen;  // the same pid, another start: another process by now
  reused.start_ticks += 1;
  CHECK_FALSE(os::ProcessHandle::open(reused));
  CHECK(handle->signal(SIGKILL));
  CHECK(wait_until([&] { return handle->ended(); }, 10s));
}

TEST_CASE("as a subreaper, an orphan that left its session comes back to this process and is reaped") {
  // In a forked child: the subreaper bit stays with it.
  TempDir dir;
  const pid_t tester = ::fork();
  REQUIRE(tester >= 0);
  if (tester == 0) {
    if (!os::become_subreaper()) ::_exit(10);
    os::SpawnSpec spec;
    spec.executable = "/bin/sh";
    spec.argv = {"sh", "-c", "setsid sh -c 'echo $$ > " + (dir / "orphan") + "; sleep 0.3' & exit 0"};
    spec.env = environment_with({});
    os::ChildRegistry children;
    const pid_t sh = children.spawn(spec);
    children.wait(sh);
    const pid_t orphan = read_pid(dir / "orphan");
    if (orphan <= 0) ::_exit(11);
    auto e = os::read_process(orphan);
    if (!e || e->ppid != ::getpid()) ::_exit(12);  // adopted, not init's
    if (children.pids().count(orphan)) ::_exit(13);
    std::vector<pid_t> reaped;
    for (int i = 0; i < 500 && reaped.empty(); ++i) {
      reaped = children.reap_orphans();
      ::usleep(10000);
    }
    ::_exit(reaped == std::vector<pid_t>{orphan} && !os::read_process(orphan) ? 0 : 14);
  }
  int status = 0;
  REQUIRE(::waitpid(tester, &status, 0) == tester);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("a worker's child that left its session, ignoring SIGTERM and SIGHUP, ends with the attempt") {
  TempDir dir;
  boost::asio::io_context loop;
  os::ChildRegistry children;
  contain::Containment containment(cli::ContainmentRequest::kSubreaper, children);
  os::Watchdog watchdog(children, containment.watchdog_sweep());
  supervise::SupervisorConfig config;
  config.shutdown_timeout_s = 1;
  supervise::StopSignals signals(loop, config.stop_signals, config.forward_signals);
  supervise::Supervisor supervisor(loop, children, watchdog, config, signals,
                                   {nullptr, nullptr, nullptr, nullptr, &containment});
  worker::WorkerLaunch l;
  l.spawn.executable = "/bin/sh";
  l.spawn.argv = {"sh", "-c",
                  "setsid sh -c 'trap \"\" TERM HUP; echo $$ > " + (dir / "helper") +
                      "; while :; do sleep 0.1; done' </dev/null >/dev/null 2>&1 & "
                      "while [ ! -s " +
                      (dir / "helper") + " ]; do sleep 0.02; done; exit 0"};
  l.spawn.env = environment_with({{"RANK", "0"}});
  l.stdout_to_console = false;
  l.stderr_to_console = false;
  std::vector<worker::WorkerLaunch> launches;
  launches.push_back(std::move(l));
  auto result = supervisor.run_attempt(std::move(launches));
  CHECK(result.kind == report::AttemptResult::Kind::kSucceeded);
  const pid_t helper = read_pid(dir / "helper");
  REQUIRE(helper > 0);
  CHECK_FALSE(process_alive(helper));  // gone before run_attempt returned
  // Its environment carried the job's token: the notice named its rank (checked by the e2e tests).
}

TEST_CASE(
    "containment=cgroup makes the job's cgroup where the machine allows one, else a usage error saying what to use") {
  // Only meaningful where this machine has no cgroup v2 this user may write to.
  const os::OwnCgroup own = os::own_cgroup();
  os::ChildRegistry children;
  if (own.dir && ::access(own.dir->c_str(), W_OK) == 0) {
    contain::Containment c(cli::ContainmentRequest::kCgroup, children);
    CHECK(c.uses_cgroup());
    CHECK_THAT(c.describe(), Catch::Contains("containment: cgroup " + *own.dir + "/ddp-launch-"));
    return;
  }
  try {
    contain::Containment c(cli::ContainmentRequest::kCgroup, children);
    FAIL("no usage error");
  } catch (const LaunchError& e) {
    CHECK(e.exit_code() == exit_code::kUsage);
    CHECK_THAT(e.what(), Catch::Contains("--containment=subreaper"));
  }
}
