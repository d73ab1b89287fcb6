#include "launcher/multinode/strike_record.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace ddp::launch::multinode {

std::string node_id(const cli::Environment& env, const std::string& host_name) {
  const auto id = cli::lookup(env, kNodeIdEnvVar);
  return id && !id->empty() ? *id : host_name;
}

std::string strikes_key(const std::string& node_id) { return "strikes/" + node_id; }

std::vector<double> parse_strike_times(const std::string& record, double now_unix, double window_s) {
  const auto j = nlohmann::json::parse(record, nullptr, false);
  std::vector<double> out;
  if (!j.is_array()) return out;
  for (const auto& t : j)
    if (t.is_number() && now_unix - t.get<double>() <= window_s) out.push_back(t.get<double>());
  std::sort(out.begin(), out.end());
  return out;
}

std::string format_strike_times(const std::vector<double>& unix_times) { return nlohmann::json(unix_times).dump(); }

}  // namespace ddp::launch::multinode
