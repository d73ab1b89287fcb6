#include "launcher/supervise/worker_timers.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ddp::launch::supervise {

std::variant<TimerRequest, std::string> parse_timer_request(std::string_view line) {
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::string("not a JSON object");
  auto integer = [&j](const char* key) -> std::optional<long long> {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<long long>();
  };
  const std::optional<long long> version = integer("version");
  if (!version) return std::string("no integer 'version'");
  if (*version != 1) return fmt::format("version {} (this launcher speaks version 1)", *version);
  const std::optional<long long> pid = integer("pid");
  if (!pid || *pid <= 0 || *pid > (1LL << 30)) return std::string("no positive integer 'pid'");
  const auto scope = j.find("scope_id");
  if (scope == j.end() || !scope->is_string()) return std::string("no string 'scope_id'");
  if (scope->get_ref<const std::string&>().size() > kMaxScope)
    return fmt::format("a 'scope_id' longer than {} bytes", kMaxScope);
  const auto expiration = j.find("expiration_time");
  if (expiration == j.end() || !expiration->is_number() || !std::isfinite(expiration->get<double>()))
    return std::string("no finite number 'expiration_time'");
  const std::optional<long long> signal = integer("signal");
  if (!signal || *signal > 64) return std::string("no integer 'signal' up to 64");
  TimerRequest r;
  r.pid = static_cast<pid_t>(*pid);
  r.scope = scope->get<std::string>();
  r.expiration_unix_s = expiration->get<double>();
  r.signal = static_cast<int>(*signal);
  return r;
}

bool WorkerTimers::apply(const TimerRequest& request, double now_unix_s) {
  Key key{request.pid, request.scope};
  auto it = timers_.find(key);
  if (it != timers_.end()) erase(it);
  if (request.release()) return true;
  if (timers_.size() >= kMaxTimers) return false;
  timers_.emplace(key, Timer{request.expiration_unix_s, now_unix_s, request.signal});
  by_deadline_.emplace(request.expiration_unix_s, std::move(key));
  return true;
}

std::optional<double> WorkerTimers::next_expiry() const {
  if (by_deadline_.empty()) return std::nullopt;
  return by_deadline_.begin()->first;
}

std::vector<ExpiredTimer> WorkerTimers::take_expired(double now_unix_s) {
  std::vector<ExpiredTimer> out;
  std::set<pid_t> signalled;
  while (!by_deadline_.empty() && by_deadline_.begin()->first <= now_unix_s) {
    auto it = timers_.find(by_deadline_.begin()->second);
    const pid_t pid = it->first.first;
    if (!signalled.count(pid)) {
      out.push_back(
          {pid, it->first.second, std::max(it->second.signal, 0), it->second.expiration - it->second.received});
      if (it->second.signal > 0) signalled.insert(pid);
    }
    erase(it);
  }
  for (pid_t pid : signalled) forget(pid);
  return out;
}

void WorkerTimers::forget(pid_t pid) {
  for (auto it = timers_.lower_bound(Key{pid, ""}); it != timers_.end() && it->first.first == pid;) erase(it++);
}

void WorkerTimers::clear() {
  timers_.clear();
  by_deadline_.clear();
}

void WorkerTimers::erase(std::map<Key, Timer>::iterator it) {
  by_deadline_.erase({it->second.expiration, it->first});
  timers_.erase(it);
}

}  // namespace ddp::launch::supervise
