#include "launcher/rendezvous/rendezvous_rounds_class.hpp"

namespace ddp::launch::rendezvous::rounds {

// This node knows how the job ends (the exited key): the leader stops waiting for it. Best
// effort: a store already gone has nobody left to tell.
void RendezvousRounds::acknowledge(const Round& r) {
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
void RendezvousRounds::leave(const Round& r, int exit_code) {
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
void RendezvousRounds::wait_for_others_to_leave(const Round& r) {
  const auto deadline = std::chrono::steady_clock::now() + ms(2 * spec_.rdzv.heartbeat_timeout_s);
  stops_.wait_until(kBarrierTick, [&] {
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

// The job's stop record (the first one wins), and this launcher has seen it.
void RendezvousRounds::publish_job_stop(const AbortRecord& stop) {
  store_.job->compare_set(JobKeys::stop(), "", to_json(stop));
  store_.job->set(JobKeys::stop_seen(store_.name), "1");
}

// A stop signal during a rendezvous (between rounds, or before the first): publish the
// job's stop record; the leader waits for the nodes of the last round to read it.
int RendezvousRounds::stopped_between_rounds(const std::optional<Round>& last, int signal) {
  const std::optional<std::string>& note = stops_.stop_note();
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
int RendezvousRounds::job_stopped(const std::optional<Round>& last, const AbortRecord& stop) {
  session_.end().report_stop_elsewhere(stop.remote_failure(), last ? last->rank() : spec_.node_rank);
  try {
    store_.job->set(JobKeys::stop_seen(store_.name), "1");
    if (store_.leader && last) wait_for_others_to_leave(*last);
    store_.close();
  } catch (const store::StoreError&) {  // best effort: nobody left to tell
  }
  return stop.exit_code;
}

// The job ended while this node waited as a spare: no worker ran here; the job's exit code.
int RendezvousRounds::spare_released(int exit_code) {
  console::launcher_notice(fmt::format(
      "the job ended (exit {}) while this node waited as a hot spare; no worker of it ran here", exit_code));
  store_.close();
  return exit_code;
}

}  // namespace ddp::launch::rendezvous::rounds
