// `ddp-launch __agent`: one host's agent of a many-host launch, started by the launching
// machine (over ssh, or directly on that machine). Reads its configuration (one JSON line,
// many_hosts/plan/agent_plan) from stdin, applies the forwarded environment, parses the arguments,
// then runs the usual agent with its placement as an input of the resolve step. Its stdin
// stays the launching machine's session, read on the node's loop (supervise/stop_input): its
// end (the ssh session, or the launching process, gone) is a stop request, so the workers stop
// as on a stop signal, told by the stop message that came before it, or as this host's lost
// session. Blocks.
#pragma once

namespace ddp::launch {

int run_remote_agent();

}  // namespace ddp::launch
