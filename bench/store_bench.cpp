// store_bench: how long K simulated agents (on loopback) take to connect and to finish a
// rendezvous round (ADD a counter, SET its own key, WAIT for all K keys, read them all),
// and single-client SET/GET throughput, for the ddp-launch agent store and for
// c10d::TCPStore (LibTorch 1.13) doing the same work. The agent store's agents are
// multiplexed (one connection each, --threads threads driving them with pipelined
// requests), so the benchmark is not the limit at K = 4096; TCPStore's client blocks, so
// its agents keep a thread each and stop at --c10d-max-agents (say so in the table).
// Runs alternate between the two; prints medians and ratios as a Markdown table.
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "bench/bench_stats.hpp"
#include "launcher/store/codec.hpp"
#include "launcher/store/server.hpp"
#include "launcher/store/tcp_client.hpp"
#include "tests/store/raw_peer.hpp"

namespace {

using ddp::bench::Clock;
using ddp::bench::cpu_seconds;
using ddp::bench::median;
using ddp::bench::since;

// The operations a simulated agent needs, over either store.
class Client {
 public:
  virtual ~Client() = default;
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  virtual void set(const std::string& key, const std::string& value) = 0;
  virtual std::string get(const std::string& key) = 0;
  virtual void wait(const std::vector<std::string>& keys) = 0;
  virtual std::vector<std::string> read_all(const std::vector<std::string>& keys) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::unique_ptr<Client> connect() = 0;
};

constexpr std::chrono::seconds kTimeout{120};

class OursClient : public Client {
 public:
  explicit OursClient(uint16_t port) : c_("127.0.0.1", port, options()) {}
  int64_t add(const std::string& k, int64_t d) override { return c_.add(k, d); }
  void set(const std::string& k, const std::string& v) override { c_.set(k, v); }
  std::string get(const std::string& k) override { return c_.get(k, kTimeout); }
  void wait(const std::vector<std::string>& keys) override {
    if (!c_.wait(keys, kTimeout)) throw std::runtime_error("wait timed out");
  }
  std::vector<std::string> read_all(const std::vector<std::string>& keys) override {
    return c_.multi_get(keys, kTimeout);
  }

 private:
  static ddp::launch::store::ClientOptions options() {
    ddp::launch::store::ClientOptions o;
    o.connect_timeout = kTimeout;
    o.request_timeout = kTimeout;
    return o;
  }
  ddp::launch::store::TcpStoreClient c_;
};

class Ours : public Backend {
 public:
  Ours() : server_(options()) { server_.start(); }
  std::unique_ptr<Client> connect() override { return std::make_unique<OursClient>(server_.port()); }

 private:
  static ddp::launch::store::ServerOptions options() {
    ddp::launch::store::ServerOptions o;
    o.host = "127.0.0.1";
    o.max_connections = 1u << 16;  // lowered to fit the open-file limit
    return o;
  }
  ddp::launch::store::StoreServer server_;

 public:
  uint16_t port() const { return server_.port(); }
};

c10d::TCPStoreOptions c10d_options(uint16_t port, bool is_server) {
  c10d::TCPStoreOptions o;
  o.port = port;
  o.isServer = is_server;
  o.waitWorkers = false;
  o.timeout = kTimeout;
  return o;
}

class C10dClient : public Client {
 public:
  explicit C10dClient(uint16_t port) : s_("127.0.0.1", c10d_options(port, false)) {}
  int64_t add(const std::string& k, int64_t d) override { return s_.add(k, d); }
  void set(const std::string& k, const std::string& v) override { s_.set(k, std::vector<uint8_t>(v.begin(), v.end())); }
  std::string get(const std::string& k) override {
    auto v = s_.get(k);
    return std::string(v.begin(), v.end());
  }
  void wait(const std::vector<std::string>& keys) override { s_.wait(keys, kTimeout); }
  // TCPStore 1.13 has no multiGet: one GET per key, as torchelastic did before PR #124982.
  std::vector<std::string> read_all(const std::vector<std::string>& keys) override {
    std::vector<std::string> out;
    out.reserve(keys.size());
    for (const auto& k : keys) out.push_back(get(k));
    return out;
  }

 private:
  c10d::TCPStore s_;
};

class C10d : public Backend {
 public:
  C10d() : server_("127.0.0.1", c10d_options(0, true)) {}
  std::unique_ptr<Client> connect() override { return std::make_unique<C10dClient>(server_.getPort()); }

 private:
  c10d::TCPStore server_;
};

std::unique_ptr<Backend> make(const std::string& name) {
  if (name == "ours") return std::make_unique<Ours>();
  return std::make_unique<C10d>();
}

struct Round {
  double connect_s = 0;    // all K connected (in parallel)
  double round_s = 0;      // from "go" until the last agent has read every key
  double round_cpu_s = 0;  // CPU time of the process meanwhile
};

Round rendezvous_round(Backend& backend, int agents) {
  std::vector<std::string> keys;
  for (int i = 0; i < agents; ++i) keys.push_back(fmt::format("rdzv/node/{}", i));
  std::mutex m;
  std::condition_variable cv;
  int connected = 0;
  bool go = false;
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  Clock::time_point all_connected, go_time;
  for (int i = 0; i < agents; ++i)
    threads.emplace_back([&, i] {
      std::unique_ptr<Client> c = backend.connect();
      {
        std::unique_lock<std::mutex> lock(m);
        if (++connected == agents) {
          all_connected = Clock::now();
          cv.notify_all();
        }
        cv.wait(lock, [&] { return go; });
      }
      c->add("rdzv/count", 1);
      c->set(keys[static_cast<size_t>(i)],
             fmt::format("{{\"node\":{},\"addr\":\"10.0.0.{}\",\"nproc\":8}}", i, i % 250));
      c->wait(keys);
      auto values = c->read_all(keys);
      if (values.size() != keys.size() || values.back().empty()) ++bad;
    });
  {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return connected == agents; });
    go = true;
    go_time = Clock::now();
  }
  const double cpu_at_go = cpu_seconds();
  cv.notify_all();
  for (auto& t : threads) t.join();
  Round r;
  r.round_s = since(go_time);
  r.round_cpu_s = cpu_seconds() - cpu_at_go;
  r.connect_s = std::chrono::duration<double>(all_connected - start).count();
  if (bad) throw std::runtime_error("an agent read wrong values");
  return r;
}

namespace store = ddp::launch::store;

std::string request(store::Op op, std::vector<std::string> keys, std::vector<std::string> values = {}) {
  const bool waits = op == store::Op::kWait || op == store::Op::kMultiGet;
  return store::test::request_bytes(op, std::move(keys), std::move(values), op == store::Op::kAdd ? 1 : 0,
                                    waits ? 120000 : 0);
}

store::Response reply(store::test::RawPeer& peer) {
  return store::test::ok_reply(peer, kTimeout, "an agent's request");
}

// The agent store's round with multiplexed agents: each thread drives its share of the K
// connections phase by phase, every request of a phase sent before any reply is read
// (the server parks each WAIT on its own connection, as it would for K launchers).
Round ours_round(Ours& backend, int agents, int threads) {
  std::vector<std::string> keys;
  for (int i = 0; i < agents; ++i) keys.push_back(fmt::format("rdzv/node/{}", i));
  threads = std::max(1, std::min(threads, agents));
  std::vector<std::vector<std::unique_ptr<store::test::RawPeer>>> peers(static_cast<size_t>(threads));
  const auto start = Clock::now();
  {
    std::vector<std::thread> connecting;
    for (int t = 0; t < threads; ++t)
      connecting.emplace_back([&, t] {
        for (int i = t; i < agents; i += threads) {
          peers[static_cast<size_t>(t)].push_back(std::make_unique<store::test::RawPeer>(backend.port()));
          peers[static_cast<size_t>(t)].back()->handshake(fmt::format("agent{}", i), 0);
        }
      });
    for (auto& t : connecting) t.join();
  }
  Round r;
  r.connect_s = since(start);
  // MULTI_GET waits for every key itself: the WAIT and the read are one request.
  const std::string wait_all = request(store::Op::kMultiGet, keys);
  std::atomic<int> bad{0};
  const auto go = Clock::now();
  const double cpu_at_go = cpu_seconds();
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t)
    running.emplace_back([&, t] {
      auto& mine = peers[static_cast<size_t>(t)];
      for (size_t j = 0; j < mine.size(); ++j) {
        const int i = t + static_cast<int>(j) * threads;
        const std::string value = fmt::format("{{\"node\":{},\"addr\":\"10.0.0.{}\",\"nproc\":8}}", i, i % 250);
        mine[j]->send(request(store::Op::kAdd, {"rdzv/count"}) +
                      request(store::Op::kSet, {keys[static_cast<size_t>(i)]}, {value}));
      }
      for (auto& p : mine) {
        reply(*p);
        reply(*p);
      }
      for (auto& p : mine) p->send(wait_all);
      for (auto& p : mine) {
        const store::Response all = reply(*p);
        if (all.values.size() != keys.size() || all.values.back().empty()) ++bad;
      }
    });
  for (auto& t : running) t.join();
  r.round_s = since(go);
  r.round_cpu_s = cpu_seconds() - cpu_at_go;
  if (bad) throw std::runtime_error("an agent read wrong values");
  return r;
}

// One client: `ops` SETs of distinct keys, then `ops` GETs of them; ops/s of each.
std::pair<double, double> throughput(Backend& backend, int ops) {
  auto c = backend.connect();
  const std::string value(32, 'v');
  auto t = Clock::now();
  for (int i = 0; i < ops; ++i) c->set(fmt::format("tp/{}", i), value);
  const double set_rate = ops / since(t);
  t = Clock::now();
  for (int i = 0; i < ops; ++i)
    if (c->get(fmt::format("tp/{}", i)).size() != value.size()) throw std::runtime_error("bad value");
  return {set_rate, ops / since(t)};
}

// figure name -> store ("ours", "c10d") -> samples
using Samples = std::map<std::string, std::map<std::string, std::vector<double>>>;

// The markdown table: each figure's medians and how much faster ours is (or slower).
void print_table(Samples& samples, const std::vector<std::string>& order, int repeats, int c10d_max) {
  fmt::print("| figure (median of {}) | ddp-launch store | c10d TCPStore | ours vs c10d |\n", repeats);
  fmt::print("|---|---:|---:|---:|\n");
  for (const auto& figure : order) {
    const double ours = median(samples[figure]["ours"]);
    if (samples[figure]["c10d"].empty()) {
      fmt::print("| {} | {:.4f} | not run (K > --c10d-max-agents {}) | |\n", figure, ours, c10d_max);
      continue;
    }
    const double theirs = median(samples[figure]["c10d"]);
    const bool rate = figure.find("ops/s") != std::string::npos;
    const double speedup = rate ? ours / theirs : theirs / ours;  // > 1: ours is faster
    fmt::print("| {} | {} | {} | {:.2f}x {} |\n", figure,
               rate ? fmt::format("{:.0f}", ours) : fmt::format("{:.4f}", ours),
               rate ? fmt::format("{:.0f}", theirs) : fmt::format("{:.4f}", theirs),
               speedup >= 1 ? speedup : 1 / speedup, speedup >= 1 ? "faster" : "slower");
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"store_bench: the ddp-launch agent store vs c10d::TCPStore on loopback"};
  std::vector<int> agents{8, 64, 256, 1024, 4096};
  int repeats = 5;
  int ops = 20000;
  int threads = 4;
  int c10d_max = 1024;
  app.add_option("--agents", agents, "agent counts K")->delimiter(',');
  app.add_option("--threads", threads, "threads driving the agent store's multiplexed agents");
  app.add_option("--c10d-max-agents", c10d_max, "largest K run against TCPStore (a thread per agent)");
  app.add_option("--repeats", repeats, "runs per store and figure (alternating)");
  app.add_option("--ops", ops, "SETs and GETs per throughput run");
  CLI11_PARSE(app, argc, argv);

  Samples samples;
  std::vector<std::string> order;
  auto record = [&](const std::string& figure, const std::string& store, double v) {
    if (!samples.count(figure)) order.push_back(figure);
    samples[figure][store].push_back(v);
  };
  for (int rep = 0; rep < repeats; ++rep) {
    // Alternate which store goes first, so drift hurts both alike.
    const std::vector<std::string> stores =
        rep % 2 ? std::vector<std::string>{"c10d", "ours"} : std::vector<std::string>{"ours", "c10d"};
    for (const auto& s : stores) {
      for (int k : agents) {
        if (s == "c10d" && k > c10d_max) continue;
        Round r;
        if (s == "ours") {
          Ours backend;
          r = ours_round(backend, k, threads);
        } else {
          auto backend = make(s);
          r = rendezvous_round(*backend, k);
        }
        record(fmt::format("connect K={} (s)", k), s, r.connect_s);
        record(fmt::format("round K={} (s)", k), s, r.round_s);
        record(fmt::format("round K={} (CPU s)", k), s, r.round_cpu_s);
      }
      auto backend = make(s);
      auto [set_rate, get_rate] = throughput(*backend, ops);
      record("SET, 1 client (ops/s)", s, set_rate);
      record("GET, 1 client (ops/s)", s, get_rate);
    }
    fmt::print(stderr, "run {}/{} done\n", rep + 1, repeats);
  }
  print_table(samples, order, repeats, c10d_max);
  return 0;
}
