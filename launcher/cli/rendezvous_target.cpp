#include "launcher/cli/rendezvous_target.hpp"

#include <fmt/format.h>

#include "launcher/cli/usage_error.hpp"

namespace ddp::launch::cli {

std::optional<RdzvBackend> parse_rdzv_backend(const std::string& text) {
  if (text == "static") return RdzvBackend::kStatic;
  if (text == "c10d") return RdzvBackend::kC10d;
  if (text == "etcd" || text == "etcd-v2" || text == "etcd-v3") return RdzvBackend::kEtcd;
  return std::nullopt;
}

const char* rdzv_backend_name(RdzvBackend backend) {
  switch (backend) {
    case RdzvBackend::kStatic: return "static";
    case RdzvBackend::kC10d: return "c10d";
    case RdzvBackend::kEtcd: return "etcd";
  }
  return "?";
}

std::vector<HttpEndpoint> parse_rdzv_endpoint(RdzvBackend backend, const std::string& text) {
  constexpr int kNoPort = 0;  // each backend has its default, applied where it connects
  try {
    if (backend == RdzvBackend::kEtcd) return parse_http_endpoint_list(text, kNoPort);
    return {HttpEndpoint{parse_host_port(text, kNoPort), false}};
  } catch (const HostPortError& e) {
    usage_error(fmt::format(
        "--rdzv-endpoint: {}{}", e.what(),
        backend == RdzvBackend::kEtcd ? "; etcd's members are HOST[:PORT][,HOST[:PORT]...]"
        : text.find(',') != std::string::npos
            ? fmt::format("; --rdzv-backend={} reaches one store, only etcd takes a list", rdzv_backend_name(backend))
            : ""));
  }
}

}  // namespace ddp::launch::cli
