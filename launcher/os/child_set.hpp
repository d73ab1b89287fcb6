// ChildSet: a group of child processes on a borrowed single-threaded Asio loop (the
// Supervisor's workers, the standby pool's standbys, a many-host launch's ssh sessions and
// agents, the ssh masters), started and reaped through the process's ChildRegistry
// (child_registry.hpp). Each child leads its own process group (process.hpp); its stdout and
// stderr are pipes the set makes and reads on the loop into the owner's ChildEvents; it is
// reaped on SIGCHLD (an Asio signal_set: nothing polls) and its end reported once, to its own
// exit handler. The stop escalation: begin_stop asks each running child to stop (a signal to its
// group, or the owner's way) and SIGKILLs the groups once a grace deadline passed; kill() does it
// at once (a second stop signal); drain_after stops reading the pipes a child's own children
// still hold. A child may be handed to another set (release; a standby becoming a worker). What
// a signal, an output or an exit means is the owner's. Not thread-safe (the loop's thread);
// blocks only in write_stdin and kill_and_reap.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "launcher/os/child_registry.hpp"
#include "launcher/os/process.hpp"

namespace ddp::launch::os {

// What the owner hears of one child; each may be empty. stream: 1 (stdout) or 2 (stderr).
struct ChildEvents {
  // After each read; chunk may be empty (the read that ended the stream).
  std::function<void(int stream, std::string_view chunk)> data;
  // The stream ended: EOF, a read error, or the set stopped reading it. Once per stream.
  std::function<void(int stream)> end;
  // The child was reaped (on SIGCHLD, or reap()): how it ended. Once; never for a child
  // released, abandoned, or reaped by kill_and_reap.
  std::function<void(const ExitStatus& status)> exited;
};

class ChildSet {
 public:
  using Duration = std::chrono::steady_clock::duration;

  // children: the process's registry, through which every child starts and is reaped. after_reap
  // (may be empty): after each SIGCHLD's reaping. The SIGCHLD wait starts now.
  ChildSet(boost::asio::io_context& loop, ChildRegistry& children, std::function<void()> after_reap = {});
  ~ChildSet();  // kill_and_reap()
  ChildSet(const ChildSet&) = delete;
  ChildSet& operator=(const ChildSet&) = delete;

  // A new child, not started yet: its stdout and stderr pipes, whose write ends spec now names
  // (with_stdin: a stdin pipe too, as spec.stdin_fd). Returns its id: 0, 1, ... until clear().
  size_t add(SpawnSpec& spec, ChildEvents events, bool with_stdin = false);
  // Child id runs as pid (forked, or adopted): the set's copies of the child's pipe ends close.
  void started(size_t id, pid_t pid);
  // Starts child id from spec (add's), as ChildRegistry::spawn does; returns its pid. Throws
  // LaunchError as that does (then the child never ran: abandoned).
  pid_t spawn(size_t id, const SpawnSpec& spec);
  // The same in two steps, so that many children exec in parallel (ChildRegistry::start and
  // confirm): start forks and returns at once; confirm blocks until that child's exec succeeded,
  // and throws LaunchError when it failed (then the child is reaped and abandoned).
  StartedWorker start(size_t id, const SpawnSpec& spec);
  void confirm(size_t id, StartedWorker& started);
  // Child id never ran, or was reaped elsewhere (a failed exec): its pipes close unread, and it
  // is never signalled or waited for.
  void abandon(size_t id);
  // Child id now belongs to another owner (a standby adopted as a worker, same pid): its pipes
  // close unread and this set never signals or reaps it again; it stays registered.
  void release(size_t id);
  // Starts reading every started child's output on the loop (once per child).
  void read_output();
  // Reaps every child that has exited (as each SIGCHLD does), calling exited for each.
  void reap();

  size_t size() const { return children_.size(); }
  pid_t pid(size_t id) const;     // -1 before started() and after abandon() or release()
  bool running(size_t id) const;  // started and not reaped yet
  size_t running_count() const;
  bool output_open() const;  // some child's pipe may still deliver data
  bool output_open(size_t id) const;
  uint64_t bytes_read(size_t id) const;               // both pipes: a sign of life
  std::optional<ExitStatus> status(size_t id) const;  // once reaped

  // Child id's stdin pipe (add's with_stdin): write_stdin blocks until data is written;
  // close_stdin writes `last` without blocking (what does not fit is dropped), then closes it.
  void write_stdin(size_t id, std::string_view data);
  void close_stdin(size_t id, std::string_view last = {});

  // signo to each running child's group (a forwarded signal).
  void signal_running(int signo);
  // ... and to the groups of reaped children whose pipes something still holds (their own
  // children). A reaped child with both pipes closed is skipped: its group is most likely
  // empty, and its number could by now belong to an unrelated process group.
  void signal_groups(int signo);
  // signo to every started child's group, reaped or not (stragglers in the groups at the end).
  void signal_every_group(int signo);

  // The stop: signo to the groups (signal_groups), or ask(id) for each running child; then,
  // after grace, if a child still runs, late(running) hears of it and the groups get SIGKILL.
  // Called again, it asks again and the grace starts over; while draining, it only asks.
  void begin_stop(int signo, Duration grace, std::function<void(size_t running)> late);
  void begin_stop(const std::function<void(size_t id)>& ask, Duration grace, std::function<void(size_t running)> late);
  // SIGKILL to the groups now (signal_groups).
  void kill();
  // Every child has ended: after `drain`, stop reading the pipes (a lingering grandchild holds
  // one). Once until clear(); replaces the stop's deadline.
  void drain_after(Duration drain);
  // Stops reading child id's pipes now: what they hold already is delivered first (a process it
  // left behind may keep them open: not waited for); then `then` runs, on the loop.
  void close_output(size_t id, std::function<void()> then);

  // signo (SIGKILL unless said) to each running child's group, then waits for each (blocks: they
  // are ending); status() says how each ended. No exit handler runs.
  void kill_and_reap(int signo = SIGKILL);
  // Forgets every child (the owner reaped or killed them, and their output ended or was never
  // read): the next add is id 0, and a timer of the old set that fires later does nothing.
  void clear();

 private:
  struct Reader;
  struct Child;
  void wait_for_children();
  void read(Child& child, Reader& reader);
  void end(Child& child, Reader& reader);
  void drain_now(Child& child, Reader& reader);
  void arm_stop(Duration grace, std::function<void(size_t)> late);
  void arm_deadline(Duration after, std::function<void()> fire);

  boost::asio::io_context& loop_;
  ChildRegistry& registry_;
  std::function<void()> after_reap_;
  boost::asio::signal_set child_signals_;
  boost::asio::steady_timer deadline_;  // the stop's grace, or the drain
  std::vector<std::unique_ptr<Child>> children_;
  bool draining_ = false;
  unsigned generation_ = 0;  // bumped by clear(): a timer handler acts only on the set that armed it
};

}  // namespace ddp::launch::os
