// Process groups over c10d: init_process_group() builds the store (TCPStore / FileStore) and the
// backend (gloo on CPU, NCCL with CUDA) for this process; collectives are free functions on a
// Group (default: the world). Call init/destroy from one thread; collectives on one group must
// be issued in the same order on every member, from one thread at a time. All calls block
// until done or until the group's timeout, then throw TimeoutError / CommError.
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
}

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
};

// Reduction operation for all_reduce.
enum class ReduceOp { kSum, kAvg, kProduct, kMin, kMax };

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

void barrier(const Group& group = {});
// In place: every member ends with src's tensor (src is a global rank).
void broadcast(torch::Tensor& tensor, int src = 0, const Group& group = {});
void all_reduce(torch::Tensor& tensor, ReduceOp op = ReduceOp::kSum, const Group& group = {});
// Returns one tensor per member (in group-rank order); all must have the same shape.
std::vector<torch::Tensor> all_gather(const torch::Tensor& tensor, const Group& group = {});

}  // namespace ddp
