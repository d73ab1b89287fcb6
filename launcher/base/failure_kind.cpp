#include "launcher/base/failure_kind.hpp"

namespace ddp::launch {

std::string_view to_string(FailureKind kind) {
  switch (kind) {
    case FailureKind::kCrash: return "crash";
    case FailureKind::kSignal: return "signal";
    case FailureKind::kHang: return "hang";
    case FailureKind::kDesync: return "desync";
    case FailureKind::kNodeLost: return "node_lost";
    case FailureKind::kStoreLost: return "store_lost";
    case FailureKind::kStopped: return "stopped";
    case FailureKind::kMembership: return "membership";
    case FailureKind::kWatchdog: return "watchdog";
    case FailureKind::kUninterruptible: return "d_state";
  }
  return "crash";  // not reached: every kind is listed above
}

std::optional<FailureKind> failure_kind_from_string(std::string_view text) {
  for (FailureKind kind : kAllFailureKinds)
    if (to_string(kind) == text) return kind;
  return std::nullopt;
}

bool is_hang(FailureKind kind) { return kind == FailureKind::kHang || kind == FailureKind::kDesync; }

bool has_verdict(FailureKind kind) {
  return is_hang(kind) || kind == FailureKind::kWatchdog || kind == FailureKind::kUninterruptible;
}

}  // namespace ddp::launch
