// Process groups over c10d: init_process_group() builds the store (TCPStore / FileStore) and the
// backend (gloo on CPU, NCCL with CUDA) for this process; collectives are free functions on a
// Group (default: the world), torch.distributed's set, each also in ddp::async:: returning a
// Work. Call init/destroy from one thread; collectives on one group must be issued in the same
// order on every member, from one thread at a time. Blocking calls block until done or until
// the group's timeout, then throw TimeoutError / CommError (Work::wait() likewise).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "ddp/env.hpp"
#include "ddp/errors.hpp"

namespace ddp {

namespace detail {
class GroupImpl;
struct WorkState;
}  // namespace detail

// Default timeout for store connection, rendezvous and collectives.
inline constexpr std::chrono::seconds kDefaultTimeout{300};

struct ProcessGroupOptions {
  // "auto" (NCCL when CUDA is available, else gloo), "gloo" or "nccl".
  std::string backend = "auto";
  // "env://" (MASTER_ADDR/MASTER_PORT), "tcp://host:port" or "file:///path" (shared file).
  std::string init_method = "env://";
  std::chrono::milliseconds timeout = kDefaultTimeout;
  // -1: take RANK / WORLD_SIZE from the environment (WorkerEnv::from_env()).
  int rank = -1;
  int world_size = -1;
  // Before each collective of the API below, the members exchange what they pass (op, dtype,
  // shapes, root, split sizes) in one small all_gather, so that a mismatch is a ConfigError
  // naming the ranks and shapes on every member (gloo would abort the receiving process or
  // fill buffers partly). Costs one small collective each; turn it off for speed, or when
  // ranks that do not run libddp (Python torch.distributed) share the group.
  bool check_shapes = true;
};

// Reduction operation (torch.distributed.ReduceOp). kBand/kBor/kBxor: integer and bool tensors.
enum class ReduceOp { kSum, kAvg, kProduct, kMin, kMax, kBand, kBor, kBxor };

// A handle to a process group. Cheap to copy; a default-constructed Group means "the world".
class Group {
 public:
  Group() = default;
  explicit Group(std::shared_ptr<detail::GroupImpl> impl) : impl_(std::move(impl)) {}

  // This process's rank within the group, or -1 when it is not a member.
  int rank() const;
  int size() const;
  // Global ranks of the members, in group-rank order.
  std::vector<int> ranks() const;
  bool is_member() const { return rank() >= 0; }
  // "gloo" or "nccl".
  std::string backend() const;

  // Implementation access for libddp itself (reducer, hooks). Never null for a valid group;
  // throws ConfigError if the process group was not initialized.
  detail::GroupImpl& impl() const;

 private:
  std::shared_ptr<detail::GroupImpl> impl_;  // null = world
};

// Reads the environment (WorkerEnv::from_env) unless options give rank/world_size, connects
// the store (rank 0 hosts a TCPStore; others retry until the timeout), namespaces keys by
// TORCHELASTIC_RESTART_COUNT, creates the backend and sets the CUDA device from LOCAL_RANK.
// Throws ConfigError (bad backend / init_method / env), TimeoutError (peer never came).
void init_process_group(const ProcessGroupOptions& options = {});
bool is_initialized();
// Tears down the world and all subgroups; safe to call when not initialized.
void destroy_process_group();

int get_rank();        // 0 when not initialized
int get_world_size();  // 1 when not initialized
// The environment this process was initialized with (or from_env() if not initialized).
const WorkerEnv& worker_env();
// The device this worker computes on: cuda:LOCAL_RANK (within the visible devices) when the
// backend is NCCL, else CPU.
torch::Device device();

// Creates a subgroup. Every process of the world must call it with the same ranks (like
// torch.distributed.new_group); non-members get a Group whose is_member() is false.
Group new_group(std::vector<int> ranks);

// A collective in flight (torch.distributed's Work, from async_op=True). Cheap to copy (copies
// share it). wait() blocks until it completed or the group's timeout passed and throws the
// same ddp::Errors as the blocking form (again on every call after a failure); only then are
// the outputs final. Call wait() from the thread that issued the collective. A default Work is
// complete. Dropping a Work without wait() lets the collective finish unobserved.
class Work {
 public:
  Work() = default;
  explicit Work(std::shared_ptr<detail::WorkState> state) : state_(std::move(state)) {}
  void wait();
  // True once it finished (successfully or not; wait() tells which). send/recv on gloo only
  // know it inside wait(): false until then, as in torch.distributed.
  bool is_completed() const;
  // recv/irecv: the global rank the tensor came from (after wait()); -1 otherwise.
  int source_rank() const;

 private:
  std::shared_ptr<detail::WorkState> state_;
};

// Ranks (src, dst) are GLOBAL ranks, as in torch.distributed; tensors must be contiguous.
// Members must pass the same op, dtype and shapes, and the same root (ProcessGroupOptions::
// check_shapes makes a mismatch a ConfigError). Torch names in docs/runtime.md "Collectives".

void barrier(const Group& group = {});
// In place: every member ends with src's tensor (src is a global rank).
void broadcast(torch::Tensor& tensor, int src = 0, const Group& group = {});
void all_reduce(torch::Tensor& tensor, ReduceOp op = ReduceOp::kSum, const Group& group = {});
// Returns one tensor per member (in group-rank order); all must have the same shape.
std::vector<torch::Tensor> all_gather(const torch::Tensor& tensor, const Group& group = {});
// all_gather_into_tensor: `output` holds size() x input's elements, members in group-rank order
// along dim 0 (e.g. [size * n, ...] or [size, n, ...]).
void all_gather_into_tensor(torch::Tensor& output, const torch::Tensor& input, const Group& group = {});
// The result lands in dst's tensor; the others' tensor is unspecified afterwards (gloo reduces
// in it), as in torch.distributed.
void reduce(torch::Tensor& tensor, int dst = 0, ReduceOp op = ReduceOp::kSum, const Group& group = {});
// dst receives one tensor per member (group-rank order); the others get an empty vector.
std::vector<torch::Tensor> gather(const torch::Tensor& tensor, int dst = 0, const Group& group = {});
// src passes size() tensors shaped like `output` (scatter_list); the others pass {}.
void scatter(torch::Tensor& output, const std::vector<torch::Tensor>& scatter_list, int src = 0,
             const Group& group = {});
// Member i's output = op over members of their inputs[i] (torch.distributed.reduce_scatter).
void reduce_scatter(torch::Tensor& output, const std::vector<torch::Tensor>& inputs, ReduceOp op = ReduceOp::kSum,
                    const Group& group = {});
// reduce_scatter_tensor: input holds size() x output's elements, chunk i for member i.
void reduce_scatter_tensor(torch::Tensor& output, const torch::Tensor& input, ReduceOp op = ReduceOp::kSum,
                           const Group& group = {});
// all_to_all_single: input's dim 0 is split into input_splits[j] rows for member j; output gets
// output_splits[j] rows from member j. Empty splits: equal parts of dim 0.
void all_to_all_single(torch::Tensor& output, const torch::Tensor& input,
                       const std::vector<int64_t>& output_splits = {}, const std::vector<int64_t>& input_splits = {},
                       const Group& group = {});
// all_to_all: inputs[j] goes to member j, outputs[j] comes from member j (one dtype).
void all_to_all(std::vector<torch::Tensor>& outputs, const std::vector<torch::Tensor>& inputs, const Group& group = {});
// Point to point. recv's src -1: from any member; it returns the sender's global rank. The
// buffer must hold exactly what is sent: gloo cannot check (a longer message aborts the
// receiving process in gloo, a shorter one fills part of the buffer).
void send(const torch::Tensor& tensor, int dst, const Group& group = {}, int tag = 0);
int recv(torch::Tensor& tensor, int src = -1, const Group& group = {}, int tag = 0);
Work isend(const torch::Tensor& tensor, int dst, const Group& group = {}, int tag = 0);
Work irecv(torch::Tensor& tensor, int src = -1, const Group& group = {}, int tag = 0);

// The same collectives, started and returned as a Work (torch's async_op=True). Arguments
// must stay alive and untouched until wait() returned; outputs are final only then. The
// shape check (when on) runs before the collective starts, blocking briefly.
namespace async {
Work barrier(const Group& group = {});
Work broadcast(torch::Tensor& tensor, int src = 0, const Group& group = {});
Work all_reduce(torch::Tensor& tensor, ReduceOp op = ReduceOp::kSum, const Group& group = {});
// `outputs` is resized to size() and filled by wait().
Work all_gather(std::vector<torch::Tensor>& outputs, const torch::Tensor& tensor, const Group& group = {});
Work all_gather_into_tensor(torch::Tensor& output, const torch::Tensor& input, const Group& group = {});
Work reduce(torch::Tensor& tensor, int dst = 0, ReduceOp op = ReduceOp::kSum, const Group& group = {});
// On dst `outputs` is resized to size() and filled by wait(); elsewhere left empty.
Work gather(std::vector<torch::Tensor>& outputs, const torch::Tensor& tensor, int dst = 0, const Group& group = {});
Work scatter(torch::Tensor& output, const std::vector<torch::Tensor>& scatter_list, int src = 0,
             const Group& group = {});
Work reduce_scatter(torch::Tensor& output, const std::vector<torch::Tensor>& inputs, ReduceOp op = ReduceOp::kSum,
                    const Group& group = {});
Work reduce_scatter_tensor(torch::Tensor& output, const torch::Tensor& input, ReduceOp op = ReduceOp::kSum,
                           const Group& group = {});
Work all_to_all_single(torch::Tensor& output, const torch::Tensor& input,
                       const std::vector<int64_t>& output_splits = {}, const std::vector<int64_t>& input_splits = {},
                       const Group& group = {});
Work all_to_all(std::vector<torch::Tensor>& outputs, const std::vector<torch::Tensor>& inputs, const Group& group = {});
Work send(const torch::Tensor& tensor, int dst, const Group& group = {}, int tag = 0);
Work recv(torch::Tensor& tensor, int src = -1, const Group& group = {}, int tag = 0);
}  // namespace async

}  // namespace ddp
