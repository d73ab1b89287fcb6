// DistributedDataParallel: wraps a torch::nn module so that backward() averages gradients
// across the group, overlapped with backward via buckets (see docs/runtime.md). Construction
// is collective (verifies shapes across ranks, broadcasts parameters and buffers from rank 0).
// One DDP object per module; forward/backward from one thread at a time.
#pragma once

#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "ddp/comm_hook.hpp"
#include "ddp/errors.hpp"
#include "ddp/join.hpp"
#include "ddp/process_group.hpp"

namespace ddp {

namespace detail {
class Reducer;
}

struct DdpOptions {
  // Bucket size cap in MiB (PyTorch's bucket_cap_mb); the first bucket is capped at
  // first_bucket_cap_mb so the first all-reduce starts early.
  double bucket_cap_mb = 25.0;
  double first_bucket_cap_mb = 1.0;
  // Detect parameters that got no gradient in a backward (graph walk after each forward).
  // Without it such a parameter makes the next forward throw DdpError naming it.
  bool find_unused_parameters = false;
  // Broadcast buffers (e.g. BatchNorm running stats) from rank 0 at each synced forward.
  bool broadcast_buffers = true;
  // After the first step, param.grad() aliases the flat bucket (saves memory and copies).
  bool gradient_as_bucket_view = false;
  // Rebuild buckets once, after the first iteration, from the observed gradient-ready order.
  bool rebuild_buckets = true;
  // Check at construction that every rank has the same parameters (names, shapes) and broadcast
  // rank 0's parameters and buffers (torch 2.x's init_sync). false skips both: the caller
  // guarantees equal weights (e.g. every rank restored the same snapshot or checkpoint).
  bool init_sync = true;
  // Group to synchronize over (default: world).
  Group group;
};

// The non-template engine; DistributedDataParallel<M> below forwards to it.
class DataParallelEngine {
 public:
  DataParallelEngine(std::shared_ptr<torch::nn::Module> module, DdpOptions options);
  ~DataParallelEngine();
  DataParallelEngine(const DataParallelEngine&) = delete;
  DataParallelEngine& operator=(const DataParallelEngine&) = delete;

  // Called by DistributedDataParallel<M>::forward around the module's forward.
  void pre_forward();
  void post_forward(const std::vector<torch::Tensor>& outputs);

  // Replaces the default reduction (before the first backward).
  void register_comm_hook(CommHook hook);
  void set_require_backward_grad_sync(bool value);
  bool require_backward_grad_sync() const;
  const DdpOptions& options() const { return options_; }
  // Number of buckets and the parameter indices (registration order) in each.
  std::vector<std::vector<size_t>> bucket_indices() const;
  torch::nn::Module& module() { return *module_; }

  // join() support (join.cpp): the join round every forward starts inside a join, a joined
  // rank's shadow of one forward/backward (false once every rank has joined), the final
  // broadcast of the last joiner's parameters and buffers. Collective; training thread only.
  void begin_join(const JoinOptions& options);
  void end_join() noexcept;
  bool shadow_step();
  void sync_final_model(bool last_joiner);

 private:
  struct JoinRound {
    int active = 0;        // ranks still training
    bool sync = false;     // some active rank will all-reduce gradients in this backward
    bool buffers = false;  // some active rank broadcasts buffers before this forward
    int authority = -1;    // global rank of the highest active rank
  };
  JoinRound join_round(bool active);
  void join_pre_forward();

  std::shared_ptr<torch::nn::Module> module_;
  DdpOptions options_;
  std::unique_ptr<detail::Reducer> reducer_;
  std::vector<torch::Tensor> params_;  // the same tensors the reducer synchronises
  std::vector<torch::Tensor> buffers_;
  std::unique_ptr<JoinOptions> join_;  // set while a join() is running
  bool require_backward_grad_sync_ = true;
  bool require_forward_param_sync_ = true;
};

// RAII: inside, backward() accumulates local gradients without communication; the next
// synced backward reduces the accumulated gradients. Forward must run inside the guard too.
class NoSyncGuard {
 public:
  explicit NoSyncGuard(DataParallelEngine& engine) : engine_(engine), previous_(engine.require_backward_grad_sync()) {
    engine_.set_require_backward_grad_sync(false);
  }
  ~NoSyncGuard() { engine_.set_require_backward_grad_sync(previous_); }
  NoSyncGuard(const NoSyncGuard&) = delete;
  NoSyncGuard& operator=(const NoSyncGuard&) = delete;

 private:
  DataParallelEngine& engine_;
  bool previous_;
};

namespace detail {
template <typename T>
std::shared_ptr<torch::nn::Module> module_ptr(const std::shared_ptr<T>& module) {
  return module;
}
template <typename T>
std::shared_ptr<torch::nn::Module> module_ptr(const torch::nn::ModuleHolder<T>& holder) {
  return holder.ptr();
}
inline void collect_tensors(const torch::Tensor& t, std::vector<torch::Tensor>& out) { out.push_back(t); }
inline void collect_tensors(const std::vector<torch::Tensor>& v, std::vector<torch::Tensor>& out) {
  out.insert(out.end(), v.begin(), v.end());
}
template <typename... T>
void collect_tensors(const std::tuple<T...>& t, std::vector<torch::Tensor>& out) {
  std::apply([&](const auto&... e) { (collect_tensors(e, out), ...); }, t);
}
template <typename T>
void collect_tensors(const T&, std::vector<torch::Tensor>&) {}  // non-tensor outputs
}  // namespace detail

// Usage:  auto model = ddp::DistributedDataParallel(torch::nn::Sequential(...));
//         auto loss = loss_fn(model(x), y); loss.backward(); optimizer.step();
// M is a module holder (torch::nn::Linear, Sequential, TORCH_MODULE types) or std::shared_ptr<Impl>.
template <typename M>
class DistributedDataParallel {
 public:
  explicit DistributedDataParallel(M module, DdpOptions options = {})
      : module_(std::move(module)),
        engine_(std::make_unique<DataParallelEngine>(detail::module_ptr(module_), std::move(options))) {}

  template <typename... Args>
  auto forward(Args&&... args) {
    engine_->pre_forward();
    auto out = module_->forward(std::forward<Args>(args)...);
    std::vector<torch::Tensor> tensors;
    detail::collect_tensors(out, tensors);
    engine_->post_forward(tensors);
    return out;
  }
  template <typename... Args>
  auto operator()(Args&&... args) {
    return forward(std::forward<Args>(args)...);
  }

  // The wrapped module (parameters(), train(), eval(), save...).
  M& module() { return module_; }
  auto operator->() { return module_.operator->(); }
  std::vector<torch::Tensor> parameters() { return module_->parameters(); }

  [[nodiscard]] NoSyncGuard no_sync() { return NoSyncGuard(*engine_); }
  void register_comm_hook(CommHook hook) { engine_->register_comm_hook(std::move(hook)); }
  // Uneven inputs: model.join([&] { for (auto& batch : my_shard) { ... } }); see ddp/join.hpp.
  JoinResult join(const std::function<void()>& body, const JoinOptions& options = {}) {
    return ddp::join(*engine_, body, options);
  }
  DataParallelEngine& engine() { return *engine_; }

 private:
  M module_;
  std::unique_ptr<DataParallelEngine> engine_;
};

template <typename M>
DistributedDataParallel(M, DdpOptions) -> DistributedDataParallel<M>;
template <typename M>
DistributedDataParallel(M) -> DistributedDataParallel<M>;

}  // namespace ddp
