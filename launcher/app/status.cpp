

#include "launcher/base/exit_status.hpp"
#include "launcher/base/host_port.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/http/client.hpp"
#include "launcher/os/process.hpp"
#include "launcher/report/goodput_ledger.hpp"
#include "launcher/status/status_endpoint.hpp"
#include "launcher/app/status.hpp"
#include <chrono>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace ddp::launch {
namespace {

using nlohmann::json;
constexpr std::chrono::milliseconds kTimeout{3000};

std::string num(const json& v, const char* fmt_spec = "{:.3f}") {
  if (v.is_null()) return "-";
  if (v.is_number_float()) return fmt::format(fmt::runtime(fmt_spec), v.get<double>());
  return v.dump();
}

std::string str(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

struct Target {
  std::string host;
  int port = 0;         // 0: none (a run directory whose launcher never served)
  std::string run_dir;  // "" for HOST:PORT
};

Target parse_target(const std::string& text) {
  Target t;
  if (is_directory(text)) {
    t.run_dir = text;
    const auto url = read_lines(text + "/" + status::kStatusUrlFile);
    if (!url.empty() && url[0].rfind("http://", 0) == 0) {
      const HostPort hp = parse_host_port(url[0].substr(7), 0);
      t.host = hp.host;
      t.port = hp.port;
    }
    return t;
  }
  try {
    const HostPort hp = parse_host_port(text, 0);
    if (hp.port == 0) throw HostPortError("no port");
    t.host = hp.host;
    t.port = hp.port;
  } catch (const HostPortError&) {
    throw LaunchError(exit_code::kUsage,
                      fmt::format("status: '{}' is neither HOST:PORT (a launcher's --metrics-port) nor a run "
                                  "directory; {}",
                                  text, cli::kStatusUsage));
  }
  return t;
}

// One look: the text to show and the exit code.
std::pair<std::string, int> look(const Target& t) {
  std::string unreachable;
  if (t.port != 0) {
    try {
      const std::string body = http::get(t.host, static_cast<uint16_t>(t.port), "/status.json", kTimeout);
      const bool ended = !json::parse(body, nullptr, false).value("finished", json()).is_null();
      return {format_status(body), ended ? kStatusEnded : kStatusRunning};
    } catch (const http::ClientError& e) {
      unreachable = e.what();
    }
  }
  if (!t.run_dir.empty()) {
    const auto lines = read_lines(t.run_dir + "/events.jsonl");
    if (!lines.empty()) {
      bool ended = false;
      std::string text = format_run_summary(lines, &ended);
      if (!ended) text += "no finish event and no launcher answering: it may have been killed\n";
      return {text, ended ? kStatusEnded : kStatusUnreachable};
    }
    return {fmt::format("{}: no events.jsonl and no launcher answering{}\n", t.run_dir,
                        unreachable.empty() ? "" : " (" + unreachable + ")"),
            kStatusUnreachable};
  }
  return {fmt::format("unreachable: {}\n", unreachable), kStatusUnreachable};
}

// The goodput ledger's line from /status.json's "goodput" (badput_s: {kind: s}) or from the
// `goodput` event (KIND_s fields); "" when there is none.
std::string goodput_text(const json& g, bool flat) {
  if (!g.is_object() || !g.contains("ratio")) return "";
  report::GoodputTotals t;
  t.ratio = g.value("ratio", 0.0);
  t.wall_s = g.value("wall_s", 0.0);
  const json badput = flat ? g : g.value("badput_s", json::object());
  for (report::Badput kind : report::kAllBadput)
    t.badput_s[static_cast<size_t>(kind)] = badput.value(std::string(to_string(kind)) + (flat ? "_s" : ""), 0.0);
  t.ignored_records = g.value("ignored_records", 0ULL);
  t.coarse = g.value("coarse", false);
  return report::goodput_line(t) + "\n";
}

}  // namespace

std::string format_status(const std::string& status_json) {
  const json s = json::parse(status_json, nullptr, false);
  if (s.is_discarded() || !s.is_object()) return "not a ddp-launch status (the endpoint answered something else)\n";
  const json& job = s.value("job", json::object());
  std::string out = fmt::format(
      "{}  run {}  node {} of {} ({})  attempt {} (max restarts {})  world size {}  up {:.0f} s{}\n",
      str(job.value("program", json(""))), str(job.value("run_id", json(""))), num(job.value("node_rank", json(0))),
      num(job.value("nnodes", json(1))), str(job.value("host", json(""))), num(s.value("attempt", json(0))),
      num(job.value("max_restarts", json(0))), num(s.value("world_size", json(0))), s.value("uptime_s", 0.0),
      s.value("finished", json()).is_null() ? "" : "  finished: " + str(s["finished"]));
  out += fmt::format("{:>6} {:>6} {:>10} {:>11} {:>14} {:<10} {}\n", "RANK", "LOCAL", "STEP", "STEP_TIME",
                     "LAST_PROGRESS", "STATE", "STRAGGLER");
  for (const json& r : s.value("ranks", json::array())) {
    const bool running = r.value("state", "") == "running";
    out += fmt::format("{:>6} {:>6} {:>10} {:>11} {:>14} {:<10} {}\n", num(r.value("rank", json(0))),
                       num(r.value("local_rank", json(0))), r.value("fed", false) ? num(r["step"]) : "-",
                       r.value("step_s", json()).is_null() ? "-" : num(r["step_s"], "{:.3f} s"),
                       running ? fmt::format("{:.1f} s ago", r.value("since_progress_s", 0.0)) : "-",
                       r.value("state", "?"), r.value("straggler", false) ? "yes" : "");
  }
  std::string restarts;
  const json by_cause = s.value("restarts", json::object());
  for (const auto& [cause, n] : by_cause.items())
    if (n.is_number() && n.get<long long>() > 0) restarts += fmt::format(" {} {}", cause, n.get<long long>());
  out += "restarts:" + (restarts.empty() ? std::string(" none") : restarts) + "\n";
  out += goodput_text(s.value("goodput", json()), false);
  for (const json& n : s.value("nodes", json::array()))
    out += fmt::format("node {} ({}): {}\n", num(n.value("node_rank", json(0))), str(n.value("host", json(""))),
                       str(n.value("url", json(""))));
  return out;
}

std::string format_run_summary(const std::vector<std::string>& lines, bool* ended) {
  std::string head, outcome = "running (no finish event yet)", failures, goodput;
  int restarts = 0;
  std::map<long long, std::string> last_exit;
  *ended = false;
  for (const std::string& line : lines) {
    const json e = json::parse(line, nullptr, false);
    if (!e.is_object()) continue;
    const std::string event = e.value("event", "");
    if (event == "start")
      head = fmt::format("{}  run {}  on {}  {} worker(s) per node  (from events.jsonl)\n", e.value("program", "?"),
                         e.value("run_id", "?"), e.value("host", "?"), num(e.value("nproc", json(0))));
    else if (event == "restart") ++restarts;
    else if (event == "goodput") goodput = goodput_text(e, true);
    else if (event == "failure")
      failures += fmt::format("  attempt {}: {} rank {}{}\n", num(e.value("attempt", json(0))), e.value("kind", "?"),
                              num(e.value("rank", json(-1))),
                              e.contains("status")   ? " (" + str(e["status"]) + ")"
                              : e.contains("reason") ? " (" + str(e["reason"]) + ")"
                                                     : "");
    else if (event == "worker_exit" && e.contains("rank"))
      last_exit[e["rank"].get<long long>()] =
          e.contains("signal") ? str(e["signal"]) : "exit code " + num(e.value("exit_code", json(0)));
    else if (event == "finish") {
      *ended = true;
      outcome = fmt::format("ended: {} (exit code {})", e.value("outcome", "?"), num(e.value("exit_code", json(0))));
    }
  }
  std::string out = head + outcome + fmt::format("; restarts: {}\n", restarts) + goodput;
  if (!failures.empty()) out += "failures:\n" + failures;
  for (const auto& [rank, how] : last_exit) out += fmt::format("  rank {}: {}\n", rank, how);
  return out;
}

int run_status_command(const cli::StatusArgs& args) {
  const Target target = parse_target(args.target);
  const bool terminal = os::is_terminal(STDOUT_FILENO);
  for (;;) {
    auto [text, code] = look(target);
    if (args.watch && terminal) text = "\x1b[H\x1b[2J" + text;  // redraw in place
    console::write_all(STDOUT_FILENO, args.watch && !terminal ? text + "\n" : text);
    if (!args.watch || code != kStatusRunning) return code;
    std::this_thread::sleep_for(std::chrono::duration<double>(args.interval_s));
  }
}

}  // namespace ddp::launch
