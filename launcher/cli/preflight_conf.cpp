#include "launcher/cli/preflight_conf.hpp"

#include <fmt/format.h>

#include "launcher/base/text.hpp"
#include "launcher/cli/usage_error.hpp"

namespace ddp::launch::cli {
namespace {

double number(const std::string& key, const std::string& value, double most) {
  const auto v = parse_seconds(value, SecondsFloor::kNonNegative);  // a plain number >= 0
  if (!v || *v > most)
    usage_error(fmt::format("--preflight-conf {}={}: expected a number from 0 to {}", key, value, most));
  return *v;
}

}  // namespace

PreflightConf parse_preflight_conf(const std::string& value) {
  PreflightConf c;
  for (const auto& item : split(value, ',', EmptyItems::kSkip)) {
    const auto kv = split_once(item, '=');
    if (!kv) usage_error(fmt::format("--preflight-conf {}: expected key=value", item));
    const auto& [key, v] = *kv;
    if (key == "cpu_warn") c.cpu_warn = number(key, v, 1);
    else if (key == "cpu_fail") c.cpu_fail = number(key, v, 1);
    else if (key == "cpu_ms") c.cpu_ms = number(key, v, 10000);
    else if (key == "mem_gib") c.mem_gib = number(key, v, 1e6);
    else if (key == "shm_gib_per_worker") c.shm_gib_per_worker = number(key, v, 1e6);
    else if (key == "disk_gib") c.disk_gib = number(key, v, 1e9);
    else
      usage_error(fmt::format(
          "--preflight-conf: unknown key '{}'; known: cpu_warn, cpu_fail, cpu_ms, mem_gib, shm_gib_per_worker, "
          "disk_gib",
          key));
  }
  if (c.cpu_fail > c.cpu_warn)
    usage_error(fmt::format("--preflight-conf: cpu_fail ({}) must not be above cpu_warn ({})", c.cpu_fail, c.cpu_warn));
  return c;
}

}  // namespace ddp::launch::cli
