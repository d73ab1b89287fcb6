// Where the nodes meet, as typed values: --rdzv-backend as RdzvBackend (torchrun's etcd-v2
// and etcd-v3 names are etcd: ours speaks v3) and --rdzv-endpoint as its members
// (base/host_port), each read once here and kept in LaunchOptions: no later layer reads the
// flags' text again. Pure; errors throw LaunchError(kUsage) naming the flag.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/base/host_port.hpp"

namespace ddp::launch::cli {

enum class RdzvBackend {
  kStatic,  // node 0 hosts the job's store at --master-addr:--master-port
  kC10d,    // the launcher that can bind --rdzv-endpoint hosts it
  kEtcd,    // an etcd cluster that nobody hosts
};

// The backend a --rdzv-backend value names; nullopt when it names none.
std::optional<RdzvBackend> parse_rdzv_backend(const std::string& text);
// Its name in messages, events and the status page: static, c10d or etcd.
const char* rdzv_backend_name(RdzvBackend backend);

// --rdzv-endpoint for this backend: etcd takes a list of members, each HOST[:PORT] or an
// http:// or https:// URL; c10d and static take one HOST[:PORT]. A member without a port
// has port 0: the layer that connects applies its backend's default.
std::vector<HttpEndpoint> parse_rdzv_endpoint(RdzvBackend backend, const std::string& text);

}  // namespace ddp::launch::cli
