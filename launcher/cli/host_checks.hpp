// The cross-checks of a many-host launch (--hostfile / --hosts), made on the launching
// machine: the host list places the nodes (one per host, ranks in list order), so flags that
// place a node are refused, and an elastic job asks for at most as many nodes as there are
// hosts. Pure; each error throws LaunchError(kUsage) with a line that says what to drop.
#pragma once

#include <cstddef>

#include "launcher/cli/options.hpp"

namespace ddp::launch::cli {

// An elastic job: --nnodes MIN:MAX with MIN < MAX.
inline bool is_elastic(const LaunchOptions& o) { return o.nnodes_min != o.nnodes_max; }

// The flags alone, before the host list is read.
void check_hosts_launch_flags(const LaunchOptions& o);
// An elastic job's --nnodes MIN:MAX against the host list's length.
void check_hosts_launch_size(int nnodes_min, int nnodes_max, size_t hosts);

}  // namespace ddp::launch::cli
