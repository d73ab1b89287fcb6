// RoundSource: where a node's attempts come from and what each one's end means, for the one
// agent loop (agent_loop.hpp). This node alone is LocalRounds (single_node_agent.cpp); a node
// of a multi-node job joins rounds of the job's rendezvous (rendezvous/rendezvous_rounds.hpp). A
// source hosts the attempt's workers' store where its node does, settles an attempt's end with
// the other nodes, does a restart's bookkeeping, and writes the job's end through NodeSession's
// JobEnd. Single-threaded.
#pragma once

#include <optional>
#include <variant>

#include "launcher/cli/environment.hpp"
#include "launcher/report/attempt_result.hpp"
#include "launcher/supervise/supervisor.hpp"
#include "launcher/worker/worker_env.hpp"

namespace ddp::launch::node {

// The next attempt of this node's workers: their group (ranks, the workers' store, restart
// count), the environment they start from (borrowed from the source), and the check while they
// run.
struct NextAttempt {
  worker::GroupPlan group;
  const cli::Environment* env = nullptr;
  supervise::AttemptCheck check;
};

class RoundSource {
 public:
  virtual ~RoundSource() = default;
  // Before the first attempt (pre-flight, the job's store): the job's exit code when it ends
  // before any attempt (a stop signal while waiting).
  virtual std::optional<int> prepare() = 0;
  // The next attempt, its workers' store listening where this node hosts it; or the job's
  // exit code when the job ends first (a stop, a spare released).
  virtual std::variant<NextAttempt, int> next_attempt() = 0;
  // The attempt's workers are gone: the job's exit code, or nullopt when a restart follows.
  virtual std::optional<int> settle(const report::AttemptResult& result) = 0;
};

}  // namespace ddp::launch::node
