#include "launcher/multinode/multinode_agent.hpp"

#include <unistd.h>

#include <memory>

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/os/ports.hpp"
#include "launcher/worker/output.hpp"
#include "launcher/multinode/rendezvous.hpp"
#include "launcher/store/prefix_store.hpp"
#include "launcher/store/server.hpp"
#include "launcher/store/tcp_client.hpp"

namespace ddp::launch {
namespace {

using rdzv::AbortRecord;
using rdzv::JobKeys;
using rdzv::RoundPlan;
using std::chrono::milliseconds;

constexpr int kDefaultRdzvPort = 29400;  // torchrun's c10d default
constexpr std::chrono::milliseconds kBarrierTick{100};  // exit barrier: react quickly

milliseconds ms(double seconds) { return milliseconds(static_cast<long long>(seconds * 1000)); }

std::string indent(const std::string& text) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += "    " + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

// The report on a node whose own workers did not cause the failure.
std::string remote_failure_report(const std::string& program, const AbortRecord& r, int my_node,
                                  const std::string& my_host) {
  const std::string rule(72, '='), thin(72, '-');
  std::string out = rule + "\n" + fmt::format("ddp-launch: {} FAILED on node {} ({})\n", program, r.node_rank, r.host);
  out += thin + "\nRoot cause (first failure):\n";
  out += fmt::format("  node      : {} ({})\n", r.node_rank, r.host);
  if (r.rank >= 0) {
    out += fmt::format("  rank      : {} (local_rank: {})\n", r.rank, r.local_rank);
    out += fmt::format("  pid       : {}\n", r.pid);
  }
  out += fmt::format("  exit      : {}\n", r.status.empty() ? r.reason : r.status);
  if (!r.error.empty()) out += fmt::format("  error     : {}\n", r.error);
  if (!r.traceback.empty()) out += "  traceback :\n" + indent(r.traceback);
  out += thin + "\n" + fmt::format("This node ({}, {}): its workers were stopped by ddp-launch\n", my_node, my_host);
  return out + rule + "\n";
}

class MultiNodeAgent {
 public:
  MultiNodeAgent(const LaunchOptions& o, const Environment& env, const JobSetup& job, std::string run_id)
      : o_(o), env_(env), job_(job), run_id_(std::move(run_id)), supervisor_(supervisor_config(o)) {}

  int run();

 private:
  void connect();
  rdzv::NodeInfo self_info(int previous_rank);
  std::optional<std::string> watch(const RoundPlan& plan, int my_rank);
  AbortRecord publish_abort(int round, AbortRecord record);
  void wait_for_others_to_leave(const RoundPlan& plan, int my_rank);

  const LaunchOptions& o_;
  const Environment& env_;
  const JobSetup& job_;
  std::string run_id_;
  Supervisor supervisor_;
  HostPort endpoint_;
  bool leader_ = false;
  std::string name_;
  std::unique_ptr<store::StoreServer> server_;
  std::unique_ptr<store::TcpStoreClient> client_;
  std::unique_ptr<store::PrefixStore> job_store_;
  std::string store_lost_;  // set when the store stopped answering
};

void MultiNodeAgent::connect() {
  const RendezvousConf& conf = o_.rdzv;
  endpoint_ = o_.rdzv_backend == "static"
                  ? HostPort{o_.master_addr, *o_.master_port}
                  : parse_host_port(o_.rdzv_endpoint, kDefaultRdzvPort, "--rdzv-endpoint");
  name_ = fmt::format("{}:{}", host_name(), ::getpid());
  bool try_host = o_.rdzv_backend == "static" ? o_.node_rank == 0
                                              : conf.is_host.value_or(is_local_address(endpoint_.host));
  if (try_host) {
    store::ServerOptions options;
    options.port = static_cast<uint16_t>(endpoint_.port);
    options.token = conf.token;
    server_ = std::make_unique<store::StoreServer>(options);
    try {
      server_->start();
      leader_ = true;
    } catch (const store::BindError& e) {
      // Static node 0 and a forced host must host; otherwise another launcher on this
      // machine got there first, and we join it as a client.
      if (o_.rdzv_backend == "static" || conf.is_host.value_or(false) || !e.address_in_use())
        throw LaunchError(e.address_in_use() ? exit_code::kAddressInUse : exit_code::kUsage, e.what());
      server_.reset();
    }
  }
  store::ClientOptions options;
  options.token = conf.token;
  options.name = name_;
  options.connect_timeout = ms(conf.join_timeout_s);
  options.request_timeout = ms(conf.heartbeat_timeout_s);
  options.heartbeat_timeout_ms = static_cast<uint32_t>(conf.heartbeat_timeout_s * 1000);
  client_ = std::make_unique<store::TcpStoreClient>(leader_ ? "127.0.0.1" : endpoint_.host,
                                                    static_cast<uint16_t>(endpoint_.port), options);
  job_store_ = std::make_unique<store::PrefixStore>("ddp-launch/" + run_id_, *client_);
  launcher_notice(fmt::format("{} the agent store at {}:{} ({} rendezvous, run id {})",
                              leader_ ? "hosting" : "joined", endpoint_.host, endpoint_.port,
                              o_.rdzv_backend, run_id_));
}

rdzv::NodeInfo MultiNodeAgent::self_info(int previous_rank) {
  rdzv::NodeInfo n;
  n.name = name_;
  n.host = host_name();
  if (!o_.local_addr.empty()) n.addr = o_.local_addr;
  else if (leader_) n.addr = o_.rdzv_backend == "static" ? o_.master_addr : endpoint_.host;
  else n.addr = host_name();
  n.worker_port = pick_free_port();
  n.nproc = job_.devices.nproc;
  n.requested_rank = o_.node_rank_given || o_.rdzv_backend == "static" ? o_.node_rank : -1;
  n.previous_rank = previous_rank;
  n.nnodes_min = o_.nnodes_min;
  n.nnodes_max = o_.nnodes_max;
  n.max_restarts = o_.max_restarts;
  n.pid = ::getpid();
  return n;
}

AbortRecord MultiNodeAgent::publish_abort(int round, AbortRecord record) {
  std::string now = job_store_->compare_set(JobKeys::abort(round), "", rdzv::to_json(record));
  return rdzv::abort_from_json(now);  // ours, or the one that was first
}

// One heartbeat tick: the request itself keeps us alive at the store. The leader also
// looks for lost peers and for nodes waiting to join.
std::optional<std::string> MultiNodeAgent::watch(const RoundPlan& plan, int my_rank) {
  try {
    if (auto a = job_store_->try_get(JobKeys::abort(plan.round))) return rdzv::abort_from_json(*a).reason;
    if (!leader_) return std::nullopt;
    for (const auto& peer : plan.nodes) {
      if (peer.group_rank == my_rank) continue;
      auto dropped = client_->try_get("__dropped__/" + peer.info.name);
      if (!dropped || job_store_->check({JobKeys::done(plan.round, peer.group_rank)})) continue;
      AbortRecord lost;
      lost.kind = AbortRecord::Kind::kLost;
      lost.reason = fmt::format("node {} ({}) was lost: {}", peer.group_rank, peer.info.host, *dropped);
      lost.node_rank = peer.group_rank;
      lost.host = peer.info.host;
      lost.exit_code = exit_code::kRendezvousFailed;
      lost.final = plan.restart_count >= o_.max_restarts;
      return publish_abort(plan.round, lost).reason;
    }
    if (static_cast<int>(plan.nodes.size()) < o_.nnodes_max && job_store_->add(JobKeys::waiting(plan.round), 0) > 0) {
      AbortRecord grow;
      grow.kind = AbortRecord::Kind::kMembership;
      grow.reason = "a new node is waiting to join; all nodes restart in a new round";
      grow.node_rank = my_rank;
      grow.host = host_name();
      return publish_abort(plan.round, grow).reason;
    }
    return std::nullopt;
  } catch (const store::StoreError& e) {
    store_lost_ = e.what();
    return fmt::format("lost the agent store at {}:{} ({})", endpoint_.host, endpoint_.port, e.what());
  }
}

// The leader keeps the store up until every other node has seen the outcome and left
// (or is gone), at most two heartbeat timeouts.
void MultiNodeAgent::wait_for_others_to_leave(const RoundPlan& plan, int my_rank) {
  const auto deadline = std::chrono::steady_clock::now() + ms(2 * o_.rdzv.heartbeat_timeout_s);
  supervisor_.wait_until(kBarrierTick, [&] {
    if (std::chrono::steady_clock::now() >= deadline) return true;
    try {
      for (const auto& n : plan.nodes) {
        if (n.group_rank == my_rank) continue;
        if (!job_store_->check({JobKeys::exited(plan.round, n.group_rank)}) &&
            !client_->try_get("__dropped__/" + n.info.name))
          return false;
      }
    } catch (const store::StoreError&) {
    }
    return true;
  });
}

int MultiNodeAgent::run() {
  connect();
  const RendezvousConf& conf = o_.rdzv;
  rdzv::Rendezvous rendezvous(*job_store_, conf, leader_, o_.nnodes_min, o_.nnodes_max,
                              [this] { return supervisor_.poll_signals(); });
  notice_omp_threads(env_, job_.devices.nproc);
  RunLayout layout(o_, env_, run_id_);
  if (layout.enabled() && !layout.temporary()) launcher_notice("logs in " + layout.run_dir());

  int round = leader_ ? 0 : -1;
  int restart_count = 0;
  int previous_rank = -1;
  int expected_nodes = 0;  // how many nodes the next round waits for (0: up to nnodes_max)
  for (;;) {
    // Nodes that restart need a heartbeat to notice and up to the grace period to stop.
    rdzv::Regroup regroup{expected_nodes, conf.last_call_timeout_s + o_.shutdown_timeout_s +
                                                          2 * conf.heartbeat_interval_s};
    RoundPlan plan = rendezvous.join(self_info(previous_rank), round, restart_count, regroup);
    round = plan.round;
    const rdzv::PlannedNode& me = *plan.find(name_);
    previous_rank = me.group_rank;
    GroupPlan group;
    group.node_rank = me.group_rank;
    group.nnodes = static_cast<int>(plan.nodes.size());
    group.base_rank = me.base_rank;
    group.world_size = plan.world_size;
    group.local_world_size = job_.devices.nproc;
    group.master_addr = plan.master_addr;
    group.master_port = plan.master_port;
    group.run_id = run_id_;
    group.role = o_.role;
    group.max_restarts = o_.max_restarts;
    group.restart_count = plan.restart_count;
    launcher_notice(fmt::format("round {}: node {} of {}, ranks {}-{} of {}, workers' store at {}:{}{}",
                                round, me.group_rank, group.nnodes, me.base_rank,
                                me.base_rank + group.local_world_size - 1, plan.world_size,
                                plan.master_addr, plan.master_port,
                                plan.restart_count ? fmt::format(" (restart {})", plan.restart_count) : ""));

    AttemptWatch watch{ms(conf.heartbeat_interval_s), [&] { return this->watch(plan, me.group_rank); }};
    AttemptResult result = supervisor_.run_attempt(prepare_attempt(o_, env_, group, job_, layout), watch);

    std::optional<AbortRecord> abort;
    if (result.kind == AttemptResult::Kind::kSucceeded) {
      // Done here; wait for the others (or for one of them to fail: then we restart too).
      job_store_->set(JobKeys::done(round, me.group_rank), "1");
      std::vector<std::string> done_keys;
      for (const auto& n : plan.nodes) done_keys.push_back(JobKeys::done(round, n.group_rank));
      std::optional<std::string> reason;
      int sig = supervisor_.wait_until(kBarrierTick, [&] {
        reason = this->watch(plan, me.group_rank);
        if (reason) return true;
        try {
          return job_store_->check(done_keys);
        } catch (const store::StoreError& e) {
          store_lost_ = e.what();
          reason = store_lost_;
          return true;
        }
      });
      if (sig != 0) return exit_code::from_signal(sig);
      if (!reason) {
        job_store_->set(JobKeys::exited(round, me.group_rank), "1");
        if (leader_) wait_for_others_to_leave(plan, me.group_rank);
        client_->close_gracefully();
        return exit_code::kSuccess;
      }
      if (!store_lost_.empty()) break;
      abort = rdzv::abort_from_json(job_store_->get(JobKeys::abort(round), ms(conf.heartbeat_timeout_s)));
    } else if (result.kind == AttemptResult::Kind::kFailed) {
      const WorkerOutcome& root = result.outcomes[*result.root_cause];
      AbortRecord mine;
      mine.kind = AbortRecord::Kind::kFailure;
      mine.reason = fmt::format("rank {} on node {} ({}) failed with {}", root.rank, me.group_rank,
                                host_name(), root.status.describe());
      mine.node_rank = me.group_rank;
      mine.host = host_name();
      mine.rank = root.rank;
      mine.local_rank = root.local_rank;
      mine.pid = root.pid;
      mine.exit_code = root.status.launcher_exit_code();
      mine.status = root.status.describe();
      if (root.error) {
        mine.error = root.error->message;
        mine.traceback = root.error->traceback;
      }
      mine.final = plan.restart_count >= o_.max_restarts;
      try {
        abort = publish_abort(round, mine);
      } catch (const store::StoreError& e) {
        store_lost_ = e.what();
        abort = mine;
      }
      if (abort->final && abort->node_rank == me.group_rank && abort->pid == mine.pid) {
        std::vector<WorkerOutcome> others;
        for (size_t i = 0; i < result.outcomes.size(); ++i)
          if (i != *result.root_cause) others.push_back(result.outcomes[i]);
        write_all(STDERR_FILENO, format_failure_report({o_.program, host_name(), plan.restart_count, o_.max_restarts},
                                                       root, others));
        if (store_lost_.empty()) client_->close_gracefully();
        return abort->exit_code;
      }
    } else if (result.kind == AttemptResult::Kind::kInterrupted) {
      AbortRecord stop;
      stop.kind = AbortRecord::Kind::kFailure;
      stop.reason = fmt::format("node {} ({}) was stopped by {}", me.group_rank, host_name(), signal_name(result.signal));
      stop.node_rank = me.group_rank;
      stop.host = host_name();
      stop.exit_code = exit_code::from_signal(result.signal);
      stop.status = stop.reason;
      stop.final = true;
      try {
        publish_abort(round, stop);
        client_->close_gracefully();
      } catch (const store::StoreError&) {
      }
      launcher_notice(fmt::format("stopped by {}", signal_name(result.signal)));
      return stop.exit_code;
    } else {  // kStopped by the watch
      if (!store_lost_.empty()) break;
      abort = rdzv::abort_from_json(job_store_->get(JobKeys::abort(round), ms(conf.heartbeat_timeout_s)));
    }
    if (!store_lost_.empty()) break;
    if (abort->final) {
      write_all(STDERR_FILENO, remote_failure_report(o_.program, *abort, me.group_rank, host_name()));
      client_->close_gracefully();
      return abort->exit_code;
    }
    launcher_notice(fmt::format("{}; restarting on every node in round {}", abort->reason, round + 1));
    restart_count = plan.restart_count + (abort->kind == AbortRecord::Kind::kMembership ? 0 : 1);
    expected_nodes = static_cast<int>(plan.nodes.size());
    if (abort->kind == AbortRecord::Kind::kLost) expected_nodes -= 1;
    if (abort->kind == AbortRecord::Kind::kMembership && leader_)
      expected_nodes += static_cast<int>(job_store_->add(JobKeys::waiting(round), 0));
    ++round;
  }
  throw LaunchError(exit_code::kRendezvousFailed,
                    fmt::format("this node's workers were stopped: {}", store_lost_));
}

}  // namespace

int run_multi_node_agent(const LaunchOptions& options, const Environment& env, const JobSetup& job,
                         const std::string& run_id) {
  try {
    return MultiNodeAgent(options, env, job, run_id).run();
  } catch (const store::StoreError& e) {  // unreachable, refused or lost store outside a round
    throw LaunchError(exit_code::kRendezvousFailed, e.what());
  }
}

}  // namespace ddp::launch
