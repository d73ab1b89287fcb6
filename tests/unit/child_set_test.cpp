// os::ChildSet on real shell children: output and ends on the loop, the stop escalation (ask,
// grace, SIGKILL; kill at once), the drain of a pipe a grandchild holds, close_output, the
// two-step start; os::run_to_end and the waits of child_events (a folder watch).
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>
#include <map>
#include <string>

#include <boost/asio/io_context.hpp>

#include "launcher/base/launch_error.hpp"
#include "launcher/os/child_events.hpp"
#include "launcher/os/child_set.hpp"
#include "launcher/os/run_to_end.hpp"
#include "tests/support/test_support.hpp"

using namespace ddp::launch;
using namespace std::chrono_literals;
using ddp::test::Background;
using ddp::test::file_exists;
using ddp::test::TempDir;

namespace {

// Children of `sh -c`, their output and ends collected per child.
struct Shells {
  boost::asio::io_context loop;
  std::map<size_t, std::string> out, err;
  std::map<size_t, os::ExitStatus> ended;
  std::map<size_t, int> streams_ended;
  os::ChildRegistry children;
  os::ChildSet set{loop, children};

  size_t start(const std::string& script, bool with_stdin = false) {
    os::SpawnSpec spec{"/bin/sh", {"sh", "-c", script}, ddp::test::environment_with({})};
    const size_t id = set.size();
    os::ChildEvents events;
    events.data = [this, id](int stream, std::string_view chunk) { (stream == 1 ? out : err)[id] += chunk; };
    events.end = [this, id](int) { ++streams_ended[id]; };
    events.exited = [this, id](const os::ExitStatus& st) { ended[id] = st; };
    set.add(spec, std::move(events), with_stdin);
    set.spawn(id, spec);
    return id;
  }
  void run() {
    set.read_output();
    while (set.running_count() > 0 || set.output_open()) loop.run_one();
  }
};

}  // namespace

TEST_CASE("a child set reads every child's output on the loop and reaps each on SIGCHLD") {
  Shells s;
  const size_t a = s.start("echo a-out; echo a-err >&2; exit 3");
  const size_t b = s.start("sleep 0.2; echo b-out");
  s.run();
  CHECK(s.out[a] == "a-out\n");
  CHECK(s.err[a] == "a-err\n");
  CHECK(s.out[b] == "b-out\n");
  CHECK(s.ended[a].code == 3);
  CHECK(s.ended[b].success());
  CHECK(s.streams_ended[a] == 2);
  CHECK(s.set.bytes_read(a) == 12);
}

TEST_CASE("a child set's stop: a child that ignores the ask is SIGKILLed after the grace") {
  Shells s;
  const size_t stubborn = s.start("trap '' TERM; echo ready; while :; do sleep 0.05; done");
  s.set.read_output();
  while (s.out[stubborn].empty()) s.loop.run_one();
  size_t late = 0;
  s.set.begin_stop(SIGTERM, 300ms, [&](size_t running) { late = running; });
  s.run();
  CHECK(late == 1);
  CHECK(s.ended[stubborn].signaled);
  CHECK(s.ended[stubborn].signal == SIGKILL);
}

TEST_CASE("a child set's stop may close stdin instead, with last words; kill() ends it at once") {
  Shells s;
  const size_t reader = s.start("read line; echo \"got $line\"; cat >/dev/null; echo eof", true);
  s.set.read_output();
  s.set.begin_stop([&](size_t id) { s.set.close_stdin(id, "why\n"); }, 10s, {});
  s.run();
  CHECK(s.out[reader] == "got why\neof\n");
  CHECK(s.ended[reader].success());

  Shells k;
  const size_t stubborn = k.start("trap '' TERM; echo ready; while :; do sleep 0.05; done");
  k.set.read_output();
  while (k.out[stubborn].empty()) k.loop.run_one();
  k.set.begin_stop(SIGTERM, 60s, {});
  k.set.kill();  // the second stop signal
  const auto before = std::chrono::steady_clock::now();
  k.run();
  CHECK(std::chrono::steady_clock::now() - before < 10s);
  CHECK(k.ended[stubborn].signal == SIGKILL);
}

TEST_CASE("a child set stops reading a pipe its child's child holds once the drain is over") {
  Shells s;
  const size_t parent = s.start("echo parent; (sleep 30 &) ; exit 0");  // the sleep keeps the pipes
  s.set.read_output();
  while (s.set.running_count() > 0) s.loop.run_one();
  CHECK(s.set.output_open(parent));
  s.set.drain_after(200ms);
  s.run();
  CHECK(s.out[parent] == "parent\n");
  CHECK(s.streams_ended[parent] == 2);
  os::signal_group(s.set.pid(parent), SIGKILL);  // the sleep
}

TEST_CASE("a child set's close_output delivers what the pipes hold, then ends them without waiting") {
  Shells s;
  const size_t parent = s.start("echo before-exit; (sleep 30 &) ; exit 0");
  s.set.read_output();
  bool closed = false;
  std::string at_close;
  while (s.set.running_count() > 0) s.loop.run_one();
  s.set.close_output(parent, [&] {
    closed = true;
    at_close = s.out[parent];
  });
  s.run();
  CHECK(closed);
  CHECK(at_close == "before-exit\n");
  CHECK(!s.set.output_open(parent));
  os::signal_group(s.set.pid(parent), SIGKILL);  // the sleep
}

TEST_CASE("a child set starts children in two steps; one whose exec fails is abandoned, the others run on") {
  Shells shells;
  os::SpawnSpec good{"/bin/sh", {"sh", "-c", "echo ran"}, ddp::test::environment_with({})};
  os::SpawnSpec bad{"/nonexistent/program", {"program"}, ddp::test::environment_with({})};
  const size_t a = shells.set.add(good, {[&](int, std::string_view chunk) { shells.out[0] += chunk; },
                                         {},
                                         [&](const os::ExitStatus& st) { shells.ended[0] = st; }});
  const size_t b = shells.set.add(bad, {});
  os::StartedWorker first = shells.set.start(a, good);
  os::StartedWorker second = shells.set.start(b, bad);
  CHECK(shells.set.pid(b) > 0);
  shells.set.confirm(a, first);
  CHECK_THROWS_AS(shells.set.confirm(b, second), LaunchError);
  CHECK(shells.set.pid(b) == -1);  // reaped by confirm, never signalled or waited for again
  CHECK_FALSE(shells.set.running(b));
  shells.run();
  CHECK(shells.out[0] == "ran\n");
  REQUIRE(shells.ended.count(a) == 1);
  CHECK(shells.ended.at(a).success());
  CHECK(shells.ended.count(b) == 0);
}

TEST_CASE("a child one set releases is another's: the first never signals or reaps it, the other reports its end") {
  Shells s;
  const size_t id = s.start("sleep 0.3; exit 4");
  const pid_t pid = s.set.pid(id);
  s.set.release(id);  // a standby adopted as a worker
  CHECK(s.set.pid(id) == -1);
  CHECK(s.set.running_count() == 0);
  s.set.kill();  // the first set's stop no longer reaches it
  std::optional<os::ExitStatus> ended;
  os::ChildSet taker{s.loop, s.children};
  os::SpawnSpec adopted;  // the taker's pipes are not the child's: never read here
  os::ChildEvents events;
  events.exited = [&](const os::ExitStatus& st) { ended = st; };
  const size_t taken = taker.add(adopted, std::move(events));
  taker.started(taken, pid);
  CHECK(s.children.pids().count(pid) == 1);  // still a child of the registry, never an orphan
  while (!ended) s.loop.run_one();
  CHECK(ended->code == 4);  // not SIGKILLed by the first set
  CHECK(s.ended.count(id) == 0);
  CHECK(s.children.pids().count(pid) == 0);
}

TEST_CASE(
    "run_to_end: helpers run at once to their ends; a late one is killed and reaped, one that cannot start says why") {
  TempDir dir;
  const auto env = ddp::test::environment_with({});
  const std::vector<os::SpawnSpec> specs = {
      {"/bin/sh", {"sh", "-c", "exit 3"}, env},
      {"/bin/sh", {"sh", "-c", "touch " + (dir / "late") + "; exec sleep 30"}, env},
      {"/nonexistent/tool", {"tool"}, env},
      {"/bin/sh", {"sh", "-c", "true"}, env}};
  os::ChildRegistry children;
  const std::vector<os::RunEnd> ends = os::run_to_end(children, specs, std::chrono::milliseconds(1500));
  REQUIRE(ends.size() == 4);
  REQUIRE(ends[0].status);
  CHECK(ends[0].status->code == 3);
  CHECK(ends[1].timed_out);
  CHECK_FALSE(ends[1].status);
  CHECK(file_exists(dir / "late"));
  CHECK_FALSE(ends[2].error.empty());
  REQUIRE(ends[3].status);
  CHECK(ends[3].status->success());
  // Every one was reaped: no child of the registry is left.
  CHECK(children.pids().empty());
}

TEST_CASE("a folder watch turns readable when a name appears in the folder; the wait returns for it") {
  TempDir dir;
  const os::FolderWatch watch(dir.path());
  REQUIRE(watch.fd().valid());
  Background touch({"/bin/sh", "-c", "sleep 0.2; touch " + (dir / "socket")});
  os::wait_readable({&watch.fd()}, std::chrono::milliseconds(60000));
  CHECK(file_exists(dir / "socket"));  // it returned because the name appeared, not at the limit
  watch.drain();
  touch.wait(std::chrono::seconds(10));
}
