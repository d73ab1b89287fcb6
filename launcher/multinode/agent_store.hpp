// The agent store as one launcher sees it: the leader (static node 0, or the launcher that
// can bind --rdzv-endpoint in c10d mode) hosts it and connects to itself; every other
// launcher joins it as a client. connect_agent_store blocks until connected (up to the
// join timeout), prints where the store is, and throws LaunchError (123/121 when the
// leader cannot listen) or store::StoreError (cannot reach it). With --rdzv-backend=etcd
// nobody hosts: every launcher is a client of etcd (etcd_link.hpp). A connection that
// breaks is re-opened for up to heartbeat_timeout. open_abort_waiter opens a second
// connection for the abort watch (an etcd watch with etcd). Not thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "launcher/base/host_port.hpp"
#include "launcher/multinode/abort_wait_thread.hpp"
#include "launcher/multinode/multinode_agent.hpp"
#include "launcher/os/ports.hpp"
#include "launcher/store/prefix_store.hpp"
#include "launcher/store/server.hpp"
#include "launcher/store/tcp_client.hpp"

namespace ddp::launch::multinode {

struct AgentStoreLink {
  HostPort endpoint;    // where every node reaches the store
  bool leader = false;  // this launcher hosts it
  // etcd: nobody hosts; every node watches its peers, and each round elects its leader.
  bool leaderless = false;
  std::string name;                               // this launcher's liveness name at the store (host:pid)
  std::string address;                            // the store, for messages ("host:port", "etcd at h1:p1, h2:p2")
  std::unique_ptr<store::StoreServer> server;     // the leader's
  std::unique_ptr<store::TcpStoreClient> client;  // this launcher's connection (agent store)
  std::unique_ptr<store::Store> job;              // the run's keys ("ddp-launch/<run id>/...")
  store::Store* root = nullptr;                   // where the kDroppedPrefix keys are read
  std::function<void()> close;                    // leaves the store gracefully
  std::string job_prefix;                         // "ddp-launch/<run id>" (agent store)
  std::string client_host;                        // where client connected
  store::ClientOptions client_options;            // and how
  std::function<std::unique_ptr<KeyWaiter>()> open_waiter;  // etcd: its abort waiter
};

AgentStoreLink connect_agent_store(const MultiNodeSpec& spec, const std::string& run_id);

// A KeyWaiter on the job's keys over a connection of its own (nameless: the store never
// reports it dropped; it reconnects like the main one). Throws store::StoreError.
std::unique_ptr<KeyWaiter> open_abort_waiter(const AgentStoreLink& link);

}  // namespace ddp::launch::multinode
