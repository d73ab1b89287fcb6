#include "launcher/node/job_end.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <cmath>
#include <fstream>

#include "launcher/base/clock.hpp"
#include "launcher/base/exit_status.hpp"
#include "launcher/base/failure_kind.hpp"
#include "launcher/base/signal_names.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/node/worker_launches.hpp"
#include "launcher/os/process.hpp"
#include "launcher/report/termination_log.hpp"

namespace ddp::launch::node {

int JobEnd::report_own_failure(const report::AttemptResult& result, int restart_count) {
  const report::WorkerOutcome& root = result.outcomes[*result.root_cause];
  keep_reported_error_file(layout_, root);
  const report::ReportContext ctx{job_.program, os::host_name(), restart_count, job_.max_restarts};
  console::write_all(STDERR_FILENO, report::format_failure_report(ctx, result.outcomes, *result.root_cause));
  write_launcher_error_file(report::launcher_error_record(root, ctx));
  report::write_termination_log(job_.status.termination_log, report::termination_message(ctx, root));
  return report::failure_exit_code(root);
}

void JobEnd::report_others_failure(const report::RemoteFailure& root, int exit_code, int node_rank) {
  if (is_hang(root.kind) && layout_.temporary()) {  // this node's stacks were captured there
    layout_.keep();
    console::launcher_notice(
        fmt::format("kept the run directory {}: it holds this node's stacks files", layout_.run_dir()));
  }
  console::write_all(STDERR_FILENO,
                     report::format_remote_failure_report(job_.program, root, node_rank, os::host_name()));
  write_launcher_error_file(report::launcher_error_record(root, exit_code));
  report::write_termination_log(job_.status.termination_log, report::termination_message(job_.program, root));
}

void JobEnd::report_stop_elsewhere(const report::RemoteFailure& stop, int node_rank) {
  console::write_all(STDERR_FILENO,
                     report::format_remote_failure_report(job_.program, stop, node_rank, os::host_name()));
}

void JobEnd::finished(int code) {
  snapshots_.persist(snapshot::PersistReason::kEnd);
  conclude_goodput();
  events_.write("finish", {{"outcome", code == exit_code::kSuccess ? "succeeded" : "failed"}, {"exit_code", code}});
}

void JobEnd::stopped_between_attempts() { snapshots_.persist(snapshot::PersistReason::kStop); }

int JobEnd::interrupted(int signal, const std::optional<std::string>& note) {
  const int code = exit_code::from_signal(signal);
  conclude_goodput();
  events_.write("finish", {{"outcome", "interrupted"},
                           {"signal", signal_name(signal)},
                           {"reason", note.value_or("")},
                           {"exit_code", code}});
  return code;
}

void JobEnd::failed_by_error(int code, const std::string& message, bool store_lost) {
  snapshots_.persist(snapshot::PersistReason::kEnd);
  if (store_lost)
    events_.write("failure", {{"kind", to_string(FailureKind::kStoreLost)}, {"final", true}, {"reason", message}});
  conclude_goodput();
  events_.write("finish", {{"outcome", "error"}, {"exit_code", code}, {"message", message}});
}

// The ledger ends with the job: every kind in the `goodput` event (seconds to the microsecond).
void JobEnd::conclude_goodput() {
  const double now = unix_now();
  goodput_.job_ended(now);
  const report::GoodputTotals t = goodput_.totals(now);
  const auto us = [](double s) { return std::round(s * 1e6) / 1e6; };
  std::vector<report::EventField> fields = {
      {"ratio", std::round(t.ratio * 1e4) / 1e4}, {"wall_s", us(t.wall_s)}, {"goodput_s", us(t.goodput_s)}};
  for (report::Badput kind : report::kAllBadput)
    fields.emplace_back(std::string(to_string(kind)) + "_s", us(t.badput_s[static_cast<size_t>(kind)]));
  fields.emplace_back("pending_s", us(t.pending_s));
  fields.emplace_back("ignored_records", static_cast<long long>(t.ignored_records));
  fields.emplace_back("coarse", t.coarse);
  events_.write("goodput", fields);
  if (t.attempts > 1 || t.wall_s >= 60) console::launcher_notice(report::goodput_line(t));
}

void JobEnd::write_launcher_error_file(const std::string& record) const {
  const auto path = cli::lookup(env_, "TORCHELASTIC_ERROR_FILE");
  if (!path || path->empty()) return;
  std::ofstream out(*path);
  if (out) out << record << "\n";
}

}  // namespace ddp::launch::node
