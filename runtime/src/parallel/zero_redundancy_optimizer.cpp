// ZeroRedundancyOptimizer: the partition (PyTorch's sorted-greedy), the cross-rank parameter
// check, the per-owner broadcast buckets, and the state moves between the local, per-shard and
// consolidated optimizers. State entries are keyed by TensorImpl address (LibTorch's own
// scheme); every optimizer built here holds the same parameter tensors, so keys carry over.
#include "ddp/zero_redundancy_optimizer.hpp"

#include <algorithm>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <typeinfo>

#include "runtime/src/parallel/parameter_signature.hpp"
#include "runtime/src/group/shape_check.hpp"
#include "runtime/src/torch_compat.hpp"
namespace ddp {
namespace {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// Same parameter count, shapes and dtypes, and the same bucket cap on every member; else the
// same DdpError on every member (the check itself is two all_gathers, so nobody hangs).
void check_same_parameters(const std::vector<torch::Tensor>& params, int64_t bucket_bytes, const Group& group) {
  const auto ranks = group.ranks();
  auto heads = all_gather(torch::tensor({static_cast<int64_t>(params.size()), bucket_bytes}, torch::kLong), group);
  const int64_t* h0 = heads[0].data_ptr<int64_t>();
  for (size_t r = 1; r < heads.size(); ++r) {
    const int64_t* h = heads[r].data_ptr<int64_t>();
    if (h[0] != h0[0]) {
      throw DdpError("ZeroRedundancyOptimizer needs the same parameter list on every rank, but rank " +
                     std::to_string(ranks[0]) + " passes " + std::to_string(h0[0]) + " parameters and rank " +
                     std::to_string(ranks[r]) + " passes " + std::to_string(h[0]));
    }
    if (h[1] != h0[1]) {
      throw DdpError("ZeroOptions::bucket_cap_mb must be the same on every rank, but rank " + std::to_string(ranks[0]) +
                     " has " + std::to_string(h0[1]) + " bytes and rank " + std::to_string(ranks[r]) + " " +
                     std::to_string(h[1]));
    }
  }
  if (const auto m = detail::first_parameter_mismatch(params, group)) {
    throw DdpError("ZeroRedundancyOptimizer needs the same parameter list on every rank, but parameter " +
                   std::to_string(m->index) + " is " + m->mine + " on rank " + std::to_string(m->rank) + " and " +
                   m->theirs + " on rank " + std::to_string(m->other));
  }
}

// The tensors of one parameter's state, for the state types LibTorch ships; nullopt otherwise.
std::optional<std::vector<torch::Tensor>> state_tensors(const torch::optim::OptimizerParamState& state) {
  using namespace torch::optim;
  if (const auto* s = dynamic_cast<const AdamParamState*>(&state))
    return std::vector<torch::Tensor>{s->exp_avg(), s->exp_avg_sq(), s->max_exp_avg_sq()};
  if (const auto* s = dynamic_cast<const AdamWParamState*>(&state))
    return std::vector<torch::Tensor>{s->exp_avg(), s->exp_avg_sq(), s->max_exp_avg_sq()};
  if (const auto* s = dynamic_cast<const SGDParamState*>(&state))
    return std::vector<torch::Tensor>{s->momentum_buffer()};
  if (const auto* s = dynamic_cast<const AdagradParamState*>(&state)) return std::vector<torch::Tensor>{s->sum()};
  if (const auto* s = dynamic_cast<const RMSpropParamState*>(&state))
    return std::vector<torch::Tensor>{s->square_avg(), s->momentum_buffer(), s->grad_avg()};
  return std::nullopt;
}

// Moves (or clones) every state entry of `from` into `to`; both hold the same tensors.
void transfer_state(torch::optim::Optimizer& from, torch::optim::Optimizer& to, bool clone) {
  for (auto& [key, state] : from.state()) to.state()[key] = clone ? state->clone() : std::move(state);
  if (!clone) from.state().clear();
}

std::string serialized(const torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  std::ostringstream out;
  archive.save_to(out);
  return out.str();
}

}  // namespace

std::vector<int> zero_partition(const std::vector<int64_t>& numels, int world_size) {
  if (world_size < 1) throw ConfigError("zero_partition: world_size must be >= 1");
  std::vector<size_t> order(numels.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return numels[a] > numels[b]; });
  std::vector<int64_t> sizes(static_cast<size_t>(world_size), 0);
  std::vector<int> owners(numels.size(), 0);
  for (size_t i : order) {
    const auto rank = static_cast<size_t>(std::min_element(sizes.begin(), sizes.end()) - sizes.begin());
    owners[i] = static_cast<int>(rank);
    sizes[rank] += numels[i];
  }
  return owners;
}

namespace {

// ConfigError for what the constructor cannot work with: no process group, a rank outside the
// group, no parameters (or a sparse or undefined one), no factory, a bucket cap that is not > 0.
void check_arguments(const std::vector<torch::Tensor>& params, const OptimizerFactory& factory,
                     const ZeroOptions& options) {
  if (!is_initialized()) {
    throw ConfigError("ZeroRedundancyOptimizer needs a process group; call ddp::init_process_group() first");
  }
  if (!options.group.is_member()) {
    throw ConfigError(
        "this rank is not a member of ZeroOptions::group; create the ZeroRedundancyOptimizer only on "
        "the group's ranks");
  }
  if (params.empty()) throw ConfigError("ZeroRedundancyOptimizer got an empty parameter list");
  if (!factory) throw ConfigError("ZeroRedundancyOptimizer needs an optimizer factory (see optimizer_factory<T>)");
  if (!(options.bucket_cap_mb > 0)) throw ConfigError("ZeroOptions::bucket_cap_mb must be > 0");
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].defined() || params[i].is_sparse()) {
      throw ConfigError("ZeroRedundancyOptimizer parameter " + std::to_string(i) +
                        " is undefined or sparse; it takes dense tensors only");
    }
  }
}

}  // namespace

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::vector<torch::Tensor> params, OptimizerFactory factory,
                                                 ZeroOptions options)
    // No parameter group yet: the base would clone the placeholder defaults. The real defaults and
    // the one group over all parameters are set below, once the local optimizer exists.
    : Optimizer(std::vector<torch::optim::OptimizerParamGroup>{}, std::make_unique<torch::optim::OptimizerOptions>()),
      factory_(std::move(factory)),
      options_(std::move(options)),
      params_(std::move(params)) {
  check_arguments(params_, factory_, options_);
  group_rank_ = options_.group.rank();
  const auto bucket_bytes = static_cast<int64_t>(options_.bucket_cap_mb * 1024 * 1024);
  check_same_parameters(params_, bucket_bytes, options_.group);

  std::vector<int64_t> numels;
  for (const auto& p : params_) numels.push_back(p.numel());
  const int world = options_.group.size();
  owners_ = zero_partition(numels, world);
  std::vector<size_t> order(params_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return numels[a] > numels[b]; });
  shards_.assign(static_cast<size_t>(world), {});
  for (size_t i : order) shards_[static_cast<size_t>(owners_[i])].push_back(i);

  const auto ranks = options_.group.ranks();
  for (int r = 0; r < world; ++r) {
    int64_t bytes = 0;
    for (size_t i : shards_[static_cast<size_t>(r)]) {
      const auto& p = params_[i];
      const int64_t size = p.numel() * static_cast<int64_t>(p.element_size());
      const bool fits = !buckets_.empty() && buckets_.back().root == ranks[static_cast<size_t>(r)] &&
                        params_[buckets_.back().indices.front()].scalar_type() == p.scalar_type() &&
                        params_[buckets_.back().indices.front()].device() == p.device() && bytes + size <= bucket_bytes;
      if (!fits) {
        buckets_.push_back(Bucket{ranks[static_cast<size_t>(r)], {}});
        bytes = 0;
      }
      buckets_.back().indices.push_back(i);
      bytes += size;
    }
  }

  local_ = factory_(shard_params(group_rank_));
  if (!local_ || local_->param_groups().size() != 1) {
    throw ConfigError(
        "the ZeroRedundancyOptimizer factory must return an optimizer with one parameter group over "
        "the parameters it is given");
  }
  defaults_ = local_->defaults().clone();
  add_param_group(torch::optim::OptimizerParamGroup(params_));
}

ZeroRedundancyOptimizer::~ZeroRedundancyOptimizer() = default;

std::vector<torch::Tensor> ZeroRedundancyOptimizer::shard_params(int group_rank) const {
  std::vector<torch::Tensor> out;
  for (size_t i : shards_.at(static_cast<size_t>(group_rank))) out.push_back(params_[i]);
  return out;
}

torch::Tensor ZeroRedundancyOptimizer::step(LossClosure closure) {
  local_->param_groups()[0].set_options(param_groups_[0].options().clone());
  torch::Tensor loss = local_->step(std::move(closure));
  broadcast_parameters();
  return loss;
}

void ZeroRedundancyOptimizer::broadcast_parameters() {
  torch::NoGradGuard no_grad;
  detail::shape_check::Skip unchecked;  // every step: the parameter lists were checked at construction
  const int me = options_.group.ranks()[static_cast<size_t>(group_rank_)];
  for (const auto& bucket : buckets_) {
    const auto& first = params_[bucket.indices.front()];
    if (bucket.indices.size() == 1 && first.is_contiguous()) {
      torch::Tensor data = first.detach();
      broadcast(data, bucket.root, options_.group);
      continue;
    }
    torch::Tensor flat;
    if (bucket.root == me) {
      std::vector<torch::Tensor> parts;
      for (size_t i : bucket.indices) parts.push_back(params_[i].detach().reshape({-1}));
      flat = torch::cat(parts);
    } else {
      int64_t n = 0;
      for (size_t i : bucket.indices) n += params_[i].numel();
      flat = torch::empty({n}, torch::TensorOptions().dtype(first.scalar_type()).device(first.device()));
    }
    broadcast(flat, bucket.root, options_.group);
    if (bucket.root == me) continue;
    int64_t offset = 0;
    for (size_t i : bucket.indices) {
      auto p = params_[i].detach();
      p.copy_(flat.narrow(0, offset, p.numel()).view(p.sizes()));
      offset += p.numel();
    }
  }
}

void ZeroRedundancyOptimizer::consolidate_state_dict(int to_rank) {
  const auto& group = options_.group;
  const auto ranks = group.ranks();
  if (std::find(ranks.begin(), ranks.end(), to_rank) == ranks.end()) {
    std::string members;
    for (int r : ranks) members += (members.empty() ? "" : ", ") + std::to_string(r);
    throw ConfigError("consolidate_state_dict(" + std::to_string(to_rank) + "): global rank " +
                      std::to_string(to_rank) + " is not a member of the ZeroRedundancyOptimizer's group (ranks " +
                      members + "); pass one of them");
  }
  auto targets = all_gather(torch::tensor({static_cast<int64_t>(to_rank)}, torch::kLong), group);
  for (size_t r = 1; r < targets.size(); ++r) {
    if (targets[r].item<int64_t>() != targets[0].item<int64_t>()) {
      throw DdpError("consolidate_state_dict needs the same to_rank on every rank, but rank " +
                     std::to_string(ranks[0]) + " passes " + std::to_string(targets[0].item<int64_t>()) + " and rank " +
                     std::to_string(ranks[r]) + " passes " + std::to_string(targets[r].item<int64_t>()));
    }
  }
  const int me = ranks[static_cast<size_t>(group_rank_)];
  consolidated_.reset();
  std::unique_ptr<torch::optim::Optimizer> full;
  if (me == to_rank) {
    full = factory_(params_);
    full->param_groups()[0].set_options(param_groups_[0].options().clone());
  }
  // Like PyTorch: one broadcast (length, then bytes) per other shard, the target's own is copied.
  for (size_t r = 0; r < ranks.size(); ++r) {
    const int src = ranks[r];
    if (src == to_rank) {
      if (me == to_rank) transfer_state(*local_, *full, /*clone=*/true);
      continue;
    }
    std::string data;
    if (me == src) data = serialized(*local_);
    auto length = torch::tensor({static_cast<int64_t>(data.size())}, torch::kLong);
    broadcast(length, src, group);
    torch::Tensor bytes = me == src ? torch::from_blob(data.data(), {static_cast<int64_t>(data.size())}, torch::kUInt8)
                                    : torch::empty({length.item<int64_t>()}, torch::kUInt8);
    broadcast(bytes, src, group);
    if (me != to_rank) continue;
    bytes = bytes.cpu().contiguous();
    torch::serialize::InputArchive archive;
    archive.load_from(reinterpret_cast<const char*>(bytes.data_ptr<uint8_t>()), static_cast<size_t>(bytes.numel()),
                      params_.front().device());
    auto shard = factory_(shard_params(static_cast<int>(r)));
    shard->load(archive);
    transfer_state(*shard, *full, /*clone=*/false);
  }
  consolidated_ = std::move(full);
}

void ZeroRedundancyOptimizer::save(torch::serialize::OutputArchive& archive) const {
  if (!consolidated_) {
    const int me = options_.group.ranks()[static_cast<size_t>(group_rank_)];
    throw CheckpointError("ZeroRedundancyOptimizer on rank " + std::to_string(me) +
                          " holds no consolidated state to save; call consolidate_state_dict(" + std::to_string(me) +
                          ") on every rank of its group first");
  }
  consolidated_->param_groups()[0].set_options(param_groups_[0].options().clone());
  consolidated_->save(archive);
}

void ZeroRedundancyOptimizer::load(torch::serialize::InputArchive& archive) {
  auto full = factory_(params_);
  try {
    full->load(archive);
  } catch (const c10::Error& e) {
    // LibTorch asserts (an internal assert) when a state entry lacks one of the type's fields.
    const torch::optim::Optimizer& local = *local_;
    const std::string type = c10::demangle(typeid(local).name());
    const std::string cause = first_line(e.what_without_backtrace());
    throw CheckpointError("the optimizer state does not fit this ZeroRedundancyOptimizer over " + type + " (" +
                          (cause.find("INTERNAL ASSERT") != std::string::npos
                               ? "an entry lacks a field of " + type + "'s state: saved by another optimizer type?"
                               : cause) +
                          "); load one saved by it or by an unsharded " + type +
                          " over the same parameters; nothing was loaded");
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    auto it = full->state().find(compat::optimizer_state_key(params_[i]));
    if (it == full->state().end()) continue;
    const auto tensors = state_tensors(*it->second);
    if (!tensors) continue;
    for (const auto& t : *tensors) {
      if (t.defined() && t.sizes() != params_[i].sizes()) {
        std::ostringstream msg;
        msg << "the optimizer state does not fit this ZeroRedundancyOptimizer: parameter " << i << " is "
            << params_[i].sizes() << " but its state holds a " << t.sizes()
            << " tensor (saved for other parameters?); nothing was loaded";
        throw CheckpointError(msg.str());
      }
    }
  }
  local_->state().clear();
  for (size_t i : local_indices()) {
    auto it = full->state().find(compat::optimizer_state_key(params_[i]));
    if (it != full->state().end()) local_->state()[it->first] = std::move(it->second);
  }
}

int64_t optimizer_state_bytes(const torch::optim::Optimizer& optimizer) {
  if (const auto* zero = dynamic_cast<const ZeroRedundancyOptimizer*>(&optimizer)) {
    return optimizer_state_bytes(zero->local_optimizer());
  }
  int64_t bytes = 0;
  for (const auto& entry : optimizer.state()) {
    const auto tensors = state_tensors(*entry.second);
    if (!tensors) {
      throw ConfigError("optimizer_state_bytes knows the state of Adam, AdamW, SGD, Adagrad and RMSprop only");
    }
    for (const auto& t : *tensors) {
      if (t.defined()) bytes += t.numel() * static_cast<int64_t>(t.element_size());
    }
  }
  return bytes;
}

}  // namespace ddp
