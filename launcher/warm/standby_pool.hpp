// StandbyPool: at most one pre-warmed standby process per local rank (warm restarts,
// docs/warm-restarts.md), kept on the supervisor's io_context. A standby is started with
// its worker slot's spec (executable, environment; the bootstrap's argv for Python) in its
// own session with PR_SET_PDEATHSIG and under the orphan watchdog, like a worker (once a
// Python script's worker passed its standby point, its standbys are sent a prepare frame: they
// run it up to the point); it reports readiness over its channel and blocks there until
// adopt() hands it a worker's identity,
// when it becomes that worker (same pid: the pool's os::ChildSet releases it to the
// Supervisor's). The standbys are children of that set, started through the node's
// ChildRegistry; one that dies is reaped on SIGCHLD (its exit handler) and replaced, until too
// many die before they are ready (then the pool gives up, once, with the standby's output).
// Never a worker: no report, no outcome. The destructor SIGKILLs and reaps every standby.
// Single-threaded (the loop's thread); adopt() blocks at most kHandoffTimeout.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "launcher/contain/containment.hpp"
#include "launcher/os/child_set.hpp"
#include "launcher/os/watchdog.hpp"
#include "launcher/report/event_log.hpp"
#include "launcher/warm/standby_plan.hpp"
#include "launcher/worker/worker_launch.hpp"

namespace ddp::launch::warm {

class StandbyPool {
 public:
  static constexpr std::chrono::milliseconds kHandoffTimeout{10000};

  // containment (may be null): the standbys join the job's (its standbys' cgroup, its token).
  // events (may be null): where the pool logs; borrowed.
  // children: the node's registry, which the standbys start through.
  StandbyPool(boost::asio::io_context& io, os::ChildRegistry& children, os::Watchdog& watchdog, StandbyPlan plan,
              contain::Containment* containment = nullptr, report::EventLog* events = nullptr);
  ~StandbyPool();
  StandbyPool(const StandbyPool&) = delete;
  StandbyPool& operator=(const StandbyPool&) = delete;

  // Whether the next attempt wants standbys kept (a restart is left to take over): the
  // Supervisor kills the ones it did not adopt once its workers started, and keeps none.
  void set_wanted(bool wanted) { wanted_ = wanted; }
  bool wanted() const { return wanted_; }

  // One standby per launch's local rank, started from that launch's spec; a standby that
  // can no longer become that slot's worker is replaced. Nothing once the pool gave up.
  void fill(const std::vector<worker::WorkerLaunch>& launches);
  // Hands `launch` (its spawn's argv, env, stdin/stdout/stderr fds) to its local rank's
  // standby: the pid the worker now has, or nullopt (no usable standby: start it cold).
  std::optional<pid_t> adopt(const worker::WorkerLaunch& launch);
  // A worker passed the script's standby point (ddp_standby.point()): from now on every Python
  // standby is prepared (runs the script up to the point; ready there), those kept already too.
  void use_standby_point();
  bool using_standby_point() const { return standby_point_; }
  // Reaps the standbys that exited now (as SIGCHLD does); each is replaced once its output is
  // read (events, the give-up notice).
  void reap() { children_.reap(); }
  // Kills every standby (no restart left to use them for).
  void clear();

  size_t size() const { return standbys_.size(); }
  size_t ready_count() const;

 private:
  struct Standby;
  struct Slot {  // what a local rank's standby is started from (the latest fill)
    std::string executable;
    std::vector<std::string> argv;
    std::vector<std::string> env;
  };
  void start(int local_rank, const Slot& slot);
  void prepare(const std::shared_ptr<Standby>& s);
  void read_ready(std::weak_ptr<Standby> weak);
  os::ChildEvents events(const std::shared_ptr<Standby>& s);
  void on_exit(const std::shared_ptr<Standby>& s, const os::ExitStatus& status);
  void after_exit(const Standby& s, const os::ExitStatus& status);
  void kill(Standby& s);
  void log(const char* state, const Standby& s, int rank = -1);
  void log_exit(const Standby& s, const os::ExitStatus& status);

  boost::asio::io_context& io_;
  os::Watchdog& watchdog_;
  contain::Containment* containment_;
  StandbyPlan plan_;
  report::EventLog* events_ = nullptr;
  bool wanted_ = false;
  bool standby_point_ = false;
  StandbyRetries retries_;
  std::map<int, std::shared_ptr<Standby>> standbys_;  // by local rank
  std::map<int, Slot> slots_;                         // by local rank; empty after clear()
  os::UniqueFd dev_null_;                             // stdin of a worker that reads none
  os::ChildSet children_;                             // the standbys (a standby adopted is released)
};

}  // namespace ddp::launch::warm
