// Signal names and numbers (Linux): what --signals-to-handle accepts and what reports
// print. Pure, thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ddp::launch {

std::string signal_name(int signo);        // 9 -> "SIGKILL"; unknown -> "SIG<n>"
int signal_number(std::string_view name);  // "SIGUSR1", "USR1", "10" -> number; -1 if unknown

// How a stop by `signo` reads after "stopped": " by SIGTERM", or ": <note>" when whoever asked
// for the stop said why ("stopped: host gpu2 (node rank 1) was lost: ...").
std::string stopped_how(int signo, const std::optional<std::string>& note);

}  // namespace ddp::launch
