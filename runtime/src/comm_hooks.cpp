// Built-in communication hooks (allreduce, fp16/bf16 compression) and all_reduce_async
// (fed to the progress record: entered at launch, completed when its future completes).
#include "ddp/comm_hook.hpp"
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

// Compress to `dtype`, reduce, decompress into the bucket's own buffer (in place).
CommHook compress_hook(torch::ScalarType dtype) {
  return [dtype](GradBucket& bucket) -> Future {
    const int world = bucket.group().size();
    torch::Tensor buffer = bucket.buffer();
    torch::Tensor compressed = buffer.to(dtype).div_(world);
    auto& g = bucket.group().impl();
    if (dtype == torch::kBFloat16 && g.backend_name() == "gloo") {
      // gloo cannot sum bfloat16: gather the raw 16-bit words (as float16) and sum in fp32.
      std::vector<std::vector<torch::Tensor>> outputs(1);
      for (int i = 0; i < world; ++i) outputs[0].push_back(torch::empty_like(compressed).view(torch::kHalf));
      std::vector<torch::Tensor> inputs{compressed.view(torch::kHalf)};
      auto future = compat::work_future(g.backend().allgather(outputs, inputs));
      detail::feed_async(g, progress::Op::kAllGather, inputs[0], future);
      auto parts = outputs[0];
      return future->then(
          [buffer, parts](c10::ivalue::Future&) mutable {
            torch::NoGradGuard no_grad;
            buffer.zero_();
            for (const auto& part : parts) buffer.add_(part.view(torch::kBFloat16).to(buffer.scalar_type()));
            return c10::IValue(buffer);
          },
          c10::TensorType::get());
    }
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

CommHook fp16_compress() { return compress_hook(torch::kHalf); }
CommHook bf16_compress() { return compress_hook(torch::kBFloat16); }

}  // namespace hooks
}  // namespace ddp
