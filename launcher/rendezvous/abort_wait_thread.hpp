// AbortWaitThread: a round's abort record as an event, not a heartbeat-tick discovery. A
// thread of its own blocks in a wait (KeyWaiter) on the current round's abort key and, when
// the key appears, calls `wake` (the agent passes StopSignals::wake: the round check then
// reads the record at once). The seam for any backend: a KeyWaiter (the agent store's
// server-side WAIT on a dedicated connection, agent_store.hpp; an etcd watch, etcd_link.hpp).
// Trouble in the waiter (a lost store) ends the thread quietly: the round check reports it.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "launcher/store/store.hpp"

namespace ddp::launch::rendezvous {

// Blocks until `key` exists (true) or `slice` passes (false); throws store::StoreError to
// give up. interrupt() is called from another thread and must end a blocked wait soon.
class KeyWaiter {
 public:
  virtual ~KeyWaiter() = default;
  virtual bool wait_for(const std::string& key, store::Duration slice) = 0;
  virtual void interrupt() = 0;
};

class AbortWaitThread {
 public:
  AbortWaitThread(std::unique_ptr<KeyWaiter> waiter, std::function<void()> wake);
  ~AbortWaitThread();  // interrupts the waiter and joins the thread
  AbortWaitThread(const AbortWaitThread&) = delete;
  AbortWaitThread& operator=(const AbortWaitThread&) = delete;

  // From now on, wait for round `round`'s abort key (JobKeys::abort, job-relative).
  void wait_for_round(int round);

 private:
  void loop();

  std::unique_ptr<KeyWaiter> waiter_;
  std::function<void()> wake_;
  std::mutex mu_;
  std::condition_variable cv_;
  int round_ = -1;  // the round to wait for (-1: none yet)
  int fired_ = -1;  // the last round whose key was seen
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace ddp::launch::rendezvous
