// Built-in communication hooks (allreduce, fp16/bf16 compression) and all_reduce_async
// (fed to the progress record: entered at launch, completed when its future completes).
#include "ddp/comm_hook.hpp"
#include <memory>
#include <mutex>

#include "ddp/run.hpp"
#include "runtime/src/group/group_impl.hpp"

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

// On gloo (CPU) a 16-bit hook cannot beat a float32 all-reduce: gloo sums float16 element by
// element through a software conversion (about 2.5x slower than float32 here) and cannot sum
// bfloat16 at all, and all-gathering the 16-bit buffers to sum them in float32 measured 10-20 %
// slower than the float32 all-reduce (docs/runtime.md). So on gloo the hook reduces in float32
// (the plain all-reduce: never slower) and says so once; on NCCL it sends 16-bit floats.
void warn_gloo(const char* name) {
  log_rank0() << "warning: hooks::" << name << " on gloo: 16-bit compression cannot speed up a CPU all-reduce "
              << "(gloo sums 16-bit floats slowly or not at all), so this hook all-reduces in float32 like no "
                 "hook; use hooks::powersgd to send less";
}

// Compress to `dtype`, reduce, decompress into the bucket's own buffer (in place).
CommHook compress_hook(torch::ScalarType dtype, const Group& group) {
  const char* name = dtype == torch::kHalf ? "fp16_compress" : "bf16_compress";
  auto warned = std::make_shared<std::once_flag>();
  if (is_initialized() && group.is_member() && group.backend() == "gloo") std::call_once(*warned, warn_gloo, name);
  return [dtype, name, warned](GradBucket& bucket) -> Future {
    torch::Tensor buffer = bucket.buffer();
    if (bucket.group().impl().backend_name() == "gloo") {
      std::call_once(*warned, warn_gloo, name);
      buffer.div_(bucket.group().size());
      return all_reduce_async(buffer, bucket.group());
    }
    torch::Tensor compressed = buffer.to(dtype).div_(bucket.group().size());
    auto future = all_reduce_async(compressed, bucket.group());
    return future->then(
        [buffer](c10::ivalue::Future& done) {
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
