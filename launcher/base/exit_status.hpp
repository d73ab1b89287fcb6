// The launcher's exit codes, in one table. A worker's own exit code passes through;
// a worker killed by signal N gives 128+N; the launcher stopped by Ctrl-C gives 130
// (another handled signal N: 128+N); the launcher's own errors use the band 120-127.
#pragma once

namespace ddp::launch::exit_code {

inline constexpr int kSuccess = 0;
inline constexpr int kSignalBase = 128;   // killed by signal N -> 128 + N
inline constexpr int kInterrupted = 130;  // 128 + SIGINT

// A hang: no worker progressed for --hang-timeout; ddp-launch captured the stacks and
// stopped the workers (docs/hangs.md). Also a worker in uninterruptible sleep past
// TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT (docs/failures.md).
inline constexpr int kHang = 119;
// A pre-flight check failed on this node (--preflight, ddp-launch preflight): no worker started.
inline constexpr int kPreflightFailed = 118;
// This node was struck out: its own worker was a round's root cause --strikes COUNT times within
// the window, and the round's leader left it out while --nnodes MIN nodes remained.
inline constexpr int kStruckOut = 117;

// The launcher's own band: nothing ran, or the launcher could not do its job.
inline constexpr int kInternalError = 120;     // a bug, an unexpected system error, or a
                                               // worker whose exit status was lost (ECHILD)
inline constexpr int kUsage = 121;             // bad flag, bad value, contradictory options
inline constexpr int kBadDevices = 122;        // GPU discovery/selection impossible as asked
inline constexpr int kAddressInUse = 123;      // the explicit master port is taken, or no free port
inline constexpr int kRendezvousFailed = 124;  // peers missing, timeout, mismatched nodes
// Cannot create or write the run directory / log files: disk full, permissions, read-only
// file system.
inline constexpr int kIoError = 125;
inline constexpr int kProgramNotExecutable = 126;  // like the shell: found, cannot execute
inline constexpr int kProgramNotFound = 127;       // like the shell: no such program

inline constexpr int from_signal(int signo) { return kSignalBase + signo; }

}  // namespace ddp::launch::exit_code
