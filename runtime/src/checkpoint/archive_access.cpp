// archive_access.hpp: the one place that reaches into torch's archives (an explicit
// instantiation's template arguments escape access checking).
#include "runtime/src/checkpoint/archive_access.hpp"

namespace ddp::detail {

#if DDP_ARCHIVE_MODULE  // runtime/CMakeLists.txt found the member in this LibTorch's headers
namespace {

template <typename Archive>
using ModuleMember = torch::jit::Module Archive::*;

ModuleMember<torch::serialize::OutputArchive> output_member();
ModuleMember<torch::serialize::InputArchive> input_member();

template <ModuleMember<torch::serialize::OutputArchive> Member>
struct OutputAccess {
  friend ModuleMember<torch::serialize::OutputArchive> output_member() { return Member; }
};
template <ModuleMember<torch::serialize::InputArchive> Member>
struct InputAccess {
  friend ModuleMember<torch::serialize::InputArchive> input_member() { return Member; }
};
template struct OutputAccess<&torch::serialize::OutputArchive::module_>;
template struct InputAccess<&torch::serialize::InputArchive::module_>;

}  // namespace

c10::intrusive_ptr<c10::ivalue::Object> archive_object(torch::serialize::OutputArchive& archive) {
  return (archive.*output_member())._ivalue();
}
c10::intrusive_ptr<c10::ivalue::Object> archive_object(torch::serialize::InputArchive& archive) {
  return (archive.*input_member())._ivalue();
}
#else
c10::intrusive_ptr<c10::ivalue::Object> archive_object(torch::serialize::OutputArchive&) { return {}; }
c10::intrusive_ptr<c10::ivalue::Object> archive_object(torch::serialize::InputArchive&) { return {}; }
#endif

}  // namespace ddp::detail
