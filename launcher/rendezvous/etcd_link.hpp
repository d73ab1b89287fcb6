// --rdzv-backend=etcd: the job's keys in an existing etcd cluster (EtcdStore). Nobody hosts
// anything: every launcher is a client, holds a lease of its own (TTL = heartbeat_timeout)
// and helps keep the job's alive, so the loss of any launcher is survivable. Blocks until
// connected (retrying an unreachable etcd up to the join timeout); throws LaunchError
// (kUsage: a bad endpoint, an unreadable password file) or store::StoreError.
#pragma once

#include <string>

#include "launcher/rendezvous/job_store_link.hpp"

namespace ddp::launch::rendezvous {

inline constexpr int kDefaultEtcdPort = 2379;

JobStoreLink connect_etcd(const MultiNodeSpec& spec, const std::string& run_id, const StopRequested& stop_requested);

}  // namespace ddp::launch::rendezvous
