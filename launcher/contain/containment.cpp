// Containment's implementation: the subreaper bit, the token, the cgroup folders, and the
// leftovers found in the cgroup and the process tree.
#include "launcher/contain/containment.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <set>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/os/cgroup.hpp"

namespace ddp::launch::contain {
namespace {

constexpr std::chrono::seconds kEndWait{5};  // at the job's end, for SIGKILLed processes to go

// Unique on this machine for good: this launcher's pid, its start time, and 64 random bits.
std::string make_token() {
  std::random_device rd;
  const uint64_t random = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  const std::optional<os::ProcessEntry> self = os::read_process(::getpid());
  return fmt::format("{}={}-{}-{:016x}", kTokenVariable, ::getpid(), self ? self->start_ticks : 0, random);
}

std::optional<int> parse_rank(const std::optional<std::string>& text) {
  if (!text || text->empty() || text->size() > 9) return std::nullopt;
  if (!std::all_of(text->begin(), text->end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  return std::stoi(*text);
}

// A new cgroup below the job's and its folder's fd; "" and an invalid fd if it cannot be made
// (the processes are then contained by the subreaper alone).
std::pair<std::string, os::UniqueFd> new_cgroup(const std::string& job, const std::string& name) {
  const std::string dir = job + "/" + name;
  if (os::make_cgroup(dir) != 0) return {"", os::UniqueFd()};
  return {dir, os::open_cgroup(dir)};
}

}  // namespace

Containment::Containment(cli::ContainmentRequest request, os::ChildRegistry& children)
    : children_(children), token_entry_(make_token()) {
  if (!os::become_subreaper())
    no_cgroup_why_ = fmt::format("cannot become the subreaper: {}", std::strerror(errno));  // kept for describe()
  if (request == cli::ContainmentRequest::kSubreaper) {
    no_cgroup_why_ = "--containment=subreaper";
    return;
  }
  try_cgroup(request == cli::ContainmentRequest::kCgroup);
}

void Containment::try_cgroup(bool required) {
  auto fail = [&](const std::string& why) {
    if (!job_cgroup_.empty()) os::remove_cgroup_tree(job_cgroup_);
    job_cgroup_.clear();
    no_cgroup_why_ = why;
    if (required)
      throw LaunchError(exit_code::kUsage,
                        fmt::format("--containment=cgroup: {}; use --containment=auto (a cgroup where the machine "
                                    "allows one) or --containment=subreaper",
                                    why));
  };
  const os::OwnCgroup own = os::own_cgroup();
  if (!own.dir) return fail(own.why);
  const std::string job = fmt::format("{}/ddp-launch-{}", *own.dir, ::getpid());
  os::remove_cgroup_tree(job);  // a stale one of an earlier launcher with this pid (empty, or this fails)
  if (int err = os::make_cgroup(job))
    return fail(fmt::format("cannot create the cgroup {}: {}", job, std::strerror(err)));
  job_cgroup_ = job;
  if (!os::cgroup_kill_supported(job)) return fail(fmt::format("{} has no cgroup.kill (Linux >= 5.14)", job));
  const std::string probe = job + "/probe";  // a cgroup below it can be made and opened
  if (int err = os::make_cgroup(probe))
    return fail(fmt::format("cannot create the cgroup {}: {}", probe, std::strerror(err)));
  const bool opened = os::open_cgroup(probe).valid();
  os::remove_cgroup_tree(probe);
  if (!opened) return fail(fmt::format("cannot open the cgroup {}: {}", probe, std::strerror(errno)));
}

void Containment::begin_attempt() {
  end_attempt();
  if (!uses_cgroup()) return;
  auto [dir, fd] = new_cgroup(job_cgroup_, fmt::format("attempt-{}", attempts_++));
  attempt_fd_ = std::move(fd);
  if (!dir.empty()) attempt_cgroups_.push_back(dir);
}

void Containment::end_attempt() {
  attempt_fd_.reset();
  for (const std::string& dir : attempt_cgroups_) os::remove_cgroup_tree(dir);  // empty now (else: at the end)
  attempt_cgroups_.clear();
}

Containment::~Containment() { end_everything(); }

std::string Containment::describe() const {
  if (uses_cgroup())
    return fmt::format("containment: cgroup {} and subreaper: every process the workers start ends with its attempt",
                       job_cgroup_);
  return fmt::format(
      "containment: subreaper ({}): every process the workers start ends with its attempt; after a SIGKILL of "
      "ddp-launch, those that kept {} in their environment",
      no_cgroup_why_, kTokenVariable);
}

void Containment::prepare_worker(os::SpawnSpec& spec) const {
  spec.env.push_back(token_entry_);
  spec.cgroup_fd = attempt_fd_.get();
}

void Containment::prepare_standby(os::SpawnSpec& spec) {
  spec.env.push_back(token_entry_);
  if (!uses_cgroup()) return;
  std::tie(standby_dir_, standby_fd_) = new_cgroup(job_cgroup_, fmt::format("standby-{}", standbys_++));
  spec.cgroup_fd = standby_fd_.get();
}

void Containment::standby_started(pid_t pid) {
  if (!standby_dir_.empty()) standby_cgroups_[pid] = standby_dir_;
  standby_dir_.clear();
  standby_fd_.reset();
}

void Containment::adopt_standby(pid_t pid) {
  auto it = standby_cgroups_.find(pid);
  if (it == standby_cgroups_.end()) return;
  attempt_cgroups_.push_back(it->second);
  standby_cgroups_.erase(it);
}

Leftover Containment::describe_process(const os::ProcessEntry& p) const {
  Leftover l{p, std::nullopt, os::command_line(p.pid)};
  if (l.command.empty()) l.command = p.comm;
  const std::string token = token_entry_.substr(token_entry_.find('=') + 1);
  if (os::environ_value(p.pid, kTokenVariable) == token) l.rank = parse_rank(os::environ_value(p.pid, "RANK"));
  return l;
}

std::vector<Leftover> Containment::leftovers() const {
  const std::vector<os::ProcessEntry> table = os::read_process_table();
  std::set<pid_t> ours;  // below the launcher, outside the children it forked (pruned with theirs)
  for (const os::ProcessEntry& p : os::descendants(table, ::getpid(), children_.pids())) ours.insert(p.pid);
  for (const std::string& dir : attempt_cgroups_)
    for (pid_t pid : os::cgroup_pids(dir)) ours.insert(pid);
  std::vector<Leftover> out;
  for (const os::ProcessEntry& p : table)
    if (ours.count(p.pid) && !p.zombie() && p.pid != ::getpid() && !given_up_.count(p.pid))
      out.push_back(describe_process(p));
  return out;
}

void Containment::kill_attempt_cgroups() const {
  for (const std::string& dir : attempt_cgroups_)
    if (!os::cgroup_pids(dir).empty()) os::kill_cgroup(dir);
}

// The job's end: nothing of it may stay (a standby's descendant included); no grace now, the
// attempts' sweeps gave theirs.
void Containment::end_everything() {
  const auto deadline = std::chrono::steady_clock::now() + kEndWait;
  for (;;) {
    children_.reap_orphans();
    // cgroup.kill waits for an RCU grace period (tens of ms), even on an empty cgroup: only
    // when something is in it.
    bool cgroup_left = false;
    if (uses_cgroup())
      for (pid_t pid : os::cgroup_pids(job_cgroup_)) cgroup_left = cgroup_left || !given_up_.count(pid);
    if (cgroup_left) os::kill_cgroup(job_cgroup_);
    const std::vector<os::ProcessEntry> left = os::descendants(os::read_process_table(), ::getpid(), children_.pids());
    bool alive = false;
    for (const os::ProcessEntry& p : left)
      if (!p.zombie() && !given_up_.count(p.pid)) {
        os::signal_process(p.pid, SIGKILL);
        alive = true;
      }
    if ((!alive && !cgroup_left) || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  children_.reap_orphans();
  if (uses_cgroup()) os::remove_cgroup_tree(job_cgroup_);
}

}  // namespace ddp::launch::contain
