// torchrun 2.15's agent variables for its workers' health, read from the launcher's environment
// as its LocalElasticAgent reads them: TORCHELASTIC_ENABLE_FILE_TIMER ("1": serve the workers'
// file timers on a named pipe), TORCHELASTIC_TIMER_FILE (the pipe's path; unset: a fresh one,
// $TMPDIR/watchdog_timer_<uuid4>), TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT (seconds a worker
// may stay in D; unset or <= 0: no check) and TORCHELASTIC_HEALTH_CHECK_PORT (serve liveness
// there). torchrun ignores an unreadable number; ddp-launch says what is wrong (usage error).
// Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "launcher/cli/environment.hpp"

namespace ddp::launch::cli {

struct WorkerHealthSpec {
  std::string timer_file;        // the file timers' pipe; "": no file timers
  double d_state_timeout_s = 0;  // 0: no D-state check
  std::optional<uint16_t> health_check_port;
};

// fresh_name: the uuid for a pipe path made up here.
WorkerHealthSpec worker_health_spec(const Environment& env, const std::string& fresh_name);

}  // namespace ddp::launch::cli
