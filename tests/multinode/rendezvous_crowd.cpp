// rendezvous_crowd: one rendezvous round of K nodes against the agent store, for the
// rendezvous-at-scale test and scripts/bench-rendezvous-scale.sh. This process hosts the store
// (StoreServer) and runs the real leader (Rendezvous::join through a TcpStoreClient and the
// job's PrefixStore, as the launcher hosting the store does). The K - 1 followers are
// emulated in --procs child processes (forked before the store starts), one connection each
// from 127.0.0.(2 + process): they send what Rendezvous::follow sends, request for request,
// each step pipelined across a process's nodes (K launchers are concurrent), and read their
// plan with the real parsers.
//
//   rendezvous_crowd --nodes K [--procs P] [--shape seat|whole] [--timeout S]
//
// --shape seat: each follower reads the plan's summary and its own seat (the protocol);
// --shape whole: each also reads every node's record, as every follower did when the plan
// was one record (the comparison; not parsed: a node parses its copy on its own host). Prints one line:
//   "nodes K shape S round_s T leader_cpu_s C followers_cpu_s F leader_rss_mib M"
// (round: from the leader's start, every follower connected and waiting, until every follower
// has its plan; leader CPU: this process, the store's thread included, during the round;
// leader RSS: this process's peak less its size before the store started). Exits 0 when every
// node's seat agrees with the leader's plan and the group ranks are 0..K-1, once each; 1 with
// what went wrong otherwise; 2 on bad arguments; 77 (a test's skip) when this machine's hard
// open-file limit cannot hold K connections in one process.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "launcher/cli/rendezvous_conf.hpp"
#include "launcher/rendezvous/rendezvous.hpp"
#include "tests/support/rendezvous_joins.hpp"
#include "launcher/rendezvous/round_plan.hpp"
#include "launcher/net/open_files.hpp"
#include "launcher/store/prefix_store.hpp"
#include "launcher/store/server.hpp"
#include "launcher/store/tcp_client.hpp"
#include "tests/store/raw_peer.hpp"

namespace {

using namespace ddp::launch;
using rendezvous::JobKeys;
using store::Op;
using store::test::ok_reply;
using store::test::RawPeer;
using store::test::request_bytes;
using testing::policy;
using testing::seated;

const std::string kJobPrefix = "ddp-launch/crowd";  // as connect_agent_store names a job's keys
constexpr int kSkipped = 77;

// This machine cannot hold the round: not a failure of what is measured.
struct TooFewFiles : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Options {
  int nodes = 1024;
  int procs = 8;
  std::string shape = "seat";
  double timeout_s = 120;
};

// Node i's record, shaped like a real launcher's.
rendezvous::NodeInfo node_info(int i, int nodes) {
  rendezvous::NodeInfo n;
  n.name = fmt::format("gpu-node-{:05}.cluster.example:{}", i, 40000 + i);
  n.host = fmt::format("gpu-node-{:05}.cluster.example", i);
  n.addr = fmt::format("10.{}.{}.{}", i >> 16, (i >> 8) & 255, i & 255);
  n.worker_port = 29500;
  n.nproc = 8;
  n.nnodes_min = nodes;
  n.nnodes_max = nodes;
  n.pid = 40000 + i;
  n.status_url = fmt::format("http://{}:29510", n.addr);
  return n;
}

std::string job_key(const std::string& key) { return kJobPrefix + "/" + key; }

double cpu_seconds(int who) {
  rusage u{};
  ::getrusage(who, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// A field of /proc/self/status in KiB (VmRSS, VmHWM), 0 when unreadable.
long status_kib(const std::string& field) {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  long kib = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, (field + ":").c_str(), field.size() + 1) == 0) kib = std::atol(line + field.size() + 1);
  std::fclose(f);
  return kib;
}

void write_all(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n <= 0) throw std::runtime_error(fmt::format("pipe write: {}", std::strerror(errno)));
    p += n;
    size -= static_cast<size_t>(n);
  }
}

bool read_all(int fd, void* data, size_t size) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    ssize_t n = ::read(fd, p, size);
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// What a follower reports back: its node and the ranks its seat gave it.
struct Seated {
  int32_t node = 0;
  int32_t group_rank = 0;
  int32_t base_rank = 0;
  int32_t world_size = 0;
};

// ---------------------------------------------------------------------------------------------
// The followers of one child process.

class Followers {
 public:
  Followers(const Options& o, int first, int count) : o_(o), first_(first), count_(count) {}

  void connect(uint16_t port, const std::string& source) {
    for (int i = 0; i < count_; ++i) {
      peers_.push_back(std::make_unique<RawPeer>(port, 0, source));
      peers_.back()->handshake(node_info(first_ + i, o_.nodes).name, 0);
    }
  }

  // Rendezvous::follow(self, -1), step by step for every node of this process.
  std::vector<Seated> join() {
    const auto wait_ms = static_cast<uint32_t>(o_.timeout_s * 1000);
    // wait_key(current_round): the stop record, the wait; then the round number.
    step([&](int) {
      return request_bytes(Op::kTryGet, {job_key(JobKeys::stop())}) +
             request_bytes(Op::kWait, {job_key(JobKeys::current_round())}, {}, 0, wait_ms) +
             request_bytes(Op::kGet, {job_key(JobKeys::current_round())}, {}, 0, wait_ms);
    });
    std::vector<int> round(peers_.size());
    replies([&](size_t i, RawPeer& p) {
      ok_reply(p, timeout(), "stop record");
      ok_reply(p, timeout(), "wait for the round");
      round[i] = std::stoi(ok_reply(p, timeout(), "round number").values.at(0));
    });
    // follow_one: wait for the round to open, take a ticket.
    step([&](size_t i) {
      return request_bytes(Op::kTryGet, {job_key(JobKeys::stop())}) +
             request_bytes(Op::kWait, {job_key(JobKeys::open(round[i]))}, {}, 0, wait_ms) +
             request_bytes(Op::kAdd, {job_key(JobKeys::ticket(round[i]))}, {}, 1);
    });
    std::vector<long> ticket(peers_.size());
    replies([&](size_t i, RawPeer& p) {
      ok_reply(p, timeout(), "stop record");
      ok_reply(p, timeout(), "wait for the round to open");
      ticket[i] = ok_reply(p, timeout(), "ticket").number;
    });
    // Join, wait for the plan, read its summary.
    step([&](size_t i) {
      const int r = round[i];
      return request_bytes(Op::kSet, {job_key(JobKeys::join(r, ticket[i]))},
                           {to_json(node_info(first_ + static_cast<int>(i), o_.nodes))}) +
             request_bytes(Op::kTryGet, {job_key(JobKeys::stop())}) +
             request_bytes(Op::kWait, {job_key(JobKeys::plan(r))}, {}, 0, wait_ms) +
             request_bytes(Op::kGet, {job_key(JobKeys::plan(r))}, {}, 0, wait_ms);
    });
    std::vector<rendezvous::RoundPlan> plans(peers_.size());
    replies([&](size_t i, RawPeer& p) {
      ok_reply(p, timeout(), "join");
      ok_reply(p, timeout(), "stop record");
      ok_reply(p, timeout(), "wait for the plan");
      plans[i] = rendezvous::plan_from_json(ok_reply(p, timeout(), "plan").values.at(0));
    });
    // Its seat, then say the plan was read.
    step([&](size_t i) {
      return request_bytes(Op::kGet, {job_key(JobKeys::seat(round[i], ticket[i]))}, {}, 0, wait_ms) +
             request_bytes(Op::kAdd, {job_key(JobKeys::plan_read(round[i]))}, {}, 1);
    });
    std::vector<Seated> out(peers_.size());
    replies([&](size_t i, RawPeer& p) {
      const int node = first_ + static_cast<int>(i);
      rendezvous::PlannedNode me =
          rendezvous::seat_from_json(ok_reply(p, timeout(), "seat").values.at(0), node_info(node, o_.nodes));
      ok_reply(p, timeout(), "plan read");
      out[i] = Seated{node, me.group_rank, me.base_rank, plans[i].world_size};
    });
    if (o_.shape == "whole") read_every_node(round, out);
    return out;
  }

 private:
  // The comparison: every follower also reads every node's record (not parsed here: each
  // node would parse its copy on its own host, in parallel; the store's side is measured). A
  // window of nodes at a time: each reply is the whole list, and the store drops a client
  // that leaves a reply unread for its write timeout (K at once would also hold K lists in
  // its memory).
  void read_every_node(const std::vector<int>& round, const std::vector<Seated>& seats) {
    constexpr size_t kWindow = 64;
    const auto wait_ms = static_cast<uint32_t>(o_.timeout_s * 1000);
    for (size_t first = 0; first < peers_.size(); first += kWindow) {
      const size_t end = std::min(peers_.size(), first + kWindow);
      for (size_t i = first; i < end; ++i)
        peers_[i]->send(request_bytes(Op::kGet, {job_key(JobKeys::nodes(round[i]))}, {}, 0, wait_ms));
      for (size_t i = first; i < end; ++i) {
        const std::string every = ok_reply(*peers_[i], timeout(), "node list").values.at(0);
        if (every.find('"' + node_info(seats[i].node, o_.nodes).name + '"') == std::string::npos)
          throw std::runtime_error("the node list does not hold the node");
      }
    }
  }
  std::chrono::milliseconds timeout() const {
    return std::chrono::milliseconds(static_cast<long long>(o_.timeout_s * 1000));
  }
  template <class Requests>
  void step(Requests requests) {
    for (size_t i = 0; i < peers_.size(); ++i)
      if (!peers_[i]->send(requests(i))) throw std::runtime_error("the store hung up");
  }
  template <class Read>
  void replies(Read read) {
    for (size_t i = 0; i < peers_.size(); ++i) read(i, *peers_[i]);
  }

  const Options& o_;
  int first_;
  int count_;
  std::vector<std::unique_ptr<RawPeer>> peers_;
};

// A child: reads the port, connects, says 'R', waits for 'G', joins, writes its seats.
[[noreturn]] void run_child(const Options& o, int index, int first, int count, int from_parent, int to_parent) {
  int code = 0;
  try {
    uint16_t port = 0;
    if (!read_all(from_parent, &port, sizeof port)) ::_exit(1);
    Followers followers(o, first, count);
    followers.connect(port, fmt::format("127.0.0.{}", 2 + index % 250));
    write_all(to_parent, "R", 1);
    char go = 0;
    if (!read_all(from_parent, &go, 1)) ::_exit(1);
    std::vector<Seated> seats = followers.join();
    write_all(to_parent, seats.data(), seats.size() * sizeof(Seated));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rendezvous_crowd: followers %d-%d: %s\n", first, first + count - 1, e.what());
    code = 1;
  }
  ::_exit(code);
}

struct Child {
  pid_t pid = -1;
  int to_child = -1;
  int from_child = -1;
  int first = 0;
  int count = 0;
};

std::vector<Child> fork_children(const Options& o) {
  const int followers = o.nodes - 1;
  const int procs = std::max(1, std::min(o.procs, followers));
  std::vector<Child> children;
  int first = 1;  // node 0 is the leader
  for (int c = 0; c < procs && followers > 0; ++c) {
    Child ch;
    ch.first = first;
    ch.count = followers / procs + (c < followers % procs ? 1 : 0);
    first += ch.count;
    int down[2], up[2];
    if (::pipe(down) != 0 || ::pipe(up) != 0) throw std::runtime_error("pipe failed");
    ch.pid = ::fork();
    if (ch.pid < 0) throw std::runtime_error("fork failed");
    if (ch.pid == 0) {
      ::close(down[1]);
      ::close(up[0]);
      for (const auto& earlier : children) {
        ::close(earlier.to_child);
        ::close(earlier.from_child);
      }
      run_child(o, c, ch.first, ch.count, down[0], up[1]);
    }
    ::close(down[0]);
    ::close(up[1]);
    ch.to_child = down[1];
    ch.from_child = up[0];
    children.push_back(ch);
  }
  return children;
}

// The round; throws what went wrong.
std::string run(const Options& o) {
  const size_t files = net::raise_open_file_limit();  // the children inherit it
  if (files < static_cast<size_t>(o.nodes) + 256)
    throw TooFewFiles(
        fmt::format("the hard open-file limit ({}) cannot hold {} connections in one process", files, o.nodes));
  std::vector<Child> children = fork_children(o);
  store::ServerOptions server_options;
  server_options.host = "127.0.0.1";
  server_options.max_connections = static_cast<size_t>(o.nodes) + 64;
  server_options.backlog = o.nodes;
  const long rss_before = status_kib("VmRSS");
  store::StoreServer server(server_options);
  server.start();
  if (server.max_connections() < static_cast<size_t>(o.nodes))
    throw std::runtime_error(fmt::format("the open-file limit lets the store hold {} connections, {} needed",
                                         server.max_connections(), o.nodes));
  const uint16_t port = server.port();
  for (auto& c : children) write_all(c.to_child, &port, sizeof port);
  for (auto& c : children) {
    char ready = 0;
    if (!read_all(c.from_child, &ready, 1)) throw std::runtime_error("a follower process failed to connect");
  }
  store::ClientOptions client_options;
  client_options.name = node_info(0, o.nodes).name;
  client_options.request_timeout = std::chrono::milliseconds(static_cast<long long>(o.timeout_s * 1000));
  store::TcpStoreClient client("127.0.0.1", port, client_options);
  store::PrefixStore job(kJobPrefix, client);
  cli::RendezvousConf conf;
  conf.join_timeout_s = o.timeout_s;
  conf.heartbeat_timeout_s = o.timeout_s;
  rendezvous::Rendezvous leader(job, policy(conf, true, o.nodes, o.nodes), {});

  const double cpu_before = cpu_seconds(RUSAGE_SELF);
  const auto go = std::chrono::steady_clock::now();
  for (auto& c : children) write_all(c.to_child, "G", 1);
  rendezvous::RoundPlan plan = seated(leader.join(node_info(0, o.nodes), 0, 0));
  std::vector<Seated> seats;
  for (auto& c : children) {
    std::vector<Seated> part(static_cast<size_t>(c.count));
    if (!read_all(c.from_child, part.data(), part.size() * sizeof(Seated)))
      throw std::runtime_error(fmt::format("followers {}-{} did not finish", c.first, c.first + c.count - 1));
    seats.insert(seats.end(), part.begin(), part.end());
  }
  const double round_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - go).count();
  const double leader_cpu = cpu_seconds(RUSAGE_SELF) - cpu_before;
  for (auto& c : children) ::waitpid(c.pid, nullptr, 0);

  if (!plan.whole() || plan.nnodes != o.nodes) throw std::runtime_error("the leader's plan does not hold every node");
  std::unordered_map<std::string, const rendezvous::PlannedNode*> by_name;
  for (const auto& n : plan.nodes) by_name[n.info.name] = &n;
  std::vector<bool> rank_seen(static_cast<size_t>(o.nodes), false);
  rank_seen.at(static_cast<size_t>(plan.find(node_info(0, o.nodes).name)->group_rank)) = true;
  for (const Seated& s : seats) {
    const rendezvous::PlannedNode* n = by_name.at(node_info(s.node, o.nodes).name);
    if (n->group_rank != s.group_rank || n->base_rank != s.base_rank || s.world_size != plan.world_size)
      throw std::runtime_error(fmt::format("node {}'s seat disagrees with the leader's plan", s.node));
    if (rank_seen.at(static_cast<size_t>(s.group_rank)))
      throw std::runtime_error(fmt::format("group rank {} given twice", s.group_rank));
    rank_seen[static_cast<size_t>(s.group_rank)] = true;
  }
  if (seats.size() + 1 != static_cast<size_t>(o.nodes)) throw std::runtime_error("a follower is missing");
  return fmt::format(
      "nodes {} shape {} round_s {:.3f} leader_cpu_s {:.3f} followers_cpu_s {:.3f} leader_rss_mib {:.1f}", o.nodes,
      o.shape, round_s, leader_cpu, cpu_seconds(RUSAGE_CHILDREN),
      static_cast<double>(status_kib("VmHWM") - rss_before) / 1024);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"rendezvous_crowd: one rendezvous round of K nodes against the agent store"};
  app.add_option("--nodes", o.nodes, "nodes in the round (the leader and K - 1 emulated followers)")
      ->check(CLI::Range(2, 1 << 20));
  app.add_option("--procs", o.procs, "processes the followers are spread over")->check(CLI::Range(1, 250));
  app.add_option("--shape", o.shape, "seat: each follower reads its seat; whole: every node too")
      ->check(CLI::IsMember({"seat", "whole"}));
  app.add_option("--timeout", o.timeout_s, "seconds any wait may take")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    std::puts(run(o).c_str());
    return 0;
  } catch (const TooFewFiles& e) {
    std::printf("SKIP: %s\n", e.what());
    return kSkipped;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rendezvous_crowd: %s\n", e.what());
    return 1;
  }
}
