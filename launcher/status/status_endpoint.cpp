

#include "launcher/base/clock.hpp"
#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/cli/options.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/http/prometheus_text.hpp"
#include "launcher/net/listen_error.hpp"
#include "launcher/os/process.hpp"
#include "launcher/os/self_usage.hpp"
#include "launcher/status/status_endpoint.hpp"
#include "launcher/status/status_json.hpp"
#include "launcher/status/status_metrics.hpp"
#include "launcher/status/status_page.hpp"
#include <chrono>
#include <fmt/format.h>
#include <fstream>

namespace ddp::launch::status {

StatusEndpoint::StatusEndpoint(boost::asio::io_context& loop, const report::StatusBoard& board,
                               const report::StatusSpec& spec, std::optional<std::vector<std::string>> worker_args,
                               const std::string& run_dir)
    : board_(board), spec_(spec), worker_args_(std::move(worker_args)) {
  try {
    server_ = std::make_unique<http::Server>(loop, spec.host, spec.port,
                                             [this](const std::string& target) { return answer(target); });
  } catch (const net::ListenError& e) {
    throw LaunchError(
        exit_code::kUsage,
        e.address_in_use()
            ? fmt::format("--metrics-port {}: {} is in use (another job on this node?); pick another "
                          "port, or 0 for a free one",
                          spec.port, e.what())
            : fmt::format("--metrics-port {}: cannot listen at {}; check --metrics-addr", spec.port, e.what()));
  }
  const std::string host = spec.host.find(':') != std::string::npos ? "[" + spec.host + "]" : spec.host;
  url_ = fmt::format("http://{}:{}", host, server_->port());
  console::launcher_notice(fmt::format("status at {}/ (Prometheus: {}/metrics)", url_, url_));
  if (!run_dir.empty()) {
    std::ofstream out(run_dir + "/" + kStatusUrlFile);
    out << url_ << "\n";  // best effort: `ddp-launch status RUN` falls back to events.jsonl
  }
}

StatusEndpoint::~StatusEndpoint() = default;

http::Response StatusEndpoint::answer(const std::string& target) const {
  const std::string path = target.substr(0, target.find('?'));
  if (path == "/metrics") return {200, http::kPrometheusContentType, metrics_text(board_, os::self_usage())};
  const double now = unix_now();
  if (path == "/status.json") return {200, "application/json", status_json(board_, now, worker_args_) + "\n"};
  if (path == "/" || path == "/index.html") return {200, "text/html; charset=utf-8", status_page(board_, now)};
  return {404, "text/plain; charset=utf-8", "not found: try /, /status.json or /metrics\n"};
}

}  // namespace ddp::launch::status
