// The termination log: on a failure that ends the job, the root cause in at most 4 KiB
// (which rank, on which node, what happened, its last error line), written where Kubernetes
// reads it (`kubectl describe pod` shows it as the container's termination message):
// --termination-log PATH, else /dev/termination-log when it exists and is writable, else
// nowhere. The messages are pure; the write never throws (a log that cannot be written warns).
#pragma once

#include <string>

#include "launcher/report/failure_report.hpp"

namespace ddp::launch::report {

inline constexpr size_t kTerminationLogMax = 4096;  // Kubernetes keeps the first 4096 bytes
inline constexpr const char* kTerminationLogDefault = "/dev/termination-log";

// A local root cause: "rank 1 (local_rank 1) on HOST failed: exit code 3\nerror: ...\n...".
std::string termination_message(const ReportContext& ctx, const WorkerOutcome& root);
// The root cause another node reported (multi-node), as seen from this one.
std::string termination_message(const std::string& program, const RemoteFailure& root);
// Cut to kTerminationLogMax bytes at a line or character boundary, with "..." when cut.
std::string fit_termination_log(const std::string& text);

// Writes `message` (fitted) to `path` ("": the default where it exists and is writable).
void write_termination_log(const std::string& path, const std::string& message);

}  // namespace ddp::launch::report
