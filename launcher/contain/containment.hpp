// Containment: what keeps every process a job's workers start inside the job and ends it with
// the job. Always: the launcher is the subreaper of its descendants (a process that calls
// setsid or double-forks still comes back to it, never to init), and every worker's and
// standby's environment carries the job's token (kTokenVariable), by which the watchdog finds
// them after a SIGKILL of the launcher. Where the machine allows it (cgroup v2 with cgroup.kill,
// and a folder this user may create below its own cgroup: root, a delegated subtree), each
// attempt's cold workers are born in the cgroup <own>/ddp-launch-<pid>/attempt-<n> and each
// standby in .../standby-<k> (never moved: a migration costs an RCU grace period; never reused
// after a cgroup.kill: a child cloned into a killed cgroup is killed too). An attempt's leftovers
// are the processes still running once its workers are gone: in its cgroups (its own and its
// adopted standbys'), and below the launcher outside every child it forked itself (the
// registry's: standbys, the watchdog). Owned by the node's session; loop thread only.
#pragma once

#include <sys/types.h>

#include <map>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "launcher/cli/options.hpp"
#include "launcher/os/child_registry.hpp"
#include "launcher/os/process.hpp"
#include "launcher/os/process_table.hpp"
#include "launcher/os/watchdog.hpp"

namespace ddp::launch::contain {

constexpr const char* kTokenVariable = "DDP_LAUNCH_JOB_TOKEN";

// A process of the job found running where none should be.
struct Leftover {
  os::ProcessEntry process;
  std::optional<int> rank;  // RANK in its environment, when that carries the job's token
  std::string command;      // its command line, shortened; its name if that is empty
};

class Containment {
 public:
  // Becomes the subreaper of what the children of `children` start; with kAuto or kCgroup,
  // makes the job's cgroups. Throws LaunchError(kUsage) when kCgroup was asked for and this
  // machine cannot give one (says why).
  Containment(cli::ContainmentRequest request, os::ChildRegistry& children);
  // Ends whatever of the job is left (SIGKILL; standbys' descendants too), waits briefly for
  // it to go, and removes the cgroups.
  ~Containment();
  Containment(const Containment&) = delete;
  Containment& operator=(const Containment&) = delete;

  bool uses_cgroup() const { return !job_cgroup_.empty(); }
  const char* mode_name() const { return uses_cgroup() ? "cgroup" : "subreaper"; }
  // The start line: the mode, where, and why not a cgroup when there is none.
  std::string describe() const;
  os::WatchdogSweep watchdog_sweep() const { return {token_entry_, job_cgroup_}; }

  // An attempt begins (its cgroup) and ends (its cgroups go, once its sweep is done).
  void begin_attempt();
  void end_attempt();
  // A worker (or a standby) about to be forked: the token in its environment, and its cgroup.
  void prepare_worker(os::SpawnSpec& spec) const;
  void prepare_standby(os::SpawnSpec& spec);
  // The standby just prepared runs as pid; a standby became a worker of this attempt.
  void standby_started(pid_t pid);
  void adopt_standby(pid_t pid);

  // The attempt's processes still running (zombies excluded), found now.
  std::vector<Leftover> leftovers() const;
  // SIGKILL to the attempt's cgroups as a whole (nothing without a cgroup).
  void kill_attempt_cgroups() const;
  // Reaps the orphans the launcher adopted that have ended (no one else waits for them).
  void reap_orphans() const { children_.reap_orphans(); }
  // A worker outlived its SIGKILL (asleep in the kernel) and was given up: no sweep and not the
  // job's end wait for it again (it was named once).
  void give_up(pid_t pid) { given_up_.insert(pid); }

 private:
  void try_cgroup(bool required);
  void end_everything();
  Leftover describe_process(const os::ProcessEntry& p) const;

  os::ChildRegistry& children_;
  std::string token_entry_;  // "DDP_LAUNCH_JOB_TOKEN=..."
  std::string job_cgroup_;   // "" without a cgroup
  std::string no_cgroup_why_;
  unsigned attempts_ = 0, standbys_ = 0;          // cgroups made so far, for their names
  os::UniqueFd attempt_fd_, standby_fd_;          // the folders the next worker, standby starts in
  std::string standby_dir_;                       // the one standby_fd_ opens
  std::vector<std::string> attempt_cgroups_;      // this attempt's, its adopted standbys' included
  std::map<pid_t, std::string> standby_cgroups_;  // each standby's, until adopted
  std::set<pid_t> given_up_;                      // workers that outlived SIGKILL
};

}  // namespace ddp::launch::contain
