// Why this process was asked to stop, when whoever asked said why: a many-host agent's
// launching machine writes the reason on the agent's stdin before ending it (host gpu2 lost,
// Ctrl-C there, a worker failed on another host). The thread that reads it notes the reason
// before it raises the stop signal; the code that reports the stop reads it. Thread-safe;
// the first reason noted stays. Without one, a stop is told by its signal, as before.
#pragma once

#include <optional>
#include <string>

namespace ddp::launch {

void note_stop_reason(std::string reason);
std::optional<std::string> stop_reason();

// How a stop by `signo` reads after "stopped": " by SIGTERM", or ": <the reason>" once one
// was noted ("stopped: host gpu2 (node rank 1) was lost: ...").
std::string stopped_how(int signo, const std::optional<std::string>& reason = stop_reason());

}  // namespace ddp::launch
