// The worker health checks' pure parts: torch's file timer requests as its FileTimerClient
// writes them (version 1), the timer table's release, replacement and expiry as torch's
// FileTimerServer has them, /proc's state and parent fields, the TORCHELASTIC_* variables, the
// health check's liveness answer; and the named pipe on a real loop (lines, overlong lines).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "launcher/base/launch_error.hpp"
#include "launcher/cli/worker_health_env.hpp"
#include "launcher/os/fifo_lines.hpp"
#include "launcher/os/proc_state.hpp"
#include "launcher/status/health_check.hpp"
#include "launcher/supervise/worker_timers.hpp"
#include "tests/support/files.hpp"

using namespace ddp::launch;
using supervise::TimerRequest;
using supervise::WorkerTimers;

namespace {

TimerRequest request(pid_t pid, const std::string& scope, double expiration, int signal = 9) {
  return TimerRequest{pid, scope, expiration, signal};
}

}  // namespace

TEST_CASE("file timers: a request as torch 2.15's FileTimerClient writes it") {
  auto parsed = supervise::parse_timer_request(
      R"({"version": 1, "pid": 4242, "scope_id": "load_batch", "expiration_time": 1796606513.25, "signal": 9})");
  REQUIRE(std::holds_alternative<TimerRequest>(parsed));
  const TimerRequest& r = std::get<TimerRequest>(parsed);
  CHECK(r.pid == 4242);
  CHECK(r.scope == "load_batch");
  CHECK(r.expiration_unix_s == 1796606513.25);
  CHECK(r.signal == 9);
  CHECK_FALSE(r.release());
  auto release = supervise::parse_timer_request(
      R"({"version": 1, "pid": 4242, "scope_id": "load_batch", "expiration_time": -1, "signal": 0})");
  REQUIRE(std::holds_alternative<TimerRequest>(release));
  CHECK(std::get<TimerRequest>(release).release());
}

TEST_CASE("file timers: malformed and hostile requests are refused with a reason") {
  const std::string long_scope(supervise::kMaxScope + 1, 'x');
  for (const std::string& line :
       {std::string("not json"), std::string("[1, 2]"),
        std::string(R"({"version": 2, "pid": 1, "scope_id": "a", "expiration_time": 1, "signal": 9})"),
        std::string(R"({"version": 1, "pid": -5, "scope_id": "a", "expiration_time": 1, "signal": 9})"),
        std::string(R"({"version": 1, "pid": "12", "scope_id": "a", "expiration_time": 1, "signal": 9})"),
        std::string(R"({"version": 1, "pid": 12, "scope_id": 7, "expiration_time": 1, "signal": 9})"),
        std::string(R"({"version": 1, "pid": 12, "scope_id": "a", "expiration_time": "soon", "signal": 9})"),
        std::string(R"({"version": 1, "pid": 12, "scope_id": "a", "expiration_time": 1, "signal": 99})"),
        R"({"version": 1, "pid": 12, "scope_id": ")" + long_scope + R"(", "expiration_time": 1, "signal": 9})"}) {
    INFO(line.substr(0, 100));
    auto parsed = supervise::parse_timer_request(line);
    REQUIRE(std::holds_alternative<std::string>(parsed));
    CHECK_FALSE(std::get<std::string>(parsed).empty());
  }
}

TEST_CASE("file timers: set, replace, release; the earliest deadline first") {
  WorkerTimers t;
  CHECK(t.apply(request(10, "a", 105), 100));
  CHECK(t.apply(request(10, "b", 103), 100));
  CHECK(t.apply(request(11, "a", 104), 100));
  CHECK(t.next_expiry() == 103.0);
  CHECK(t.apply(request(10, "b", 110), 101));  // the same scope again: replaced
  CHECK(t.next_expiry() == 104.0);
  CHECK(t.apply(request(11, "a", -1, 0), 101));  // released
  CHECK(t.next_expiry() == 105.0);
  CHECK(t.size() == 2);
  CHECK(t.take_expired(104.9).empty());
}

TEST_CASE("file timers: at expiry, the earliest timer with a signal is acted on and the process's others go") {
  WorkerTimers t;
  t.apply(request(10, "outer", 120, 15), 100);
  t.apply(request(10, "inner", 110, 9), 100);
  t.apply(request(10, "later", 500, 9), 100);
  t.apply(request(11, "quiet", 110, 0), 100);  // no signal: named once, dropped
  t.apply(request(12, "fine", 200, 9), 100);
  const auto expired = t.take_expired(130);
  REQUIRE(expired.size() == 2);
  CHECK(expired[0].pid == 10);
  CHECK(expired[0].scope == "inner");
  CHECK(expired[0].signal == 9);
  CHECK(expired[0].after_s == Approx(10));
  CHECK(expired[1].pid == 11);
  CHECK(expired[1].signal == 0);
  CHECK(t.size() == 1);  // pid 12's only
  CHECK(t.next_expiry() == 200.0);
  t.forget(12);
  CHECK(t.size() == 0);
  CHECK_FALSE(t.next_expiry());
}

TEST_CASE("file timers: the table is bounded") {
  WorkerTimers t;
  for (size_t i = 0; i < WorkerTimers::kMaxTimers; ++i) REQUIRE(t.apply(request(10, std::to_string(i), 1e9), 0));
  CHECK_FALSE(t.apply(request(10, "one more", 1e9), 0));
  CHECK(t.apply(request(10, "0", -1, 0), 0));  // a release is always taken
  CHECK(t.apply(request(10, "one more", 1e9), 0));
}

TEST_CASE("/proc/PID/stat: the state and the parent after the last parenthesis") {
  CHECK(os::parse_proc_state("4242 (python3) D 4200 4242 ...") == 'D');
  CHECK(os::parse_proc_state("4242 (we (ird) name) S 1 2 3") == 'S');
  CHECK(os::parse_proc_parent("4242 (we (ird) name) S 4200 2 3") == pid_t(4200));
  CHECK_FALSE(os::parse_proc_state("garbage"));
  CHECK_FALSE(os::parse_proc_parent("4242 (x)"));
  CHECK(os::proc_state(::getpid()) == 'R');
  CHECK(os::proc_parent(::getpid()) == ::getppid());
  CHECK_FALSE(os::proc_state(0x3fffffff));
}

TEST_CASE("TORCHELASTIC_* worker health variables, as torchrun 2.15 reads them") {
  cli::WorkerHealthSpec none = cli::worker_health_spec({}, "u");
  CHECK(none.timer_file.empty());
  CHECK(none.d_state_timeout_s == 0);
  CHECK_FALSE(none.health_check_port);
  CHECK(cli::worker_health_spec({{"TORCHELASTIC_ENABLE_FILE_TIMER", "true"}}, "u").timer_file.empty());  // only "1"
  CHECK(cli::worker_health_spec({{"TORCHELASTIC_ENABLE_FILE_TIMER", "1"}, {"TMPDIR", "/scratch"}}, "u1").timer_file ==
        "/scratch/watchdog_timer_u1");
  CHECK(cli::worker_health_spec({{"TORCHELASTIC_ENABLE_FILE_TIMER", "1"}, {"TORCHELASTIC_TIMER_FILE", "/x/p"}}, "u")
            .timer_file == "/x/p");
  CHECK(cli::worker_health_spec({{"TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT", "2.5"}}, "u").d_state_timeout_s == 2.5);
  CHECK(cli::worker_health_spec({{"TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT", "-3"}}, "u").d_state_timeout_s == 0);
  CHECK(cli::worker_health_spec({{"TORCHELASTIC_HEALTH_CHECK_PORT", "8080"}}, "u").health_check_port == 8080);
  CHECK_THROWS_WITH(cli::worker_health_spec({{"TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT", "5s"}}, "u"),
                    Catch::Contains("is not a number of seconds"));
  CHECK_THROWS_WITH(cli::worker_health_spec({{"TORCHELASTIC_HEALTH_CHECK_PORT", "70000"}}, "u"),
                    Catch::Contains("is not a port"));
}

TEST_CASE("health check: liveness from the freshest progress of a running worker, else now") {
  report::StatusBoard b;
  auto answer = [&b](double now) {
    const http::Response r = status::liveness_answer(b, now);
    return std::make_pair(r.status, nlohmann::json::parse(r.body));
  };
  auto [idle_status, idle] = answer(1000);
  CHECK(idle_status == 200);
  CHECK(idle["alive_time"] == 1000);
  CHECK(idle["state"] == "between_attempts");
  b.set_workers({{0, 0}, {1, 1}});
  CHECK(answer(1000).second["state"] == "no_progress_records");
  b.ranks[0].fed = b.ranks[1].fed = true;
  b.ranks[0].since_progress_s = 70;
  b.ranks[1].since_progress_s = 12;
  auto [live_status, live] = answer(1000);
  CHECK(live_status == 200);
  CHECK(live["alive_time"] == 988);
  CHECK(live["state"] == "progressing");
  b.ranks[1].since_progress_s = 90;
  auto [stalled_status, stalled] = answer(1000);
  CHECK(stalled_status == 503);
  CHECK(stalled["state"] == "stalled");
  b.ranks[0].state = b.ranks[1].state = report::WorkerState::kSucceeded;  // the exit barrier: alive
  CHECK(answer(1000).first == 200);
}

TEST_CASE("named pipe: whole lines on the loop, an overlong one dropped and named, removed at the end") {
  ddp::test::TempDir dir;
  const std::string path = dir.path() + "/timers";
  boost::asio::io_context loop;
  std::vector<std::string> lines, dropped;
  {
    os::FifoLines pipe(loop, path, 64);
    pipe.listen([&](std::string_view line, bool too_long) { (too_long ? dropped : lines).emplace_back(line); });
    const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);
    REQUIRE(fd >= 0);
    const std::string data = "first\n" + std::string(200, 'z') + "\nsecond\nthi";
    REQUIRE(::write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size()));
    REQUIRE(::write(fd, "rd\n", 3) == 3);
    ::close(fd);  // the last writer goes: the pipe must not read as ended
    while (lines.size() < 3) loop.run_one();
    CHECK(lines == std::vector<std::string>{"first", "second", "third"});
    REQUIRE(dropped.size() == 1);
    CHECK(dropped[0].rfind("zzz", 0) == 0);
  }
  CHECK_FALSE(ddp::test::file_exists(path));
  ddp::test::write_file(path, "not a pipe");
  CHECK_THROWS_WITH(os::FifoLines(loop, path, 64), Catch::Contains("is not a named pipe"));
  CHECK(ddp::test::read_file(path) == "not a pipe");
}

TEST_CASE("named pipe: what gone writers left is discarded unread; later lines still come") {
  ddp::test::TempDir dir;
  const std::string path = dir.path() + "/timers";
  boost::asio::io_context loop;
  std::vector<std::string> lines;
  os::FifoLines pipe(loop, path, 64);
  auto write = [&path](const std::string& data) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);
    REQUIRE(fd >= 0);
    REQUIRE(::write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size()));
    ::close(fd);
  };
  pipe.listen([&](std::string_view line, bool) { lines.emplace_back(line); });
  write("one\n");
  while (lines.empty()) loop.run_one();
  pipe.listen(nullptr);
  write("stale\nhalf a li");
  pipe.discard_unread();
  pipe.listen([&](std::string_view line, bool) { lines.emplace_back(line); });
  write("fresh\n");
  while (lines.size() < 2) loop.run_one();
  CHECK(lines == std::vector<std::string>{"one", "fresh"});
}
