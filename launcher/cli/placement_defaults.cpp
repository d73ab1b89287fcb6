// Placement defaults from the environment a launcher starts in: mpirun/PMI, Slurm,
// JOB_COMPLETION_INDEX (raw_options.hpp). Explicit flags win.
#include <fmt/format.h>

#include "launcher/base/text.hpp"
#include "launcher/cli/mpi_env.hpp"
#include "launcher/cli/raw_options.hpp"
#include "launcher/cli/slurm.hpp"
#include "launcher/cli/usage_error.hpp"

namespace ddp::launch::cli {
namespace {

// True when the job's address (the rendezvous endpoint, else --master-addr) is this
// machine's loopback: every "node" runs here (tests, a single-host rehearsal).
bool loopback_job(const LaunchOptions& o, const RendezvousRead& rdzv) {
  std::string host = o.master_addr;
  if (!o.rdzv_endpoint.empty() && o.rdzv_endpoint.find(',') == std::string::npos) {
    if (rdzv.endpoints.empty()) return false;  // reported by the endpoint's own check
    host = rdzv.endpoints.front().address.host;
  }
  return host == "localhost" || host.compare(0, 4, "127.") == 0 || host == "::1";
}

}  // namespace

RendezvousRead read_rendezvous(const std::string& backend, const std::string& endpoint) {
  RendezvousRead r;
  r.backend = parse_rdzv_backend(backend);
  if (!r.backend || endpoint.empty()) return r;
  try {
    r.endpoints = parse_rdzv_endpoint(*r.backend, endpoint);
  } catch (const LaunchError& e) {
    r.endpoint_error = e.what();
  }
  return r;
}

// mpirun / PMI defaults: started as one task per node, the task's rank and size are the
// node rank and count (explicit flags win). More than one task on a node would make every
// launcher there claim the node's GPUs: an error, unless the whole job runs on loopback.
// Returns whether it applied (then Slurm's defaults do not).
bool apply_mpi_defaults(const Environment& env, const RendezvousRead& rdzv, GivenFlags& given, RawOptions& raw,
                        LaunchOptions& o) {
  if (given.nnodes || o.standalone) return false;
  auto task = mpi_task(env);
  if (!task) return false;
  if (task->tasks_on_this_node > 1 && !loopback_job(o, rdzv))
    usage_error(
        fmt::format("{} started {} ddp-launch tasks on this node; start one per node (mpirun --map-by ppr:1:node, or "
                    "-npernode 1) and let --nproc-per-node start the workers",
                    task->source, task->tasks_on_this_node));
  raw.nnodes = std::to_string(task->size);
  given.nnodes = true;
  if (!given.node_rank) {
    raw.node_rank = std::to_string(task->rank);
    given.node_rank = true;
    o.notices.push_back(fmt::format("node rank {} of {} from {}", task->rank, task->size, task->source));
  }
  return true;
}

// JOB_COMPLETION_INDEX (an indexed Job: JobSet, Kubeflow's TrainJob) as the node rank when
// nothing else gave one.
void apply_job_completion_index(const Environment& env, GivenFlags& given, RawOptions& raw, LaunchOptions& o) {
  auto index = lookup(env, "JOB_COMPLETION_INDEX");
  if (given.node_rank || o.standalone || !index || trim(*index).empty()) return;
  auto n = parse_natural(trim(*index));
  if (!n || *n > 100000)
    usage_error(fmt::format("JOB_COMPLETION_INDEX='{}' is not a node rank; unset it or pass --node-rank", *index));
  raw.node_rank = std::to_string(*n);
  given.node_rank = true;
  o.notices.push_back(fmt::format("node rank {} from JOB_COMPLETION_INDEX (an indexed Job)", *n));
}

// Slurm defaults: under srun with no --nnodes (and not --standalone), one launcher per
// node, placed by the job's node count, node id and first host; explicit flags still win.
void apply_slurm_defaults(const Environment& env, GivenFlags& given, RawOptions& raw, LaunchOptions& o) {
  if (given.nnodes || o.standalone) return;
  auto job = slurm_job(env);
  if (!job) return;
  raw.nnodes = std::to_string(job->nnodes);
  if (!given.node_rank) raw.node_rank = std::to_string(job->node_rank);
  if (!given.master_addr) o.master_addr = job->first_host;
  given.node_rank = given.master_addr = true;
}

}  // namespace ddp::launch::cli
