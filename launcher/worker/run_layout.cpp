#include "launcher/worker/run_layout.hpp"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"

namespace ddp::launch {
namespace fs = std::filesystem;

namespace {

std::string make_unique_dir(const std::string& pattern_prefix) {
  std::string pattern = pattern_prefix + "XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data()))
    throw LaunchError(exit_code::kIoError, fmt::format("cannot create the log directory {}: {}; "
                                                       "check that --log-dir or TMPDIR is writable",
                                                       pattern, std::strerror(errno)));
  return buf.data();
}

bool any_stream(const StreamSelection& s) {
  if (s.all != 0) return true;
  for (const auto& [rank, bits] : s.per_rank)
    if (bits != 0) return true;
  return false;
}

}  // namespace

RunLayout::RunLayout(const LaunchOptions& o, const Environment& env, const std::string& run_id) {
  if (o.log_dir == "/dev/null") return;
  if (!o.log_dir.empty()) {
    std::error_code ec;
    fs::create_directories(o.log_dir, ec);
    if (ec)
      throw LaunchError(exit_code::kIoError, fmt::format("cannot create --log-dir {}: {}; give a "
                                                         "writable directory", o.log_dir, ec.message()));
    run_dir_ = make_unique_dir((fs::path(o.log_dir) / (run_id + "_")).string());
    keep_all_logs_ = true;
    return;
  }
  std::string tmp = lookup(env, "TMPDIR").value_or("/tmp");
  if (tmp.empty()) tmp = "/tmp";
  run_dir_ = make_unique_dir((fs::path(tmp) / "ddp-launch-").string());
  temporary_ = !any_stream(o.redirects) && !any_stream(o.tee);
}

RunLayout::~RunLayout() {
  if (!temporary_ || run_dir_.empty()) return;
  std::error_code ec;
  fs::remove_all(run_dir_, ec);
}

std::string RunLayout::worker_dir(int restart_count, int local_rank) const {
  if (run_dir_.empty()) return "";
  fs::path dir = fs::path(run_dir_) / fmt::format("attempt_{}", restart_count) / std::to_string(local_rank);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw LaunchError(exit_code::kIoError,
                      fmt::format("cannot create {}: {}; check free space and permissions there",
                                  dir.string(), ec.message()));
  return dir.string();
}

}  // namespace ddp::launch
