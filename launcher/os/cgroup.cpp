// cgroupfs implementation of cgroup.hpp.
#include "launcher/os/cgroup.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "launcher/base/text.hpp"
#include "launcher/os/fd_io.hpp"

namespace ddp::launch::os {
namespace {

bool write_text(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int saved = errno;
  ::close(fd);
  errno = saved;
  return ok;
}

// The cgroups directly below dir.
std::vector<std::string> child_cgroups(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == ".." || e->d_type != DT_DIR) continue;
    out.push_back(dir + "/" + name);
  }
  ::closedir(d);
  return out;
}

// mountinfo escapes spaces and the like as \ooo.
std::string unescape_octal(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      out.push_back(static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8)));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

std::optional<std::string> cgroup2_mount(const std::string& mountinfo) {
  // "36 25 0:31 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw": the fifth field is
  // the mount point, the first after " - " the file system type.
  for (const std::string& line : split(mountinfo, '\n')) {
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream after(line.substr(dash + 3));
    std::string fstype;
    after >> fstype;
    if (fstype != "cgroup2") continue;
    std::istringstream before(line.substr(0, dash));
    std::string field;
    for (int i = 0; i < 5 && before >> field; ++i) {
    }
    if (!field.empty()) return unescape_octal(field);
  }
  return std::nullopt;
}

std::optional<std::string> cgroup2_path(const std::string& proc_self_cgroup) {
  for (const std::string& line : split(proc_self_cgroup, '\n'))
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  return std::nullopt;
}

OwnCgroup own_cgroup() {
  std::optional<std::string> mount = cgroup2_mount(read_text("/proc/self/mountinfo"));
  if (!mount) return {std::nullopt, "no cgroup v2 file system is mounted"};
  std::optional<std::string> path = cgroup2_path(read_text("/proc/self/cgroup"));
  if (!path) return {std::nullopt, "this process is in no cgroup v2 (/proc/self/cgroup has no 0:: line)"};
  std::string dir = *mount + (*path == "/" ? "" : *path);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)  // a cgroup namespace can hide the path: not here
    return {std::nullopt, "its cgroup " + *path + " is not under " + *mount};
  return {dir, ""};
}

int make_cgroup(const std::string& dir) { return ::mkdir(dir.c_str(), 0755) == 0 ? 0 : errno; }

UniqueFd open_cgroup(const std::string& dir) {
  return UniqueFd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

std::vector<pid_t> cgroup_pids(const std::string& dir) {
  std::vector<pid_t> pids;
  std::istringstream in(read_text(dir + "/cgroup.procs"));
  for (long pid; in >> pid;) pids.push_back(static_cast<pid_t>(pid));
  for (const std::string& child : child_cgroups(dir))
    for (pid_t pid : cgroup_pids(child)) pids.push_back(pid);
  return pids;
}

bool kill_cgroup(const std::string& dir) { return write_text(dir + "/cgroup.kill", "1"); }

bool cgroup_kill_supported(const std::string& dir) { return ::access((dir + "/cgroup.kill").c_str(), W_OK) == 0; }

bool remove_cgroup_tree(const std::string& dir) {
  bool ok = true;
  for (const std::string& child : child_cgroups(dir)) ok = remove_cgroup_tree(child) && ok;
  if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) ok = false;
  return ok;
}

}  // namespace ddp::launch::os
