// GroupImpl: one process group = a c10d backend plus its member list, and the process-wide
// registry (world + subgroups) behind ddp::Group. Collectives translate c10d/gloo exceptions
// into ddp::TimeoutError / ddp::CommError with the group and peer context, and feed the
// launcher's progress record (FedCollective). Not thread-safe for init/destroy; collectives
// follow c10d's rules (same order on every member).
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "ddp/process_group.hpp"
#include "runtime/src/process/progress_feed.hpp"
#include "runtime/src/torch_compat.hpp"

namespace ddp::detail {

class GroupImpl {
 public:
  GroupImpl(compat::BackendPtr backend, compat::StorePtr store, std::vector<int> ranks, int rank,
            std::string backend_name, std::string where, std::chrono::milliseconds timeout, uint32_t id = 0)
      : backend_(std::move(backend)),
        store_(std::move(store)),
        ranks_(std::move(ranks)),
        rank_(rank),
        backend_name_(std::move(backend_name)),
        where_(std::move(where)),
        timeout_(timeout),
        id_(id) {}

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(ranks_.size()); }
  const std::vector<int>& ranks() const { return ranks_; }
  const std::string& backend_name() const { return backend_name_; }
  compat::Backend& backend() const;
  const compat::BackendPtr& backend_ptr() const { return backend_; }  // null for non-members
  const compat::StorePtr& store() const { return store_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  // 0 for the world, then 1, 2, ... in new_group() order (the progress record's group).
  uint32_t id() const { return id_; }
  // Maps a global rank to this group's rank; throws ConfigError if not a member.
  int group_rank_of(int global_rank) const;
  // ProcessGroupOptions::check_shapes (subgroups inherit the world's).
  bool check_shapes() const { return check_shapes_; }
  void set_check_shapes(bool on) { check_shapes_ = on; }

  // Blocking wait on a work handle; `what` names the collective in errors.
  void wait(const compat::WorkPtr& work, const std::string& what) const;
  // Rethrows the current exception (inside a catch) as TimeoutError / CommError with context.
  [[noreturn]] void rethrow_comm_error(const std::string& what) const;

 private:
  compat::BackendPtr backend_;  // null for non-members
  compat::StorePtr store_;
  std::vector<int> ranks_;  // global ranks of the members
  int rank_;                // this process's rank in the group, -1 if not a member
  std::string backend_name_;
  std::string where_;  // "store 10.0.0.1:29500" for messages
  std::chrono::milliseconds timeout_;
  uint32_t id_;
  bool check_shapes_ = true;
};

// The progress record's dtype for a tensor's element type.
progress::DType progress_dtype(c10::ScalarType type);

// Enters a collective in the progress record and returns its sequence number: the record's
// when the feed is on, else this process's own count of libddp collectives (for messages).
// `tensor` may be undefined.
uint64_t enter_collective(const GroupImpl& g, progress::Op op, const torch::Tensor& tensor);

// A synchronous collective in the progress record: entered on construction, completed on
// destruction (also when it throws, like python/ddp_progress.py). `tensor` may be undefined.
class FedCollective {
 public:
  FedCollective(const GroupImpl& g, progress::Op op, const torch::Tensor& tensor)
      : seq_(enter_collective(g, op, tensor)) {}
  ~FedCollective() { feed::complete(seq_); }
  FedCollective(const FedCollective&) = delete;
  FedCollective& operator=(const FedCollective&) = delete;
  uint64_t seq() const { return seq_; }

 private:
  uint64_t seq_;
};

// Feeds an asynchronous collective: entered now, completed when its future completes.
void feed_async(const GroupImpl& g, progress::Op op, const torch::Tensor& tensor,
                const c10::intrusive_ptr<c10::ivalue::Future>& future);

// The process-wide state behind init_process_group().
struct Registry {
  std::shared_ptr<GroupImpl> world;
  WorkerEnv env;
  compat::StorePtr store;  // namespaced root store (restart prefix)
  int next_group_id = 0;
  torch::Device device{torch::kCPU};
};
Registry& registry();

// Store + backend creation for init_process_group (store_init.cpp).
struct Rendezvous {
  compat::StorePtr store;
  std::string where;
};
Rendezvous connect_store(const ProcessGroupOptions& options, const WorkerEnv& env);

}  // namespace ddp::detail
