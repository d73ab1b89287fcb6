#include "checkpoint_files.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include <fmt/format.h>

namespace fs = std::filesystem;

namespace ddp::train {
namespace {
constexpr const char* kPrefix = "ckpt_";
constexpr const char* kSuffix = ".pt";
}  // namespace

std::string checkpoint_name(int64_t step) { return fmt::format("{}{:09d}{}", kPrefix, step, kSuffix); }

std::optional<int64_t> checkpoint_step(const std::string& name) {
  const std::string prefix = kPrefix, suffix = kSuffix;
  if (name.size() <= prefix.size() + suffix.size()) return std::nullopt;
  if (name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  if (name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return std::nullopt;
  const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); })) {
    return std::nullopt;
  }
  return std::stoll(digits);
}

std::vector<std::string> list_checkpoints(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    if (auto step = checkpoint_step(it->path().filename().string())) found.emplace_back(*step, it->path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> paths;
  for (auto& entry : found) paths.push_back(std::move(entry.second));
  return paths;
}

std::optional<std::string> latest_checkpoint(const std::string& dir) {
  auto paths = list_checkpoints(dir);
  if (paths.empty()) return std::nullopt;
  return paths.back();
}

std::vector<std::string> remove_stale_checkpoints(const std::string& dir, int keep) {
  auto paths = list_checkpoints(dir);
  std::vector<std::string> removed;
  const std::size_t keep_count = static_cast<std::size_t>(std::max(1, keep));
  for (std::size_t i = 0; i + keep_count < paths.size(); ++i) {
    std::error_code ec;
    if (fs::remove(paths[i], ec)) removed.push_back(paths[i]);
  }
  return removed;
}

}  // namespace ddp::train
