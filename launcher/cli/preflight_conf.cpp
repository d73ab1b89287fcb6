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
    else if (key == "net_ms") c.net_ms = number(key, v, 10000);
    else if (key == "net_warn") c.net_warn = number(key, v, 1);
    else if (key == "net_fail") c.net_fail = number(key, v, 1);
    else if (key == "net_min_mbps") c.net_min_mbps = number(key, v, 1e9);
    else if (key == "rtt_warn") c.rtt_warn = number(key, v, 1e6);
    else if (key == "rtt_fail") c.rtt_fail = number(key, v, 1e6);
    else if (key == "clock_warn_s") c.clock_warn_s = number(key, v, 1e6);
    else if (key == "clock_fail_s") c.clock_fail_s = number(key, v, 1e6);
    else if (key == "nccl_mib") c.nccl_mib = number(key, v, 65536);
    else if (key == "nccl_min_gbps") c.nccl_min_gbps = number(key, v, 1e6);
    else if (key == "nccl_warn") c.nccl_warn = number(key, v, 1);
    else if (key == "nccl_fail") c.nccl_fail = number(key, v, 1);
    else
      usage_error(fmt::format(
          "--preflight-conf: unknown key '{}'; known: cpu_warn, cpu_fail, cpu_ms, mem_gib, shm_gib_per_worker, "
          "disk_gib, net_ms, net_warn, net_fail, net_min_mbps, rtt_warn, rtt_fail, clock_warn_s, clock_fail_s, nccl_mib, nccl_min_gbps, "
          "nccl_warn, nccl_fail",
          key));
  }
  if (c.cpu_fail > c.cpu_warn)
    usage_error(fmt::format("--preflight-conf: cpu_fail ({}) must not be above cpu_warn ({})", c.cpu_fail, c.cpu_warn));
  if (c.net_fail > c.net_warn)
    usage_error(fmt::format("--preflight-conf: net_fail ({}) must not be above net_warn ({})", c.net_fail, c.net_warn));
  if (c.nccl_fail > c.nccl_warn)
    usage_error(
        fmt::format("--preflight-conf: nccl_fail ({}) must not be above nccl_warn ({})", c.nccl_fail, c.nccl_warn));
  if (c.rtt_warn > c.rtt_fail)
    usage_error(fmt::format("--preflight-conf: rtt_warn ({}) must not be above rtt_fail ({})", c.rtt_warn, c.rtt_fail));
  return c;
}

}  // namespace ddp::launch::cli
