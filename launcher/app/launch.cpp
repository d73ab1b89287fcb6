#include "launcher/app/launch.hpp"

#include "launcher/rendezvous/rendezvous_rounds.hpp"
#include "launcher/app/resolve_job.hpp"
#include "launcher/node/dry_run.hpp"
#include "launcher/node/single_node_agent.hpp"

namespace ddp::launch {

int run_agent(const cli::LaunchOptions& options, const cli::Environment& env, const Placement& placement,
              const supervise::StopInputSpec& stop_input) {
  const ResolvedJob r = resolve_job(options, env, placement);
  // --dry-run does not rendezvous: it shows a multi-node job as this node would see it alone.
  if (r.dry_run) return node::print_dry_run(r.job, node::single_node_group(r.job, r.single_node), env);
  if (r.multi_node_job) return rendezvous::run_multi_node_agent(r.job, r.multi_node, env, stop_input);
  return node::run_single_node_agent(r.job, r.single_node, env, stop_input);
}

}  // namespace ddp::launch
