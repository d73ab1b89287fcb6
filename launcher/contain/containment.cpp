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

}  // namespace

Containment::Containment(cli::ContainmentRequest request) : token_entry_(make_token()) {
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
    workers_procs_.reset();
    standbys_procs_.reset();
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
  for (const char* leaf : {"workers", "standbys"})
    if (int err = os::make_cgroup(job + "/" + leaf))
      return fail(fmt::format("cannot create the cgroup {}/{}: {}", job, leaf, std::strerror(err)));
  workers_procs_ = os::open_cgroup_procs(job + "/workers");
  standbys_procs_ = os::open_cgroup_procs(job + "/standbys");
  if (!workers_procs_.valid() || !standbys_procs_.valid())
    return fail(fmt::format("cannot open {}/workers/cgroup.procs: {}", job, std::strerror(errno)));
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
  spec.cgroup_procs_fd = workers_procs_.get();
}

void Containment::prepare_standby(os::SpawnSpec& spec) const {
  spec.env.push_back(token_entry_);
  spec.cgroup_procs_fd = standbys_procs_.get();
}

void Containment::adopt_standby(pid_t pid) const {
  if (uses_cgroup()) os::move_to_cgroup(job_cgroup_ + "/workers", pid);
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
  for (const os::ProcessEntry& p : os::descendants(table, ::getpid(), os::forked_children())) ours.insert(p.pid);
  if (uses_cgroup())
    for (pid_t pid : os::cgroup_pids(job_cgroup_ + "/workers")) ours.insert(pid);
  std::vector<Leftover> out;
  for (const os::ProcessEntry& p : table)
    if (ours.count(p.pid) && !p.zombie() && p.pid != ::getpid()) out.push_back(describe_process(p));
  return out;
}

void Containment::kill_workers_cgroup() const {
  if (uses_cgroup()) os::kill_cgroup(job_cgroup_ + "/workers");
}

// The job's end: nothing of it may stay (a standby's descendant included); no grace now, the
// attempts' sweeps gave theirs.
void Containment::end_everything() {
  const auto deadline = std::chrono::steady_clock::now() + kEndWait;
  for (;;) {
    os::reap_adopted_orphans();
    if (uses_cgroup()) os::kill_cgroup(job_cgroup_);
    const std::vector<os::ProcessEntry> left =
        os::descendants(os::read_process_table(), ::getpid(), os::forked_children());
    bool alive = false;
    for (const os::ProcessEntry& p : left)
      if (!p.zombie()) {
        os::signal_process(p.pid, SIGKILL);
        alive = true;
      }
    const bool cgroup_left = uses_cgroup() && !os::cgroup_pids(job_cgroup_).empty();
    if ((!alive && !cgroup_left) || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  os::reap_adopted_orphans();
  if (uses_cgroup()) os::remove_cgroup_tree(job_cgroup_);
}

}  // namespace ddp::launch::contain
