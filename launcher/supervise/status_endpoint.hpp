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
#include "launcher/supervise/job_config.hpp"
#include "launcher/supervise/status_board.hpp"

namespace ddp::launch::supervise {

class Supervisor;

// RUN/status_url: the endpoint's "http://HOST:PORT", for `ddp-launch status RUN`.
inline constexpr const char* kStatusUrlFile = "status_url";

// A board with the job's header filled in (the launcher's start time: now).
StatusBoard make_status_board(const JobConfig& job, int node_rank, int nnodes);
// The worker's arguments the endpoint may show: with --metrics-show-args only.
std::optional<std::vector<std::string>> shown_worker_args(const JobConfig& job);

class StatusEndpoint {
 public:
  // Listens now; prints "ddp-launch: status at http://HOST:PORT/ (Prometheus: /metrics)".
  // worker_args: shown on the page and in /status.json (nullopt: not shown). run_dir: where
  // kStatusUrlFile goes ("": nowhere).
  StatusEndpoint(Supervisor& supervisor, const StatusBoard& board, const StatusSpec& spec,
                 std::optional<std::vector<std::string>> worker_args = std::nullopt, const std::string& run_dir = "");
  ~StatusEndpoint();
  StatusEndpoint(const StatusEndpoint&) = delete;
  StatusEndpoint& operator=(const StatusEndpoint&) = delete;

  uint16_t port() const { return server_->port(); }
  // "http://HOST:PORT" (the address others reach it at; IPv6 in brackets).
  const std::string& url() const { return url_; }

 private:
  http::Response answer(const std::string& target) const;

  const StatusBoard& board_;
  StatusSpec spec_;
  std::optional<std::vector<std::string>> worker_args_;
  std::unique_ptr<http::Server> server_;
  std::string url_;
};

}  // namespace ddp::launch::supervise
