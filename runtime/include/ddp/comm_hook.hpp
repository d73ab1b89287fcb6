// Communication hooks: how a bucket of gradients is reduced. A hook receives the flat bucket
// (NOT pre-divided by world size) and returns a future whose value is the reduced tensor (or a
// one-element tensor list) of the same size. Hooks run on the autograd thread; the future may
// complete on a communication thread.
#pragma once

#include <functional>
#include <vector>

#include <torch/torch.h>

#include "ddp/process_group.hpp"

namespace ddp {

using Future = c10::intrusive_ptr<c10::ivalue::Future>;

// One bucket as seen by a hook. Valid only during the hook call.
class GradBucket {
 public:
  GradBucket(size_t index, bool is_last, torch::Tensor buffer, std::vector<torch::Tensor> gradients,
             std::vector<torch::Tensor> parameters, Group group, std::vector<size_t> parameter_indices = {})
      : index_(index),
        is_last_(is_last),
        buffer_(std::move(buffer)),
        gradients_(std::move(gradients)),
        parameters_(std::move(parameters)),
        group_(std::move(group)),
        parameter_indices_(std::move(parameter_indices)) {}

  size_t index() const { return index_; }
  bool is_last() const { return is_last_; }
  // The flat gradient buffer of this bucket (sum of local gradients, not divided).
  const torch::Tensor& buffer() const { return buffer_; }
  // Views of buffer() shaped like each parameter.
  const std::vector<torch::Tensor>& gradients() const { return gradients_; }
  const std::vector<torch::Tensor>& parameters() const { return parameters_; }
  const Group& group() const { return group_; }
  // Each gradient's parameter index in DDP's registration order: stable across bucket
  // rebuilds and processes (per-parameter hook state is keyed by it). Empty when unknown.
  const std::vector<size_t>& parameter_indices() const { return parameter_indices_; }

 private:
  size_t index_;
  bool is_last_;
  torch::Tensor buffer_;
  std::vector<torch::Tensor> gradients_;
  std::vector<torch::Tensor> parameters_;
  Group group_;
  std::vector<size_t> parameter_indices_;
};

using CommHook = std::function<Future(GradBucket&)>;

// Starts an asynchronous SUM all-reduce of `tensor` in place; the future's value is the tensor.
Future all_reduce_async(torch::Tensor tensor, const Group& group = {});

namespace hooks {
// Divide by world size, then SUM all-reduce (same result as no hook).
CommHook allreduce();
// Send the bucket as float16 / bfloat16 (half the bytes), divided by the world size first. On
// NCCL the 16-bit buffer is all-reduced. On gloo (CPU) 16-bit compression cannot pay: gloo sums
// float16 slowly and bfloat16 not at all, and gathering 16-bit buffers to sum them in float32
// measured slower than a float32 all-reduce; there the hook all-reduces in float32 (exactly
// hooks::allreduce) and logs a warning once, at construction when the world is initialized.
CommHook fp16_compress(const Group& group = {});
CommHook bf16_compress(const Group& group = {});
}  // namespace hooks

}  // namespace ddp
