#include "launcher/progress/hang_detector.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

namespace ddp::launch::progress {
namespace {

using ddp::progress::Record;

// What a rank is doing in a collective: "all_reduce #12 (4996 float32)", group if not 0.
std::string collective(const Record& r, uint64_t seq) {
  std::string s = fmt::format("{} #{}", ddp::progress::op_name(r.op), seq);
  std::string detail = fmt::format("{} {}", r.numel, ddp::progress::dtype_name(r.dtype));
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
    return p.record ? std::make_tuple(1, p.record->seq_entered, p.record->step)
                    : std::make_tuple(0, uint64_t{0}, uint64_t{0});
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
  if (r.seq_completed > 0) s += fmt::format(", last completed {} #{}", ddp::progress::op_name(r.op), r.seq_completed);
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
  const bool any_fed =
      std::any_of(ranks.begin(), ranks.end(), [](const RankProgress& p) { return p.record.has_value(); });
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

double auto_hang_limit(const std::vector<std::optional<double>>& recent_step_s) {
  std::optional<double> slowest;
  for (const auto& t : recent_step_s)
    if (t && (!slowest || *t > *slowest)) slowest = t;
  if (!slowest) return AutoHangLimit::kBeforeFirstStepS;
  return std::max(AutoHangLimit::kFloorS, AutoHangLimit::kFactor * *slowest);
}

HangDetector::HangDetector(double timeout_s, size_t workers, double start_s)
    : timeout_s_(timeout_s), last_signs_(workers), last_sign_s_(workers, start_s) {}

double HangDetector::limit(const ProgressSampler& sampler) const {
  if (timeout_s_ >= 0) return timeout_s_;
  std::vector<std::optional<double>> step_s;
  for (const RankSample& s : sampler.samples()) step_s.push_back(s.step_s);
  return auto_hang_limit(step_s);
}

bool HangDetector::wants_signs_of_life(const ProgressSampler& sampler) {
  const auto& samples = sampler.samples();
  return std::any_of(samples.begin(), samples.end(), [](const RankSample& s) { return !s.ever_fed; });
}

std::optional<HangVerdict> HangDetector::observe(double now_s, const ProgressSampler& sampler,
                                                 const std::vector<SignsOfLife>& signs) {
  const std::vector<RankSample>& samples = sampler.samples();
  std::vector<RankProgress> ranks;
  std::vector<size_t> index;
  for (size_t i = 0; i < samples.size(); ++i) {
    if (i < signs.size() && i < last_signs_.size() && signs[i] != last_signs_[i]) {
      last_signs_[i] = signs[i];
      last_sign_s_[i] = now_s;
    }
    const RankSample& s = samples[i];
    if (!s.live) continue;  // an exited worker waits for nothing
    RankProgress p{s.rank, s.pid, s.record, s.idle_s, s.paused};
    // No signs given (every worker fed once): nothing is known of its silence.
    p.silent_s = i < signs.size() && i < last_sign_s_.size() ? now_s - last_sign_s_[i] : 0;
    ranks.push_back(std::move(p));
    index.push_back(i);
  }
  // A pause holds the whole job's clock: the ranks that waited for the paused one get a
  // full limit from the pause's end (it may end by exiting) to show progress.
  if (const auto pause = sampler.last_pause_s()) {
    for (RankProgress& p : ranks) {
      p.idle_s = std::min(p.idle_s, now_s - *pause);
      p.silent_s = std::min(p.silent_s, now_s - *pause);
    }
  }
  auto verdict = judge(ranks, limit(sampler));
  if (verdict) verdict->culprit = index[verdict->culprit];
  return verdict;
}

}  // namespace ddp::launch::progress
