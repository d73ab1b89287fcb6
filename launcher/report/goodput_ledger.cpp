#include "launcher/report/goodput_ledger.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace ddp::launch::report {

const char* to_string(Badput kind) {
  switch (kind) {
    case Badput::kPreflight: return "preflight";
    case Badput::kWaiting: return "waiting";
    case Badput::kStartup: return "startup";
    case Badput::kRestart: return "restart";
    case Badput::kRestore: return "restore";
    case Badput::kRedone: return "redone";
    case Badput::kStall: return "stall";
    case Badput::kSlow: return "slow";
    case Badput::kHang: return "hang";
    case Badput::kDetection: return "detection";
    case Badput::kShutdown: return "shutdown";
  }
  return "startup";
}

std::string goodput_line(const GoodputTotals& t) {
  std::string line = fmt::format("goodput {:.1f}% of {:.1f} s", 100 * t.ratio, t.wall_s);
  const char* sep = ": ";
  for (Badput kind : kAllBadput) {
    const double s = t.badput_s[static_cast<size_t>(kind)];
    if (s < 0.05) continue;
    line += fmt::format("{}{} {:.1f} s", sep, to_string(kind), s);
    sep = ", ";
  }
  if (t.coarse) line += " (some workers feed no progress record: their running time counts as goodput)";
  if (t.ignored_records) line += fmt::format(" ({} progress records ignored)", t.ignored_records);
  return line;
}

GoodputLedger::GoodputLedger(double launch_s) : launch_s_(launch_s), cursor_(launch_s) {}

void GoodputLedger::add(Badput kind, double from, double to) {
  if (to > from) badput_s_[static_cast<size_t>(kind)] += to - from;
}

void GoodputLedger::add_kept(const Split& split) {
  goodput_s_ += split.good;
  badput_s_[static_cast<size_t>(Badput::kStall)] += split.stall;
  badput_s_[static_cast<size_t>(Badput::kSlow)] += split.slow;
}

// The node's normal time per step: the first quartile over the recent reads (what it runs at
// undisturbed, even when most reads are disturbed); a read over kSlowFactor times it is slow
// (noise is not). nullopt: too few reads to tell.
std::optional<GoodputLedger::Normal> GoodputLedger::normal() const {
  if (step_times_.size() < 4) return std::nullopt;
  std::vector<double> v(step_times_.begin(), step_times_.end());
  const auto quartile = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 4);
  std::nth_element(v.begin(), quartile, v.end());
  return Normal{*quartile, *quartile * kSlowFactor};
}

// Kept steps' time from the first point to `until`: each read's share blocked saving is stall,
// a slow read's time beyond the normal step time is slow, the rest goodput.
GoodputLedger::Split GoodputLedger::split(const std::vector<Point>& steps, double until) const {
  Split out;
  const std::optional<Normal> n = normal();
  for (size_t i = 1; i < steps.size() && steps[i - 1].t < until; ++i) {
    const Point &a = steps[i - 1], &b = steps[i];
    const double part = b.t > until && b.t > a.t ? (until - a.t) / (b.t - a.t) : 1;
    const double dt = (b.t - a.t) * part;
    const double saving = std::clamp((b.saving_s - a.saving_s) * part, 0.0, dt);
    const double busy = dt - saving, n_steps = static_cast<double>(b.step - a.step) * part;
    const double slow = n && n_steps > 0 && busy / n_steps > n->slow_above_s ? busy - n_steps * n->step_s : 0;
    out.stall += saving;
    out.slow += slow;
    out.good += busy - slow;
  }
  return out;
}

void GoodputLedger::phase(Badput kind, double t) {
  if (!running_ && t > cursor_) {
    add(phase_, cursor_, t);
    cursor_ = t;
  }
  phase_ = kind;
}

void GoodputLedger::attempt_started(double t) {
  if (running_) attempt_ended(Ending::kFinished, t, t);
  t = std::max(t, cursor_);
  add(phase_, cursor_, t);
  cursor_ = t;
  running_.emplace();
  running_->started = t;
  ++attempts_;
}

// A record that goes back, or tells a time it cannot have, is not believed.
bool GoodputLedger::plausible(Rank& rank, const ddp::progress::Record& r, double t, double mono_offset_s) const {
  const double step_t = static_cast<double>(r.step_time_ns) / 1e9 + mono_offset_s;
  const bool stepped = r.step != rank.step;
  if (r.step < rank.step) return false;                                                // steps going back
  if (r.step > 0 && r.step_time_ns == 0) return false;                                 // a step with no time
  if (r.step > 0 && (step_t > t + 1 || step_t < running_->started - 1)) return false;  // not in this attempt
  if (stepped && r.step_time_ns < rank.step_ns) return false;                          // a later step done earlier
  // A rank's first step may be any number (a resumed job's global step); from then on, over
  // one step per microsecond is a lie.
  if (rank.step > 0 && r.step - rank.step > static_cast<uint64_t>(std::max(0.0, t - rank.read_t) * 1e6) + 1)
    return false;
  if (r.restored_next_step > 0 && r.step > 0 && r.step + 1 < r.restored_next_step) return false;
  rank.step = r.step;
  rank.step_ns = r.step_time_ns;
  rank.read_t = t;
  return true;
}

void GoodputLedger::observe(double t, double mono_offset_s,
                            const std::vector<std::optional<ddp::progress::Record>>& records) {
  if (!running_) return;
  Attempt& a = *running_;
  a.ranks.resize(std::max(a.ranks.size(), records.size()));
  std::optional<Point> earliest, node;  // the first step any rank completed; the step every rank completed
  double saving_s = 0;
  bool every_rank_stepped = true;
  for (size_t i = 0; i < records.size(); ++i) {
    if (!records[i]) continue;
    const ddp::progress::Record& r = *records[i];
    if (!plausible(a.ranks[i], r, t, mono_offset_s)) {
      ++ignored_;
      continue;
    }
    a.fed = true;
    const auto unix_s = [&](uint64_t ns) { return static_cast<double>(ns) / 1e9 + mono_offset_s; };
    if (r.joined_time_ns) a.joined = std::max(a.joined.value_or(0), unix_s(r.joined_time_ns));
    if (r.restored_time_ns) a.restored = std::max(a.restored.value_or(0), unix_s(r.restored_time_ns));
    if (r.restored_next_step) a.resumed = std::min(a.resumed.value_or(UINT64_MAX), r.restored_next_step - 1);
    saving_s = std::max(saving_s, r.saving_ms / 1000.0);
    if (r.step == 0) {
      every_rank_stepped = false;
      continue;
    }
    const Point p{unix_s(r.step_time_ns), r.step, 0};
    if (!earliest || p.t < earliest->t) earliest = p;
    if (!node || p.step < node->step) node = p;
  }
  if (a.steps.empty()) {
    if (!earliest) return;
    a.steps.push_back({std::max(earliest->t, cursor_), earliest->step, saving_s});
    first_step_seen(a);
    return;
  }
  const Point& last = a.steps.back();
  if (!every_rank_stepped || !node || node->step <= last.step) return;
  add_point(a, {std::max(node->t, last.t), node->step, std::max(saving_s, last.saving_s)});
}

void GoodputLedger::add_point(Attempt& a, const Point& p) {
  const Point& last = a.steps.back();
  step_times_.push_back(std::max(0.0, p.t - last.t - (p.saving_s - last.saving_s)) /
                        static_cast<double>(p.step - last.step));
  if (step_times_.size() > kRecentReads) step_times_.pop_front();
  a.steps.push_back(p);
  if (a.steps.size() > kMaxPoints) {  // every other point but the last: the same span, coarser
    std::vector<Point> kept;
    for (size_t i = 0; i < a.steps.size(); i += 2) kept.push_back(a.steps[i]);
    if (kept.back().t != a.steps.back().t) kept.push_back(a.steps.back());
    a.steps = std::move(kept);
  }
}

// The attempt's first step: the time before it is start-up (restart), but for state restore;
// the previous attempt's steps are kept up to the step this one resumed from.
void GoodputLedger::first_step_seen(Attempt& a) {
  const double first = a.steps.front().t;
  Badput before = phase_;
  if (a.joined && a.restored && *a.restored > *a.joined) {
    const double from = std::clamp(*a.joined, cursor_, first), to = std::clamp(*a.restored, cursor_, first);
    add(before, cursor_, from);
    add(Badput::kRestore, from, to);
    add(before, to, first);
  } else {
    add(before, cursor_, first);
  }
  cursor_ = first;
  resolve_previous(a.resumed.value_or(a.steps.front().step - 1));
}

void GoodputLedger::resolve_previous(uint64_t resume_step) {
  if (!previous_) return;
  const std::vector<Point>& steps = previous_->steps;
  const double kept_until = time_at_step(steps, resume_step);
  add_kept(split(steps, kept_until));
  add(Badput::kRedone, kept_until, steps.back().t);
  previous_.reset();
}

// When the node completed `step` (interpolated between reads; clamped to the attempt's steps).
double GoodputLedger::time_at_step(const std::vector<Point>& steps, uint64_t step) {
  if (step <= steps.front().step) return steps.front().t;
  for (size_t i = 1; i < steps.size(); ++i) {
    if (steps[i].step < step) continue;
    const Point &a = steps[i - 1], &b = steps[i];
    return a.t + (b.t - a.t) * static_cast<double>(step - a.step) / static_cast<double>(b.step - a.step);
  }
  return steps.back().t;
}

void GoodputLedger::attempt_ended(Ending how, double failure_s, double stopped_s) {
  if (!running_) return;
  Attempt a = std::move(*running_);
  running_.reset();
  failure_s = std::max(failure_s, cursor_);
  stopped_s = std::max(stopped_s, failure_s);
  if (a.steps.empty()) {
    if (!a.fed) {  // no progress record: running counts as goodput
      coarse_ = true;
      goodput_s_ += failure_s - cursor_;
    } else {  // it ended before its first step
      add(phase_, cursor_, failure_s);
      if (a.resumed) resolve_previous(*a.resumed);
    }
  } else {
    const double last = std::max(a.steps.back().t, cursor_);
    const Badput lost = how == Ending::kFinished  ? Badput::kShutdown
                        : how == Ending::kCrashed ? Badput::kRedone
                        : how == Ending::kHung    ? Badput::kHang
                                                  : Badput::kDetection;
    add(lost, last, failure_s);
    if (how == Ending::kFinished) add_kept(split(a.steps, a.steps.back().t));
    else previous_ = std::move(a);
  }
  add(how == Ending::kFinished ? Badput::kShutdown : Badput::kRestart, failure_s, stopped_s);
  cursor_ = stopped_s;
  phase_ = how == Ending::kFinished ? Badput::kShutdown : Badput::kRestart;
}

void GoodputLedger::job_ended(double t) {
  if (ended_) return;
  if (running_) attempt_ended(Ending::kFinished, t, t);
  if (previous_)  // no attempt resumed: its newest snapshot went to disk
    add_kept(split(previous_->steps, previous_->steps.back().t));
  previous_.reset();
  add(phase_ == Badput::kRestart ? Badput::kShutdown : phase_, cursor_, t);
  cursor_ = std::max(cursor_, t);
  ended_ = t;
}

GoodputTotals GoodputLedger::totals(double now) const {
  GoodputTotals out;
  out.wall_s = std::max(0.0, ended_.value_or(now) - launch_s_);
  out.goodput_s = goodput_s_;
  out.badput_s = badput_s_;
  double accounted = goodput_s_;
  for (double s : badput_s_) accounted += s;
  out.pending_s = std::max(0.0, out.wall_s - accounted);
  double running_steps = 0;
  if (running_ && !running_->steps.empty()) running_steps = split(running_->steps, running_->steps.back().t).good;
  out.ratio = out.wall_s > 0 ? std::min(1.0, (goodput_s_ + running_steps) / out.wall_s) : 0;
  out.ignored_records = ignored_;
  out.attempts = attempts_;
  out.coarse = coarse_;
  return out;
}

}  // namespace ddp::launch::report
