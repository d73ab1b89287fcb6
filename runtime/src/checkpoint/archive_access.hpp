// The object behind a torch::serialize archive: an OutputArchive or InputArchive keeps what it
// holds in a private jit::Module, whose slots hold the tensors (write(key, tensor) registers the
// tensor itself; a nested archive is a nested module). Torch offers no accessor; archive_access.cpp
// names the member through an explicit template instantiation (torch 1.13 and 2.x both call it
// `module_`; runtime/CMakeLists.txt checks the header). Null where this build cannot reach it.
#pragma once

#include <torch/torch.h>

namespace ddp::detail {

c10::intrusive_ptr<c10::ivalue::Object> archive_object(torch::serialize::OutputArchive& archive);
c10::intrusive_ptr<c10::ivalue::Object> archive_object(torch::serialize::InputArchive& archive);

}  // namespace ddp::detail
