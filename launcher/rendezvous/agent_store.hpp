// The agent store (static and c10d rendezvous) as one launcher sees it: the leader (static
// node 0, or the launcher that can bind --rdzv-endpoint in c10d mode) hosts it and connects
// to itself; every other launcher joins it as a client. connect_agent_store blocks until
// connected (up to the join timeout), prints where the store is, and throws LaunchError
// (123/121 when the leader cannot listen) or store::StoreError (cannot reach it). A
// connection that breaks is re-opened for up to heartbeat_timeout; the link's open_waiter
// opens a second, nameless one for the abort wait thread. Not thread-safe.
#pragma once

#include <string>

#include "launcher/rendezvous/job_store_link.hpp"

namespace ddp::launch::rendezvous {

JobStoreLink connect_agent_store(const MultiNodeSpec& spec, const std::string& run_id,
                                 const StopRequested& stop_requested);

}  // namespace ddp::launch::rendezvous
