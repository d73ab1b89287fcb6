#include "launcher/rendezvous/strike_record.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace ddp::launch::rendezvous {

std::string node_id(const cli::Environment& env, const std::string& host_name) {
  const auto id = cli::lookup(env, kNodeIdEnvVar);
  return id && !id->empty() ? *id : host_name;
}

std::string strikes_key(const std::string& node_id) { return "strikes/" + node_id; }

std::vector<double> strike_times_within(std::vector<double> unix_times, double now_unix, double window_s) {
  unix_times.erase(
      std::remove_if(unix_times.begin(), unix_times.end(), [&](double t) { return now_unix - t > window_s; }),
      unix_times.end());
  std::sort(unix_times.begin(), unix_times.end());
  return unix_times;
}

std::vector<double> parse_strike_times(const std::string& record, double now_unix, double window_s) {
  const auto j = nlohmann::json::parse(record, nullptr, false);
  std::vector<double> times;
  if (!j.is_array()) return times;
  for (const auto& t : j)
    if (t.is_number()) times.push_back(t.get<double>());
  return strike_times_within(std::move(times), now_unix, window_s);
}

std::string format_strike_times(const std::vector<double>& unix_times) { return nlohmann::json(unix_times).dump(); }

}  // namespace ddp::launch::rendezvous
