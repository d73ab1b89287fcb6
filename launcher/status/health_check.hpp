// The health check port (TORCHELASTIC_HEALTH_CHECK_PORT, torchrun 2.15): an http::Server on the
// node's loop (no thread of its own) that answers GET / (any path) with the agent's liveness, as
// torch's alive callback defines it: the last progress time of any running worker (their progress
// records), and the current time while no worker runs with a record (starting, between attempts,
// the exit barrier) or none writes one. 200 while that time is within kTimeoutS of now, 503 past it
// (torch hands its server the same 60 s), so a scheduler's HTTP probe needs no parsing. The body is
// one JSON object (liveness_json). Open-source torch serves nothing on this port. Like the status
// endpoint, it answers while the node's loop runs. A port in use is LaunchError(kAddressInUse).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>

#include "launcher/http/server.hpp"
#include "launcher/report/status_board.hpp"

namespace ddp::launch::status {

inline constexpr double kTimeoutS = 60;

// {"alive_time": UNIX_S, "now": UNIX_S, "since_progress_s": S, "timeout_s": 60, "state": "..."}; state:
// "progressing", "stalled" (past the timeout), "no_progress_records", "between_attempts", "finished".
http::Response liveness_answer(const report::StatusBoard& board, double now_unix_s);

class HealthCheckEndpoint {
 public:
  // Listens on host:port now (0: a free one) and prints where.
  HealthCheckEndpoint(boost::asio::io_context& loop, const report::StatusBoard& board, const std::string& host,
                      uint16_t port);
  ~HealthCheckEndpoint();
  uint16_t port() const { return server_->port(); }

 private:
  std::unique_ptr<http::Server> server_;
};

}  // namespace ddp::launch::status
