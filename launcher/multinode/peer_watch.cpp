#include "launcher/multinode/peer_watch.hpp"

#include <fmt/format.h>

#include "launcher/multinode/rendezvous.hpp"
#include "launcher/store/protocol.hpp"

namespace ddp::launch::rdzv {
namespace {

// The leader's part: a peer the store dropped before it finished, or a node waiting to join.
std::optional<std::string> leader_checks(const PeerWatch& w, const RoundPlan& plan, int my_rank) {
  for (const auto& peer : plan.nodes) {
    if (peer.group_rank == my_rank) continue;
    auto dropped = w.root.try_get(store::kDroppedPrefix + peer.info.name);
    if (!dropped || w.job.check({JobKeys::done(plan.round, peer.group_rank)})) continue;
    const bool final = plan.restart_count >= w.max_restarts;
    return publish_abort(w.job, plan.round,
                         AbortRecord::lost_node(peer.group_rank, peer.info.host, *dropped, final))
        .reason;
  }
  if (static_cast<int>(plan.nodes.size()) < w.nnodes_max && w.job.add(JobKeys::waiting(plan.round), 0) > 0)
    return publish_abort(w.job, plan.round, AbortRecord::membership_change(my_rank, w.host)).reason;
  return std::nullopt;
}

}  // namespace

AbortRecord publish_abort(store::Store& job, int round, const AbortRecord& record) {
  std::string now = job.compare_set(JobKeys::abort(round), "", to_json(record));
  return abort_from_json(now);  // ours, or the one that was first
}

std::optional<std::string> watch_round(const PeerWatch& w, const RoundPlan& plan, int my_rank,
                                       WatchTrouble& trouble) noexcept {
  try {
    if (auto a = w.job.try_get(JobKeys::abort(plan.round))) return abort_from_json(*a).reason;
    if (!w.leader) return std::nullopt;
    return leader_checks(w, plan, my_rank);
  } catch (const store::StoreError& e) {  // tick() must not throw: the agent ends the round on it
    trouble.store_lost = e.what();
    return fmt::format("lost the agent store at {} ({})", w.store_address, e.what());
  } catch (const std::exception& e) {  // a malformed record (LaunchError) or worse: stop, say why
    trouble.bad_record = e.what();
    return std::string(e.what());
  }
}

}  // namespace ddp::launch::rdzv
