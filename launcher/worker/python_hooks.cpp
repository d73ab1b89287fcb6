#include "launcher/worker/python_hooks.hpp"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "launcher/worker/output.hpp"

namespace ddp::launch::worker {
const char* exit_drain_source();  // python/ddp_exit_drain.py, embedded at build time

namespace {
namespace fs = std::filesystem;

constexpr std::string_view kPrefix = "ddp-launch-python-";  // then the owner's pid, '-', random

// Removes the folders of launchers that died without removing theirs (SIGKILL): this
// user's, named for a pid that no longer runs.
void sweep_stale(const std::string& tmp) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(tmp, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.compare(0, kPrefix.size(), kPrefix) != 0) continue;
    const long pid = std::strtol(name.c_str() + kPrefix.size(), nullptr, 10);
    struct stat st {};
    if (pid <= 0 || ::lstat(entry.path().c_str(), &st) != 0 || st.st_uid != ::geteuid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to judge)
    std::error_code ignored;
    fs::remove_all(entry.path(), ignored);
  }
}

// Owns the directory; only the process that made it removes it (a forked child that
// exits normally must not).
class HooksDir {
 public:
  explicit HooksDir(const cli::Environment& env) : owner_(::getpid()) {
    std::string tmp = cli::lookup(env, "TMPDIR").value_or("/tmp");
    if (tmp.empty()) tmp = "/tmp";
    sweep_stale(tmp);
    std::string pattern = (fs::path(tmp) / fmt::format("{}{}-XXXXXX", kPrefix, owner_)).string();
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) {
      skip(fmt::format("cannot create {}: {}", pattern, std::strerror(errno)));
      return;
    }
    dir_ = buf.data();
    const std::string file = dir_ + "/sitecustomize.py";
    std::ofstream out(file, std::ios::binary);
    out << exit_drain_source();
    out.close();
    if (!out) {
      skip(fmt::format("cannot write {}", file));
      remove();
    }
  }
  ~HooksDir() { remove(); }
  HooksDir(const HooksDir&) = delete;
  HooksDir& operator=(const HooksDir&) = delete;

  const std::string& dir() const { return dir_; }

 private:
  static void skip(const std::string& why) {
    launcher_notice(
        fmt::format("{}; Python workers run without the exit drain (a worker may abort at exit "
                    "under load); check that TMPDIR is writable",
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
