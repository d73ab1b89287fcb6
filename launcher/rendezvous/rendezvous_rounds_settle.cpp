#include "launcher/rendezvous/rendezvous_rounds_class.hpp"

namespace ddp::launch::rendezvous::rounds {

RoundCheckContext RendezvousRounds::round_check_context() {
  return RoundCheckContext{*store_.job,       *store_.root,     store_.leader || store_.leaderless,
                           job_.max_restarts, spec_.nnodes_max, os::host_name(),
                           store_.address};
}

// A final record read here is acknowledged at once, while this node's workers still stop:
// the leader need not keep the store up through our shutdown timeout.
std::optional<std::string> RendezvousRounds::check(const Round& r) {
  std::optional<std::string> reason = check_round(round_check_context(), r.plan, r.rank(), state_);
  if (state_.abort && !abort_seen_) abort_seen_ = std::chrono::system_clock::now();
  if (state_.abort && state_.abort->final) acknowledge(r);
  return reason;
}

// The round's abort record, once the check stopped us; nullopt when the store is lost.
std::optional<AbortRecord> RendezvousRounds::read_abort(int round) {
  if (state_.abort) return state_.abort;  // read by the check: the store may be gone since
  if (!state_.store_lost.empty()) return std::nullopt;
  if (!state_.bad_record.empty()) throw LaunchError(exit_code::kRendezvousFailed, state_.bad_record);
  return abort_from_json(store_.job->get(JobKeys::abort(round), ms(spec_.rdzv.heartbeat_timeout_s)));
}

// Done here; wait for the others (or for one of them to fail: then we restart too).
Settled RendezvousRounds::after_success(const Round& r) {
  store_.job->set(JobKeys::done(r.number(), r.rank()), "1");
  store_.job->add(JobKeys::done_count(r.number()), 1);  // one counter, not a key per node to look at
  std::optional<std::string> reason;
  const int sig = stops_.wait_until(kBarrierTick, [&] {
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
std::optional<Settled> RendezvousRounds::symptom_of_known_cause(const Round& r, const report::WorkerOutcome& root) {
  const auto deadline = std::chrono::steady_clock::now() + ms(spec_.rdzv.heartbeat_timeout_s);
  std::optional<std::string> cause;
  const int sig = stops_.wait_until(kBarrierTick, [&] {
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
Settled RendezvousRounds::after_failure(const Round& r, const report::AttemptResult& result) {
  const report::WorkerOutcome& root = result.outcomes[*result.root_cause];
  if (!has_verdict(root.failure) && report::looks_like_comm_error(root))
    if (std::optional<Settled> known = symptom_of_known_cause(r, root)) return *known;
  const AbortRecord mine = AbortRecord::worker_failure(
      root, r.rank(), os::host_name(), r.plan.restart_count >= job_.max_restarts || !result.unreaped_ranks.empty());
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
  session_.end().report_own_failure(result, r.plan.restart_count);
  if (state_.store_lost.empty()) leave(r, abort.exit_code);
  return {abort.exit_code, std::nullopt};
}

// A stop signal here ends the job on every node with the signal as its root cause: the
// round's record is published (unless another was first) and so is the job's stop record,
// which ends the job even where the round already recorded a restart (the others read it
// between rounds or in the next one). The leader waits for the others to read either
// before the store goes.
int RendezvousRounds::after_interrupt(const Round& r, int signal) {
  const std::optional<std::string>& note = stops_.stop_note();  // the launching machine said why
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

Settled RendezvousRounds::settle_round(const Round& r, const report::AttemptResult& result) {
  switch (result.kind) {
    case report::AttemptResult::Kind::kSucceeded: return after_success(r);
    case report::AttemptResult::Kind::kFailed: return after_failure(r, result);
    case report::AttemptResult::Kind::kInterrupted: return {after_interrupt(r, result.signal), std::nullopt};
    case report::AttemptResult::Kind::kStopped: break;  // by the check
  }
  return {std::nullopt, read_abort(r.number())};
}

// Exit (the code), or restart on every node: `next` says how the next round gathers.
std::optional<int> RendezvousRounds::conclude(const Round& r, const Settled& settled, NextRound& next) {
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
    const std::string note = stops_.stop_note().value_or(abort.stop_note);  // its own word, if first
    console::launcher_notice("stopped" + stopped_how(SIGTERM, note));
    const AbortRecord mine = AbortRecord::stopped_by_signal(r.rank(), os::host_name(), SIGTERM, note);
    log_abort(events_, mine);
    leave(r, abort.exit_code);
    return abort.exit_code;
  }
  log_abort(events_, abort);
  if (strike_) record_strike(r, abort);
  if (abort.final) {
    session_.end().report_others_failure(abort.remote_failure(), abort.exit_code, r.rank());
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

// The spares that wait after round `round` and whose launchers are still there (a spare the
// store dropped would make the next round wait for it until its last call).
int RendezvousRounds::live_spares(int round) {
  const long n = store_.job->add(JobKeys::spares(round), 0);
  int live = 0;
  for (long k = 1; k <= n; ++k) {
    const std::optional<std::string> name = store_.job->try_get(JobKeys::spare(round, k));
    if (name && !store_.root->try_get(store::kDroppedPrefix + *name)) ++live;
  }
  return live;
}

}  // namespace ddp::launch::rendezvous::rounds
