// The status board as Prometheus text (docs/metrics.md lists every series). Labels are
// bounded: rank, local_rank, state, cause, phase, and the job_info labels (one series per
// job); never a pid, a path or the program. Pure.
#pragma once

#include <string>

#include "launcher/os/self_usage.hpp"
#include "launcher/report/status_board.hpp"

namespace ddp::launch::status {

std::string metrics_text(const report::StatusBoard& board, const os::SelfUsage& self);

}  // namespace ddp::launch::status
