#include "launcher/node/job_config.hpp"

namespace ddp::launch::node {

worker::GroupPlan group_plan(const JobConfig& job, const NodePlacement& where) {
  worker::GroupPlan plan;
  plan.node_rank = where.node_rank;
  plan.nnodes = where.nnodes;
  plan.base_rank = where.base_rank;
  plan.world_size = where.world_size;
  plan.local_world_size = job.devices.nproc;
  plan.master_addr = where.master_addr;
  plan.master_port = where.master_port;
  plan.run_id = job.run_id;
  plan.role = job.role;
  plan.max_restarts = job.max_restarts;
  plan.signals_to_handle = job.signals_to_handle;
  plan.timer_file = job.health.timer_file;
  plan.restart_count = where.restart_count;
  plan.agent_store = where.agent_store;
  plan.role_base_rank = where.role_base_rank < 0 ? where.base_rank : where.role_base_rank;
  plan.role_world_size = where.role_world_size < 0 ? where.world_size : where.role_world_size;
  return plan;
}

}  // namespace ddp::launch::node
