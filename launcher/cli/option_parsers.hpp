// Flag value types and their validators: each turns one flag's string (surrounding blanks
// ignored) into a typed value, or throws LaunchError(kUsage) with a line naming the flag.
// Pure; parse_command_line uses them and tests call them directly.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ddp::launch::cli {

// --nproc-per-node: a count, or gpu / cpu / auto.
struct NprocSpec {
  enum class Kind { kCount, kGpu, kCpu, kAuto };
  Kind kind = Kind::kCount;
  int count = 1;  // for kCount
};

// -r/--redirects and -t/--tee: which streams (bit 1 stdout, bit 2 stderr), by local rank.
struct StreamSelection {
  int all = 0;                                // applies to ranks not listed below
  std::vector<std::pair<int, int>> per_rank;  // (local rank, bits)
  int for_rank(int local_rank) const;
};
inline constexpr int kStdout = 1;
inline constexpr int kStderr = 2;

NprocSpec parse_nproc(const std::string& value);
std::pair<int, int> parse_nnodes(const std::string& value);  // N or MIN:MAX
StreamSelection parse_stream_selection(const std::string& flag, const std::string& value);
std::vector<int> parse_device_indices(const std::string& value);
std::set<int> parse_rank_filter(const std::string& value);
std::vector<int> parse_signal_list(const std::string& value);  // names or numbers, deduplicated
// --preload: comma-separated Python module names (dotted identifiers), in order.
std::vector<std::string> parse_module_list(const std::string& flag, const std::string& value);

// --duplicate-stdout-filters / --duplicate-stderr-filters: torchrun's comma-separated list,
// ",," standing for a comma inside a filter ("a,,b,c" is {"a,b", "c"}; "" is {""}, which
// matches every line, as in torchrun).
std::vector<std::string> parse_duplicate_filters(const std::string& value);
// A flag with a fixed set of values: "FLAG 'VALUE' is not one of A, B (WHAT)" otherwise.
void check_choice(const std::string& flag, const std::string& value, const std::vector<std::string>& choices,
                  const std::string& what);

// --shutdown-timeout (and TORCH_ELASTIC_SHUTDOWN_TIMEOUT): seconds >= 0.
double parse_shutdown_timeout(const std::string& value);
// --hang-timeout: seconds, 0 (off) or at least 1; "auto": kHangTimeoutAuto.
inline constexpr double kHangTimeoutAuto = -1;
double parse_hang_timeout(const std::string& value);
// --straggler-threshold: 0 (off) or a factor above 1 (a step time that many times the median).
double parse_straggler_threshold(const std::string& value);
// --snapshot-persist-interval: seconds >= 0 (0: only on a failure, at the end and on a stop).
double parse_persist_interval(const std::string& value);

// An integer in [min, max] (a leading '-' allowed); otherwise "FLAG must be HINT, got 'VALUE'".
int parse_int_flag(const std::string& flag, const std::string& value, long long min, long long max,
                   const std::string& hint);

// The default signals that stop the job when received (and are forwarded first).
const std::vector<int>& default_stop_signals();

}  // namespace ddp::launch::cli
