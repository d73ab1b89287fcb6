// The check a multi-node agent runs every heartbeat while its workers run (and while it
// waits for the others after its own succeeded): has the round been aborted? The leader
// also looks for lost peers and nodes waiting to join, and publishes the abort. The store
// request itself is the heartbeat. check_round never throws (it runs as the Supervisor's
// attempt check): a lost store or an unreadable record becomes a reason to stop, noted
// in RoundFindings, which also keeps the abort record once read (the store may be gone by the
// time the workers have stopped). Blocks for one store round trip at most per request.
#pragma once

#include <optional>
#include <string>

#include "launcher/rendezvous/abort_record.hpp"
#include "launcher/rendezvous/round_plan.hpp"
#include "launcher/store/store.hpp"

namespace ddp::launch::rendezvous {

struct RoundCheckContext {
  store::Store& job;   // the job's PrefixStore
  store::Store& root;  // the unprefixed store, where the server sets kDroppedPrefix keys
  bool leader = false;
  int max_restarts = 0;  // a lost node is final once the round's restart_count reaches it
  int nnodes_max = 1;
  std::string host;           // this node's host name, for the records
  std::string store_address;  // "host:port", for messages
};

// What the checks learned: the round's outcome, or what went wrong ("" = nothing).
struct RoundFindings {
  std::optional<AbortRecord> abort;  // the round's abort record, once read or published
  std::string store_lost;            // the store stopped answering
  std::string bad_record;            // a record from another node could not be read (has the hint)
  std::string drops_seen;            // the store's __dropped_count__ when the peers were last looked at
};

// The reason to stop this round's workers, or nullopt to go on. Never throws.
std::optional<std::string> check_round(const RoundCheckContext& context, const RoundPlan& plan, int my_rank,
                                       RoundFindings& state) noexcept;

// A launcher whose worker failed with what reads like a communication error asks this
// (any node, not only the leader): is there a better root cause already? The round's abort
// record, or a peer the store dropped before it finished (then published here as lost; a
// node whose plan holds only itself leaves that to the leader, whose check publishes it
// within a heartbeat interval), or a lost store (noted in `state`). Returns its reason, or
// nullopt. Never throws.
std::optional<std::string> find_root_cause(const RoundCheckContext& context, const RoundPlan& plan, int my_rank,
                                           RoundFindings& state) noexcept;

// Publishes `record` as round `round`'s abort unless one is there; returns the one that
// won. Throws store::StoreError, LaunchError(kRendezvousFailed) on a malformed record.
AbortRecord publish_abort(store::Store& job, int round, const AbortRecord& record);

}  // namespace ddp::launch::rendezvous
