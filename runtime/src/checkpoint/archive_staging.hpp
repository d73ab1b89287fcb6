// ArchiveStaging: makes a torch OutputArchive safe to serialise on another thread while training
// changes the model. stage() replaces every tensor the archive refers to (parameters, buffers,
// optimizer state, tensors inside extra values) by a copy in host buffers kept from one staging
// to the next, and every container value by a copy, so that the archive holds nothing of the
// caller's. Host tensors are copied at once. CUDA tensors are copied asynchronously into pinned
// memory on a side stream that first waits for the current stream: the tensors the next forward
// writes (`forward_written`: a module's buffers) first, and the current stream waits for those;
// then the rest, which the current stream waits for only when `order_after` is set (no fence
// holds the optimizer step back until the write landed). wait_copies() blocks until every copy
// landed (any thread). One staging at a time: stage(), wait_copies(), then the next stage().
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <torch/torch.h>

namespace ddp::detail {

class ArchiveStaging {
 public:
  ArchiveStaging();
  ~ArchiveStaging();
  ArchiveStaging(const ArchiveStaging&) = delete;
  ArchiveStaging& operator=(const ArchiveStaging&) = delete;

  // False when some value cannot be staged (a sparse, quantized or non-CUDA device tensor, a
  // custom class object; every value, with a LibTorch whose archive this build cannot reach
  // into): it stays in the archive as it was, and the archive must be serialised on the
  // caller's thread, after wait_copies(). Throws what torch throws (e.g. pinned memory
  // exhausted); the archive then holds a mix and must be dropped.
  bool stage(torch::serialize::OutputArchive& archive,
             const std::unordered_set<const c10::TensorImpl*>& forward_written, bool order_after);

  // Blocks until the asynchronous copies of the last stage() landed; then drops its references
  // to the caller's tensors. Returns at once when there were none.
  void wait_copies();

  // Bytes of the tensors the last stage() copied.
  uint64_t bytes() const { return bytes_; }

 private:
  struct Pending;  // the copies of one stage() in flight: sources and their devices' events
  c10::IValue staged(const c10::IValue& value);
  void stage_object(const c10::intrusive_ptr<c10::ivalue::Object>& object);
  at::Tensor stage_tensor(const at::Tensor& tensor);
  void start_copies(const std::unordered_set<const c10::TensorImpl*>& forward_written, bool order_after);

  std::vector<at::Tensor> buffers_;  // by position in the walk; reused when shape and kind match
  size_t next_ = 0;                  // the next buffer of this stage()
  struct Copy {
    at::Tensor source, target;
  };
  std::vector<Copy> copies_;                                     // this stage()'s device copies, not yet queued
  std::unordered_map<const c10::TensorImpl*, at::Tensor> seen_;  // one copy of a tensor met twice
  std::vector<c10::IValue> held_;  // copies of shared containers, shared in turn (stage_object)
  std::unique_ptr<Pending> pending_;
  bool complete_ = true;
  uint64_t bytes_ = 0;
};

}  // namespace ddp::detail
