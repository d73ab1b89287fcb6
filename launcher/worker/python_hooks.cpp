// The workers' Python hooks folder (sitecustomize.py, ddp_standby.py); see python_hooks.hpp.

#include "launcher/console/notice.hpp"
#include "launcher/os/shm_file.hpp"
#include "launcher/os/temp_dir.hpp"
#include "launcher/worker/python_hooks.hpp"
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <optional>
#include <utility>
#include <unistd.h>

namespace ddp::launch::worker {
const char* exit_drain_source();  // python/ddp_exit_drain.py, embedded at build time

namespace {
namespace fs = std::filesystem;

constexpr char kPrefix[] = "ddp-launch-python";  // then -PID-RANDOM, as os::sweep_orphaned_dirs reads it

// Owns the directory; only the process that made it removes it (a forked child that
// exits normally must not).
class HooksDir {
 public:
  explicit HooksDir(const cli::Environment& env) : owner_(::getpid()) {
    const std::string tmp = cli::temp_root(env);
    os::sweep_orphaned_dirs(tmp, kPrefix);  // those of launchers that were killed
    const std::string prefix = (fs::path(tmp) / fmt::format("{}-{}-", kPrefix, owner_)).string();
    std::optional<std::string> dir = os::make_temp_dir(prefix);
    if (!dir) {
      skip(fmt::format("cannot create {}XXXXXX: {}", prefix, std::strerror(errno)));
      return;
    }
    dir_ = *dir;
    for (const auto& [name, source] : {std::pair{"sitecustomize.py", exit_drain_source()},
                                       std::pair{"ddp_standby.py", standby_bootstrap_source()}}) {
      const std::string file = dir_ + "/" + name;
      std::ofstream out(file, std::ios::binary);
      out << source;
      out.close();
      if (!out) {
        skip(fmt::format("cannot write {}", file));
        remove();
        return;
      }
    }
  }
  ~HooksDir() { remove(); }
  HooksDir(const HooksDir&) = delete;
  HooksDir& operator=(const HooksDir&) = delete;

  const std::string& dir() const { return dir_; }

 private:
  static void skip(const std::string& why) {
    console::launcher_notice(
        fmt::format("{}; Python workers run without the exit drain (a worker may abort at exit "
                    "under load) and the launcher's ddp_standby; check that TMPDIR is writable",
                    why));
  }
  void remove() {
    if (dir_.empty() || ::getpid() != owner_) return;
    std::error_code ec;
    fs::remove_all(dir_, ec);
    dir_.clear();
  }

  pid_t owner_;
  std::string dir_;
};

}  // namespace

const std::string& python_hooks_dir(const cli::Environment& env) {
  static const HooksDir hooks(env);
  return hooks.dir();
}

}  // namespace ddp::launch::worker
