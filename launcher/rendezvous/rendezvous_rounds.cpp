#include "launcher/rendezvous/rendezvous_rounds_class.hpp"
#include "launcher/node/agent_loop.hpp"

namespace ddp::launch::rendezvous {
namespace rounds {

// The address the other nodes know this node by: --local-addr (a host list's agent: the host
// as listed), the store's address on the node that hosts it, else the host name.
std::string RendezvousRounds::advertised_addr() const {
  if (!spec_.local_addr.empty()) return spec_.local_addr;
  if (store_.leader) return spec_.rdzv_backend == cli::RdzvBackend::kStatic ? spec_.master_addr : store_.endpoint.host;
  return os::host_name();
}

NodeInfo RendezvousRounds::self_info(int previous_rank) {
  NodeInfo n;
  n.name = store_.name;
  n.host = os::host_name();
  n.addr = advertised_addr();
  // The workers' store listens from now on if this node becomes group rank 0, so that other
  // nodes' workers that connect first wait in the backlog instead of being refused.
  node::WorkerStoreHost& worker_store = session_.worker_store();
  worker_store.close();
  if (job_.launcher_worker_store) {
    // Sized for the largest world the job may form: its most nodes, each with this node's count.
    const auto ranks = static_cast<size_t>(std::max(spec_.nnodes_max, 1)) * static_cast<size_t>(job_.devices.nproc);
    n.worker_port = worker_store.listen_early(os::store_listen_host(n.addr), job_.restrict_worker_store_peers, ranks);
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

JoinOutcome RendezvousRounds::join_round(const NextRound& next) {
  const cli::RendezvousConf& conf = spec_.rdzv;
  // Nodes that restart need a heartbeat to notice and up to the grace period to stop.
  const Regroup regroup{next.expected_nodes,
                        conf.last_call_timeout_s + job_.supervisor.shutdown_timeout_s + 2 * conf.heartbeat_interval_s,
                        next.spares};
  return rendezvous_->join(self_info(next.previous_rank), next.round, next.restart_count, regroup);
}

// How this node's rendezvous runs (rendezvous.hpp), from the command line and the job's store.
RendezvousPolicy RendezvousRounds::rendezvous_policy() {
  RendezvousPolicy policy{{}, spec_.nnodes_min, spec_.nnodes_max, spec_.rdzv, ScreenRules{0, 0, spec_.strikes}, {}};
  if (store_.leaderless) {
    policy.leader = {LeaderMode::Kind::kElected, store_.name, [root = store_.root](const std::string& name) {
                       return root->try_get(store::kDroppedPrefix + name).has_value();  // its liveness lease expired
                     }};
  } else {
    policy.leader.kind = store_.leader ? LeaderMode::Kind::kStoreHost : LeaderMode::Kind::kFollower;
  }
  if (job_.preflight) {
    ScreenRules& rules = policy.screen;
    rules.cpu_warn = job_.preflight->cpu_warn, rules.cpu_fail = job_.preflight->cpu_fail;
    rules.nccl_warn = job_.preflight->nccl_warn, rules.nccl_fail = job_.preflight->nccl_fail;
    if (probe_) policy.links = LinkCheck{[this](const LinkPeer& p) { return measure_links(p); }, *job_.preflight};
  }
  return policy;
}

node::NextAttempt RendezvousRounds::start_round(const Round& r) {
  const RoundPlan& plan = r.plan;
  node::NodePlacement where{r.rank(),         plan.nnodes,      r.me.base_rank,    plan.world_size,
                            plan.master_addr, plan.master_port, plan.restart_count};
  where.agent_store = plan.agent_store;
  if (r.rank() == 0 && where.agent_store && session_.worker_store().open()) {  // group rank 0's plan is whole
    std::vector<std::string> nodes;
    for (const auto& n : plan.nodes) nodes.push_back(n.info.addr);
    session_.worker_store().serve(nodes);
  } else {
    session_.worker_store().close();
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
  events_.set_attempt(plan.restart_count);  // the rendezvous event is the attempt's (the agent loop begins it)
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
      ms(spec_.rdzv.heartbeat_interval_s), [this, &r] { return this->check(r); },
      [this, &r] { return state_.abort && is_hang(state_.abort->failure) && state_.abort->node_rank != r.rank(); }};
  state_ = RoundFindings{};
  abort_seen_.reset();
  abort_thread_->wait_for_round(r.number());
  return node::NextAttempt{group, &worker_env_, check};
}

// The job runs with its MAX nodes: this node waits as a hot spare, its standbys warm (as if it
// were the job's last node: a handed-over worker gets its real identity) and its snapshot
// regions created, ready to take a lost or left-out node's seat.
void RendezvousRounds::wait_as_spare(int round) {
  board_.spare = true;
  board_.goodput.phase(report::Badput::kWaiting, unix_now());
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

// The rounds, then the finish event (also when the launcher itself fails).
int RendezvousRounds::run() {
  try {
    const int code = node::run_agent_loop(session_, job_, *this);
    session_.end().finished(code);
    return code;
  } catch (const LaunchError& e) {  // not swallowed: logged, then main() reports it
    session_.end().failed_by_error(e.exit_code(), e.what());
    throw;
  } catch (const store::StoreError& e) {  // not swallowed: run_multi_node_agent reports it
    session_.end().failed_by_error(exit_code::kRendezvousFailed, e.what(), true);
    throw;
  }
}

// The host names of the job's store: --master-addr (static) or the --rdzv-endpoint hosts.
std::vector<std::string> RendezvousRounds::store_hosts() const {
  if (spec_.rdzv_backend == cli::RdzvBackend::kStatic) return {spec_.master_addr};
  std::vector<std::string> hosts;
  for (const HttpEndpoint& e : spec_.rdzv_endpoints) hosts.push_back(e.address.host);
  return hosts;
}

// The job's store, reached (its host's DNS record first); an exit code instead when a stop
// signal came while this node waited for either.
std::optional<int> RendezvousRounds::reach_store() {
  // The store's host name (etcd: any member's) may not resolve yet (a pod's or a service's
  // DNS record); each connection resolves it again, so no answer is kept across rounds.
  const std::vector<std::string> hosts = store_hosts();
  if (const int signal =
          wait_for_dns(hosts, spec_.rdzv.join_timeout_s, [this] { return rendezvous_signal_ = stops_.poll(); })) {
    console::launcher_notice(fmt::format("stopped{} while waiting for DNS of {}",
                                         stopped_how(signal, stops_.stop_note()), fmt::join(hosts, ", ")));
    return AbortRecord::stopped_by_signal(spec_.node_rank, os::host_name(), signal, stops_.stop_note()).exit_code;
  }
  try {
    store_ = connect_job_store(spec_, job_.run_id, [this] { return (rendezvous_signal_ = stops_.poll()) != 0; });
  } catch (const store::StoreError& e) {
    if (rendezvous_signal_ == 0) throw;
    console::launcher_notice(fmt::format("stopped{} while waiting for the rendezvous store: {}",
                                         stopped_how(rendezvous_signal_, stops_.stop_note()), e.what()));
    return AbortRecord::stopped_by_signal(spec_.node_rank, os::host_name(), rendezvous_signal_, stops_.stop_note())
        .exit_code;
  }
  return std::nullopt;
}

// Before the first join: this node's strikes, --preflight's checks and probe, the workers'
// environment, the abort wait.
void RendezvousRounds::prepare_node() {
  load_strikes();
  if (job_.preflight) board_.goodput.phase(report::Badput::kPreflight, unix_now());
  if (job_.preflight)  // before the first join; the round's leader judges the failures and compares the cores
    preflight_ = preflight::check_node(
        session_.children(), *job_.preflight,
        preflight::job_needs(job_.devices, job_.devices.nproc,
                             preflight::preflight_folders(env_, layout_.run_dir(), job_.snapshot_persist.dir),
                             job_.command.executable),
        {&events_, &board_, true});
  if (job_.preflight) start_probe();
  board_.goodput.phase(report::Badput::kWaiting, unix_now());  // until the first round seats this node
  worker_env_ = worker::socket_interface_environment(
      env_, advertised_addr(), spec_.rdzv_backend == cli::RdzvBackend::kEtcd ? "" : store_hosts().front());
  abort_thread_ = std::make_unique<AbortWaitThread>(store_.open_waiter(), [this] { stops_.wake(); });
}

std::optional<int> RendezvousRounds::prepare() {
  if (const std::optional<int> stopped = reach_store()) return stopped;
  prepare_node();
  rendezvous_.emplace(*store_.job, rendezvous_policy(), [this] { return rendezvous_signal_ = stops_.poll(); });
  next_.round = store_.leader ? 0 : -1;
  return std::nullopt;
}

std::variant<node::NextAttempt, int> RendezvousRounds::next_attempt() {
  for (;;) {
    const JoinOutcome joined = join_round(next_);
    if (const auto* spare = std::get_if<BecameSpare>(&joined)) {
      wait_as_spare(spare->round);
      next_.round = spare->round + 1;  // a spare joins every later round until one seats it
      next_.restart_count = spare->restart_count;
      continue;
    }
    if (const auto* released = std::get_if<SpareReleased>(&joined)) return spare_released(released->exit_code);
    if (const auto* stop = std::get_if<StopRecorded>(&joined)) {
      session_.end().stopped_between_attempts();
      return job_stopped(last_, stop->record);
    }
    if (const auto* stopped = std::get_if<Interrupted>(&joined)) {
      session_.end().stopped_between_attempts();
      return stopped_between_rounds(last_, stopped->signal);
    }
    if (!last_) board_.goodput.phase(report::Badput::kStartup, unix_now());  // seated: the workers start next
    last_ = Round{std::get<Seated>(joined).plan, {}};
    last_->me = *last_->plan.find(store_.name);
    probe_.reset();  // the first round's link checks are done once its plan is read
    return start_round(*last_);
  }
}

std::optional<int> RendezvousRounds::settle(const report::AttemptResult& result) {
  // A restart or the end is known only once settled: the end persists again (JobEnd).
  session_.after_attempt(result, false, state_.abort && state_.abort->failure == FailureKind::kMembership);
  const std::optional<int> code = conclude(*last_, settle_round(*last_, result), next_);
  session_.worker_store().close();  // every node's workers are gone (or the job ends): the round's store too
  if (code) return code;
  session_.recovery().begin(report::failed_attempt(result, abort_seen_.value_or(std::chrono::system_clock::now())));
  return std::nullopt;
}

}  // namespace rounds

int run_multi_node_agent(const node::JobConfig& job, const MultiNodeSpec& spec, const cli::Environment& env,
                         const supervise::StopInputSpec& stop_input) {
  try {
    return rounds::RendezvousRounds(job, spec, env, stop_input).run();
  } catch (const store::StoreError& e) {  // unreachable, refused or lost store outside a round
    throw LaunchError(exit_code::kRendezvousFailed, e.what());
  }
}

}  // namespace ddp::launch::rendezvous
