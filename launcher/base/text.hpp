// Text helpers for the launcher's parsers: splitting, trimming and whole-string numbers.
// Pure and thread-safe; nothing throws except std::bad_alloc. Callers turn a nullopt
// into their own error message (a flag name, a usage hint).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ddp::launch {

enum class EmptyItems { kKeep, kSkip };

// "a,,b" on ',' -> {"a", "", "b"} (kKeep; "" -> {""}) or {"a", "b"} (kSkip; "" -> {}).
std::vector<std::string> split(std::string_view s, char sep, EmptyItems empty = EmptyItems::kKeep);

// "k=v=w" on '=' -> {"k", "v=w"}: split at the first sep; nullopt when there is none.
std::optional<std::pair<std::string, std::string>> split_once(std::string_view s, char sep);

// s without leading and trailing spaces and tabs.
std::string trim(std::string_view s);

// A whole-string non-negative integer: digits only (no sign, no spaces), at most 18 of
// them; nullopt otherwise.
std::optional<long long> parse_natural(std::string_view s);

// The smallest number of seconds a caller accepts.
enum class SecondsFloor { kPositive, kNonNegative };

// A whole-string number of seconds (as std::stod reads it: "1.5", "2e3"; leading blanks
// allowed, nothing after) at or above the floor; nullopt otherwise, NaN included.
std::optional<double> parse_seconds(const std::string& s, SecondsFloor floor);

}  // namespace ddp::launch
