// The goodput ledger: every second of this node's wall time, from the launcher's start to the
// job's end, is either goodput (time in training steps that were kept) or one kind of badput
// (docs/goodput.md defines each). Fed by the node session (phases outside attempts, how each
// attempt ended), the progress monitor (every read of the workers' progress records, a last one
// at the attempt's end) and the job's end. Time is classified once it is known for certain:
// the steps of an attempt that failed wait for the next attempt's resume point (kept, or
// redone), so the totals only grow (Prometheus counters); what waits is `pending`. A record
// that goes back, or tells a time it cannot have, is ignored and counted. Pure (the caller
// passes every time, Unix seconds); single-threaded; no I/O.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "contract/progress_record.hpp"

namespace ddp::launch::report {

enum class Badput {
  kPreflight,  // the pre-flight checks
  kWaiting,    // a rendezvous waiting for nodes, a hot spare waiting for a seat
  kStartup,    // launch to the first attempt's first step, but for the above
  kRestart,    // a failure seen to the next attempt's first step, but for state restore
  kRestore,    // init_process_group returned to the state restored (both told by the workers)
  kRedone,     // steps (and the step in flight) whose work a failure lost
  kStall,      // kept steps' time blocked saving snapshots or checkpoints
  kSlow,       // kept steps' time beyond the node's normal step time (contention after a restart, ...)
  kHang,       // the last step to a hang (or watchdog, D-state) verdict
  kDetection,  // the last step to this node learning of a failure elsewhere
  kShutdown,   // the last step to the job's end (final saves, exits)
};
inline constexpr size_t kBadputKinds = 11;
inline constexpr Badput kAllBadput[kBadputKinds] = {
    Badput::kPreflight, Badput::kWaiting, Badput::kStartup, Badput::kRestart,   Badput::kRestore, Badput::kRedone,
    Badput::kStall,     Badput::kSlow,    Badput::kHang,    Badput::kDetection, Badput::kShutdown};
const char* to_string(Badput kind);  // "preflight", "waiting", "startup", ...

struct GoodputTotals {
  double wall_s = 0;     // launch to now (or the job's end)
  double goodput_s = 0;  // resolved as goodput
  std::array<double, kBadputKinds> badput_s{};
  double pending_s = 0;  // not resolved yet: wall - goodput - every badput
  double ratio = 0;      // (goodput + the running attempt's steps so far) / wall
  uint64_t ignored_records = 0;
  int attempts = 0;     // attempts whose workers started
  bool coarse = false;  // an attempt's workers fed no progress record: its running time counts as goodput
};

// "goodput 95.9% of 62.1 s: startup 1.2 s, restart 0.4 s, redone 0.6 s" (kinds over 0.05 s).
std::string goodput_line(const GoodputTotals& totals);

class GoodputLedger {
 public:
  // How an attempt ended, for the time from its last step to the failure.
  enum class Ending {
    kFinished,  // succeeded, or stopped by a signal: its steps are kept
    kCrashed,   // a worker of this node failed: the step in flight is redone
    kHung,      // a verdict of this node (hang, desync, watchdog, D state)
    kElsewhere  // stopped for a failure (or a membership change) on another node
  };

  explicit GoodputLedger(double launch_s = 0);

  // From t on, time outside an attempt is `kind` (preflight, waiting, startup, restart).
  void phase(Badput kind, double t);
  // The attempt's workers started at t (every read until attempt_ended is this attempt's).
  void attempt_started(double t);
  // One read of the attempt's records at t; mono_offset_s turns their CLOCK_MONOTONIC times
  // into Unix seconds (unix = ns / 1e9 + offset).
  void observe(double t, double mono_offset_s, const std::vector<std::optional<ddp::progress::Record>>& records);
  // failure_s: when the failure was seen (kFinished: the last worker's exit); stopped_s: the
  // last worker gone.
  void attempt_ended(Ending how, double failure_s, double stopped_s);
  // The job ends at t: everything is resolved.
  void job_ended(double t);

  GoodputTotals totals(double now) const;

 private:
  struct Point {  // the node's progress at one read: every rank had completed `step`
    double t = 0;
    uint64_t step = 0;
    double saving_s = 0;  // the most any rank spent blocked saving, by then
  };
  struct Rank {  // what a rank last told in this attempt, to catch one that lies
    uint64_t step = 0;
    uint64_t step_ns = 0;
    double read_t = 0;
  };
  struct Attempt {
    double started = 0;
    bool fed = false;  // some record was initialised
    std::optional<double> joined, restored;
    std::optional<uint64_t> resumed;  // the step its state was restored at (told)
    std::vector<Point> steps;         // from its first step, decimated
    std::vector<Rank> ranks;
  };

  struct Split {  // kept steps' time
    double good = 0, stall = 0, slow = 0;
  };
  struct Normal {  // the node's step time (the first quartile of recent reads), and what counts as slow
    double step_s = 0;
    double slow_above_s = 0;
  };

  void add(Badput kind, double from, double to);
  void add_kept(const Split& split);
  bool plausible(Rank& rank, const ddp::progress::Record& r, double t, double mono_offset_s) const;
  void first_step_seen(Attempt& a);
  void add_point(Attempt& a, const Point& p);
  void resolve_previous(uint64_t resume_step);
  std::optional<Normal> normal() const;
  Split split(const std::vector<Point>& steps, double until) const;
  static double time_at_step(const std::vector<Point>& steps, uint64_t step);

  double launch_s_;
  double cursor_;  // wall time before it is resolved or belongs to an attempt
  Badput phase_ = Badput::kStartup;
  double goodput_s_ = 0;
  std::array<double, kBadputKinds> badput_s_{};
  uint64_t ignored_ = 0;
  int attempts_ = 0;
  bool coarse_ = false;
  std::optional<Attempt> running_;   // between attempt_started and attempt_ended
  std::optional<Attempt> previous_;  // an ended attempt whose steps wait for the next resume point
  std::optional<double> ended_;
  std::deque<double> step_times_;  // each read's time per step (saving left out), the newest kRecentReads
  static constexpr size_t kMaxPoints = 2048;
  static constexpr size_t kRecentReads = 4096;
  static constexpr double kSlowFactor = 1.25;
};

}  // namespace ddp::launch::report
