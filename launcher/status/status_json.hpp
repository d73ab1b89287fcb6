// The status board as /status.json, what the status page and `ddp-launch status` read:
// {"job": {...}, "now", "uptime_s", "attempt", "round", "world_size", "finished", "ranks": [...],
// "restarts": {cause: n}, "hang_verdicts", "events": [...], "nodes": [...]}; the schema is in
// docs/metrics.md. The worker's arguments only when given (--metrics-show-args). Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/report/status_board.hpp"

namespace ddp::launch::status {

std::string status_json(const report::StatusBoard& board, double now_unix_s,
                        const std::optional<std::vector<std::string>>& worker_args);

}  // namespace ddp::launch::status
