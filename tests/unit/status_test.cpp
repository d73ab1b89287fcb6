// The status endpoint's pure parts: the Prometheus text format (escaping, numbers,
// histograms), the board as metrics (bounded labels) and as JSON (arguments only when
// asked), the page's escaping, the termination log's message and its 4 KiB cap; and the
// HTTP server's answers on a real socket (GET only, 404, the connection limit).
#include <catch2/catch.hpp>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <nlohmann/json.hpp>

#include "launcher/http/html.hpp"
#include "launcher/http/prometheus_text.hpp"
#include "launcher/http/server.hpp"
#include "launcher/app/status.hpp"
#include "launcher/status/status_json.hpp"
#include "launcher/status/status_metrics.hpp"
#include "launcher/status/status_page.hpp"
#include "launcher/report/termination_log.hpp"

using namespace ddp::launch;
using namespace ddp::launch::report;
using namespace ddp::launch::status;

namespace {

StatusBoard sample_board() {
  StatusBoard b;
  b.job.program = "train<script>alert(1)</script>.py";
  b.job.run_id = "job\"1\\\n";
  b.job.role = "default";
  b.world_size = 2;
  b.ranks.resize(2);
  b.ranks[0] = {0, 0, WorkerState::kRunning, true, 12, 0.25, 0.5, 40, false, {}};
  b.ranks[1] = {1, 1, WorkerState::kFailed, true, 11, std::nullopt, 3, 39, true, {}};
  b.restarts[FailureKind::kHang] = 2;
  b.recovery["total"].observe(0.3);
  b.recovery["total"].observe(7);
  b.add_event(R"({"event":"failure","error":"<img src=x onerror=alert(2)>"})");
  return b;
}

}  // namespace

TEST_CASE("Prometheus text: label values and HELP are escaped, numbers parse") {
  CHECK(http::escape_label_value("a\"b\\c\nd") == "a\\\"b\\\\c\\nd");
  CHECK(http::format_value(3) == "3");
  CHECK(http::format_value(0.25) == "0.25");
  CHECK(http::format_value(1.0 / 0.0) == "+Inf");
  CHECK(http::format_value(-1.0 / 0.0) == "-Inf");
  CHECK(http::format_value(0.0 / 0.0) == "NaN");
  http::PrometheusText t;
  t.family("x_seconds", "histogram", "line\none");
  t.histogram("x_seconds", {{"phase", "stop"}}, {0.5, 1}, {1, 2}, 3, 4.5);
  CHECK(t.str() ==
        "# HELP x_seconds line\\none\n# TYPE x_seconds histogram\n"
        "x_seconds_bucket{phase=\"stop\",le=\"0.5\"} 1\nx_seconds_bucket{phase=\"stop\",le=\"1\"} 2\n"
        "x_seconds_bucket{phase=\"stop\",le=\"+Inf\"} 3\nx_seconds_sum{phase=\"stop\"} 4.5\n"
        "x_seconds_count{phase=\"stop\"} 3\n");
}

TEST_CASE("Status metrics and JSON: strikes, a spare, the nodes left out and what every node joined with") {
  report::StatusBoard b = sample_board();
  std::string text = metrics_text(b, {1.5, 4096, 100});
  CHECK(text.find("ddp_launch_strikes 0\n") != std::string::npos);
  CHECK(text.find("ddp_launch_spare 0\n") != std::string::npos);
  CHECK(text.find("ddp_launch_nodes_left_out 0\n") != std::string::npos);
  b.strikes = 2;
  b.spare = true;
  b.left_out = {"node c (pid 7): struck out: its workers were the root cause 3 times within 3600 s"};
  b.nodes = {{0, "a", "http://a:1", "", 20.5, 0, 182.5}, {1, "b", "", "shm: 0.1 GiB free", 0, 1}};
  text = metrics_text(b, {1.5, 4096, 100});
  CHECK(text.find("# TYPE ddp_launch_strikes gauge\n") != std::string::npos);
  CHECK(text.find("ddp_launch_strikes 2\n") != std::string::npos);
  CHECK(text.find("ddp_launch_spare 1\n") != std::string::npos);
  CHECK(text.find("ddp_launch_nodes_left_out 1\n") != std::string::npos);
  const auto j = nlohmann::json::parse(status_json(b, 10, std::nullopt));
  CHECK(j.at("strikes") == 2);
  CHECK(j.at("spare") == true);
  CHECK(j.at("left_out").at(0).get<std::string>().find("struck out") != std::string::npos);
  CHECK(j.at("nodes").at(0).at("cpu_gflops") == 20.5);
  CHECK(j.at("nodes").at(0).at("nccl_busbw_gbps") == 182.5);
  CHECK(j.at("nodes").at(1).at("preflight_failed") == "shm: 0.1 GiB free");
  CHECK(j.at("nodes").at(1).at("strikes") == 1);
  const std::string page = status_page(b, 10);
  CHECK(page.find("cpu 20.50 GFLOP/s a core · nccl 182.5 GB/s bus bandwidth") != std::string::npos);
  CHECK(page.find("pre-flight failed: shm: 0.1 GiB free") != std::string::npos);
  CHECK(page.find("<li class=\"failed\">left out node c (pid 7): struck out") != std::string::npos);
  CHECK(page.find("this node waits as a hot spare") != std::string::npos);
}

TEST_CASE("Status metrics and JSON: the pre-flight checks' levels, only with --preflight") {
  report::StatusBoard b = sample_board();
  CHECK(metrics_text(b, {1.5, 4096, 100}).find("ddp_launch_preflight_check") == std::string::npos);
  CHECK(nlohmann::json::parse(status_json(b, 10, std::nullopt)).at("preflight").empty());
  b.preflight = {{"cpu", "warn"}, {"memory", "pass"}, {"shm", "fail"}};
  const std::string text = metrics_text(b, {1.5, 4096, 100});
  CHECK(text.find("# TYPE ddp_launch_preflight_check gauge\n") != std::string::npos);
  CHECK(text.find("ddp_launch_preflight_check{check=\"cpu\"} 1\n") != std::string::npos);
  CHECK(text.find("ddp_launch_preflight_check{check=\"memory\"} 0\n") != std::string::npos);
  CHECK(text.find("ddp_launch_preflight_check{check=\"shm\"} 2\n") != std::string::npos);
  CHECK(nlohmann::json::parse(status_json(b, 10, std::nullopt)).at("preflight").at("shm") == "fail");
}

TEST_CASE("Status metrics: every rank's series, restarts by cause, recovery buckets; no program") {
  const std::string text = metrics_text(sample_board(), {1.5, 4096, 100});
  CHECK(text.find("ddp_launch_rank_step{rank=\"0\",local_rank=\"0\"} 12\n") != std::string::npos);
  CHECK(text.find("ddp_launch_rank_step_seconds{rank=\"0\",local_rank=\"0\"} 0.25\n") != std::string::npos);
  CHECK(text.find("ddp_launch_rank_step_seconds{rank=\"1\"") == std::string::npos);  // not measured yet
  CHECK(text.find("ddp_launch_rank_straggler{rank=\"1\",local_rank=\"1\"} 1\n") != std::string::npos);
  CHECK(text.find("ddp_launch_workers{state=\"failed\"} 1\n") != std::string::npos);
  CHECK(text.find("ddp_launch_restarts_total{cause=\"hang\"} 2\n") != std::string::npos);
  CHECK(text.find("ddp_launch_restarts_total{cause=\"crash\"} 0\n") != std::string::npos);
  CHECK(text.find("ddp_launch_recovery_seconds_bucket{phase=\"total\",le=\"0.5\"} 1\n") != std::string::npos);
  CHECK(text.find("ddp_launch_recovery_seconds_bucket{phase=\"total\",le=\"10\"} 2\n") != std::string::npos);
  CHECK(text.find("ddp_launch_recovery_seconds_count{phase=\"total\"} 2\n") != std::string::npos);
  CHECK(text.find("run_id=\"job\\\"1\\\\\\n\"") != std::string::npos);  // escaped
  CHECK(text.find("process_cpu_seconds_total 1.5\n") != std::string::npos);
  CHECK(text.find("train") == std::string::npos);  // the program is never a label
}

TEST_CASE("Status JSON: the worker's arguments only when given") {
  auto hidden = nlohmann::json::parse(status_json(sample_board(), 10, std::nullopt));
  CHECK_FALSE(hidden["job"].contains("args"));
  CHECK(hidden["ranks"][1]["state"] == "failed");
  CHECK(hidden["ranks"][1]["step_s"].is_null());
  CHECK(hidden["restarts"]["hang"] == 2);
  CHECK(hidden["events"][0]["event"] == "failure");
  auto shown = nlohmann::json::parse(status_json(sample_board(), 10, std::vector<std::string>{"--lr", "3"}));
  CHECK(shown["job"]["args"] == nlohmann::json::array({"--lr", "3"}));
}

TEST_CASE("Status page: everything it shows is escaped; nothing external") {
  CHECK(http::html_escape("<a href=\"x\">'&'</a>") == "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  const std::string page = status_page(sample_board(), 10);
  CHECK(page.find("<script>alert(1)") == std::string::npos);
  CHECK(page.find("train&lt;script&gt;alert(1)&lt;/script&gt;.py") != std::string::npos);
  CHECK(page.find("<img src=x") == std::string::npos);
  CHECK(page.find("&lt;img src=x onerror=alert(2)&gt;") != std::string::npos);
  CHECK(page.find("<tr id=\"rank-1\" class=\"failed straggling\">") != std::string::npos);
  CHECK(page.find("https://") == std::string::npos);
  CHECK(page.find("innerHTML") == std::string::npos);  // the script writes textContent only
}

TEST_CASE("Termination log: rank, node, what happened, the last error line; at most 4 KiB") {
  WorkerOutcome root;
  root.rank = 3;
  root.local_rank = 1;
  root.status.code = 2;
  root.stderr_tail = {"Traceback (most recent call last):", "ValueError: bad batch", ""};
  const ReportContext ctx{"train.py", "node-a", 1, 3};
  const std::string text = termination_message(ctx, root);
  CHECK(text.find("rank 3 (local_rank 1) on node-a failed: exit code 2\n") == 12);
  CHECK(text.find("attempt 2 of 4") != std::string::npos);
  CHECK(text.find("last error: ValueError: bad batch\n") != std::string::npos);
  root.error = ErrorRecord{"RuntimeError: from the error file\n", "", std::nullopt};
  CHECK(termination_message(ctx, root).find("last error: RuntimeError: from the error file\n") != std::string::npos);
  root.stderr_tail = {std::string(10000, 'x')};
  root.error.reset();
  CHECK(termination_message(ctx, root).size() <= kTerminationLogMax);
  std::string utf8;
  for (int i = 0; i < 3000; ++i) utf8 += "\xc3\xa9";  // é: the cut never splits it
  const std::string cut = fit_termination_log(utf8);
  CHECK(cut.size() <= kTerminationLogMax);
  CHECK(cut.substr(cut.size() - 4) == "...\n");
  CHECK((cut.size() - 4) % 2 == 0);
}

TEST_CASE("HTTP server: GET answered, others refused, the connection limit closes the surplus") {
  boost::asio::io_context io;
  http::ServerLimits limits;
  limits.max_connections = 2;
  http::Server server(
      io, "127.0.0.1", 0,
      [](const std::string& target) {
        return target == "/x" ? http::Response{200, "text/plain", "hello"} : http::Response{404, "text/plain", "no"};
      },
      limits);
  using tcp = boost::asio::ip::tcp;
  const tcp::endpoint at(boost::asio::ip::make_address("127.0.0.1"), server.port());
  auto exchange = [&](const std::string& request) {
    tcp::socket s(io);
    s.connect(at);
    boost::asio::write(s, boost::asio::buffer(request));
    std::string reply;
    std::array<char, 4096> buf;
    boost::system::error_code ec;
    while (!ec) {
      io.run_for(std::chrono::milliseconds(20));
      io.restart();
      s.non_blocking(true);
      size_t n = s.read_some(boost::asio::buffer(buf), ec);
      if (ec == boost::asio::error::would_block) ec = {};
      reply.append(buf.data(), n);
    }
    return reply;
  };
  const std::string ok = exchange("GET /x HTTP/1.1\r\nHost: a\r\n\r\n");
  CHECK(ok.rfind("HTTP/1.1 200 OK", 0) == 0);
  CHECK(ok.find("\r\n\r\nhello") != std::string::npos);
  CHECK(exchange("GET /y HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 404", 0) == 0);
  CHECK(exchange("DELETE /x HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 405", 0) == 0);
  // Two idle connections fill the limit: a third is closed at accept.
  tcp::socket a(io), b(io), c(io);
  a.connect(at);
  b.connect(at);
  io.run_for(std::chrono::milliseconds(50));
  io.restart();
  c.connect(at);
  io.run_for(std::chrono::milliseconds(50));
  io.restart();
  CHECK(server.refused() == 1);
}

TEST_CASE("ddp-launch status: /status.json as a table; a run directory's events summarised") {
  const std::string table = format_status(status_json(sample_board(), 10, std::nullopt));
  CHECK(table.find("attempt 0 (max restarts 0)  world size 2") != std::string::npos);
  CHECK(table.find("RANK") != std::string::npos);
  CHECK(table.find("     1      1         11           -              - failed     yes\n") != std::string::npos);
  CHECK(table.find("restarts: hang 2\n") != std::string::npos);
  CHECK(format_status("<html>").rfind("not a ddp-launch status", 0) == 0);
  bool ended = false;
  const std::string summary = format_run_summary(
      {R"({"event":"start","run_id":"r1","host":"h","program":"train.py","nproc":2})",
       R"({"event":"failure","attempt":0,"kind":"crash","rank":1,"status":"exit code 3"})",
       R"({"event":"restart","attempt":1})", "not json", R"({"event":"worker_exit","rank":0,"signal":"SIGTERM"})",
       R"({"event":"finish","attempt":1,"outcome":"failed","exit_code":3})"},
      &ended);
  CHECK(ended);
  CHECK(summary.find("train.py  run r1  on h") == 0);
  CHECK(summary.find("ended: failed (exit code 3); restarts: 1\n") != std::string::npos);
  CHECK(summary.find("attempt 0: crash rank 1 (exit code 3)") != std::string::npos);
  CHECK(summary.find("rank 0: SIGTERM") != std::string::npos);
  format_run_summary({R"({"event":"start"})"}, &ended);
  CHECK_FALSE(ended);
}
