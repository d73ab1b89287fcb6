// ddp::standby_point() (ddp/standby.hpp). Its own object file: the linker takes it out of libddp.a
// only for a program that calls it, and the standby hook's weak reference to
// ddp_standby_point_linked then tells the hook to let main() run up to here. Torch-free.
#include "ddp/standby.hpp"

#include <cstdlib>

#include "contract/standby_handoff.hpp"
#include "runtime/src/process/standby_hook.hpp"

extern "C" {
extern const int ddp_standby_point_linked;
const int ddp_standby_point_linked = 1;
}

namespace ddp {

void standby_point() {
  const char* fd_text = std::getenv(standby::kFdEnvVar);
  if (!fd_text || !*fd_text || !std::getenv(detail::kStandbyPendingEnvVar)) return;
  const int fd = std::atoi(fd_text);
  ::unsetenv(standby::kFdEnvVar);
  detail::become_handed_worker(fd);  // replaces the environment: the pending mark goes with it
}

}  // namespace ddp
