// The status endpoint: an http::Server on the Supervisor's own loop (no thread of its own)
// answering GET /metrics (Prometheus text, status_metrics.hpp), /status.json and / (the
// status page) from the status board. Read-only; it never shows environment values or the
// store token, and the worker's arguments only with --status-show-args. It answers while the
// Supervisor's loop runs (every attempt, and the waits between rounds); a request that comes
// while the agent blocks elsewhere (a rendezvous) waits in the backlog until then.
// A port in use is LaunchError(kUsage) naming it. Single-threaded.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/http/server.hpp"
#include "launcher/report/status_board.hpp"

namespace ddp::launch::status {

// RUN/status_url: the endpoint's "http://HOST:PORT", for `ddp-launch status RUN`.
inline constexpr const char* kStatusUrlFile = "status_url";

class StatusEndpoint {
 public:
  // Listens now; prints "ddp-launch: status at http://HOST:PORT/ (Prometheus: /metrics)".
  // worker_args: shown on the page and in /status.json (nullopt: not shown). run_dir: where
  // kStatusUrlFile goes ("": nowhere).
  StatusEndpoint(boost::asio::io_context& loop, const report::StatusBoard& board, const report::StatusSpec& spec,
                 std::optional<std::vector<std::string>> worker_args = std::nullopt, const std::string& run_dir = "");
  ~StatusEndpoint();
  StatusEndpoint(const StatusEndpoint&) = delete;
  StatusEndpoint& operator=(const StatusEndpoint&) = delete;

  uint16_t port() const { return server_->port(); }
  // "http://HOST:PORT" (the address others reach it at; IPv6 in brackets).
  const std::string& url() const { return url_; }

 private:
  http::Response answer(const std::string& target) const;

  const report::StatusBoard& board_;
  report::StatusSpec spec_;
  std::optional<std::vector<std::string>> worker_args_;
  std::unique_ptr<http::Server> server_;
  std::string url_;
};

}  // namespace ddp::launch::status
