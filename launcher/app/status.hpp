// `ddp-launch status TARGET [--watch] [--interval S]`: a terminal view of a job's status.
// TARGET is a launcher's status endpoint (HOST:PORT, from --metrics-port) or a run directory
// (RUN: its status_url when that launcher still answers, else its events.jsonl). Once, or
// every S seconds with --watch (the screen is redrawn on a terminal; a plain table
// otherwise). Exit codes: 0 the job runs, 3 it ended, 4 unreachable (no answer and no run
// directory to read), 121 bad usage. Its arguments: cli/status_args.hpp. Blocks; the
// formatting is pure (format_status*).
#pragma once

#include <string>
#include <vector>

#include "launcher/cli/status_args.hpp"

namespace ddp::launch {

inline constexpr int kStatusRunning = 0;
inline constexpr int kStatusEnded = 3;
inline constexpr int kStatusUnreachable = 4;

// Returns the exit code above.
int run_status_command(const cli::StatusArgs& args);

// /status.json as a table: the job header, one row per rank, the restarts.
std::string format_status(const std::string& status_json);
// A run directory's events.jsonl lines, summarised: the job, its outcome, restarts, the failures.
std::string format_run_summary(const std::vector<std::string>& event_lines, bool* ended);

}  // namespace ddp::launch
