// What a leftover sweep (leftover_sweep.hpp) tells: the launcher's one notice line naming
// every process it had to end (pid, command, the rank it came from, how it ended), shortened
// past a few. Pure.
#pragma once

#include <string>

#include "launcher/contain/leftover_sweep.hpp"

namespace ddp::launch::contain {

// "" for an empty report.
std::string leftover_notice(const SweepReport& report);
// One leftover as the notice and the event log name it: "pid 812 'sleep 1000' (rank 0)".
std::string describe_leftover(const Leftover& l);

}  // namespace ddp::launch::contain
