// join() for uneven inputs (PyTorch's Join + DDP's _DDPJoinHook, one joinable). Every forward
// inside a join starts with a join round: one SUM all-reduce of [active, sync, buffers,
// one-hot(rank)] to which ranks still training contribute and joined ranks add zeros. It tells
// every rank how many are training (the divisor when not dividing by the initial world size),
// whether the backward will all-reduce (no_sync) and buffers are broadcast, and from which
// rank (the highest one training, PyTorch's authoritative rank). A joined rank then does what
// the forward and backward do collectively, with zeros, until a round counts no one training.
#include <atomic>

#include "runtime/src/group/broadcast_coalesced.hpp"
#include "ddp/distributed_data_parallel.hpp"
#include "runtime/src/group/group_impl.hpp"
#include "runtime/src/parallel/join_guard.hpp"
#include "runtime/src/group/shape_check.hpp"
#include "runtime/src/parallel/reducer.hpp"

namespace ddp {
namespace detail::join_guard {
namespace {

std::atomic<int> open_joins{0};
thread_local int internal_depth = 0;

}  // namespace

void open() { ++open_joins; }
void close() noexcept { --open_joins; }
bool is_open() { return open_joins.load() > 0; }
Internal::Internal() { ++internal_depth; }
Internal::~Internal() { --internal_depth; }

void check(const char* collective) {
  if (internal_depth > 0 || !is_open()) return;
  throw DdpError(std::string("ddp::") + collective +
                 " was called inside ddp::join(): ranks that ran out of inputs only match the DDP model's "
                 "forward and backward, so this collective would hang; call it before join() or after it returns");
}

}  // namespace detail::join_guard

using detail::broadcast_coalesced;

namespace {

constexpr int64_t kRoundHeader = 3;  // active, sync, buffers; then one slot per group rank

// Opens the join on `engine` and the collective guard; closes both however the body ends.
class JoinScope {
 public:
  JoinScope(DataParallelEngine& engine, const JoinOptions& options) : engine_(engine) {
    engine_.begin_join(options);
    detail::join_guard::open();
  }
  ~JoinScope() {
    detail::join_guard::close();
    engine_.end_join();
  }
  JoinScope(const JoinScope&) = delete;
  JoinScope& operator=(const JoinScope&) = delete;

 private:
  DataParallelEngine& engine_;
};

}  // namespace

void DataParallelEngine::begin_join(const JoinOptions& options) {
  if (join_) throw DdpError("ddp::join() is already running for this model; join() does not nest");
  if (detail::join_guard::is_open()) {
    throw DdpError("ddp::join() is already running for another model; join one DistributedDataParallel at a time");
  }
  join_ = std::make_unique<JoinOptions>(options);
}

void DataParallelEngine::end_join() noexcept {
  join_.reset();
  try {
    reducer_->set_divisor(options_.group.size());
  } catch (...) {  // only allocation of a scalar can fail here
  }
}

DataParallelEngine::JoinRound DataParallelEngine::join_round(bool active) {
  const Group& group = options_.group;
  auto flags = torch::zeros({kRoundHeader + group.size()}, torch::kLong);
  if (active) {
    auto f = flags.accessor<int64_t, 1>();
    f[0] = 1;
    f[1] = require_backward_grad_sync_ ? 1 : 0;
    f[2] = options_.broadcast_buffers && require_forward_param_sync_ && !buffers_.empty() ? 1 : 0;
    f[kRoundHeader + group.rank()] = 1;
  }
  detail::join_guard::Internal internal;
  detail::shape_check::Skip unchecked;  // one per forward: the same flags on every rank
  all_reduce(flags, ReduceOp::kSum, group);
  auto f = flags.accessor<int64_t, 1>();
  JoinRound round;
  round.active = static_cast<int>(f[0]);
  round.sync = f[1] > 0;
  round.buffers = f[2] > 0;
  for (int r = group.size() - 1; r >= 0 && round.authority < 0; --r) {
    if (f[kRoundHeader + r] > 0) round.authority = group.ranks()[static_cast<size_t>(r)];
  }
  return round;
}

// A forward inside a join, on a rank still training.
void DataParallelEngine::join_pre_forward() {
  if (!torch::GradMode::is_enabled()) {
    throw DdpError(
        "a forward with gradients disabled (evaluation) inside ddp::join(): ranks that have joined "
        "cannot match it; evaluate after join() returns");
  }
  const JoinRound round = join_round(true);
  reducer_->set_divisor(join_->divide_by_initial_world_size ? options_.group.size() : round.active);
  detail::join_guard::Internal internal;
  reducer_->prepare_for_forward();
  if (round.buffers) broadcast_coalesced(buffers_, options_.group, round.authority);
}

bool DataParallelEngine::shadow_step() {
  const JoinRound round = join_round(false);
  if (round.active == 0) return false;
  detail::join_guard::Internal internal;
  reducer_->prepare_for_forward();  // the one-time bucket rebuild, when the others do it
  if (round.buffers) broadcast_coalesced(buffers_, options_.group, round.authority);
  if (round.sync) reducer_->shadow_backward();
  require_forward_param_sync_ = round.sync;
  return true;
}

void DataParallelEngine::sync_final_model(bool last_joiner) {
  const Group& group = options_.group;
  auto last = torch::zeros({group.size()}, torch::kLong);
  if (last_joiner) last[group.rank()] = 1;
  detail::join_guard::Internal internal;
  all_reduce(last, ReduceOp::kSum, group);
  int root = -1;
  for (int r = group.size() - 1; r >= 0 && root < 0; --r) {
    if (last[r].item<int64_t>() > 0) root = group.ranks()[static_cast<size_t>(r)];
  }
  std::vector<torch::Tensor> state = params_;
  if (options_.broadcast_buffers) state.insert(state.end(), buffers_.begin(), buffers_.end());
  broadcast_coalesced(state, group, root);
}

JoinResult join(DataParallelEngine& engine, const std::function<void()>& body, const JoinOptions& options) {
  JoinResult result;
  JoinScope scope(engine, options);
  body();  // an exception leaves without shadowing, as PyTorch's Join.__exit__ does
  result.last_joiner = true;
  while (engine.shadow_step()) {
    result.last_joiner = false;
    ++result.shadowed_steps;
  }
  engine.sync_final_model(result.last_joiner);
  return result;
}

}  // namespace ddp
