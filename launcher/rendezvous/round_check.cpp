#include "launcher/rendezvous/round_check.hpp"

#include <fmt/format.h>

#include "launcher/rendezvous/rendezvous.hpp"
#include "launcher/store/protocol.hpp"

namespace ddp::launch::rendezvous {
namespace {

// A peer of `plan` the store dropped before it finished: publish it lost (compare-and-set);
// the round's record then. The agent store counts its drops: while the count is what the
// last look saw, no name is looked at (one request a tick, not one per node; etcd keeps no
// count: every tick looks).
std::optional<AbortRecord> publish_dropped_peer(const RoundCheckContext& w, const RoundPlan& plan, int my_rank,
                                                RoundFindings& state) {
  const std::optional<std::string> drops = w.root.try_get(store::kDroppedCountKey);
  if (drops && *drops == state.drops_seen) return std::nullopt;
  for (const auto& peer : plan.nodes) {
    if (peer.group_rank == my_rank) continue;
    auto dropped = w.root.try_get(store::kDroppedPrefix + peer.info.name);
    if (!dropped || w.job.check({JobKeys::done(plan.round, peer.group_rank)})) continue;
    const bool final = plan.restart_count >= w.max_restarts;
    return publish_abort(w.job, plan.round, AbortRecord::lost_node(peer.group_rank, peer.info.host, *dropped, final));
  }
  if (drops) state.drops_seen = *drops;
  return std::nullopt;
}

// The leader's part: a peer the store dropped before it finished, or a node waiting to join.
std::optional<AbortRecord> leader_checks(const RoundCheckContext& w, const RoundPlan& plan, int my_rank,
                                         RoundFindings& state) {
  if (auto lost = publish_dropped_peer(w, plan, my_rank, state)) return lost;
  if (plan.nnodes < w.nnodes_max && w.job.add(JobKeys::waiting(plan.round), 0) > 0)
    return publish_abort(w.job, plan.round, AbortRecord::membership_change(my_rank, w.host));
  return std::nullopt;
}

}  // namespace

AbortRecord publish_abort(store::Store& job, int round, const AbortRecord& record) {
  std::string now = job.compare_set(JobKeys::abort(round), "", to_json(record));
  return abort_from_json(now);  // ours, or the one that was first
}

namespace {

// Runs one look at the store for check_round / find_root_cause, keeping what it found in
// `state`; never throws.
template <class Look>
std::optional<std::string> guarded(const RoundCheckContext& w, RoundFindings& state, Look look) noexcept {
  try {
    if (std::optional<AbortRecord> found = look()) state.abort = std::move(found);
    if (state.abort) return state.abort->reason;
    return std::nullopt;
  } catch (const store::StoreError& e) {  // tick() must not throw: the agent ends the round on it
    state.store_lost = e.what();
    return fmt::format("lost the agent store at {} ({})", w.store_address, e.what());
  } catch (const std::exception& e) {  // a malformed record (LaunchError) or worse: stop, say why
    state.bad_record = e.what();
    return std::string(e.what());
  }
}

// The round's record; else the job's stop record (a launcher stopped while the others were
// between rounds), which becomes this round's record so that it ends like any other.
std::optional<AbortRecord> read_record(const RoundCheckContext& w, int round) {
  if (auto a = w.job.try_get(JobKeys::abort(round))) return abort_from_json(*a);
  if (auto stop = w.job.try_get(JobKeys::stop())) return publish_abort(w.job, round, abort_from_json(*stop));
  return std::nullopt;
}

}  // namespace

std::optional<std::string> check_round(const RoundCheckContext& w, const RoundPlan& plan, int my_rank,
                                       RoundFindings& state) noexcept {
  return guarded(w, state, [&]() -> std::optional<AbortRecord> {
    if (auto a = read_record(w, plan.round)) return a;
    if (!w.leader) return std::nullopt;
    return leader_checks(w, plan, my_rank, state);
  });
}

std::optional<std::string> find_root_cause(const RoundCheckContext& w, const RoundPlan& plan, int my_rank,
                                           RoundFindings& state) noexcept {
  return guarded(w, state, [&]() -> std::optional<AbortRecord> {
    if (auto a = read_record(w, plan.round)) return a;
    return publish_dropped_peer(w, plan, my_rank, state);
  });
}

}  // namespace ddp::launch::rendezvous
