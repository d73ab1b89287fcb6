#include "launcher/cli/worker_health_env.hpp"

#include <cstdlib>

#include <fmt/format.h>

#include "launcher/base/text.hpp"
#include "launcher/cli/usage_error.hpp"

namespace ddp::launch::cli {

WorkerHealthSpec worker_health_spec(const Environment& env, const std::string& fresh_name) {
  WorkerHealthSpec spec;
  if (lookup(env, "TORCHELASTIC_ENABLE_FILE_TIMER") == std::optional<std::string>("1")) {
    const std::optional<std::string> file = lookup(env, "TORCHELASTIC_TIMER_FILE");
    spec.timer_file = file && !file->empty() ? *file : temp_root(env) + "/watchdog_timer_" + fresh_name;
  }
  if (const auto text = lookup(env, "TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT"); text && !trim(*text).empty()) {
    char* end = nullptr;
    const double s = std::strtod(text->c_str(), &end);
    if (end == text->c_str() || !trim(end).empty() || s != s)
      usage_error(
          fmt::format("TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT='{}' is not a number of seconds; set the "
                      "seconds a worker may stay in uninterruptible sleep (0 disables the check), or unset it",
                      *text));
    spec.d_state_timeout_s = s > 0 ? s : 0;
  }
  if (const auto text = lookup(env, "TORCHELASTIC_HEALTH_CHECK_PORT")) {
    const std::optional<long long> port = parse_natural(trim(*text));
    if (!port || *port > 65535)
      usage_error(
          fmt::format("TORCHELASTIC_HEALTH_CHECK_PORT='{}' is not a port; set a port number (0: a free one, "
                      "printed) or unset it",
                      *text));
    spec.health_check_port = static_cast<uint16_t>(*port);
  }
  return spec;
}

}  // namespace ddp::launch::cli
