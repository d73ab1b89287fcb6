#include "launcher/rendezvous/job_store_link.hpp"

#include "launcher/rendezvous/agent_store.hpp"
#include "launcher/rendezvous/etcd_link.hpp"

namespace ddp::launch::rendezvous {

JobStoreLink connect_job_store(const MultiNodeSpec& spec, const std::string& run_id,
                               const StopRequested& stop_requested) {
  return spec.rdzv_backend == cli::RdzvBackend::kEtcd ? connect_etcd(spec, run_id, stop_requested)
                                                      : connect_agent_store(spec, run_id, stop_requested);
}

}  // namespace ddp::launch::rendezvous
