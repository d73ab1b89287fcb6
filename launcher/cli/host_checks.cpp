#include "launcher/cli/host_checks.hpp"

#include <fmt/format.h>

#include "launcher/cli/usage_error.hpp"

namespace ddp::launch::cli {

void check_hosts_launch_flags(const LaunchOptions& o) {
  if (!is_elastic(o) && (o.nnodes_min != 1 || o.nnodes_max != 1))
    usage_error(
        "--hostfile/--hosts set the node count (one node per host); drop --nnodes, or give --nnodes MIN:MAX for "
        "an elastic job on at least MIN of the hosts");
  if (o.rdzv_backend == RdzvBackend::kEtcd && o.rdzv_endpoints.empty())
    usage_error("--rdzv-backend=etcd needs --rdzv-endpoint=HOST[:PORT][,HOST[:PORT]...]: etcd's client addresses");
  if (o.node_rank_given) usage_error("--hostfile/--hosts give each host its node rank (list order); drop --node-rank");
  if (o.dry_run) usage_error("--dry-run shows one node; run it without --hostfile/--hosts, or on a host");
  if (o.standalone) usage_error("--standalone runs a single node; drop it with --hostfile/--hosts");
}

void check_hosts_launch_size(int nnodes_min, int nnodes_max, size_t hosts) {
  if (nnodes_min != nnodes_max && nnodes_max > static_cast<int>(hosts))
    usage_error(
        fmt::format("--nnodes {}:{} asks for up to {} node(s), and the host list has {} (one node per host); give "
                    "MIN:MAX at most {}",
                    nnodes_min, nnodes_max, nnodes_max, hosts, hosts));
}

}  // namespace ddp::launch::cli
