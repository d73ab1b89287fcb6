#include "launcher/node/agent_loop.hpp"

#include <utility>
#include <vector>

#include "launcher/node/worker_launches.hpp"

namespace ddp::launch::node {

int run_agent_loop(NodeSession& session, const JobConfig& job, RoundSource& rounds) {
  if (const std::optional<int> code = rounds.prepare()) return *code;
  for (;;) {
    std::variant<NextAttempt, int> next = rounds.next_attempt();
    if (const int* code = std::get_if<int>(&next)) return *code;
    const NextAttempt& attempt = std::get<NextAttempt>(next);
    session.begin_attempt(attempt.group.restart_count, attempt.group.world_size);
    std::vector<worker::WorkerLaunch> launches =
        prepare_attempt(job, *attempt.env, attempt.group, session.layout(), &session.snapshots());
    const report::AttemptResult result = session.run_attempt(std::move(launches), attempt.check);
    if (const std::optional<int> code = rounds.settle(result)) return *code;
  }
}

}  // namespace ddp::launch::node
