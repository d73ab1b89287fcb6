#include "launcher/status/status_metrics.hpp"

#include <vector>

#include "launcher/base/clock.hpp"
#include "launcher/http/prometheus_text.hpp"

namespace ddp::launch::status {
namespace {

http::Labels rank_labels(const report::RankStatus& r) {
  return {{"rank", std::to_string(r.rank)}, {"local_rank", std::to_string(r.local_rank)}};
}

void rank_series(http::PrometheusText& t, const report::StatusBoard& b) {
  t.family("ddp_launch_rank_step", "gauge", "Steps the rank completed (its progress record)");
  for (const report::RankStatus& r : b.ranks)
    if (r.fed) t.sample("ddp_launch_rank_step", rank_labels(r), static_cast<double>(r.step));
  t.family("ddp_launch_rank_step_seconds", "gauge", "The rank's recent step time, seconds");
  for (const report::RankStatus& r : b.ranks)
    if (r.step_s) t.sample("ddp_launch_rank_step_seconds", rank_labels(r), *r.step_s);
  t.family("ddp_launch_rank_seconds_since_progress", "gauge", "Seconds since the rank's progress record last changed");
  for (const report::RankStatus& r : b.ranks)
    if (r.state == report::WorkerState::kRunning)
      t.sample("ddp_launch_rank_seconds_since_progress", rank_labels(r), r.since_progress_s);
  t.family("ddp_launch_rank_collective_seq", "gauge", "Sequence number of the rank's last completed collective");
  for (const report::RankStatus& r : b.ranks)
    if (r.fed) t.sample("ddp_launch_rank_collective_seq", rank_labels(r), static_cast<double>(r.collective_seq));
  t.family("ddp_launch_rank_straggler", "gauge", "1 if the rank was named a straggler in this attempt");
  for (const report::RankStatus& r : b.ranks)
    t.sample("ddp_launch_rank_straggler", rank_labels(r), r.straggler ? 1 : 0);
  t.family("ddp_launch_rank_running", "gauge", "1 while the rank's worker runs");
  for (const report::RankStatus& r : b.ranks)
    t.sample("ddp_launch_rank_running", rank_labels(r), r.state == report::WorkerState::kRunning ? 1 : 0);
}

// The job and the current attempt: who, which round, how many workers in which state.
void job_series(http::PrometheusText& t, const report::StatusBoard& b) {
  t.family("ddp_launch_job_info", "gauge", "The job this launcher runs (value 1)");
  t.sample("ddp_launch_job_info",
           {{"run_id", b.job.run_id}, {"role", b.job.role}, {"backend", b.job.backend}, {"version", b.job.version}}, 1);
  t.family("ddp_launch_node_rank", "gauge", "This launcher's node rank");
  t.sample("ddp_launch_node_rank", {}, b.job.node_rank);
  t.family("ddp_launch_attempt", "gauge", "Restarts so far: the current attempt's number (TORCHELASTIC_RESTART_COUNT)");
  t.sample("ddp_launch_attempt", {}, b.attempt);
  if (b.round) {
    t.family("ddp_launch_rendezvous_round", "gauge", "The current rendezvous round (multi-node)");
    t.sample("ddp_launch_rendezvous_round", {}, *b.round);
  }
  t.family("ddp_launch_world_size", "gauge", "Workers in the job, all nodes (WORLD_SIZE)");
  t.sample("ddp_launch_world_size", {}, b.world_size);
  t.family("ddp_launch_workers", "gauge", "This node's workers of the current attempt, by state");
  for (report::WorkerState s : report::kAllWorkerStates) {
    size_t n = 0;
    for (const report::RankStatus& r : b.ranks) n += r.state == s;
    t.sample("ddp_launch_workers", {{"state", to_string(s)}}, static_cast<double>(n));
  }
}

// This node's standing: pre-flight checks, strikes, spare, the nodes its round left out.
void node_series(http::PrometheusText& t, const report::StatusBoard& b) {
  if (!b.preflight.empty()) {  // --preflight
    t.family("ddp_launch_preflight_check", "gauge",
             "This node's pre-flight checks before its workers started: 0 pass, 1 warn, 2 fail");
    for (const auto& [check, level] : b.preflight)
      t.sample("ddp_launch_preflight_check", {{"check", check}}, level == "fail" ? 2 : level == "warn" ? 1 : 0);
  }
  t.family("ddp_launch_strikes", "gauge",
           "This node's strikes within the --strikes window (its own worker was a round's root cause)");
  t.sample("ddp_launch_strikes", {}, b.strikes);
  t.family("ddp_launch_spare", "gauge", "1 while this node waits as a hot spare, else 0");
  t.sample("ddp_launch_spare", {}, b.spare ? 1 : 0);
  t.family("ddp_launch_nodes_left_out", "gauge",
           "Nodes the latest round left out (a failed pre-flight check, a slow CPU, struck out)");
  t.sample("ddp_launch_nodes_left_out", {}, static_cast<double>(b.left_out.size()));
}

// Restarts by cause, each recovery's phases, hang verdicts.
void restart_series(http::PrometheusText& t, const report::StatusBoard& b) {
  t.family("ddp_launch_restarts_total", "counter", "Restarts of the worker group, by the failure that caused them");
  for (FailureKind k : kAllFailureKinds) {
    auto it = b.restarts.find(k);
    t.sample("ddp_launch_restarts_total", {{"cause", std::string(to_string(k))}},
             it == b.restarts.end() ? 0 : static_cast<double>(it->second));
  }
  t.family("ddp_launch_recovery_seconds", "histogram",
           "Each restart's recovery, by phase: stop, store, start, first_step (made of joined, restored and "
           "step where the workers mark them), total (failure to first step)");
  const std::vector<double> bounds(report::DurationHistogram::kBounds.begin(),
                                   report::DurationHistogram::kBounds.end());
  for (const char* phase : {"stop", "store", "start", "first_step", "joined", "restored", "step", "total"}) {
    auto it = b.recovery.find(phase);
    const report::DurationHistogram h = it == b.recovery.end() ? report::DurationHistogram{} : it->second;
    t.histogram("ddp_launch_recovery_seconds", {{"phase", phase}}, bounds,
                std::vector<unsigned long long>(h.cumulative.begin(), h.cumulative.end()), h.count, h.sum);
  }
  t.family("ddp_launch_hang_verdicts_total", "counter", "Hang (or desync) verdicts this launcher reached");
  t.sample("ddp_launch_hang_verdicts_total", {}, static_cast<double>(b.hang_verdicts));
}

// The goodput ledger: seconds resolved as goodput or as each kind of badput (counters), what
// is not resolved yet, the wall time and the ratio (gauges).
void goodput_series(http::PrometheusText& t, const report::GoodputTotals& g) {
  t.family("ddp_launch_goodput_seconds_total", "counter", "This node's wall time in steps that were kept (goodput)");
  t.sample("ddp_launch_goodput_seconds_total", {}, g.goodput_s);
  t.family("ddp_launch_badput_seconds_total", "counter",
           "This node's wall time lost, by kind (docs/goodput.md: preflight, waiting, startup, restart, restore, "
           "redone, stall, hang, detection, shutdown)");
  for (report::Badput kind : report::kAllBadput)
    t.sample("ddp_launch_badput_seconds_total", {{"kind", to_string(kind)}}, g.badput_s[static_cast<size_t>(kind)]);
  t.family("ddp_launch_goodput_pending_seconds", "gauge",
           "Wall time not classified yet (steps a restart may still redo, the phase under way)");
  t.sample("ddp_launch_goodput_pending_seconds", {}, g.pending_s);
  t.family("ddp_launch_wall_seconds", "gauge", "Seconds since the launcher started: goodput + badput + pending");
  t.sample("ddp_launch_wall_seconds", {}, g.wall_s);
  t.family("ddp_launch_goodput_ratio", "gauge", "Goodput, with the running attempt's steps so far, over the wall time");
  t.sample("ddp_launch_goodput_ratio", {}, g.ratio);
  t.family("ddp_launch_progress_records_ignored_total", "counter",
           "Progress record reads the ledger did not believe (steps going back, impossible times)");
  t.sample("ddp_launch_progress_records_ignored_total", {}, static_cast<double>(g.ignored_records));
}

// The launcher process itself, as Prometheus' process collector names it.
void process_series(http::PrometheusText& t, const os::SelfUsage& self) {
  t.family("process_cpu_seconds_total", "counter", "The launcher's own CPU time (user + system), seconds");
  t.sample("process_cpu_seconds_total", {}, self.cpu_seconds);
  t.family("process_resident_memory_bytes", "gauge", "The launcher's own resident memory, bytes");
  t.sample("process_resident_memory_bytes", {}, self.resident_bytes);
  t.family("process_start_time_seconds", "gauge", "When the launcher started, seconds since the Unix epoch");
  t.sample("process_start_time_seconds", {}, self.start_time_unix_s);
}

}  // namespace

std::string metrics_text(const report::StatusBoard& b, const os::SelfUsage& self) {
  http::PrometheusText t;
  job_series(t, b);
  rank_series(t, b);
  node_series(t, b);
  restart_series(t, b);
  goodput_series(t, b.goodput.totals(unix_now()));
  process_series(t, self);
  return t.str();
}

}  // namespace ddp::launch::status
