// The tensor table: a checkpoint archive laid out for loading at memory speed, the payload
// ddp::Snapshot writes for state on the CPU (docs/snapshots.md, "The tensor table"). Little-endian:
//   24-byte header: "DDPT", u32 version 1, u64 skeleton bytes, u64 tensor count
//   the skeleton: the archive serialised with every tensor replaced by a placeholder
//     (int64 {kPlaceholder, index}: a few bytes each)
//   per tensor: u64 offset in the payload, u64 bytes, i32 dtype (c10::ScalarType), u32 flags
//     (1: requires grad), u32 dims, u32 0, i64 sizes[dims]
//   the tensors' bytes, contiguous, each at a 64-byte aligned offset.
// The header, skeleton and entries ("the head") are what the region's checksum covers. Writing
// copies each tensor once, straight into the region; reading views the model's tensors where
// they lie and loading copies them once into the parameters. Private to libddp.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace ddp::detail {

struct TensorTable {
  std::string head;                 // header, skeleton and entries: payload bytes [0, head.size())
  std::vector<at::Tensor> tensors;  // contiguous CPU tensors, in entry order
  std::vector<uint64_t> offsets;    // where each one's bytes go in the payload
  uint64_t length = 0;              // the payload's bytes
  uint64_t tensor_bytes = 0;        // the tensors' bytes together
};

// The table of `archive`, whose tensors it replaces by placeholders (the archive is spent).
// nullopt when some value cannot go in a table (a tensor that is not a strided CPU tensor, a
// custom class object) or this build cannot reach into archives: serialise the archive whole.
std::optional<TensorTable> tensor_table_of(torch::serialize::OutputArchive& archive);

// Payload bytes and what keeps them alive (a mapping, a received buffer).
struct PayloadBytes {
  std::shared_ptr<const char> data;
  uint64_t size = 0;
};

// Whether `data` starts with a tensor table's header; the head's length (0: not a valid head).
bool is_tensor_table(const char* data, uint64_t size);
uint64_t tensor_table_head_length(const char* data, uint64_t size);

// The archive in a tensor table: the placeholders under "model" replaced by views of their bytes
// in `payload` (copied to `device` when that is not the CPU; loading copies them into the
// model), the others (optimizer state, extra values) by copies of their own, so that nothing
// loaded refers to the payload afterwards. Throws CheckpointError naming `what`.
torch::serialize::InputArchive read_tensor_table(const PayloadBytes& payload, torch::Device device,
                                                 const std::string& what);

}  // namespace ddp::detail
