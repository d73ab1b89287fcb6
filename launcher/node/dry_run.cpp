

#include "launcher/base/exit_status.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/node/dry_run.hpp"
#include "launcher/node/worker_launches.hpp"
#include <fmt/format.h>
#include <unistd.h>

namespace ddp::launch::node {
namespace {

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789_-./=:,@%+") == std::string::npos)
    return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// "rank R (local_rank L):", its command line, then its contract variables.
std::string describe_worker(const worker::WorkerLaunch& w, const cli::Environment& base) {
  std::string out = fmt::format("rank {} (local_rank {}):\n  command:", w.rank, w.local_rank);
  for (const auto& a : w.spawn.argv) out += " " + shell_quote(a);
  out += "\n";
  std::vector<char*> entries;
  for (const auto& e : w.spawn.env) entries.push_back(const_cast<char*>(e.c_str()));
  entries.push_back(nullptr);
  const cli::Environment env = cli::environment_from(entries.data());
  for (const auto& name : worker::contract_variables()) {
    auto value = cli::lookup(env, name);
    if (!value) continue;
    bool inherited = cli::lookup(base, name) == value && name != "RANK";
    out += fmt::format("  {}={}{}\n", name, shell_quote(*value), inherited ? "  (inherited)" : "");
  }
  return out;
}

// How restarts start their workers (--warm-restarts, --preload).
std::string describe_restarts(const JobConfig& job) {
  if (job.max_restarts <= 0) return "";
  if (!job.warm_restarts) return "restarts: cold (--no-warm-restarts)\n";
  switch (job.standby.kind) {
    case warm::StandbyKind::kPython: {
      std::string modules = "torch";
      for (const auto& m : job.standby.preload) modules += "," + m;
      return fmt::format("restarts: warm (a Python standby per worker, preloading {})\n", modules);
    }
    case warm::StandbyKind::kNative: return "restarts: warm (a standby per worker: the program, linked with libddp)\n";
    case warm::StandbyKind::kNone: break;
  }
  return "restarts: cold (" + job.standby.cold_reason + ")\n";
}

}  // namespace

int print_dry_run(const JobConfig& job, const worker::GroupPlan& plan, const cli::Environment& base) {
  const worker::RunLayout no_files;
  const std::vector<worker::WorkerLaunch> launches = prepare_attempt(job, base, plan, no_files);
  std::string out =
      fmt::format("ddp-launch: dry run: {} worker{} on node {} of {} (world size {}); nothing is started\n",
                  launches.size(), launches.size() == 1 ? "" : "s", plan.node_rank, plan.nnodes, plan.world_size);
  if (plan.nnodes > 1)
    out +=
        "(multi-node: the rendezvous settles the ranks of heterogeneous nodes, and MASTER_ADDR/"
        "MASTER_PORT point at group rank 0's node and a port it picks)\n";
  out += plan.agent_store ? fmt::format(
                                "workers' store: hosted by the launcher (--worker-store=launcher) at {}:{}, listening "
                                "before any worker starts\n",
                                plan.master_addr, plan.master_port)
                          : fmt::format("workers' store: hosted by worker rank 0 (--worker-store=rank0) at {}:{}\n",
                                        plan.master_addr, plan.master_port);
  out += describe_restarts(job);
  if (job.preflight)
    out += fmt::format(
        "preflight: before any worker starts (a core below {:g} of the node's median warns, a node below {:g} of the "
        "nodes' median fails; memory {:g} GiB, /dev/shm {:g} GiB per worker, folders {:g} GiB)\n",
        job.preflight->cpu_warn, job.preflight->cpu_fail, job.preflight->mem_gib, job.preflight->shm_gib_per_worker,
        job.preflight->disk_gib);
  for (const auto& w : launches) out += describe_worker(w, base);
  console::write_all(STDOUT_FILENO, out);
  return exit_code::kSuccess;
}

}  // namespace ddp::launch::node
