// The one agent loop, for one node alone and for a node of a multi-node job alike (as torch
// elastic's one _invoke_run over its rendezvous handler): prepare, then attempt after attempt
// from the RoundSource on the NodeSession (begin, the workers' launches, run), each settled by
// the source, until it says how the job ends. Returns the exit code. Blocks.
#pragma once

#include "launcher/node/job_config.hpp"
#include "launcher/node/node_session.hpp"
#include "launcher/node/round_source.hpp"

namespace ddp::launch::node {

int run_agent_loop(NodeSession& session, const JobConfig& job, RoundSource& rounds);

}  // namespace ddp::launch::node
