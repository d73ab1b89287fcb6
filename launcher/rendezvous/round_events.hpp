// The multi-node agent's entries in events.jsonl (report/event_log.hpp): a round's abort
// record as a failure event with its root-cause kind (the record's FailureKind), as every
// node reads it. No I/O beyond the log's own.
#pragma once

#include <string>

#include "launcher/rendezvous/abort_record.hpp"
#include "launcher/rendezvous/round_plan.hpp"
#include "launcher/report/event_log.hpp"

namespace ddp::launch::rendezvous {

// {"event": "failure", "kind": ..., "final": ..., "node_rank" (where it happened), ...}
void log_abort(report::EventLog& log, const AbortRecord& abort);

}  // namespace ddp::launch::rendezvous
