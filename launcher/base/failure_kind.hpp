// The one list of the ways an attempt can end early: the event log's `kind`, the abort
// record every node reads, the failure report and the restart notice all name a failure by
// this enum and its one spelling. Adding a kind is compile-guided: every switch over it
// lists each kind with no default (-Wswitch), and a unit test checks docs/events.md.
// Pure; thread-safe.
#pragma once

#include <optional>
#include <string_view>

namespace ddp::launch {

enum class FailureKind {
  kCrash,            // a worker exited with a non-zero code
  kSignal,           // a worker was killed by a signal the launcher did not send
  kHang,             // no progress for the hang limit (the verdict names the rank behind)
  kDesync,           // ranks at the same collective sequence number in different collectives
  kNodeLost,         // multi-node: a node's launcher was lost (heartbeat silence, lease expiry)
  kStoreLost,        // multi-node: this node lost the job's store
  kStopped,          // a launcher got a stop signal (SIGINT, SIGTERM, ...)
  kMembership,       // multi-node: a node waits to join; every node restarts in a bigger round
  kWatchdog,         // a worker's own file timer expired (TORCHELASTIC_ENABLE_FILE_TIMER): the launcher signalled it
  kUninterruptible,  // a worker stayed in uninterruptible sleep (D) past TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT
};

inline constexpr FailureKind kAllFailureKinds[] = {
    FailureKind::kCrash,    FailureKind::kSignal,          FailureKind::kHang,    FailureKind::kDesync,
    FailureKind::kNodeLost, FailureKind::kStoreLost,       FailureKind::kStopped, FailureKind::kMembership,
    FailureKind::kWatchdog, FailureKind::kUninterruptible,
};

// "crash", "signal", "hang", "desync", "node_lost", "store_lost", "stopped", "membership",
// "watchdog", "d_state".
std::string_view to_string(FailureKind kind);
// The kind spelled `text`, or nullopt.
std::optional<FailureKind> failure_kind_from_string(std::string_view text);

// A hang verdict (hang or desync) is the root cause itself: exit code 119, stacks captured.
bool is_hang(FailureKind kind);
// The launcher judged the worker (a hang, a desync, an expired timer, the D state): its verdict
// line says why, before the worker's exit status.
bool has_verdict(FailureKind kind);

}  // namespace ddp::launch
