#include "launcher/supervise/hang_watch.hpp"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"

namespace ddp::launch {
namespace {

using progress::Record;

uint64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// What a rank is doing in a collective: "all_reduce #12 (4996 float32)", group if not 0.
std::string collective(const Record& r, uint64_t seq) {
  std::string s = fmt::format("{} #{}", progress::op_name(r.op), seq);
  std::string detail = fmt::format("{} {}", r.numel, progress::dtype_name(r.dtype));
  if (r.group != 0) detail += fmt::format(", group {}", r.group);
  return s + " (" + detail + ")";
}

bool in_flight(const Record& r) { return r.seq_entered > r.seq_completed; }

std::tuple<uint32_t, uint64_t, uint32_t, uint32_t> signature(const Record& r) {
  return {r.op, r.numel, r.dtype, r.group};
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

// Ranks at the same in-flight sequence number in different collectives.
std::optional<HangVerdict> find_desync(const std::vector<RankProgress>& ranks, const std::string& head) {
  std::map<uint64_t, std::vector<size_t>> by_seq;
  for (size_t i = 0; i < ranks.size(); ++i)
    if (ranks[i].record && in_flight(*ranks[i].record)) by_seq[ranks[i].record->seq_entered].push_back(i);
  for (const auto& [seq, members] : by_seq) {
    const Record& first = *ranks[members[0]].record;
    auto odd = std::find_if(members.begin(), members.end(),
                            [&](size_t i) { return signature(*ranks[i].record) != signature(first); });
    if (odd == members.end()) continue;
    HangVerdict v{true, *odd, ""};
    v.summary = fmt::format("desync: {}; at collective #{} the ranks differ:", head, seq);
    for (size_t i : members)
      v.summary += fmt::format(" rank {} in {};", ranks[i].rank, collective(*ranks[i].record, seq));
    v.summary.pop_back();
    return v;
  }
  return std::nullopt;
}

// The rank furthest behind: never fed, else the fewest collectives entered, then steps.
size_t furthest_behind(const std::vector<RankProgress>& ranks) {
  auto key = [](const RankProgress& p) {
    return p.record ? std::make_tuple(1, p.record->seq_entered, p.record->step) : std::make_tuple(0, uint64_t{0}, uint64_t{0});
  };
  size_t best = 0;
  for (size_t i = 1; i < ranks.size(); ++i)
    if (key(ranks[i]) < key(ranks[best])) best = i;
  return best;
}

std::string describe_culprit(const RankProgress& p) {
  if (!p.record) return fmt::format("rank {} (pid {}) never reported progress", p.rank, p.pid);
  const Record& r = *p.record;
  std::string s = fmt::format("rank {} (pid {}) at step {}", p.rank, p.pid, r.step);
  if (in_flight(r)) return s + ", waits in " + collective(r, r.seq_entered);
  if (r.seq_completed > 0) s += fmt::format(", last completed {} #{}", progress::op_name(r.op), r.seq_completed);
  return s + ", in no collective";
}

// No rank ever fed its record: every one has been silent (no output, no CPU) for the limit.
std::optional<HangVerdict> judge_unfed(const std::vector<RankProgress>& ranks, double timeout_s) {
  if (!std::all_of(ranks.begin(), ranks.end(), [&](const RankProgress& p) { return p.silent_s >= timeout_s; }))
    return std::nullopt;
  HangVerdict v;
  for (size_t i = 1; i < ranks.size(); ++i)
    if (ranks[i].silent_s > ranks[v.culprit].silent_s) v.culprit = i;
  const RankProgress& p = ranks[v.culprit];
  v.summary = fmt::format("hang: rank {} (pid {}) fed no progress record; no output and no CPU time for {:.0f} s",
                          p.rank, p.pid, p.silent_s);
  std::vector<int> others;
  for (size_t i = 0; i < ranks.size(); ++i)
    if (i != v.culprit) others.push_back(ranks[i].rank);
  if (!others.empty())
    v.summary += fmt::format("; rank{} {} silent too", others.size() == 1 ? "" : "s", rank_list(others));
  return v;
}

}  // namespace

std::optional<HangVerdict> judge(const std::vector<RankProgress>& ranks, double timeout_s) {
  if (ranks.empty()) return std::nullopt;
  const bool any_fed = std::any_of(ranks.begin(), ranks.end(), [](const RankProgress& p) { return p.record.has_value(); });
  if (!any_fed) return judge_unfed(ranks, timeout_s);
  const bool all_idle = std::all_of(ranks.begin(), ranks.end(),
                                    [&](const RankProgress& p) { return !p.paused && p.idle_s >= timeout_s; });
  if (!all_idle) return std::nullopt;
  double idle = ranks[0].idle_s;
  for (const auto& p : ranks) idle = std::min(idle, p.idle_s);
  const std::string head = fmt::format("no progress for {:.0f} s", idle);
  if (auto desync = find_desync(ranks, head)) return desync;
  HangVerdict v;
  v.culprit = furthest_behind(ranks);
  const RankProgress& behind = ranks[v.culprit];
  // Group the others by what they do: {0: wait in a collective, 1: at a step, 2: never fed}.
  std::map<std::pair<int, std::string>, std::vector<int>> others;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i == v.culprit) continue;
    const auto& r = ranks[i].record;
    auto what = !r              ? std::make_pair(2, std::string())
                : in_flight(*r) ? std::make_pair(0, collective(*r, r->seq_entered))
                                : std::make_pair(1, fmt::format("step {}", r->step));
    others[what].push_back(ranks[i].rank);
  }
  v.summary = fmt::format("hang: {}; {}", head, describe_culprit(behind));
  for (const auto& [what, who] : others) {
    const bool one = who.size() == 1;
    v.summary += fmt::format("; rank{} {} ", one ? "" : "s", rank_list(who));
    if (what.first == 0) v.summary += (one ? "waits in " : "wait in ") + what.second;
    else if (what.first == 1) v.summary += (one ? "is at " : "are at ") + what.second + ", in no collective";
    else v.summary += "never reported progress";
  }
  return v;
}

std::optional<Record> read_progress_record(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  Record r{};
  ssize_t n = ::pread(fd, &r, sizeof r, 0);
  ::close(fd);
  if (n != static_cast<ssize_t>(sizeof r) || r.magic != progress::kMagic || r.version != progress::kVersion)
    return std::nullopt;
  return r;
}

void create_progress_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const Record zero{};
  bool ok = fd >= 0 && ::write(fd, &zero, sizeof zero) == static_cast<ssize_t>(sizeof zero);
  int err = errno;
  if (fd >= 0) ::close(fd);
  if (!ok)
    throw LaunchError(exit_code::kIoError, fmt::format("cannot create the progress file {}: {}; check "
                                                       "free space and permissions there",
                                                       path, std::strerror(err)));
}

double auto_hang_limit(const std::vector<std::optional<double>>& recent_step_s) {
  std::optional<double> slowest;
  for (const auto& t : recent_step_s)
    if (t && (!slowest || *t > *slowest)) slowest = t;
  if (!slowest) return AutoHangLimit::kBeforeFirstStepS;
  return std::max(AutoHangLimit::kFloorS, AutoHangLimit::kFactor * *slowest);
}

HangWatch::HangWatch(std::vector<Worker> workers, double timeout_s)
    : workers_(std::move(workers)), timeout_s_(timeout_s), last_updates_(workers_.size(), 0),
      last_change_(workers_.size(), Clock::now()), fed_(workers_.size(), false),
      last_signs_(workers_.size()), last_sign_(workers_.size(), Clock::now()), last_step_(workers_.size(), 0),
      last_step_ns_(workers_.size(), 0), recent_step_s_(workers_.size()) {}

void HangWatch::note_steps(size_t i, const Record& r) {
  if (r.step_time_ns == 0 || r.step == last_step_[i]) return;
  if (r.step > last_step_[i] && last_step_ns_[i] != 0 && r.step_time_ns > last_step_ns_[i]) {
    auto& recent = recent_step_s_[i];
    recent.push_back(static_cast<double>(r.step_time_ns - last_step_ns_[i]) / 1e9 / (r.step - last_step_[i]));
    if (recent.size() > AutoHangLimit::kRecentSteps) recent.erase(recent.begin());
  }
  last_step_[i] = r.step;
  last_step_ns_[i] = r.step_time_ns;
}

double HangWatch::limit() const {
  if (timeout_s_ >= 0) return timeout_s_;
  std::vector<std::optional<double>> recent;
  for (const auto& r : recent_step_s_) {
    double sum = 0;
    for (double t : r) sum += t;
    recent.push_back(r.empty() ? std::nullopt : std::optional<double>(sum / r.size()));
  }
  return auto_hang_limit(recent);
}

bool HangWatch::wants_signs_of_life() const {
  return std::any_of(fed_.begin(), fed_.end(), [](bool fed) { return !fed; });
}

std::optional<HangVerdict> HangWatch::observe(const std::vector<bool>& live, const std::vector<SignsOfLife>& signs) {
  const auto now = Clock::now();
  const uint64_t mono = monotonic_ns();
  std::vector<RankProgress> ranks;
  std::vector<size_t> index;
  for (size_t i = 0; i < workers_.size(); ++i) {
    auto record = read_progress_record(workers_[i].progress_file);
    if (record && record->updates != last_updates_[i]) {
      last_updates_[i] = record->updates;
      last_change_[i] = now;
    }
    if (record) {
      fed_[i] = true;
      note_steps(i, *record);
    }
    if (i < signs.size() && signs[i] != last_signs_[i]) {
      last_signs_[i] = signs[i];
      last_sign_[i] = now;
    }
    if (i >= live.size() || !live[i]) continue;  // an exited worker waits for nothing
    RankProgress p{workers_[i].rank, workers_[i].pid, record,
                   std::chrono::duration<double>(now - last_change_[i]).count(), false};
    // No signs given (every worker fed once): nothing is known of its silence.
    p.silent_s = i < signs.size() ? std::chrono::duration<double>(now - last_sign_[i]).count() : 0;
    p.paused = record && record->paused > 0 && (record->pause_deadline_ns == 0 || mono < record->pause_deadline_ns);
    ranks.push_back(std::move(p));
    index.push_back(i);
  }
  // A pause holds the whole job's clock: the ranks that waited for the paused one get a
  // full limit from the pause's end (it may end by exiting) to show progress.
  if (std::any_of(ranks.begin(), ranks.end(), [](const RankProgress& p) { return p.paused; })) last_pause_ = now;
  if (last_pause_) {
    const double since_pause = std::chrono::duration<double>(now - *last_pause_).count();
    for (RankProgress& p : ranks) {
      p.idle_s = std::min(p.idle_s, since_pause);
      p.silent_s = std::min(p.silent_s, since_pause);
    }
  }
  auto verdict = judge(ranks, limit());
  if (verdict) verdict->culprit = index[verdict->culprit];
  return verdict;
}

}  // namespace ddp::launch
