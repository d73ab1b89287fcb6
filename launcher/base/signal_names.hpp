// Signal names and numbers (Linux): what --signals-to-handle accepts and what reports
// print. Pure, thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace ddp::launch {

std::string signal_name(int signo);        // 9 -> "SIGKILL"; unknown -> "SIG<n>"
int signal_number(std::string_view name);  // "SIGUSR1", "USR1", "10" -> number; -1 if unknown

}  // namespace ddp::launch
