

#include "launcher/base/exit_status.hpp"
#include "launcher/base/host_port.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/base/signal_names.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/multinode/dns_wait.hpp"
#include "launcher/multinode/etcd_link.hpp"
#include "launcher/multinode/job_store_link.hpp"
#include "launcher/multinode/multinode_agent.hpp"
#include "launcher/multinode/rendezvous.hpp"
#include "launcher/multinode/round_check.hpp"
#include "launcher/multinode/round_events.hpp"
#include "launcher/multinode/strike_record.hpp"
#include "launcher/node/node_session.hpp"
#include "launcher/node/worker_launches.hpp"
#include "launcher/node/worker_store.hpp"
#include "launcher/os/ports.hpp"
#include "launcher/report/event_log.hpp"
#include "launcher/node/preflight_check.hpp"
#include "launcher/preflight/link_probe.hpp"
#include "launcher/report/failure_report.hpp"
#include "launcher/report/termination_log.hpp"
#include "launcher/status/status_endpoint.hpp"
#include "launcher/store/protocol.hpp"
#include "launcher/worker/socket_interface.hpp"
#include <csignal>
#include <fmt/format.h>
#include <memory>
#include <unistd.h>

namespace ddp::launch::multinode {
namespace {

using std::chrono::milliseconds;

constexpr std::chrono::milliseconds kBarrierTick{100};  // exit barrier: react quickly

milliseconds ms(double seconds) { return milliseconds(static_cast<long long>(seconds * 1000)); }

// One joined round: its plan and this node's place in it.
struct Round {
  RoundPlan plan;
  PlannedNode me;
  int number() const { return plan.round; }
  int rank() const { return me.group_rank; }
};

// What the next join needs to know.
struct NextRound {
  int round = 0;  // a follower's first join passes -1: the round currently open
  int restart_count = 0;
  int previous_rank = -1;
  int expected_nodes = 0;  // how many nodes the next round waits for (0: up to nnodes_max)
  int spares = 0;          // and how many hot spares that waited after the last round
};

// Seconds since the Unix epoch: strikes are kept as wall-clock times, which outlive a launcher.
double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

// How an attempt ended for this node: an exit code, or the round's abort record (restart
// or final). Neither: the store was lost.
struct Settled {
  std::optional<int> exit_code;
  std::optional<AbortRecord> abort;
};

class MultiNodeAgent {
 public:
  MultiNodeAgent(const node::JobConfig& job, const MultiNodeSpec& spec, const cli::Environment& env,
                 supervise::StopRequests* stops)
      : job_(job),
        spec_(spec),
        env_(env),
        session_(job, env, {spec.node_rank, spec.node_rank, spec.nnodes_max}, stops),
        supervisor_(session_.supervisor()),
        events_(session_.events()),
        board_(session_.board()),
        layout_(session_.layout()) {}

  int run();

 private:
  int run_rounds();
  NodeInfo self_info(int previous_rank);
  std::string advertised_addr() const;
  Round join_round(Rendezvous& rendezvous, const NextRound& next);
  report::AttemptResult run_round(const Round& r);
  RoundCheckContext round_check_context();
  Settled settle(const Round& r, const report::AttemptResult& result);
  Settled after_success(const Round& r);
  Settled after_failure(const Round& r, const report::AttemptResult& result);
  std::optional<Settled> symptom_of_known_cause(const Round& r, const report::WorkerOutcome& root);
  int after_interrupt(const Round& r, int signal);
  int stopped_between_rounds(const std::optional<Round>& last, int signal);
  int job_stopped(const std::optional<Round>& last, const AbortRecord& stop);
  void publish_job_stop(const AbortRecord& stop);
  void acknowledge(const Round& r);
  void leave(const Round& r, int exit_code);
  void record_strike(const Round& r, const AbortRecord& abort);
  void load_strikes();
  void wait_as_spare(int round);
  void start_probe();
  int live_spares(int round);
  preflight::RingReport measure_links(const LinkPeer& peer);
  int spare_released(const JobEnded& end);
  std::optional<AbortRecord> read_abort(int round);
  std::optional<int> conclude(const Round& r, const Settled& settled, NextRound& next);
  std::optional<std::string> check(const Round& r);
  void wait_for_others_to_leave(const Round& r);

  const node::JobConfig& job_;
  const MultiNodeSpec& spec_;
  const cli::Environment& env_;
  cli::Environment worker_env_;  // env_ and the workers' socket interface (worker/socket_interface)
  node::NodeSession session_;    // this node's services, kept across rounds
  supervise::Supervisor& supervisor_;
  report::EventLog& events_;
  report::StatusBoard& board_;
  worker::RunLayout& layout_;
  JobStoreLink store_;   // the agent store (hosted here, or joined) or etcd
  RoundFindings state_;  // this round's record, a lost store or an unreadable record
  std::optional<std::chrono::system_clock::time_point> abort_seen_;  // this round's record first read
  int acknowledged_round_ = -1;
  int rendezvous_signal_ = 0;         // the stop signal that interrupted a rendezvous
  node::NodeCheck preflight_;         // --preflight's outcome here, sent with every join
  std::vector<double> strike_times_;  // this node's strikes (Unix times), sent with every join (as ages)
  std::string node_id_;               // their key in the job's store (strike_record.hpp)
  bool strike_ = false;               // this round's abort record is this node's own failure: a strike once logged
  std::unique_ptr<preflight::ProbeServer> probe_;  // --preflight: the link checks' probe, until the first plan
  Rendezvous* rendezvous_ = nullptr;               // run_rounds' while it runs
  std::unique_ptr<AbortWaitThread> abort_thread_;  // last: stopped before the supervisor goes
  // The workers' store of the round (launcher/c10d), listening since self_info(); served on
  // group rank 0's node, closed elsewhere; stopped once the round is concluded.
  std::unique_ptr<c10d::Server> worker_store_;
};

// The address the other nodes know this node by: --local-addr (a host list's agent: the host
// as listed), the store's address on the node that hosts it, else the host name.
std::string MultiNodeAgent::advertised_addr() const {
  if (!spec_.local_addr.empty()) return spec_.local_addr;
  if (store_.leader) return spec_.rdzv_backend == cli::RdzvBackend::kStatic ? spec_.master_addr : store_.endpoint.host;
  return os::host_name();
}

NodeInfo MultiNodeAgent::self_info(int previous_rank) {
  NodeInfo n;
  n.name = store_.name;
  n.host = os::host_name();
  n.addr = advertised_addr();
  // The workers' store listens from now on if this node becomes group rank 0, so that other
  // nodes' workers that connect first wait in the backlog instead of being refused.
  worker_store_.reset();
  if (job_.launcher_worker_store) {
    // Sized for the largest world the job may form: its most nodes, each with this node's count.
    const auto ranks = static_cast<size_t>(std::max(spec_.nnodes_max, 1)) * static_cast<size_t>(job_.devices.nproc);
    worker_store_ =
        node::listen_worker_store(os::store_listen_host(n.addr), 0, job_.restrict_worker_store_peers, ranks);
    n.worker_port = worker_store_->port();
    n.agent_store = true;
  } else {
    n.worker_port = os::pick_free_port();
  }
  n.nproc = job_.devices.nproc;
  n.role = job_.role;
  n.requested_rank = spec_.node_rank_given || spec_.rdzv_backend == cli::RdzvBackend::kStatic ? spec_.node_rank : -1;
  n.previous_rank = previous_rank;
  n.nnodes_min = spec_.nnodes_min;
  n.nnodes_max = spec_.nnodes_max;
  n.max_restarts = job_.max_restarts;
  n.pid = ::getpid();
  n.preflight_failed = preflight_.failed;
  n.cpu_gflops = preflight_.cpu_median_gflops;
  n.nccl_busbw_gbps = preflight_.nccl_busbw_gbps;
  n.probe_port = probe_ ? probe_->port() : 0;
  const double now = unix_now();
  for (double t : strike_times_) n.strike_ages_s.push_back(now - t);
  if (const status::StatusEndpoint* endpoint = session_.endpoint()) {  // how the other nodes reach it
    const std::string& h = job_.status.host;
    const std::string at = h == "0.0.0.0" || h == "::" ? n.addr : h;
    n.status_url =
        fmt::format(at.find(':') != std::string::npos ? "http://[{}]:{}" : "http://{}:{}", at, endpoint->port());
  }
  return n;
}

RoundCheckContext MultiNodeAgent::round_check_context() {
  return RoundCheckContext{*store_.job,       *store_.root,     store_.leader || store_.leaderless,
                           job_.max_restarts, spec_.nnodes_max, os::host_name(),
                           store_.address};
}

// A final record read here is acknowledged at once, while this node's workers still stop:
// the leader need not keep the store up through our shutdown timeout.
std::optional<std::string> MultiNodeAgent::check(const Round& r) {
  std::optional<std::string> reason = check_round(round_check_context(), r.plan, r.rank(), state_);
  if (state_.abort && !abort_seen_) abort_seen_ = std::chrono::system_clock::now();
  if (state_.abort && state_.abort->final) acknowledge(r);
  return reason;
}

// This node knows how the job ends (the exited key): the leader stops waiting for it. Best
// effort: a store already gone has nobody left to tell.
void MultiNodeAgent::acknowledge(const Round& r) {
  if (acknowledged_round_ == r.number()) return;
  acknowledged_round_ = r.number();
  try {
    store_.job->set(JobKeys::exited(r.number(), r.rank()), "1");
    store_.job->add(JobKeys::exited_count(r.number()), 1);
  } catch (const store::StoreError&) {  // see above: nothing to do about it
  }
}

// The job ends here with `exit_code`: the leader first records the end for the spares and
// keeps the store up until every other node and spare has read the outcome (or is gone), so
// that every node tells the same story; then close.
void MultiNodeAgent::leave(const Round& r, int exit_code) {
  acknowledge(r);
  if (store_.leader || store_.leaderless) {
    try {
      store_.job->set(JobKeys::ended(), std::to_string(exit_code));
    } catch (const store::StoreError&) {  // as in acknowledge
    }
  }
  if (store_.leader) wait_for_others_to_leave(r);
  store_.close();
}

// The leader keeps the store up until every other node has read the outcome and left
// (the round's exited key or the job's stop_seen key), or is gone, and every node it left out
// has read why, at most two heartbeat timeouts: a live node reads it within a heartbeat
// interval, a silent one is dropped by the store after one heartbeat timeout. A second stop
// signal ends the wait.
void MultiNodeAgent::wait_for_others_to_leave(const Round& r) {
  const auto deadline = std::chrono::steady_clock::now() + ms(2 * spec_.rdzv.heartbeat_timeout_s);
  supervisor_.wait_until(kBarrierTick, [&] {
    if (std::chrono::steady_clock::now() >= deadline) return true;
    try {
      // The spares waiting after this round read the end first (one request each).
      if (store_.job->add(JobKeys::ended_seen(), 0) < store_.job->add(JobKeys::spares(r.number()), 0)) return false;
      if (rendezvous_ && !rendezvous_->left_out_have_read()) return false;
      // Every node acknowledged (the usual end): one request; else look at who has not.
      if (store_.job->add(JobKeys::exited_count(r.number()), 0) >= r.plan.nnodes) return true;
      for (const auto& n : r.plan.nodes) {
        if (n.group_rank == r.rank()) continue;
        if (!store_.job->check({JobKeys::exited(r.number(), n.group_rank)}) &&
            !store_.job->check({JobKeys::stop_seen(n.info.name)}) &&
            !store_.root->try_get(store::kDroppedPrefix + n.info.name))
          return false;
      }
    } catch (const store::StoreError&) {  // the store is failing: nobody can read it any more
    }
    return true;
  });
}

Round MultiNodeAgent::join_round(Rendezvous& rendezvous, const NextRound& next) {
  const cli::RendezvousConf& conf = spec_.rdzv;
  // Nodes that restart need a heartbeat to notice and up to the grace period to stop.
  const Regroup regroup{next.expected_nodes,
                        conf.last_call_timeout_s + job_.supervisor.shutdown_timeout_s + 2 * conf.heartbeat_interval_s,
                        next.spares};
  Round r;
  r.plan = rendezvous.join(self_info(next.previous_rank), next.round, next.restart_count, regroup);
  r.me = *r.plan.find(store_.name);
  return r;
}

report::AttemptResult MultiNodeAgent::run_round(const Round& r) {
  const RoundPlan& plan = r.plan;
  node::NodePlacement where{r.rank(),         plan.nnodes,      r.me.base_rank,    plan.world_size,
                            plan.master_addr, plan.master_port, plan.restart_count};
  where.agent_store = plan.agent_store;
  if (r.rank() == 0 && where.agent_store && worker_store_) {  // group rank 0's plan is whole
    std::vector<std::string> nodes;
    for (const auto& n : plan.nodes) nodes.push_back(n.info.addr);
    worker_store_->serve(nodes);
  } else {
    worker_store_.reset();
  }
  where.role_base_rank = r.me.role_base_rank;
  where.role_world_size = r.me.role_world_size;
  const worker::GroupPlan group = group_plan(job_, where);
  console::launcher_notice(fmt::format("round {}: node {} of {}, ranks {}-{} of {}, workers' store at {}{}", r.number(),
                                       r.rank(), group.nnodes, r.me.base_rank,
                                       r.me.base_rank + group.local_world_size - 1, plan.world_size,
                                       format_host_port(plan.master_addr, plan.master_port),
                                       plan.restart_count ? fmt::format(" (restart {})", plan.restart_count) : ""));
  events_.set_node(r.rank());
  session_.begin_attempt(plan.restart_count, plan.world_size);
  board_.job.node_rank = r.rank();
  board_.round = r.number();
  board_.spare = false;
  board_.left_out = plan.left_out;
  board_.nodes.clear();
  if (r.rank() == 0) {  // group rank 0's page links every node's, with what each joined with
    const auto& strikes = spec_.strikes;
    for (const auto& n : plan.nodes)
      board_.nodes.push_back({n.group_rank, n.info.host, n.info.status_url, n.info.preflight_failed, n.info.cpu_gflops,
                              strikes.within_window(n.info.strike_ages_s), n.info.nccl_busbw_gbps});
  }
  events_.write("rendezvous", {{"round", r.number()},
                               {"nnodes", group.nnodes},
                               {"world_size", plan.world_size},
                               {"base_rank", r.me.base_rank},
                               {"nproc", group.local_world_size},
                               {"master_addr", plan.master_addr},
                               {"master_port", plan.master_port}});
  // A hang detected on another node: this node's workers' stacks are captured too.
  const supervise::AttemptCheck check{
      ms(spec_.rdzv.heartbeat_interval_s), [&] { return this->check(r); },
      [&] { return state_.abort && is_hang(state_.abort->failure) && state_.abort->node_rank != r.rank(); }};
  state_ = RoundFindings{};
  abort_seen_.reset();
  abort_thread_->wait_for_round(r.number());
  std::vector<worker::WorkerLaunch> launches =
      prepare_attempt(job_, worker_env_, group, layout_, &session_.snapshots());
  return session_.run_attempt(std::move(launches), check);
}

// The round's abort record, once the check stopped us; nullopt when the store is lost.
std::optional<AbortRecord> MultiNodeAgent::read_abort(int round) {
  if (state_.abort) return state_.abort;  // read by the check: the store may be gone since
  if (!state_.store_lost.empty()) return std::nullopt;
  if (!state_.bad_record.empty()) throw LaunchError(exit_code::kRendezvousFailed, state_.bad_record);
  return abort_from_json(store_.job->get(JobKeys::abort(round), ms(spec_.rdzv.heartbeat_timeout_s)));
}

// Done here; wait for the others (or for one of them to fail: then we restart too).
Settled MultiNodeAgent::after_success(const Round& r) {
  store_.job->set(JobKeys::done(r.number(), r.rank()), "1");
  store_.job->add(JobKeys::done_count(r.number()), 1);  // one counter, not a key per node to look at
  std::optional<std::string> reason;
  const int sig = supervisor_.wait_until(kBarrierTick, [&] {
    reason = check(r);
    if (reason) return true;
    try {
      return store_.job->add(JobKeys::done_count(r.number()), 0) >= r.plan.nnodes;
    } catch (const store::StoreError& e) {  // the store is gone: stop waiting; conclude() reports it
      state_.store_lost = e.what();
      reason = state_.store_lost;
      return true;
    }
  });
  if (sig != 0) return {after_interrupt(r, sig), std::nullopt};
  if (reason) return {std::nullopt, read_abort(r.number())};
  leave(r, exit_code::kSuccess);
  return {exit_code::kSuccess, std::nullopt};
}

// Our worker failed with what reads like a communication error: most likely the symptom of
// something elsewhere. For up to one heartbeat timeout, look for a better root cause (the
// round's record, a dropped peer, a lost store); docs/multinode.md "Which event is the root cause".
std::optional<Settled> MultiNodeAgent::symptom_of_known_cause(const Round& r, const report::WorkerOutcome& root) {
  const auto deadline = std::chrono::steady_clock::now() + ms(spec_.rdzv.heartbeat_timeout_s);
  std::optional<std::string> cause;
  const int sig = supervisor_.wait_until(kBarrierTick, [&] {
    cause = find_root_cause(round_check_context(), r.plan, r.rank(), state_);
    return cause || std::chrono::steady_clock::now() >= deadline;
  });
  if (sig != 0 && !cause) return Settled{after_interrupt(r, sig), std::nullopt};  // recorded before our symptom
  if (!cause) return std::nullopt;
  console::launcher_notice(
      fmt::format("rank {} failed with a communication error, a symptom of: {}", root.rank, *cause));
  if (!state_.bad_record.empty()) throw LaunchError(exit_code::kRendezvousFailed, state_.bad_record);
  if (state_.abort && state_.abort->final) acknowledge(r);
  return Settled{std::nullopt, state_.abort};  // no record: the store is lost (conclude says so)
}

// Our worker failed, or hung (a hang verdict here, its stacks captured on this node):
// publish it (the first failure of the round wins) and, if it is the final one and ours,
// report it here. A hang is a root cause of its own, never a communication symptom.
Settled MultiNodeAgent::after_failure(const Round& r, const report::AttemptResult& result) {
  const report::WorkerOutcome& root = result.outcomes[*result.root_cause];
  if (!is_hang(root.failure) && report::looks_like_comm_error(root))
    if (std::optional<Settled> known = symptom_of_known_cause(r, root)) return *known;
  const AbortRecord mine =
      AbortRecord::worker_failure(root, r.rank(), os::host_name(), r.plan.restart_count >= job_.max_restarts);
  AbortRecord abort = mine;
  try {
    abort = publish_abort(*store_.job, r.number(), mine);
  } catch (const store::StoreError& e) {  // the others cannot hear us: report our own failure
    state_.store_lost = e.what();
  }
  if (abort.node_rank == r.rank() && abort.pid == mine.pid) strike_ = true;  // conclude() records it
  if (!(abort.final && abort.node_rank == r.rank() && abort.pid == mine.pid)) return {std::nullopt, abort};
  log_abort(events_, abort);
  record_strike(r, abort);
  node::keep_reported_error_file(layout_, root);
  const report::ReportContext ctx{job_.program, os::host_name(), r.plan.restart_count, job_.max_restarts};
  console::write_all(STDERR_FILENO, report::format_failure_report(ctx, result.outcomes, *result.root_cause));
  report::write_termination_log(job_.status.termination_log, report::termination_message(ctx, root));
  if (state_.store_lost.empty()) leave(r, abort.exit_code);
  return {abort.exit_code, std::nullopt};
}

// A stop signal here ends the job on every node with the signal as its root cause: the
// round's record is published (unless another was first) and so is the job's stop record,
// which ends the job even where the round already recorded a restart (the others read it
// between rounds or in the next one). The leader waits for the others to read either
// before the store goes.
int MultiNodeAgent::after_interrupt(const Round& r, int signal) {
  const std::optional<std::string>& note = supervisor_.stop_note();  // the launching machine said why
  console::launcher_notice("stopped" + stopped_how(signal, note));
  const AbortRecord stop = AbortRecord::stopped_by_signal(r.rank(), os::host_name(), signal, note);
  if (note) log_abort(events_, stop);
  try {
    publish_abort(*store_.job, r.number(), stop);
    publish_job_stop(stop);
    leave(r, stop.exit_code);
  } catch (const std::exception&) {  // best effort: we exit anyway; the others see us dropped
  }
  return stop.exit_code;
}

// The job's stop record (the first one wins), and this launcher has seen it.
void MultiNodeAgent::publish_job_stop(const AbortRecord& stop) {
  store_.job->compare_set(JobKeys::stop(), "", to_json(stop));
  store_.job->set(JobKeys::stop_seen(store_.name), "1");
}

// A stop signal during a rendezvous (between rounds, or before the first): publish the
// job's stop record; the leader waits for the nodes of the last round to read it.
int MultiNodeAgent::stopped_between_rounds(const std::optional<Round>& last, int signal) {
  const std::optional<std::string>& note = supervisor_.stop_note();
  console::launcher_notice("stopped" + stopped_how(signal, note));
  const AbortRecord stop =
      AbortRecord::stopped_by_signal(last ? last->rank() : spec_.node_rank, os::host_name(), signal, note);
  if (note) log_abort(events_, stop);
  try {
    publish_job_stop(stop);
    if (store_.leader && last) wait_for_others_to_leave(*last);
    store_.close();
  } catch (const std::exception&) {  // best effort, as in after_interrupt
  }
  return stop.exit_code;
}

// Another launcher was stopped by a signal while this one was between rounds: report it,
// say so, and (the leader) wait for the nodes of the last round to read it too.
int MultiNodeAgent::job_stopped(const std::optional<Round>& last, const AbortRecord& stop) {
  console::write_all(STDERR_FILENO,
                     report::format_remote_failure_report(job_.program, stop.remote_failure(),
                                                          last ? last->rank() : spec_.node_rank, os::host_name()));
  try {
    store_.job->set(JobKeys::stop_seen(store_.name), "1");
    if (store_.leader && last) wait_for_others_to_leave(*last);
    store_.close();
  } catch (const store::StoreError&) {  // best effort: nobody left to tell
  }
  return stop.exit_code;
}

Settled MultiNodeAgent::settle(const Round& r, const report::AttemptResult& result) {
  switch (result.kind) {
    case report::AttemptResult::Kind::kSucceeded: return after_success(r);
    case report::AttemptResult::Kind::kFailed: return after_failure(r, result);
    case report::AttemptResult::Kind::kInterrupted: return {after_interrupt(r, result.signal), std::nullopt};
    case report::AttemptResult::Kind::kStopped: break;  // by the check
  }
  return {std::nullopt, read_abort(r.number())};
}

// Exit (the code), or restart on every node: `next` says how the next round gathers.
std::optional<int> MultiNodeAgent::conclude(const Round& r, const Settled& settled, NextRound& next) {
  if (settled.exit_code) return settled.exit_code;
  if (!settled.abort) {  // the store was lost before any record could be read
    events_.write("failure",
                  {{"kind", to_string(FailureKind::kStoreLost)}, {"final", true}, {"reason", state_.store_lost}});
    throw LaunchError(exit_code::kRendezvousFailed,
                      fmt::format("this node's workers were stopped: {}", state_.store_lost));
  }
  const AbortRecord& abort = *settled.abort;
  if (abort.failure == FailureKind::kStopped && !abort.stop_note.empty() && abort.final) {
    // The launching machine stops every host for this: this node's stop, told as it was asked,
    // whether its own word came first or another node's record did.
    const std::string note = supervisor_.stop_note().value_or(abort.stop_note);  // its own word, if first
    console::launcher_notice("stopped" + stopped_how(SIGTERM, note));
    const AbortRecord mine = AbortRecord::stopped_by_signal(r.rank(), os::host_name(), SIGTERM, note);
    log_abort(events_, mine);
    leave(r, abort.exit_code);
    return abort.exit_code;
  }
  log_abort(events_, abort);
  if (strike_) record_strike(r, abort);
  if (abort.final) {
    if (is_hang(abort.failure) && layout_.temporary()) {  // this node's stacks were captured there
      layout_.keep();
      console::launcher_notice(
          fmt::format("kept the run directory {}: it holds this node's stacks files", layout_.run_dir()));
    }
    console::write_all(STDERR_FILENO, report::format_remote_failure_report(job_.program, abort.remote_failure(),
                                                                           r.rank(), os::host_name()));
    report::write_termination_log(job_.status.termination_log,
                                  report::termination_message(job_.program, abort.remote_failure()));
    leave(r, abort.exit_code);
    return abort.exit_code;
  }
  console::launcher_notice(fmt::format("{}; restarting on every node in round {}", abort.reason, r.number() + 1));
  next.round = r.number() + 1;
  next.previous_rank = r.rank();
  next.restart_count = r.plan.restart_count + (abort.failure == FailureKind::kMembership ? 0 : 1);
  next.expected_nodes = r.plan.nnodes;
  if (abort.failure == FailureKind::kNodeLost) next.expected_nodes -= 1;
  if (store_.leader || store_.leaderless) {
    if (abort.failure == FailureKind::kMembership)
      next.expected_nodes += static_cast<int>(store_.job->add(JobKeys::waiting(r.number()), 0));
    // The hot spares join too: one takes a free seat, the others stay spares (rendezvous.hpp).
    next.spares = live_spares(r.number());
  }
  events_.set_attempt(next.restart_count);
  session_.count_restart(abort.failure);
  events_.write("restart", {{"round", next.round},
                            {"restart", next.restart_count},
                            {"max_restarts", job_.max_restarts},
                            {"reason", abort.reason}});
  return std::nullopt;
}

// This node's own worker was round r's root cause: a strike (docs/preflight.md "Strikes"),
// sent with its later joins; the round's leader leaves it out at --strikes COUNT in the window.
void MultiNodeAgent::record_strike(const Round& r, const AbortRecord& abort) {
  strike_ = false;
  const double now = unix_now();
  strike_times_.push_back(now);
  std::vector<double> ages;
  for (double t : strike_times_) ages.push_back(now - t);
  const int count = spec_.strikes.within_window(ages);
  board_.strikes = count;
  if (spec_.strikes.on()) {  // kept for a launcher started again on this node
    try {
      store_.job->set(strikes_key(node_id_),
                      format_strike_times(strike_times_within(strike_times_, now, spec_.strikes.window_s)));
    } catch (const std::exception& e) {  // the store is gone: the round's end will say so
      console::launcher_notice(
          fmt::format("warning: this node's strikes were not kept in the job's store: {}", e.what()));
    }
  }
  events_.write("strike", {{"round", r.number()},
                           {"kind", to_string(abort.failure)},
                           {"strikes", count},
                           {"limit", spec_.strikes.count},
                           {"window_s", spec_.strikes.window_s}});
  if (spec_.strikes.on())
    console::launcher_notice(fmt::format("strike {} of {} within {:g} s for this node ({}): {}", count,
                                         spec_.strikes.count, spec_.strikes.window_s, to_string(abort.failure),
                                         abort.reason));
}

// The strikes this node already has in the job's store: its launcher was started again (a pod
// restarted after it was struck out); they count as if this launcher had seen them.
void MultiNodeAgent::load_strikes() {
  if (!spec_.strikes.on()) return;
  node_id_ = node_id(env_, os::host_name());
  try {
    if (const auto record = store_.job->try_get(strikes_key(node_id_)))
      strike_times_ = parse_strike_times(*record, unix_now(), spec_.strikes.window_s);
  } catch (const std::exception& e) {  // the join that follows meets the same store and says why
    console::launcher_notice(fmt::format("warning: this node's earlier strikes could not be read: {}", e.what()));
  }
  if (strike_times_.empty()) return;
  board_.strikes = static_cast<int>(strike_times_.size());
  console::launcher_notice(
      fmt::format("this node ({} {}) comes with {} strike{} within {:g} s kept in the job's store (--strikes {})",
                  cli::lookup(env_, kNodeIdEnvVar) ? kNodeIdEnvVar : "host", node_id_, strike_times_.size(),
                  strike_times_.size() == 1 ? "" : "s", spec_.strikes.window_s, spec_.strikes.describe()));
}

// --preflight: the other nodes measure their links to this node's probe (link_round.hpp).
void MultiNodeAgent::start_probe() {
  try {
    probe_ = std::make_unique<preflight::ProbeServer>(os::store_listen_host(advertised_addr()));
  } catch (const std::runtime_error& e) {
    console::launcher_notice(fmt::format("preflight: warn network: {}; this node's links are not checked", e.what()));
  }
}

// This node's link to its successor in the ring and its clock against the store's host, asked
// by the round's leader, who judges every node's (link_round.hpp); the figures go to the event log.
preflight::RingReport MultiNodeAgent::measure_links(const LinkPeer& peer) {
  preflight::RingReport r{preflight::measure_link(peer.addr, peer.port, peer.ms),
                          preflight::measure_clock(peer.clock_addr, peer.clock_port),
                          peer.store_port > 0 ? preflight::reach(peer.store_addr, peer.store_port) : ""};
  const std::string to = format_host_port(peer.addr, peer.port);
  events_.write("preflight",
                {{"check", "network"},
                 {"level", "measured"},
                 {"figure", r.link.error.empty()
                                ? fmt::format("to {}: sends {:.0f} MB/s, receives {:.0f} MB/s, round trip {:.3f} ms",
                                              to, r.link.out_mbps, r.link.in_mbps, r.link.rtt_us / 1e3)
                                : fmt::format("to {}: {}", to, r.link.error)},
                 {"threshold", "judged by the round's leader against every link (docs/preflight.md)"}});
  if (peer.store_port > 0)
    events_.write("preflight",
                  {{"check", "workers' store"},
                   {"level", "measured"},
                   {"figure", r.store_error.empty() ? "reached " + format_host_port(peer.store_addr, peer.store_port)
                                                    : r.store_error},
                   {"threshold", "judged by the round's leader"}});
  events_.write("preflight", {{"check", "clock"},
                              {"level", "measured"},
                              {"figure", r.clock.error.empty()
                                             ? fmt::format("offset to the store's host {:+.4f} s", r.clock.offset_s)
                                             : r.clock.error},
                              {"threshold", "judged by the round's leader"}});
  return r;
}

// The spares that wait after round `round` and whose launchers are still there (a spare the
// store dropped would make the next round wait for it until its last call).
int MultiNodeAgent::live_spares(int round) {
  const long n = store_.job->add(JobKeys::spares(round), 0);
  int live = 0;
  for (long k = 1; k <= n; ++k) {
    const std::optional<std::string> name = store_.job->try_get(JobKeys::spare(round, k));
    if (name && !store_.root->try_get(store::kDroppedPrefix + *name)) ++live;
  }
  return live;
}

// The job runs with its MAX nodes: this node waits as a hot spare, its standbys warm (as if it
// were the job's last node: a handed-over worker gets its real identity) and its snapshot
// regions created, ready to take a lost or left-out node's seat.
void MultiNodeAgent::wait_as_spare(int round) {
  board_.spare = true;
  events_.write("spare", {{"round", round}, {"nnodes_max", spec_.nnodes_max}});
  const int nproc = job_.devices.nproc;
  node::NodePlacement where{spec_.nnodes_max - 1,
                            spec_.nnodes_max,
                            (spec_.nnodes_max - 1) * nproc,
                            spec_.nnodes_max * nproc,
                            advertised_addr(),
                            0,
                            0};
  const bool warm = session_.warm_standbys(
      prepare_attempt(job_, worker_env_, group_plan(job_, where), layout_, &session_.snapshots()));
  console::launcher_notice(fmt::format(
      "the job runs with its maximum of {} node{} (--nnodes): this node waits as a hot spare{} and takes the seat "
      "of a node that is lost or left out",
      spec_.nnodes_max, spec_.nnodes_max == 1 ? "" : "s", warm ? ", its standbys warm," : ""));
}

// The job ended while this node waited as a spare: no worker ran here; the job's exit code.
int MultiNodeAgent::spare_released(const JobEnded& end) {
  console::launcher_notice(std::string(end.what()) + "; no worker of it ran here");
  store_.close();
  return end.exit_code;
}

// The rounds, then the finish event (also when the launcher itself fails).
int MultiNodeAgent::run() {
  try {
    const int code = run_rounds();
    events_.write("finish", {{"outcome", code == 0 ? "succeeded" : "failed"}, {"exit_code", code}});
    return code;
  } catch (const LaunchError& e) {  // not swallowed: logged, then main() reports it
    session_.persist_at_end();
    events_.write("finish", {{"outcome", "error"}, {"exit_code", e.exit_code()}, {"message", e.what()}});
    throw;
  } catch (const store::StoreError& e) {  // not swallowed: run_multi_node_agent reports it
    session_.persist_at_end();
    events_.write("failure", {{"kind", to_string(FailureKind::kStoreLost)}, {"final", true}, {"reason", e.what()}});
    events_.write("finish", {{"outcome", "error"}, {"exit_code", exit_code::kRendezvousFailed}, {"message", e.what()}});
    throw;
  }
}

int MultiNodeAgent::run_rounds() {
  // The store's host name (etcd: any member's) may not resolve yet (a pod's or a service's
  // DNS record); each connection resolves it again, so no answer is kept across rounds.
  std::vector<std::string> hosts;
  if (spec_.rdzv_backend == cli::RdzvBackend::kStatic) hosts = {spec_.master_addr};
  else
    for (const HttpEndpoint& e : spec_.rdzv_endpoints) hosts.push_back(e.address.host);
  if (const int signal = wait_for_dns(hosts, spec_.rdzv.join_timeout_s,
                                      [this] { return rendezvous_signal_ = supervisor_.poll_signals(); })) {
    console::launcher_notice(fmt::format("stopped{} while waiting for DNS of {}",
                                         stopped_how(signal, supervisor_.stop_note()), fmt::join(hosts, ", ")));
    return AbortRecord::stopped_by_signal(spec_.node_rank, os::host_name(), signal, supervisor_.stop_note()).exit_code;
  }
  try {
    store_ = connect_job_store(spec_, job_.run_id,
                               [this] { return (rendezvous_signal_ = supervisor_.poll_signals()) != 0; });
  } catch (const store::StoreError& e) {
    if (rendezvous_signal_ == 0) throw;
    console::launcher_notice(fmt::format("stopped{} while waiting for the rendezvous store: {}",
                                         stopped_how(rendezvous_signal_, supervisor_.stop_note()), e.what()));
    return AbortRecord::stopped_by_signal(spec_.node_rank, os::host_name(), rendezvous_signal_, supervisor_.stop_note())
        .exit_code;
  }
  load_strikes();
  if (job_.preflight)  // before the first join; the round's leader judges the failures and compares the cores
    preflight_ =
        node::check_node(*job_.preflight,
                         node::job_needs(job_.devices, job_.devices.nproc,
                                         node::preflight_folders(env_, layout_.run_dir(), job_.snapshot_persist.dir),
                                         job_.command.executable),
                         {&events_, &board_, true});
  if (job_.preflight) start_probe();
  worker_env_ = worker::socket_interface_environment(
      env_, advertised_addr(), spec_.rdzv_backend == cli::RdzvBackend::kEtcd ? "" : hosts.front());
  abort_thread_ = std::make_unique<AbortWaitThread>(store_.open_waiter(), [this] { supervisor_.wake(); });
  Rendezvous rendezvous(*store_.job, spec_.rdzv, store_.leader, spec_.nnodes_min, spec_.nnodes_max,
                        [this] { return rendezvous_signal_ = supervisor_.poll_signals(); });
  rendezvous_ = &rendezvous;
  struct Forget {
    Rendezvous*& held;
    ~Forget() { held = nullptr; }
  } forget{rendezvous_};
  ScreenRules rules{0, 0, spec_.strikes};
  if (job_.preflight) {
    rules.cpu_warn = job_.preflight->cpu_warn, rules.cpu_fail = job_.preflight->cpu_fail;
    rules.nccl_warn = job_.preflight->nccl_warn, rules.nccl_fail = job_.preflight->nccl_fail;
    if (probe_) rendezvous.check_links_with([this](const LinkPeer& p) { return measure_links(p); }, *job_.preflight);
  }
  rendezvous.screen_nodes_with(rules);
  rendezvous.on_spare([this](int round) { wait_as_spare(round); });
  if (store_.leaderless)
    rendezvous.elect_leaders(store_.name, [root = store_.root](const std::string& name) {
      return root->try_get(store::kDroppedPrefix + name).has_value();  // its liveness lease expired
    });
  NextRound next;
  next.round = store_.leader ? 0 : -1;
  std::optional<Round> last;
  for (;;) {
    try {
      last = join_round(rendezvous, next);
    } catch (const JobEnded& e) {
      return spare_released(e);
    } catch (const JobStopped& e) {
      session_.snapshots().persist(snapshot::PersistReason::kStop);
      return job_stopped(last, e.record);
    } catch (const LaunchError&) {
      if (rendezvous_signal_ != 0) {
        session_.snapshots().persist(snapshot::PersistReason::kStop);
        return stopped_between_rounds(last, rendezvous_signal_);
      }
      throw;
    }
    probe_.reset();  // the first round's link checks are done once its plan is read
    const report::AttemptResult result = run_round(*last);
    // A restart or the end is known only once settled: the end persists again below.
    session_.after_attempt(result, false, state_.abort && state_.abort->failure == FailureKind::kMembership);
    const std::optional<int> code = conclude(*last, settle(*last, result), next);
    worker_store_.reset();  // every node's workers are gone (or the job ends): the round's store too
    if (code) {
      session_.persist_at_end();  // skipped if that step was just written
      return *code;
    }
    session_.recovery().begin(report::failed_attempt(result, abort_seen_.value_or(std::chrono::system_clock::now())));
  }
}

}  // namespace

int run_multi_node_agent(const node::JobConfig& job, const MultiNodeSpec& spec, const cli::Environment& env,
                         supervise::StopRequests* stops) {
  try {
    return MultiNodeAgent(job, spec, env, stops).run();
  } catch (const store::StoreError& e) {  // unreachable, refused or lost store outside a round
    throw LaunchError(exit_code::kRendezvousFailed, e.what());
  }
}

}  // namespace ddp::launch::multinode
