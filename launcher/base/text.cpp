#include "launcher/base/text.hpp"

#include <stdexcept>

namespace ddp::launch {

std::vector<std::string> split(std::string_view s, char sep, EmptyItems empty) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t end = s.find(sep, start);
    std::string_view item = s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (!item.empty() || empty == EmptyItems::kKeep) out.emplace_back(item);
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

std::optional<std::pair<std::string, std::string>> split_once(std::string_view s, char sep) {
  size_t at = s.find(sep);
  if (at == std::string_view::npos) return std::nullopt;
  return std::pair{std::string(s.substr(0, at)), std::string(s.substr(at + 1))};
}

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
}

std::optional<long long> parse_natural(std::string_view s) {
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  return std::stoll(std::string(s));
}

std::optional<double> parse_seconds(const std::string& s, SecondsFloor floor) {
  double d = 0;
  try {
    size_t used = 0;
    d = std::stod(s, &used);
    if (used != s.size()) return std::nullopt;
  } catch (const std::exception&) {  // std::invalid_argument, std::out_of_range
    return std::nullopt;
  }
  bool ok = floor == SecondsFloor::kPositive ? d > 0 : d >= 0;  // false for NaN
  return ok ? std::optional<double>(d) : std::nullopt;
}

}  // namespace ddp::launch
