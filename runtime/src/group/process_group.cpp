// init_process_group / new_group / Group: the public process-group API over GroupImpl, the
// error translation and the progress feed's entry (collectives.cpp has the collectives).
#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "runtime/src/group/group_impl.hpp"
#include "runtime/src/group/local_route.hpp"

namespace ddp {
namespace detail {

Registry& registry() {
  static Registry instance;
  return instance;
}

compat::Backend& GroupImpl::backend() const {
  if (!backend_) {
    throw ConfigError("this process is not a member of the group (ranks " + std::to_string(ranks_.size()) +
                      "); only members may run its collectives");
  }
  return *backend_;
}

int GroupImpl::group_rank_of(int global_rank) const {
  auto it = std::find(ranks_.begin(), ranks_.end(), global_rank);
  if (it == ranks_.end()) {
    throw ConfigError("rank " + std::to_string(global_rank) +
                      " is not a member of this group; pass a member's global rank");
  }
  return static_cast<int>(it - ranks_.begin());
}

void GroupImpl::rethrow_comm_error(const std::string& what) const {
  std::string cause;
  try {
    throw;
  } catch (const ddp::Error&) {
    throw;
  } catch (const std::exception& e) {
    cause = e.what();
  }
  cause = cause.substr(0, cause.find("\nException raised from"));
  std::string msg = what + " failed on rank " + std::to_string(rank_) + " of a " + backend_name_ + " group of " +
                    std::to_string(size()) + " (" + where_ + "): " + cause;
  std::string lower = cause;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower.find("timed out") != std::string::npos || lower.find("timeout") != std::string::npos) {
    throw TimeoutError(msg +
                       "; a peer is stuck or stopped calling collectives (check the other ranks' logs), or "
                       "raise the timeout in ProcessGroupOptions");
  }
  // A peer that advertised a loopback address to gloo while the job spans hosts: its host name
  // resolves to loopback there (gloo's default device), and nothing on this host listens there.
  std::string master = where_.substr(0, where_.rfind(':'));  // the store's host, "HOST:PORT"
  if (master.size() > 1 && master.front() == '[') master = master.substr(1, master.size() - 2);
  const size_t bracket = cause.find("connect [");
  if (bracket != std::string::npos) {
    const std::string advertised = cause.substr(bracket + 9, cause.find(']', bracket) - bracket - 9);
    if (is_loopback_address(advertised) && !is_loopback_address(master) && master != "localhost") {
      throw CommError(msg + "; a peer advertised " + advertised +
                      " to gloo, which no other host can reach (its host name resolves to loopback there): set "
                      "GLOO_SOCKET_IFNAME on every host to the interface that reaches the others (ddp-launch sets it "
                      "from the address each node has in the rendezvous)");
    }
  }
  throw CommError(msg + "; a peer process probably exited or crashed: check the other ranks' logs");
}

void GroupImpl::wait(const compat::WorkPtr& work, const std::string& what) const {
  try {
    work->wait();
  } catch (...) {
    rethrow_comm_error(what);
  }
}

progress::DType progress_dtype(c10::ScalarType type) {
  using progress::DType;
  switch (type) {
    case c10::ScalarType::Float: return DType::kFloat32;
    case c10::ScalarType::Double: return DType::kFloat64;
    case c10::ScalarType::Half: return DType::kFloat16;
    case c10::ScalarType::BFloat16: return DType::kBFloat16;
    case c10::ScalarType::Char: return DType::kInt8;
    case c10::ScalarType::Byte: return DType::kUInt8;
    case c10::ScalarType::Int: return DType::kInt32;
    case c10::ScalarType::Long: return DType::kInt64;
    case c10::ScalarType::Bool: return DType::kBool;
    default: return DType::kUnknown;
  }
}

uint64_t enter_collective(const GroupImpl& g, progress::Op op, const torch::Tensor& tensor) {
  static std::atomic<uint64_t> unfed{0};  // the count when no launcher watches
  if (!feed::enabled()) return ++unfed;
  return feed::enter(op, tensor.defined() ? static_cast<uint64_t>(tensor.numel()) : 0,
                     tensor.defined() ? progress_dtype(tensor.scalar_type()) : progress::DType::kUnknown, g.id());
}

void feed_async(const GroupImpl& g, progress::Op op, const torch::Tensor& tensor,
                const c10::intrusive_ptr<c10::ivalue::Future>& future) {
  const uint64_t seq = enter_collective(g, op, tensor);
  if (feed::enabled()) future->addCallback([seq](c10::ivalue::Future&) { feed::complete(seq); });
}

std::shared_ptr<GroupImpl> world_or_throw() {
  if (!registry().world) {
    throw ConfigError("the process group is not initialized; call ddp::init_process_group() first");
  }
  return registry().world;
}

}  // namespace detail

using detail::registry;

detail::GroupImpl& Group::impl() const { return impl_ ? *impl_ : *detail::world_or_throw(); }
int Group::rank() const { return impl().rank(); }
int Group::size() const { return impl().size(); }
std::vector<int> Group::ranks() const { return impl().ranks(); }
std::string Group::backend() const { return impl().backend_name(); }

void init_process_group(const ProcessGroupOptions& options) {
  auto& reg = registry();
  if (reg.world) throw ConfigError("init_process_group() was already called; call destroy_process_group() first");
  WorkerEnv env = WorkerEnv::from_env();
  if (options.world_size > 0) env.world_size = options.world_size;
  if (options.rank >= 0) env.rank = options.rank;
  if (env.rank >= env.world_size) {
    throw ConfigError("rank " + std::to_string(env.rank) + " is not below world size " +
                      std::to_string(env.world_size));
  }
  std::string backend = options.backend;
  if (backend == "auto") backend = compat::nccl_available() ? "nccl" : "gloo";
  if (backend != "gloo" && backend != "nccl") {
    throw ConfigError("backend '" + options.backend + "' is not supported; use \"auto\", \"gloo\" or \"nccl\"");
  }
  if (backend == "nccl" && !compat::nccl_available()) {
    throw ConfigError(
        std::string("backend 'nccl' is not available: ") +
        (DDP_HAVE_NCCL ? "no CUDA device is visible" : "libddp was built against a LibTorch without CUDA") +
        "; use backend \"gloo\" (or \"auto\")");
  }
  torch::Device device(torch::kCPU);
  if (backend == "nccl") {
    int count = static_cast<int>(torch::cuda::device_count());
    int index = env.local_rank < count ? env.local_rank : (count == 1 ? 0 : -1);
    if (index < 0) {
      throw ConfigError(
          "LOCAL_RANK=" + std::to_string(env.local_rank) + " but only " + std::to_string(count) +
          " CUDA device(s) are visible; start at most that many workers per node or fix CUDA_VISIBLE_DEVICES");
    }
    compat::set_cuda_device(index);
    device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
  }
  detail::Rendezvous rv = detail::connect_store(options, env);
  auto pg_store = compat::group_store(rv.store, 0, backend == "nccl" ? "cuda" : "cpu");
  compat::BackendPtr pg;
  std::vector<int> ranks(static_cast<size_t>(env.world_size));
  for (int r = 0; r < env.world_size; ++r) ranks[static_cast<size_t>(r)] = r;
  detail::GroupImpl probe(compat::BackendPtr(), rv.store, ranks, env.rank, backend, rv.where, options.timeout);
  try {
    pg = backend == "nccl" ? compat::make_nccl(pg_store, env.rank, env.world_size, options.timeout)
                           : compat::make_gloo(pg_store, env.rank, env.world_size, options.timeout, env.master_addr);
  } catch (...) {
    probe.rethrow_comm_error("creating the " + backend + " process group");
  }
  reg.env = env;
  reg.store = rv.store;
  reg.device = device;
  reg.next_group_id = 1;
  reg.world = std::make_shared<detail::GroupImpl>(pg, rv.store, ranks, env.rank, backend, rv.where, options.timeout);
  reg.world->set_check_shapes(options.check_shapes);
  detail::feed::open_from_env();  // under ddp-launch: from now on collectives and steps are fed
  detail::feed::joined();
}

bool is_initialized() { return registry().world != nullptr; }

void destroy_process_group() {
  auto& reg = registry();
  if (reg.world) compat::shutdown_backend(reg.world->backend_ptr());
  reg.world.reset();
  reg.store.reset();
  reg.next_group_id = 0;
}

int get_rank() { return registry().world ? registry().world->rank() : 0; }
int get_world_size() { return registry().world ? registry().world->size() : 1; }

const WorkerEnv& worker_env() {
  auto& reg = registry();
  if (!reg.world) reg.env = WorkerEnv::from_env();
  return reg.env;
}

torch::Device device() { return registry().device; }

Group new_group(std::vector<int> ranks) {
  auto world = detail::world_or_throw();
  std::sort(ranks.begin(), ranks.end());
  if (ranks.empty()) return Group(world);
  if (std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end() || ranks.front() < 0 ||
      ranks.back() >= world->size()) {
    throw ConfigError("new_group ranks must be distinct and in [0, " + std::to_string(world->size() - 1) + "]");
  }
  auto& reg = registry();
  const int id = reg.next_group_id++;
  auto it = std::find(ranks.begin(), ranks.end(), world->rank());
  const int my_rank = it == ranks.end() ? -1 : static_cast<int>(it - ranks.begin());
  compat::BackendPtr pg;
  if (my_rank >= 0) {
    auto store = compat::group_store(reg.store, id, world->backend_name() == "nccl" ? "cuda" : "cpu");
    try {
      pg = world->backend_name() == "nccl"
               ? compat::make_nccl(store, my_rank, static_cast<int>(ranks.size()), world->timeout())
               : compat::make_gloo(store, my_rank, static_cast<int>(ranks.size()), world->timeout(),
                                   reg.env.master_addr);
    } catch (...) {
      world->rethrow_comm_error("new_group");
    }
  }
  auto sub = std::make_shared<detail::GroupImpl>(pg, reg.store, ranks, my_rank, world->backend_name(),
                                                 "subgroup " + std::to_string(id), world->timeout(),
                                                 static_cast<uint32_t>(id));
  sub->set_check_shapes(world->check_shapes());
  return Group(sub);
}

}  // namespace ddp
