// DataParallelEngine: DDP construction (parameter collection, cross-rank model check,
// parameter/buffer broadcast) and the per-forward protocol around the Reducer (inside a
// join(), the forward's join round: join.cpp).
#include <unordered_set>

#include "ddp/distributed_data_parallel.hpp"
#include "runtime/src/group/broadcast_coalesced.hpp"
#include "runtime/src/group/group_impl.hpp"
#include "runtime/src/parallel/reducer.hpp"
#include "runtime/src/parallel/parameter_signature.hpp"
#include "runtime/src/group/shape_check.hpp"

namespace ddp {
namespace {

constexpr size_t kBroadcastBucketBytes = 250u * 1024 * 1024;

// Every rank must hold the same parameters (count, shapes, dtypes); names the first mismatch.
void verify_same_model(const std::vector<torch::Tensor>& params, const std::vector<std::string>& names,
                       const Group& group) {
  auto count = torch::tensor({static_cast<int64_t>(params.size())}, torch::kLong);
  auto counts = all_gather(count, group);
  const auto ranks = group.ranks();
  for (size_t r = 1; r < counts.size(); ++r) {
    if (counts[r].item<int64_t>() != counts[0].item<int64_t>()) {
      throw DdpError("DistributedDataParallel expects the same model on every rank, but rank " +
                     std::to_string(ranks[0]) + " has " + std::to_string(counts[0].item<int64_t>()) +
                     " parameters while rank " + std::to_string(ranks[r]) + " has " +
                     std::to_string(counts[r].item<int64_t>()) + "; build the model identically on all ranks");
    }
  }
  if (const auto m = detail::first_parameter_mismatch(params, group)) {
    throw DdpError("DistributedDataParallel expects the same model on every rank, but parameter " +
                   std::to_string(m->index) + " '" + names[m->index] + "' is " + m->mine + " on rank " +
                   std::to_string(m->rank) + " and " + m->theirs + " on rank " + std::to_string(m->other));
  }
}

}  // namespace

namespace detail {

void broadcast_coalesced(const std::vector<torch::Tensor>& tensors, const Group& group, int root) {
  torch::NoGradGuard no_grad;
  size_t start = 0;
  while (start < tensors.size()) {
    size_t end = start;
    size_t bytes = 0;
    while (end < tensors.size() && tensors[end].scalar_type() == tensors[start].scalar_type() &&
           tensors[end].device() == tensors[start].device() && (end == start || bytes < kBroadcastBucketBytes)) {
      bytes += static_cast<size_t>(tensors[end].numel()) * tensors[end].element_size();
      ++end;
    }
    std::vector<torch::Tensor> flat_parts;
    for (size_t i = start; i < end; ++i) flat_parts.push_back(tensors[i].detach().reshape({-1}));
    auto flat = torch::cat(flat_parts);
    detail::shape_check::Skip unchecked;  // every forward (buffers): the same model on every rank
    broadcast(flat, root < 0 ? group.ranks().front() : root, group);
    int64_t offset = 0;
    for (size_t i = start; i < end; ++i) {
      auto t = tensors[i];
      t.detach().copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
    start = end;
  }
}

}  // namespace detail
using detail::broadcast_coalesced;

DataParallelEngine::DataParallelEngine(std::shared_ptr<torch::nn::Module> module, DdpOptions options)
    : module_(std::move(module)), options_(std::move(options)) {
  if (!is_initialized()) {
    throw ConfigError("DistributedDataParallel needs a process group; call ddp::init_process_group() first");
  }
  if (options_.bucket_cap_mb <= 0 || options_.first_bucket_cap_mb <= 0) {
    throw ConfigError("DdpOptions bucket_cap_mb and first_bucket_cap_mb must be > 0");
  }
  if (!options_.group.is_member()) throw ConfigError("this rank is not a member of DdpOptions::group");
  std::vector<torch::Tensor> params;
  std::vector<std::string> names;
  std::unordered_set<const void*> seen;
  for (const auto& item : module_->named_parameters(true)) {
    const auto& p = item.value();
    if (!p.requires_grad() || !seen.insert(p.unsafeGetTensorImpl()).second) continue;
    params.push_back(p);
    names.push_back(item.key());
  }
  if (params.empty()) throw DdpError("DistributedDataParallel: the module has no parameters that require grad");
  for (const auto& p : params) {
    if (p.device().type() != params.front().device().type()) {
      throw DdpError("DistributedDataParallel: the module's parameters are on several device types (" +
                     params.front().device().str() + ", " + p.device().str() + "); move the module to one device");
    }
  }
  for (const auto& item : module_->named_buffers(true)) buffers_.push_back(item.value());
  if (options_.group.size() > 1 && options_.init_sync) {
    verify_same_model(params, names, options_.group);
    std::vector<torch::Tensor> state = params;
    if (options_.broadcast_buffers) state.insert(state.end(), buffers_.begin(), buffers_.end());
    broadcast_coalesced(state, options_.group);
  }
  params_ = params;
  reducer_ = std::make_unique<detail::Reducer>(std::move(params), std::move(names), options_);
}

DataParallelEngine::~DataParallelEngine() = default;

void DataParallelEngine::pre_forward() {
  if (join_) return join_pre_forward();
  if (torch::GradMode::is_enabled()) reducer_->prepare_for_forward();
  if (options_.broadcast_buffers && require_forward_param_sync_ && !buffers_.empty() && options_.group.size() > 1) {
    broadcast_coalesced(buffers_, options_.group);
  }
}

void DataParallelEngine::post_forward(const std::vector<torch::Tensor>& outputs) {
  if (torch::GradMode::is_enabled() && require_backward_grad_sync_) {
    reducer_->prepare_for_backward(outputs);
    require_forward_param_sync_ = true;
  } else {
    require_forward_param_sync_ = false;
  }
}

void DataParallelEngine::register_comm_hook(CommHook hook) { reducer_->set_comm_hook(std::move(hook)); }
void DataParallelEngine::set_require_backward_grad_sync(bool value) { require_backward_grad_sync_ = value; }
bool DataParallelEngine::require_backward_grad_sync() const { return require_backward_grad_sync_; }
std::vector<std::vector<size_t>> DataParallelEngine::bucket_indices() const { return reducer_->bucket_indices(); }

}  // namespace ddp
