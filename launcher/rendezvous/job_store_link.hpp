// The job's store as one launcher sees it: the agent store (agent_store.hpp: hosted by the
// leader, joined by the others) or the job's keys in an etcd cluster that nobody hosts
// (etcd_link.hpp). connect_job_store picks by --rdzv-backend and blocks until connected (up
// to the join timeout, or until stop_requested() says so, asked at least every 200 ms); it
// throws LaunchError (123/121: the leader cannot listen; 121: bad etcd settings) or
// store::StoreError (cannot reach it, or stopped). Not thread-safe; open_waiter's
// waiter belongs to the thread that uses it.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "launcher/base/host_port.hpp"
#include "launcher/rendezvous/abort_wait_thread.hpp"
#include "launcher/rendezvous/rendezvous_rounds.hpp"
#include "launcher/store/server.hpp"
#include "launcher/store/store.hpp"

namespace ddp::launch::rendezvous {

struct JobStoreLink {
  HostPort endpoint;    // where every node reaches the store (etcd: its first member)
  bool leader = false;  // this launcher hosts the agent store
  // etcd: nobody hosts; every node checks its peers, and each round elects its leader.
  bool leaderless = false;
  std::string name;                            // this launcher's liveness name at the store (host:pid)
  std::string address;                         // the store, for messages ("host:port", "etcd at h1:p1, h2:p2")
  std::unique_ptr<store::StoreServer> server;  // the leader's agent store
  std::unique_ptr<store::Store> connection;    // agent store: this launcher's client (etcd: none)
  std::unique_ptr<store::Store> job;           // the run's keys ("ddp-launch/<run id>/..."; etcd: the EtcdStore)
  store::Store* root = nullptr;                // the unprefixed store, where the kDroppedPrefix keys are read
  std::function<void()> close;                 // leaves the store gracefully
  // A second connection for the abort wait thread: a KeyWaiter on the job's keys that the
  // store never reports lost (throws store::StoreError).
  std::function<std::unique_ptr<KeyWaiter>()> open_waiter;
};

// Asked while a store is waited for: true ends the wait (a stop signal).
using StopRequested = std::function<bool()>;

JobStoreLink connect_job_store(const MultiNodeSpec& spec, const std::string& run_id,
                               const StopRequested& stop_requested);

}  // namespace ddp::launch::rendezvous
