#include "launcher/app/resolve_hosts_launch.hpp"

#include "launcher/cli/host_checks.hpp"

namespace ddp::launch {
namespace {

many_hosts::plan::PlanInputs plan_inputs(const cli::LaunchOptions& o) {
  many_hosts::plan::PlanInputs in;
  in.nproc_given = o.nproc_given;
  in.master_addr_given = o.master_addr_given;
  in.master_addr = o.master_addr;
  in.rdzv_endpoint_given = !o.rdzv_endpoints.empty();
  in.master_port = o.master_port;
  if (cli::is_elastic(o)) {
    in.nnodes_min = o.nnodes_min;
    in.nnodes_max = o.nnodes_max;
  }
  return in;
}

}  // namespace

many_hosts::HostsLaunchSpec resolve_hosts_launch(const cli::LaunchOptions& o, const cli::Environment& env) {
  cli::check_hosts_launch_flags(o);
  many_hosts::HostsLaunchSpec s;
  s.hosts = o.hosts;
  s.plan = plan_inputs(o);
  if (o.nproc.kind == cli::NprocSpec::Kind::kCount) s.nproc_count = o.nproc.count;
  s.elastic = cli::is_elastic(o);
  s.nnodes_min = o.nnodes_min;
  s.nnodes_max = o.nnodes_max;
  for (const auto& [name, value] : env)
    if (name.rfind("PET_", 0) == 0 && !value.empty()) s.settings[name] = value;
  s.ssh = many_hosts::ssh_settings(o.hosts);
  s.path_env = cli::lookup(env, "PATH").value_or("/usr/local/bin:/usr/bin:/bin");
  s.env_entries = cli::environment_entries(env);
  s.stop_deadline_s = o.shutdown_timeout_s + 30;
  return s;
}

}  // namespace ddp::launch
