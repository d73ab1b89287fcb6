#include "launcher/contain/leftover_report.hpp"

#include <fmt/format.h>

namespace ddp::launch::contain {
namespace {

constexpr size_t kNamedAtMost = 6;  // per list; the event log has every one

std::string list(const std::vector<Leftover>& leftovers) {
  std::string out;
  for (size_t i = 0; i < leftovers.size() && i < kNamedAtMost; ++i)
    out += (i ? ", " : "") + describe_leftover(leftovers[i]);
  if (leftovers.size() > kNamedAtMost)
    out += fmt::format(" and {} more (see the event log)", leftovers.size() - kNamedAtMost);
  return out;
}

}  // namespace

std::string describe_leftover(const Leftover& l) {
  return fmt::format("pid {} '{}' ({})", l.process.pid, l.command,
                     l.rank ? fmt::format("rank {}", *l.rank) : std::string("from an unknown worker"));
}

std::string leftover_notice(const SweepReport& r) {
  const size_t n = r.stopped.size() + r.killed.size() + r.remaining.size();
  if (n == 0) return "";
  std::string line = fmt::format("{} process{} outlived {} workers", n, n == 1 ? "" : "es", n == 1 ? "its" : "their");
  if (!r.stopped.empty()) line += "; ended by SIGTERM: " + list(r.stopped);
  if (!r.killed.empty()) line += fmt::format("; killed by SIGKILL after {:.1f} s: {}", r.kill_after_s, list(r.killed));
  if (!r.remaining.empty())
    line += fmt::format("; still there {} s after SIGKILL (uninterruptible, in the kernel): {}",
                        LeftoverSweep::kGiveUp.count(), list(r.remaining));
  return line;
}

}  // namespace ddp::launch::contain
