// store_hostile_bench: the agent store's host under hostile load, on loopback. A forked
// child hosts a StoreServer (holding one 1 MiB value); the parent measures the child's RSS
// (current and peak) and a well-behaved client's PING latency, first with no other client,
// then while one client sends 100,000-key CHECKs back to back, then while N hostile
// clients (that one included) attack for a fixed time: oversized frames before HELLO,
// small reads of the 1 MiB value whose replies are never read, MULTI_GETs whose reply
// would exceed the frame limit, silent connections, and 100,000-key CHECKs. Torch-free:
// built with the tests (target store_hostile_bench), run by scripts/bench-store-hostile.sh.
// A benchmark, not a test. Uses only the store API that predates the limits, so it can be
// built against an older launcher/store for a before/after comparison.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "launcher/store/codec.hpp"
#include "launcher/store/server.hpp"
#include "launcher/store/tcp_client.hpp"
#include "tests/store/raw_peer.hpp"

using namespace ddp::launch::store;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using ddp::launch::store::test::RawPeer;

namespace {

[[noreturn]] void serve(int port_pipe) {
  ServerOptions o;
  o.host = "127.0.0.1";
  StoreServer server(o);
  server.start();
  {
    TcpStoreClient c("127.0.0.1", server.port());
    c.set("big", std::string(1 << 20, 'x'));
    c.close_gracefully();
  }
  const uint16_t port = server.port();
  (void)!::write(port_pipe, &port, sizeof(port));
  ::close(port_pipe);
  for (;;) ::pause();  // until SIGKILL
}

double rss_mib(pid_t pid, const char* field) {  // VmRSS or VmHWM of pid
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field, 0) == 0) return std::atof(line.c_str() + std::string(field).size() + 1) / 1024.0;
  return -1;
}

Request request(Op op, std::vector<std::string> keys) {
  Request q;
  q.op = op;
  q.keys = std::move(keys);
  q.timeout_ms = 1000;
  return q;
}

// One hostile client: repeats its attack (reconnecting when dropped) until stop.
void attack(int kind, uint16_t port, const std::atomic<bool>& stop) {
  std::vector<std::string> many;
  if (kind == 4)
    for (int i = 0; i < 100000; ++i) many.push_back("k/" + std::to_string(i));
  while (!stop) {
    try {
      RawPeer p(port, 4096);
      switch (kind) {
        case 0: {  // a 16 MiB frame announced before HELLO, 8 MiB of it sent, then held
          p.read_frame(1s);
          std::string header{0, static_cast<char>(0xff), 0, 0};
          if (p.send(header) && p.send(std::string(8 << 20, 'a'))) p.drain(3s);
          break;
        }
        case 1: {  // small reads of the 1 MiB value, replies never read
          p.handshake();
          std::string burst;
          for (int i = 0; i < 200; ++i) burst += encode_request(request(Op::kTryGet, {"big"}));
          p.send(burst);
          p.drain(0ms);
          while (!stop && !p.closed()) std::this_thread::sleep_for(50ms);
          break;
        }
        case 2: {  // a MULTI_GET of the 1 MiB value 20 times, over the frame limit
          p.handshake();
          p.send(encode_request(request(Op::kMultiGet, std::vector<std::string>(20, "big"))));
          p.read_frame(5s);
          break;
        }
        case 3:  // silent: holds a connection until the HELLO deadline
          p.drain(12s);
          break;
        case 4:  // a 100,000-key CHECK, answer read
          p.handshake();
          p.send(encode_request(request(Op::kCheck, many)));
          p.read_frame(30s);
          break;
      }
    } catch (const std::exception&) {
    }
    std::this_thread::sleep_for(20ms);
  }
}

struct Figures {
  double rss_mib = 0, peak_mib = 0, p50_ms = 0, p99_ms = 0, max_ms = 0;
  int pings = 0, failed = 0;
};

// Pings from a well-behaved client for `seconds`, sampling the host's RSS meanwhile.
Figures measure(pid_t host, uint16_t port, double seconds) {
  Figures f;
  std::vector<double> ms;
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  std::unique_ptr<TcpStoreClient> c;
  while (Clock::now() < end) {
    const auto t0 = Clock::now();
    try {
      if (!c) {
        ClientOptions o;
        o.connect_timeout = 10s;
        o.request_timeout = 10s;
        c = std::make_unique<TcpStoreClient>("127.0.0.1", port, o);
      }
      c->ping();
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    } catch (const StoreError&) {
      ++f.failed;
      c.reset();
    }
    f.rss_mib = std::max(f.rss_mib, rss_mib(host, "VmRSS:"));
    std::this_thread::sleep_for(10ms);
  }
  f.peak_mib = rss_mib(host, "VmHWM:");
  std::sort(ms.begin(), ms.end());
  f.pings = static_cast<int>(ms.size());
  if (!ms.empty()) {
    f.p50_ms = ms[ms.size() / 2];
    f.p99_ms = ms[std::min(ms.size() - 1, ms.size() * 99 / 100)];
    f.max_ms = ms.back();
  }
  return f;
}

void print(const char* label, const Figures& f) {
  std::printf("| %s | %.1f | %.1f | %.2f | %.2f | %.1f | %d | %d |\n", label, f.rss_mib, f.peak_mib, f.p50_ms, f.p99_ms,
              f.max_ms, f.pings, f.failed);
}

}  // namespace

int main(int argc, char** argv) {
  const int hostile = argc > 1 ? std::atoi(argv[1]) : 100;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 6;
  if (hostile < 0 || hostile > 500 || seconds <= 0 || seconds > 60) {
    std::fprintf(stderr, "usage: %s [HOSTILE_CLIENTS (0-500, default 100)] [SECONDS (<= 60, default 6)]\n", argv[0]);
    return 2;
  }
  int fds[2];
  if (::pipe(fds) != 0) return 1;
  const pid_t host = ::fork();
  if (host == 0) {
    ::close(fds[0]);
    serve(fds[1]);
  }
  ::close(fds[1]);
  uint16_t port = 0;
  if (::read(fds[0], &port, sizeof(port)) != sizeof(port)) return 1;
  std::printf(
      "| load | host RSS max (MiB) | host RSS peak (MiB) | PING p50 (ms) | PING p99 (ms) | PING max (ms) | pings | failed |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  print("none", measure(host, port, seconds));
  std::atomic<bool> stop{false};
  std::vector<std::thread> attackers;
  attackers.emplace_back(attack, 4, port, std::cref(stop));  // one big request at a time
  print("100,000-key CHECKs, back to back", measure(host, port, seconds));
  for (int i = 1; i < hostile; ++i) attackers.emplace_back(attack, i % 5, port, std::cref(stop));
  const std::string label = std::to_string(hostile) + " hostile";
  print(label.c_str(), measure(host, port, seconds));
  stop = true;
  ::kill(host, SIGKILL);  // unblocks every attacker's socket
  for (auto& t : attackers) t.join();
  ::waitpid(host, nullptr, 0);
  return 0;
}
