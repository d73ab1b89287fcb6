#include "launcher/status/health_check.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "launcher/base/clock.hpp"
#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/net/listen_error.hpp"

namespace ddp::launch::status {

http::Response liveness_answer(const report::StatusBoard& board, double now_unix_s) {
  std::optional<double> since;  // the freshest progress of a running worker with a record
  bool running = false;
  for (const report::RankStatus& r : board.ranks) {
    if (r.state != report::WorkerState::kRunning) continue;
    running = true;
    if (r.fed) since = std::min(since.value_or(r.since_progress_s), r.since_progress_s);
  }
  const char* state = board.finished       ? "finished"
                      : !running           ? "between_attempts"
                      : !since             ? "no_progress_records"
                      : *since > kTimeoutS ? "stalled"
                                           : "progressing";
  const double alive = since ? now_unix_s - *since : now_unix_s;
  nlohmann::ordered_json j;
  j["alive_time"] = static_cast<long long>(std::floor(alive));
  j["now"] = static_cast<long long>(std::floor(now_unix_s));
  j["since_progress_s"] = since.value_or(0.0);
  j["timeout_s"] = kTimeoutS;
  j["state"] = state;
  return {now_unix_s - alive > kTimeoutS ? 503 : 200, "application/json", j.dump() + "\n"};
}

HealthCheckEndpoint::HealthCheckEndpoint(boost::asio::io_context& loop, const report::StatusBoard& board,
                                         const std::string& host, uint16_t port) {
  try {
    server_ = std::make_unique<http::Server>(
        loop, host, port, [&board](const std::string&) { return liveness_answer(board, unix_now()); });
  } catch (const net::ListenError& e) {
    throw LaunchError(e.address_in_use() ? exit_code::kAddressInUse : exit_code::kUsage,
                      fmt::format("TORCHELASTIC_HEALTH_CHECK_PORT={}: cannot listen at {}; {}", port, e.what(),
                                  e.address_in_use() ? "the port is in use: pick another, or 0 for a free one"
                                                     : "check --metrics-addr"));
  }
  console::launcher_notice(fmt::format("health check (TORCHELASTIC_HEALTH_CHECK_PORT) at http://{}:{}/",
                                       host.find(':') != std::string::npos ? "[" + host + "]" : host, server_->port()));
}

HealthCheckEndpoint::~HealthCheckEndpoint() = default;

}  // namespace ddp::launch::status
