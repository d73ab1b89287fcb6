// The wall clock as the launcher's reports and torch's records read it: seconds since the Unix
// epoch (time.time()), as a double. Pure; thread-safe.
#pragma once

#include <chrono>

namespace ddp::launch {

inline double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace ddp::launch
