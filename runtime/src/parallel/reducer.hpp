// Reducer: the gradient-synchronisation engine behind DistributedDataParallel. Owns the flat
// buckets, the post-hooks on every parameter's AccumulateGrad node, the in-order bucket
// launches and the end-of-backward finalize callback. Hooks run on autograd threads and take
// mutex_; prepare_* run on the training thread between iterations. Collective calls
// (rebuild) must happen at the same point on every rank.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/src/parallel/bucket_assignment.hpp"
#include "ddp/distributed_data_parallel.hpp"
#include "runtime/src/torch_compat.hpp"

namespace ddp::detail {

class Reducer {
 public:
  Reducer(std::vector<torch::Tensor> params, std::vector<std::string> names, const DdpOptions& options);
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // Start of every forward with grad enabled: throws DdpError if the previous synced backward
  // left parameters without gradients; rebuilds buckets once after the first iteration.
  void prepare_for_forward();
  // After a synced forward: arms the hooks for the coming backward (graph walk from `outputs`
  // when find_unused_parameters).
  void prepare_for_backward(const std::vector<torch::Tensor>& outputs);
  void set_comm_hook(CommHook hook);
  std::vector<std::vector<size_t>> bucket_indices() const;
  // join(): gradients are divided by `divisor` (default: the group size) from the next backward.
  void set_divisor(int divisor);
  // join(): a joined rank matches one synced backward of the others: every bucket (through the
  // comm hook if any) and the used-parameter map, all zeros, in order; blocks until done.
  void shadow_backward();

 private:
  struct Bucket {
    torch::Tensor flat;
    std::vector<size_t> params;                // parameter indices
    std::vector<torch::Tensor> param_tensors;  // params_[i] for i in params (handed to a comm hook)
    std::vector<torch::Tensor> views;          // views of flat shaped like the params
    size_t pending = 0;
    Future future;
  };

  void install_hook(size_t index, compat::NodePtr accumulator);
  void refresh_hooks();
  std::vector<size_t> bucket_limits() const;
  void build_buckets(const std::vector<std::vector<size_t>>& assignment);
  std::vector<torch::Tensor> spare_flats() const;
  static torch::Tensor zeroed_flat(std::vector<torch::Tensor>& spare, int64_t total,
                                   const torch::TensorOptions& options);
  void autograd_hook(size_t index);
  void mark_ready(size_t index);
  void launch_ready_buckets();
  Future launch(Bucket& bucket, size_t index);
  void finalize_backward();
  void finalize_bucket(Bucket& bucket, const torch::Tensor& result);
  void wait_for(const Future& future, const std::string& what) const;
  std::string describe_unready() const;

  std::vector<torch::Tensor> params_;
  std::vector<std::string> names_;
  std::vector<BucketInput> bucket_inputs_;  // size and dtype@device per param; fixed after construction
  DdpOptions options_;
  Group group_;
  int world_size_;
  std::vector<compat::NodePtr> accumulators_;
  std::vector<uintptr_t> hook_keys_;
  CommHook comm_hook_;
  torch::Tensor scale_;  // 0-dim 1/divisor_, multiplied in on copy into the bucket
  int divisor_;          // world_size_, or the ranks still training inside a join()

  mutable std::mutex mutex_;
  std::vector<Bucket> buckets_;
  std::vector<std::pair<size_t, size_t>> locator_;  // param -> (bucket, slot)
  std::vector<char> ready_;
  size_t next_bucket_ = 0;
  bool expect_hooks_ = false;  // a synced backward is expected
  bool backward_started_ = false;
  bool finalized_ = true;
  bool callback_queued_ = false;

  bool rebuilt_ = false;
  bool synced_once_ = false;  // a synced backward (or its shadow) has completed: rebuild is due
  std::vector<size_t> ready_order_;

  // find_unused_parameters
  std::vector<char> unused_;  // this iteration, from the graph walk
  torch::Tensor local_used_;  // int32 [P], 1 when the param got a grad since the last sync
  Future used_future_;
};

}  // namespace ddp::detail
