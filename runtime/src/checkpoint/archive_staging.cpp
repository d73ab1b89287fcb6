// archive_staging.hpp. An OutputArchive keeps what it is given in a private jit::Module whose
// objects' slots hold the caller's tensors (archive_access.hpp); a build that cannot reach it
// stages nothing (stage() returns false).
// The device copies use c10's device-generic guard, streams and events: this file compiles
// against a CPU-only LibTorch and takes the CUDA path only for CUDA tensors.
#include "runtime/src/checkpoint/archive_staging.hpp"

#include <chrono>
#include <map>
#include <thread>

#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include "runtime/src/checkpoint/archive_access.hpp"

namespace ddp::detail {
namespace {

bool is_immutable(const c10::IValue& v) { return v.isNone() || v.isScalar() || v.isString() || v.isDevice(); }

// A host buffer for `t` as it would be allocated now: same sizes and dtype, pinned for CUDA.
bool fits(const at::Tensor& buffer, const at::Tensor& t) {
  return buffer.defined() && buffer.sizes() == t.sizes() && buffer.scalar_type() == t.scalar_type() &&
         buffer.is_pinned() == t.is_cuda();
}

}  // namespace

struct ArchiveStaging::Pending {
  std::vector<at::Tensor> sources;  // alive until the copies that read them landed
  std::vector<c10::Event> done;     // one per device: every copy there landed
};

ArchiveStaging::ArchiveStaging() = default;

ArchiveStaging::~ArchiveStaging() { wait_copies(); }

bool ArchiveStaging::stage(torch::serialize::OutputArchive& archive,
                           const std::unordered_set<const c10::TensorImpl*>& forward_written, bool order_after) {
  wait_copies();
  next_ = 0;
  bytes_ = 0;
  complete_ = true;
  seen_.clear();
  copies_.clear();
  held_.clear();
  const auto root = archive_object(archive);
  if (!root) return false;  // an archive this build cannot reach into: serialise it where it is
  {
    torch::NoGradGuard no_grad;
    stage_object(root);
  }
  seen_.clear();
  buffers_.resize(next_);  // a smaller state than last time: the rest goes
  if (!copies_.empty()) start_copies(forward_written, order_after);
  return complete_;
}

void ArchiveStaging::stage_object(const c10::intrusive_ptr<c10::ivalue::Object>& object) {
  for (size_t slot = 0; slot < object->slots().size(); ++slot) {
    const c10::IValue& value = object->getSlot(slot);
    if (value.isObject() && value.toObjectRef().type()->is_module()) {
      stage_object(value.toObject());  // a nested archive: the archive's own, changed in place
      continue;
    }
    // A host tensor only the archive holds was made for it (an optimizer's group count):
    // nothing else changes it. Left alone, it also pickles as before (unshared: not memoised).
    if (value.isTensor() && value.toTensor().is_cpu() && value.toTensor().use_count() == 1) continue;
    c10::IValue copy = staged(value);
    // The pickler memoises a shared container (an extra value the caller also holds): so is
    // its copy, until the next staging, and it pickles as the original would.
    if ((value.isList() || value.isGenericDict() || value.isTuple()) && value.use_count() > 1) held_.push_back(copy);
    object->setSlot(slot, std::move(copy));
  }
}

c10::IValue ArchiveStaging::staged(const c10::IValue& value) {
  if (value.isTensor()) return stage_tensor(value.toTensor());
  if (value.isList()) {  // lists and dicts are shared, not copied, by IValue: a copy of its own
    const c10::List<c10::IValue> list = value.toList();
    c10::impl::GenericList copy(list.elementType());
    copy.reserve(list.size());
    for (size_t i = 0; i < list.size(); ++i) copy.push_back(staged(list.get(i)));
    return copy;
  }
  if (value.isGenericDict()) {
    const c10::Dict<c10::IValue, c10::IValue> dict = value.toGenericDict();
    c10::impl::GenericDict copy(dict.keyType(), dict.valueType());
    copy.reserve(dict.size());
    for (const auto& entry : dict) copy.insert(staged(entry.key()), staged(entry.value()));
    return copy;
  }
  if (value.isTuple()) {
    const auto& tuple = value.toTupleRef();
    std::vector<c10::IValue> elements;
    elements.reserve(tuple.size());
    for (const auto& element : tuple.elements()) elements.push_back(staged(element));
    return c10::ivalue::Tuple::createNamed(std::move(elements), tuple.type());
  }
  if (!is_immutable(value)) complete_ = false;  // an object, a storage, a generator...: left as it was
  return value;
}

at::Tensor ArchiveStaging::stage_tensor(const at::Tensor& tensor) {
  if (!tensor.defined()) return tensor;
  if (tensor.layout() != at::kStrided || tensor.is_quantized() || !(tensor.is_cpu() || tensor.is_cuda())) {
    complete_ = false;
    return tensor;
  }
  const auto known = seen_.find(tensor.unsafeGetTensorImpl());
  if (known != seen_.end()) return known->second;  // written twice (tied weights): one copy, shared as before
  if (next_ == buffers_.size()) buffers_.emplace_back();
  at::Tensor& buffer = buffers_[next_++];
  if (!fits(buffer, tensor))
    buffer = at::empty(tensor.sizes(), at::TensorOptions().dtype(tensor.scalar_type()).pinned_memory(tensor.is_cuda()));
  if (buffer.requires_grad() != tensor.requires_grad()) buffer.requires_grad_(tensor.requires_grad());
  if (tensor.is_cuda()) copies_.push_back({tensor, buffer});
  else buffer.copy_(tensor);
  bytes_ += tensor.numel() * tensor.element_size();
  seen_.emplace(tensor.unsafeGetTensorImpl(), buffer);
  return buffer;
}

// Per device: the side stream waits for the current one (the copies see this step's results);
// the tensors the next forward writes go first and the current stream waits for them; the rest
// follow, overlapping the next forward and backward.
void ArchiveStaging::start_copies(const std::unordered_set<const c10::TensorImpl*>& forward_written, bool order_after) {
  const torch::NoGradGuard no_grad;  // a target mirrors its source's requires_grad: no in-place on a leaf
  const c10::impl::VirtualGuardImpl guard(c10::DeviceType::CUDA);
  std::map<c10::DeviceIndex, std::vector<const Copy*>> by_device;
  for (const Copy& copy : copies_) by_device[copy.source.device().index()].push_back(&copy);
  pending_ = std::make_unique<Pending>();
  for (auto& [index, copies] : by_device) {
    const c10::Device device(c10::DeviceType::CUDA, index);
    const c10::Stream current = guard.getStream(device);
    const c10::Stream side = guard.getStreamFromGlobalPool(device);
    c10::Event ready(c10::DeviceType::CUDA);
    ready.record(current);
    ready.block(side);
    const c10::StreamGuard on_side(side);
    for (const bool first : {true, false}) {
      for (const Copy* copy : copies) {
        if ((forward_written.count(copy->source.unsafeGetTensorImpl()) > 0) != first) continue;
        copy->target.copy_(copy->source, /*non_blocking=*/true);
        guard.recordDataPtrOnStream(copy->source.storage().data_ptr(), side);
        pending_->sources.push_back(copy->source);
      }
      c10::Event landed(c10::DeviceType::CUDA);
      landed.record(side);
      if (first || order_after) landed.block(current);
      if (!first) pending_->done.push_back(std::move(landed));
    }
  }
  copies_.clear();
}

void ArchiveStaging::wait_copies() {
  if (!pending_) return;
  for (const c10::Event& landed : pending_->done) {
    while (!landed.query()) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  pending_.reset();
}

}  // namespace ddp::detail
