// usage_error: how the cli layer rejects input. It throws LaunchError(exit_code::kUsage)
// with one line that names the flag (or variable) and says what to pass instead.
#pragma once

#include <string>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"

namespace ddp::launch::cli {

[[noreturn]] inline void usage_error(const std::string& message) { throw LaunchError(exit_code::kUsage, message); }

}  // namespace ddp::launch::cli
