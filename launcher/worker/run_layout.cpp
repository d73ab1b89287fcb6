#include "launcher/worker/run_layout.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/os/temp_dir.hpp"

namespace ddp::launch::worker {
namespace fs = std::filesystem;

namespace {

std::string make_unique_dir(const std::string& prefix) {
  std::optional<std::string> dir = os::make_temp_dir(prefix);
  if (!dir)
    throw LaunchError(exit_code::kIoError, fmt::format("cannot create the log directory {}XXXXXX: {}; "
                                                       "check that --log-dir or TMPDIR is writable",
                                                       prefix, std::strerror(errno)));
  return *dir;
}

}  // namespace

RunLayout::RunLayout(const RunLayoutSpec& spec, const cli::Environment& env) {
  if (spec.log_dir == "/dev/null") return;
  if (!spec.log_dir.empty()) {
    std::error_code ec;
    fs::create_directories(spec.log_dir, ec);
    if (ec)
      throw LaunchError(exit_code::kIoError, fmt::format("cannot create --log-dir {}: {}; give a "
                                                         "writable directory",
                                                         spec.log_dir, ec.message()));
    run_dir_ = make_unique_dir((fs::path(spec.log_dir) / (spec.run_id + "_")).string());
    keep_all_logs_ = true;
    return;
  }
  run_dir_ = make_unique_dir((fs::path(cli::temp_root(env)) / "ddp-launch-").string());
  temporary_ = !spec.output_redirected;
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
    throw LaunchError(exit_code::kIoError, fmt::format("cannot create {}: {}; check free space and permissions there",
                                                       dir.string(), ec.message()));
  return dir.string();
}

}  // namespace ddp::launch::worker
