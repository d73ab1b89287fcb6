// Validators of single flag values; see option_parsers.hpp.
#include "launcher/cli/option_parsers.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <csignal>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "launcher/base/signal_names.hpp"
#include "launcher/base/text.hpp"
#include "launcher/cli/usage_error.hpp"

namespace ddp::launch::cli {
namespace {

// "0,2,5" -> {0,2,5}; any item that is not a number in [0, max] -> usage_error(error).
std::vector<int> parse_number_list(const std::string& value, long long max, const std::string& error) {
  std::vector<int> out;
  for (const auto& item : split(trim(value), ',')) {
    auto n = parse_natural(trim(item));
    if (!n || *n > max) usage_error(error);
    out.push_back(static_cast<int>(*n));
  }
  return out;
}

}  // namespace

int StreamSelection::for_rank(int local_rank) const {
  for (const auto& [rank, bits] : per_rank)
    if (rank == local_rank) return bits;
  return all;
}

const std::vector<int>& default_stop_signals() {
  static const std::vector<int> kDefault = parse_signal_list("SIGTERM,SIGINT,SIGHUP,SIGQUIT");
  return kDefault;
}

int parse_int_flag(const std::string& flag, const std::string& value, long long min, long long max,
                   const std::string& hint) {
  std::string v = trim(value);
  bool negative = !v.empty() && v[0] == '-';
  auto n = parse_natural(negative ? v.substr(1) : v);
  if (!n || (negative ? -*n : *n) < min || (negative ? -*n : *n) > max)
    usage_error(fmt::format("{} must be {}, got '{}'", flag, hint, value));
  return static_cast<int>(negative ? -*n : *n);
}

NprocSpec parse_nproc(const std::string& value) {
  std::string v = trim(value);
  if (v == "gpu") return {NprocSpec::Kind::kGpu, 0};
  if (v == "cpu") return {NprocSpec::Kind::kCpu, 0};
  if (v == "auto") return {NprocSpec::Kind::kAuto, 0};
  if (v == "xpu" || v == "privateuseone")  // torchrun counts Intel GPUs and a PrivateUse1 backend's devices
    usage_error(
        fmt::format("--nproc-per-node={}: ddp-launch counts NVIDIA GPUs (gpu, auto) and CPUs (cpu), not {} "
                    "devices; give the number of workers, --nproc-per-node=N",
                    v, v == "xpu" ? "Intel XPU" : "PrivateUse1 backend"));
  auto n = parse_natural(v);
  if (!n || *n < 1 || *n > 4096)
    usage_error(
        fmt::format("--nproc-per-node must be a positive number of workers, gpu, cpu "
                    "or auto; got '{}'",
                    value));
  return {NprocSpec::Kind::kCount, static_cast<int>(*n)};
}

std::vector<std::string> parse_duplicate_filters(const std::string& value) {
  // torchrun's comma_separated_list: ",," stands for a comma inside a filter.
  static const std::string kPlaceholder = std::string(1, '\0');
  std::string v = value;
  for (size_t pos = v.find(",,"); pos != std::string::npos; pos = v.find(",,", pos + 1))
    v.replace(pos, 2, kPlaceholder);
  std::vector<std::string> out;
  for (std::string item : split(v, ',')) {
    for (size_t pos = item.find(kPlaceholder); pos != std::string::npos; pos = item.find(kPlaceholder, pos + 1))
      item.replace(pos, 1, ",");
    out.push_back(std::move(item));
  }
  return out;
}

void check_choice(const std::string& flag, const std::string& value, const std::vector<std::string>& choices,
                  const std::string& what) {
  if (std::find(choices.begin(), choices.end(), value) != choices.end()) return;
  usage_error(fmt::format("{} '{}' is not one of {} ({})", flag, value, fmt::join(choices, ", "), what));
}

std::pair<int, int> parse_nnodes(const std::string& value) {
  auto parts = split(trim(value), ':');
  if (parts.size() > 2) usage_error(fmt::format("--nnodes must be N or MIN:MAX, got '{}'", value));
  auto lo = parse_natural(parts[0]);
  auto hi = parse_natural(parts.back());
  if (!lo || !hi || *lo < 1 || *lo > *hi || *hi > 100000)
    usage_error(fmt::format("--nnodes must be N or MIN:MAX with 0 < MIN <= MAX, got '{}'", value));
  return {static_cast<int>(*lo), static_cast<int>(*hi)};
}

StreamSelection parse_stream_selection(const std::string& flag, const std::string& value) {
  auto bad = [&] {
    usage_error(
        fmt::format("{} must be 0 (none), 1 (stdout), 2 (stderr), 3 (both) or a per-rank "
                    "list like 0:3,1:1; got '{}'",
                    flag, value));
  };
  StreamSelection sel;
  std::string v = trim(value);
  if (v.empty()) return sel;
  if (v.find(':') == std::string::npos) {
    auto n = parse_natural(v);
    if (!n || *n > 3) bad();
    sel.all = static_cast<int>(*n);
    return sel;
  }
  for (const auto& item : split(v, ',')) {
    auto kv = split(trim(item), ':');
    if (kv.size() != 2) bad();
    auto rank = parse_natural(kv[0]);
    auto bits = parse_natural(kv[1]);
    if (!rank || !bits || *bits > 3 || *rank > 100000) bad();
    sel.per_rank.emplace_back(static_cast<int>(*rank), static_cast<int>(*bits));
  }
  return sel;
}

std::vector<int> parse_device_indices(const std::string& value) {
  std::vector<int> out = parse_number_list(
      value, 1023, fmt::format("--devices must be a comma-separated list of GPU indices like 0,2,5; got '{}'", value));
  for (size_t i = 0; i < out.size(); ++i)
    if (std::find(out.begin(), out.begin() + static_cast<long>(i), out[i]) != out.begin() + static_cast<long>(i))
      usage_error(fmt::format("--devices lists GPU {} twice in '{}'; give each GPU once", out[i], value));
  return out;
}

std::set<int> parse_rank_filter(const std::string& value) {
  auto ranks = parse_number_list(value, 100000,
                                 fmt::format("--local-ranks-filter must be local ranks like 0,1; got '{}'", value));
  return {ranks.begin(), ranks.end()};
}

double parse_shutdown_timeout(const std::string& value) {
  auto seconds = parse_seconds(value, SecondsFloor::kNonNegative);
  if (!seconds) usage_error(fmt::format("--shutdown-timeout must be a number of seconds >= 0, got '{}'", value));
  return *seconds;
}

double parse_hang_timeout(const std::string& value) {
  if (trim(value) == "auto") return kHangTimeoutAuto;
  auto seconds = parse_seconds(value, SecondsFloor::kNonNegative);
  if (!seconds || (*seconds > 0 && *seconds < 1))
    usage_error(fmt::format("--hang-timeout must be 0 (off), auto, or a number of seconds >= 1, got '{}'", value));
  return *seconds;
}

double parse_straggler_threshold(const std::string& value) {
  const std::string v = trim(value);
  char* end = nullptr;
  const double factor = v.empty() ? -1 : std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(factor) || (factor != 0 && factor <= 1))
    usage_error(fmt::format("--straggler-threshold must be 0 (off) or a factor above 1 (e.g. 2), got '{}'", value));
  return factor;
}

double parse_persist_interval(const std::string& value) {
  auto seconds = parse_seconds(value, SecondsFloor::kNonNegative);
  if (!seconds)
    usage_error(
        fmt::format("--snapshot-persist-interval must be a number of seconds >= 0 (0: only on a failure, at the end "
                    "and on a stop), got '{}'",
                    value));
  return *seconds;
}

std::vector<int> parse_signal_list(const std::string& value) {
  std::vector<int> out;
  for (const auto& item : split(trim(value), ',')) {
    int n = signal_number(trim(item));
    if (n < 0 || n == SIGKILL || n == SIGSTOP)
      usage_error(
          fmt::format("--signals-to-handle: '{}' is not a signal that can be handled; use "
                      "names like SIGTERM,SIGUSR1",
                      trim(item)));
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return out;
}

std::vector<std::string> parse_module_list(const std::string& flag, const std::string& value) {
  std::vector<std::string> out;
  for (const auto& item : split(value, ',')) {
    const std::string name = trim(item);
    bool ok = !name.empty() && name.front() != '.' && name.back() != '.' && name.find("..") == std::string::npos;
    for (size_t i = 0; ok && i < name.size(); ++i) {
      const char c = name[i];
      const bool start = i == 0 || name[i - 1] == '.';
      ok = c == '.' || c == '_' || std::isalpha(static_cast<unsigned char>(c)) ||
           (!start && std::isdigit(static_cast<unsigned char>(c)));
    }
    if (!ok)
      usage_error(
          fmt::format("{} '{}': '{}' is not a Python module name; give names such as numpy,torch.nn "
                      "separated by commas",
                      flag, value, name));
    out.push_back(name);
  }
  return out;
}

}  // namespace ddp::launch::cli
