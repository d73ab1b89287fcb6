// cgroup v2 folders: where this process's own cgroup is (the cgroup2 mount in
// /proc/self/mountinfo joined with /proc/self/cgroup's "0::" path), and what the launcher does
// with the folders it makes below it: create, put a process in, list, kill as a whole
// (cgroup.kill, Linux >= 5.14), ask whether anything is left, remove. The parsers are pure;
// the rest are single file operations on cgroupfs, which do not block.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "launcher/os/process.hpp"

namespace ddp::launch::os {

// The cgroup2 mount point in a /proc/self/mountinfo text; nullopt if none. Pure.
std::optional<std::string> cgroup2_mount(const std::string& mountinfo);
// The unified hierarchy's path ("0::/a/b" -> "/a/b") in a /proc/self/cgroup text. Pure.
std::optional<std::string> cgroup2_path(const std::string& proc_self_cgroup);

// This process's cgroup v2 folder, or why there is none (no cgroup2 mount, no "0::" line).
struct OwnCgroup {
  std::optional<std::string> dir;
  std::string why;
};
OwnCgroup own_cgroup();

// Creates folder dir (a new cgroup); 0, or the errno (EACCES: not delegated to this user).
int make_cgroup(const std::string& dir);
// An O_DIRECTORY|O_CLOEXEC fd of dir, as SpawnSpec::cgroup_fd takes it. Invalid (errno set) if
// it cannot be opened.
UniqueFd open_cgroup(const std::string& dir);
// The processes in dir and every cgroup below it.
std::vector<pid_t> cgroup_pids(const std::string& dir);
// SIGKILL to every process in dir and below, at once (cgroup.kill); false if it cannot (errno).
bool kill_cgroup(const std::string& dir);
// Whether dir has cgroup.kill (Linux >= 5.14).
bool cgroup_kill_supported(const std::string& dir);
// Removes dir and the cgroups nested in it (deepest first); each must be empty of processes.
// False if one remains (errno says why: EBUSY while processes are still leaving).
bool remove_cgroup_tree(const std::string& dir);

}  // namespace ddp::launch::os
