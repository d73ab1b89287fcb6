// Built-in communication hooks (allreduce, fp16/bf16 compression) and all_reduce_async
// (fed to the progress record: entered at launch, completed when its future completes).
#include "ddp/comm_hook.hpp"
#include "ddp/run.hpp"
#include "group_impl.hpp"

namespace ddp {

Future all_reduce_async(torch::Tensor tensor, const Group& group) {
  auto& g = group.impl();
  std::vector<torch::Tensor> tensors{std::move(tensor)};
  auto future = compat::work_future(g.backend().allreduce(tensors));
  detail::feed_async(g, progress::Op::kAllReduce, tensors[0], future);
  return future;
}

namespace hooks {
namespace {

torch::Tensor first_tensor(const c10::IValue& value) {
  if (value.isTensor()) return value.toTensor();
  if (value.isTensorList()) return value.toTensorList().get(0);
  return value.toList().get(0).toTensor();
}

// gloo: all-gather the 16-bit buffers (scaled by 1/world while compressing) and sum them in
// float32 into the bucket. gloo's CPU sum of float16 runs element by element and it has no
// bfloat16 sum at all; an all-gather only copies bytes.
Future gather_and_sum(GradBucket& bucket, torch::ScalarType dtype) {
  const int world = bucket.group().size();
  torch::Tensor buffer = bucket.buffer();
  torch::Tensor compressed = torch::empty(buffer.sizes(), buffer.options().dtype(dtype));
  torch::mul_out(compressed, buffer, torch::scalar_tensor(1.0 / world, torch::kDouble));
  auto& g = bucket.group().impl();
  std::vector<std::vector<torch::Tensor>> outputs(1);
  for (int i = 0; i < world; ++i) outputs[0].push_back(torch::empty_like(compressed).view(torch::kHalf));
  std::vector<torch::Tensor> inputs{compressed.view(torch::kHalf)};
  auto future = compat::work_future(g.backend().allgather(outputs, inputs));
  detail::feed_async(g, progress::Op::kAllGather, inputs[0], future);
  auto parts = outputs[0];
  return future->then(
      [buffer, parts, dtype](c10::ivalue::Future&) mutable {
        torch::NoGradGuard no_grad;
        buffer.copy_(parts[0].view(dtype));
        for (size_t i = 1; i < parts.size(); ++i) buffer.add_(parts[i].view(dtype));
        return c10::IValue(buffer);
      },
      c10::TensorType::get());
}

// The world size from which gathering sends at least the bytes of a float32 ring all-reduce:
// (N-1) x 2 bytes vs 2 (N-1)/N x 4 bytes per element and rank.
constexpr int kGatherBreakEven = 4;

// Compress to `dtype`, reduce, decompress into the bucket's own buffer (in place).
CommHook compress_hook(torch::ScalarType dtype, const Group& group) {
  const char* name = dtype == torch::kHalf ? "fp16_compress" : "bf16_compress";
  if (is_initialized() && group.is_member() && group.backend() == "gloo" && group.size() >= kGatherBreakEven) {
    log_rank0() << "warning: hooks::" << name << " on gloo with " << group.size()
                << " ranks sends at least as many bytes as a float32 all-reduce (gloo cannot sum 16-bit floats "
                   "fast, so the hook all-gathers them) and will not speed up a step; use hooks::powersgd or no hook";
  }
  return [dtype](GradBucket& bucket) -> Future {
    if (bucket.group().impl().backend_name() == "gloo") return gather_and_sum(bucket, dtype);
    torch::Tensor buffer = bucket.buffer();
    torch::Tensor compressed = buffer.to(dtype).div_(bucket.group().size());
    auto future = all_reduce_async(compressed, bucket.group());
    return future->then(
        [buffer](c10::ivalue::Future& done) mutable {
          buffer.copy_(first_tensor(done.value()));
          return c10::IValue(buffer);
        },
        c10::TensorType::get());
  };
}

}  // namespace

CommHook allreduce() {
  return [](GradBucket& bucket) -> Future {
    torch::Tensor buffer = bucket.buffer();
    buffer.div_(bucket.group().size());
    return all_reduce_async(buffer, bucket.group());
  };
}

CommHook fp16_compress(const Group& group) { return compress_hook(torch::kHalf, group); }
CommHook bf16_compress(const Group& group) { return compress_hook(torch::kBFloat16, group); }

}  // namespace hooks
}  // namespace ddp
