// etcd_store_bench: store_bench's rendezvous round (K simulated agents: ADD a counter, SET
// its own key, WAIT for all K keys, read them all) and single-client SET/GET throughput
// through the launcher's EtcdStore, against an etcd that scripts/bench-store.sh starts.
// Torch-free sibling of store_bench; prints tab-separated "figure, median" lines that
// bench-store.sh joins into store_bench's table. EtcdStore blocks, so the agents are
// multiplexed: --threads threads, each with one EtcdStore (one connection, one lease)
// driving its share of the K agents phase by phase. Each round uses a fresh run prefix and
// revokes its leases after (its keys go). CPU figures add etcd's own CPU time (--etcd-pid).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "bench/bench_stats.hpp"
#include "launcher/base/host_port.hpp"
#include "launcher/rendezvous/etcd_store.hpp"

namespace {

using ddp::bench::Clock;
using ddp::bench::cpu_seconds;
using ddp::bench::median;
using ddp::bench::since;
using ddp::launch::rendezvous::EtcdStore;
namespace etcd = ddp::launch::etcd;

constexpr std::chrono::milliseconds kTimeout{120000};
constexpr int64_t kLeaseTtlS = 60;

// utime + stime of another process (etcd) from /proc/PID/stat; 0 when pid <= 0 or unreadable.
double process_cpu_seconds(int pid) {
  if (pid <= 0) return 0;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; fields >> field; ++i) {  // field 3 is the state; 14 utime, 15 stime
    if (i == 14) utime = std::stod(field);
    if (i == 15) {
      stime = std::stod(field);
      break;
    }
  }
  return (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

struct Round {
  double round_s = 0;
  double round_cpu_s = 0;  // this process and etcd
};

std::unique_ptr<EtcdStore> open_store(const etcd::EtcdOptions& o, const std::string& prefix, const std::string& name) {
  auto s = std::make_unique<EtcdStore>(o, prefix, name, kLeaseTtlS, kLeaseTtlS);
  s->open(etcd::Clock::now() + kTimeout);
  return s;
}

Round etcd_round(const etcd::EtcdOptions& o, const std::string& prefix, int agents, int threads, int etcd_pid) {
  std::vector<std::string> keys;
  for (int i = 0; i < agents; ++i) keys.push_back(fmt::format("rdzv/node/{}", i));
  threads = std::max(1, std::min(threads, agents));
  std::vector<std::unique_ptr<EtcdStore>> stores;
  for (int t = 0; t < threads; ++t) stores.push_back(open_store(o, prefix, fmt::format("conn{}", t)));
  std::atomic<int> bad{0};
  std::atomic<int> failed{0};
  std::string failure;
  std::mutex failure_mutex;
  const auto go = Clock::now();
  const double cpu_at_go = cpu_seconds() + process_cpu_seconds(etcd_pid);
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t)
    running.emplace_back([&, t] {
      try {
        EtcdStore& s = *stores[static_cast<size_t>(t)];
        for (int i = t; i < agents; i += threads) {
          s.add("rdzv/count", 1);
          s.set(keys[static_cast<size_t>(i)],
                fmt::format("{{\"node\":{},\"addr\":\"10.0.0.{}\",\"nproc\":8}}", i, i % 250));
        }
        for (int i = t; i < agents; i += threads) {
          if (!s.wait(keys, kTimeout)) throw std::runtime_error("wait timed out");
          auto values = s.multi_get(keys, kTimeout);
          if (values.size() != keys.size() || values.back().empty()) ++bad;
        }
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (failed++ == 0) failure = e.what();
      }
    });
  for (auto& t : running) t.join();
  Round r;
  r.round_s = since(go);
  r.round_cpu_s = cpu_seconds() + process_cpu_seconds(etcd_pid) - cpu_at_go;
  for (auto& s : stores) s->close();  // the last one out revokes the job's lease: the keys go
  if (failed) throw std::runtime_error("an agent failed: " + failure);
  if (bad) throw std::runtime_error("an agent read wrong values");
  return r;
}

std::pair<double, double> throughput(const etcd::EtcdOptions& o, const std::string& prefix, int ops) {
  auto s = open_store(o, prefix, "tp");
  const std::string value(32, 'v');
  auto t = Clock::now();
  for (int i = 0; i < ops; ++i) s->set(fmt::format("tp/{}", i), value);
  const double set_rate = ops / since(t);
  t = Clock::now();
  for (int i = 0; i < ops; ++i)
    if (s->get(fmt::format("tp/{}", i), kTimeout).size() != value.size()) throw std::runtime_error("bad value");
  const double get_rate = ops / since(t);
  s->close();
  return {set_rate, get_rate};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"etcd_store_bench: store_bench's rendezvous round through EtcdStore against a running etcd"};
  std::string endpoint;
  std::vector<int> agents{8, 64, 256, 1024, 4096};
  int repeats = 5;
  int ops = 20000;
  int threads = 4;
  int max_agents = 256;
  int etcd_pid = 0;
  app.add_option("--endpoint", endpoint, "etcd's client address, HOST:PORT (plain HTTP)")->required();
  app.add_option("--agents", agents, "agent counts K")->delimiter(',');
  app.add_option("--threads", threads, "threads (one EtcdStore each) driving the multiplexed agents");
  app.add_option("--max-agents", max_agents, "largest K run (each agent reads all K keys: O(K^2) requests)");
  app.add_option("--repeats", repeats, "runs per figure");
  app.add_option("--ops", ops, "SETs and GETs per throughput run");
  app.add_option("--etcd-pid", etcd_pid, "etcd's process id: its CPU time is added to the CPU figures");
  CLI11_PARSE(app, argc, argv);

  etcd::EtcdOptions o;
  try {
    const ddp::launch::HostPort hp = ddp::launch::parse_host_port(endpoint, 2379);
    o.endpoints.push_back({hp.host, hp.port});
  } catch (const ddp::launch::HostPortError& e) {
    fmt::print(stderr, "etcd_store_bench: --endpoint: {}\n", e.what());
    return 2;
  }
  o.request_timeout = std::chrono::milliseconds(30000);

  std::map<std::string, std::vector<double>> samples;
  std::vector<std::string> order;
  auto record = [&](const std::string& figure, double v) {
    if (!samples.count(figure)) order.push_back(figure);
    samples[figure].push_back(v);
  };
  const std::string run = fmt::format("/ddp-launch/bench-{}/", ::getpid());
  try {
    for (int rep = 0; rep < repeats; ++rep) {
      for (int k : agents) {
        if (k > max_agents) continue;
        const Round r = etcd_round(o, fmt::format("{}r{}k{}/", run, rep, k), k, threads, etcd_pid);
        record(fmt::format("round K={} (s)", k), r.round_s);
        record(fmt::format("round K={} (CPU s)", k), r.round_cpu_s);
        fmt::print(stderr, "etcd: K={} round {:.3f} s\n", k, r.round_s);
      }
      auto [set_rate, get_rate] = throughput(o, fmt::format("{}r{}tp/", run, rep), ops);
      record("SET, 1 client (ops/s)", set_rate);
      record("GET, 1 client (ops/s)", get_rate);
      fmt::print(stderr, "etcd run {}/{} done\n", rep + 1, repeats);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "etcd_store_bench: {}\n", e.what());
    return 1;
  }
  for (const auto& figure : order) {
    const double m = median(samples[figure]);
    const bool rate = figure.find("ops/s") != std::string::npos;
    fmt::print("{}\t{}\n", figure, rate ? fmt::format("{:.0f}", m) : fmt::format("{:.4f}", m));
  }
  return 0;
}
