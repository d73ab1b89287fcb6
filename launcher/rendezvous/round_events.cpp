#include "launcher/rendezvous/round_events.hpp"

#include <vector>

namespace ddp::launch::rendezvous {

void log_abort(report::EventLog& log, const AbortRecord& a) {
  std::vector<report::EventField> f = {{"kind", to_string(a.failure)}, {"node_rank", a.node_rank}, {"host", a.host}};
  if (a.rank >= 0) {
    f.emplace_back("rank", a.rank);
    f.emplace_back("local_rank", a.local_rank);
    f.emplace_back("pid", a.pid);
  }
  f.emplace_back("exit_code", a.exit_code);
  f.emplace_back("final", a.final);
  f.emplace_back("reason", a.reason);
  if (has_verdict(a.failure)) f.emplace_back("verdict", a.verdict);
  if (!a.stacks_file.empty()) f.emplace_back("stacks_file", a.stacks_file);
  if (!a.error.empty()) f.emplace_back("error", a.error);
  log.write("failure", f);
}

}  // namespace ddp::launch::rendezvous
