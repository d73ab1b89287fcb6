// The ONE place that knows LibTorch versions: 1.13 backends derive from c10d::ProcessGroup,
// 2.x backends derive from c10d::Backend (same virtual collectives). NCCL exists only when the
// LibTorch found has CUDA (USE_C10D_NCCL, exported by torch_cuda). Private to libddp.
#pragma once

#include <memory>
#include <sstream>
#include <string>
#include <type_traits>

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/torch.h>
#include <torch/version.h>

#include "runtime/src/group/local_route.hpp"

#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO 1  // Debian's and PyTorch's LibTorch builds all ship gloo
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#if defined(USE_C10D_NCCL)
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#define DDP_HAVE_NCCL 1
#else
#define DDP_HAVE_NCCL 0
#endif

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

namespace ddp::compat {

// The object that owns a group's collectives (allreduce, broadcast, barrier, ...).
#if TORCH_VERSION_MAJOR >= 2
using Backend = c10d::Backend;
#else
using Backend = c10d::ProcessGroup;
#endif
using BackendPtr = c10::intrusive_ptr<Backend>;
using WorkPtr = c10::intrusive_ptr<c10d::Work>;
using StorePtr = c10::intrusive_ptr<c10d::Store>;

// AccumulateGrad node handle (std::shared_ptr<Node> in 1.13..2.x).
using NodePtr = decltype(torch::autograd::impl::grad_accumulator(std::declval<const torch::autograd::Variable&>()));

// gloo's device: GLOO_SOCKET_IFNAME's interface (ddp-launch sets it to the one holding this
// node's rendezvous address); else the local address that reaches the store's host (host_hint,
// MASTER_ADDR: loopback for a single-node job), not what this host's name resolves to (gloo's
// default, 127.0.0.1 on many images, which peers on other hosts cannot reach).
inline BackendPtr make_gloo(const StorePtr& store, int rank, int size, std::chrono::milliseconds timeout,
                            const std::string& host_hint) {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname) {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
  } else if (host_hint == "127.0.0.1" || host_hint == "localhost") {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  } else if (const std::string local = detail::local_address_toward(host_hint); !local.empty()) {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(local));
  } else {
    options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
}

inline bool nccl_available() { return DDP_HAVE_NCCL && torch::cuda::is_available(); }

inline BackendPtr make_nccl([[maybe_unused]] const StorePtr& store, [[maybe_unused]] int rank,
                            [[maybe_unused]] int size, [[maybe_unused]] std::chrono::milliseconds timeout) {
#if DDP_HAVE_NCCL
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
#else
  return {};
#endif
}

// Makes `index` (within the visible devices) the current CUDA device; no-op without CUDA.
inline void set_cuda_device([[maybe_unused]] int index) {
#if DDP_HAVE_NCCL
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(index));
#endif
}

inline c10::intrusive_ptr<c10::ivalue::Future> work_future(const WorkPtr& work) { return work->getFuture(); }

// The key of a parameter's entry in an optimizer's state(): its TensorImpl's address, written
// as a string in 1.13, the pointer itself in 2.x.
using OptimizerStateKey = std::decay_t<decltype(std::declval<torch::optim::Optimizer&>().state())>::key_type;
template <typename Key = OptimizerStateKey>  // a template, so that the other branch is discarded
Key optimizer_state_key(const torch::Tensor& p) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream key;
    key << p.unsafeGetTensorImpl();
    return key.str();
  } else {
    return p.unsafeGetTensorImpl();
  }
}

// The store namespace of group `id` (0: the world) on `device` ("cpu" or "cuda"), laid out as
// this torch's Python lays a group's: then a Python rank can join a libddp group
// (docs/runtime.md "Python ranks in a libddp group"). 1.13: the group_name the caller passes
// ("pg<id>"); 2.x ignores group_name: its generated name ("<id>") and a per-device level.
inline StorePtr group_store(const StorePtr& base, int id, [[maybe_unused]] const std::string& device) {
#if TORCH_VERSION_MAJOR >= 2
  auto group = c10::make_intrusive<c10d::PrefixStore>(std::to_string(id) + "/", base);
  return c10::make_intrusive<c10d::PrefixStore>(device + "/", group);
#else
  return c10::make_intrusive<c10d::PrefixStore>("pg" + std::to_string(id), base);
#endif
}

// Ends an NCCL group's communicators before it is dropped, as torch 2.4+ wants (destroying it
// without shutdown() warns and can hang at exit); other backends and older torch: nothing.
inline void shutdown_backend([[maybe_unused]] const BackendPtr& backend) {
#if DDP_HAVE_NCCL && (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4))
  if (auto* nccl = dynamic_cast<c10d::ProcessGroupNCCL*>(backend.get())) nccl->shutdown();
#endif
}

}  // namespace ddp::compat
