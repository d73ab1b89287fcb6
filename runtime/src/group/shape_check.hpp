// The collectives' shape check (ProcessGroupOptions::check_shapes), as pure logic: each member
// encodes what it passes (op, dtype, shape, root, reduce op, per-peer element counts) into a
// fixed-length int64 fingerprint; after one all_gather every member runs mismatch() on all of
// them and gets the same verdict. Torch-free; no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ddp::detail::shape_check {

struct Call {
  int64_t kind = 0;            // progress::Op of the collective
  int64_t dtype = -1;          // c10::ScalarType, -1: none (barrier)
  int64_t root = -1;           // src/dst as a group rank, -1: none
  int64_t reduce_op = -1;      // ReduceOp, -1: none
  std::vector<int64_t> shape;  // the tensor that must match across members
  // all_to_all: elements sent to / expected from each member (group-rank order); else empty.
  std::vector<int64_t> send_elems, recv_elems;
};

// Fixed length for a group of `size`, whatever the call (so that a desync cannot make the
// exchange itself mismatch).
size_t length(int size);
std::vector<int64_t> encode(const Call& call, int size);
Call decode(const int64_t* data, int size);

// "" when the members agree; otherwise what differs, naming global ranks (`ranks`) and their
// shapes. `names(kind)`, `dtype_name(dtype)` render the numbers.
std::string mismatch(const std::vector<Call>& calls, const std::vector<int>& ranks, const char* (*op_name)(uint32_t),
                     std::string (*dtype_name)(int64_t));

// RAII: collectives this thread issues meanwhile skip the exchange. For libddp's own hot
// paths whose shapes agree by construction (DDP's buffer broadcast, join rounds, PowerSGD's
// all-reduces): they must not pay a collective more per step. Nests.
class Skip {
 public:
  Skip();
  ~Skip();
  Skip(const Skip&) = delete;
  Skip& operator=(const Skip&) = delete;
};
bool skipped();

}  // namespace ddp::detail::shape_check
