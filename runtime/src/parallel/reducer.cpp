// Reducer implementation: bucket views, AccumulateGrad post-hooks, in-order launches,
// finalize callback, find_unused graph walk and the one-time bucket rebuild.
#include "runtime/src/parallel/reducer.hpp"

#include <climits>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "runtime/src/group/group_impl.hpp"
#include "runtime/src/checkpoint/snapshot_fence.hpp"

namespace ddp::detail {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

bool aliases(const torch::Tensor& a, const torch::Tensor& b) {
  return a.defined() && b.defined() && a.data_ptr() == b.data_ptr() && a.sizes() == b.sizes() &&
         a.strides() == b.strides();
}

torch::Tensor result_tensor(const Future& future) {
  const c10::IValue& value = future->value();
  if (value.isTensor()) return value.toTensor();
  if (value.isTensorList() && value.toTensorList().size() >= 1) return value.toTensorList().get(0);
  if (value.isList() && value.toList().size() >= 1 && value.toList().get(0).isTensor()) {
    return value.toList().get(0).toTensor();
  }
  throw DdpError("a communication hook's future must hold a tensor (or a tensor list) of the bucket's size; got " +
                 value.tagKind());
}

std::vector<BucketInput> bucket_inputs_of(const std::vector<torch::Tensor>& params) {
  std::vector<BucketInput> inputs;
  for (const auto& p : params) {
    inputs.push_back({static_cast<size_t>(p.numel()) * p.element_size(),
                      std::string(c10::toString(p.scalar_type())) + "@" + p.device().str()});
  }
  return inputs;
}

}  // namespace

Reducer::Reducer(std::vector<torch::Tensor> params, std::vector<std::string> names, const DdpOptions& options)
    : params_(std::move(params)),
      names_(std::move(names)),
      bucket_inputs_(bucket_inputs_of(params_)),
      options_(options),
      group_(options.group),
      world_size_(options.group.size()),
      divisor_(options.group.size()) {
  const size_t count = params_.size();
  accumulators_.resize(count);
  hook_keys_.resize(count);
  for (size_t i = 0; i < count; ++i) install_hook(i, torch::autograd::impl::grad_accumulator(params_[i]));
  ready_.assign(count, 0);
  unused_.assign(count, 0);
  scale_ = torch::scalar_tensor(1.0 / world_size_, torch::kDouble);
  if (options_.find_unused_parameters) local_used_ = torch::zeros({static_cast<int64_t>(count)}, torch::kInt);
  std::vector<size_t> order;
  for (size_t i = 0; i < count; ++i) order.push_back(count - 1 - i);  // reverse registration ~ ready order
  const bool one_bucket_first = options_.rebuild_buckets && !options_.find_unused_parameters;
  rebuilt_ = !one_bucket_first;
  const auto limits = one_bucket_first ? std::vector<size_t>{SIZE_MAX} : bucket_limits();
  build_buckets(assign_buckets(bucket_inputs_, order, limits));
}

std::vector<size_t> Reducer::bucket_limits() const {
  return {static_cast<size_t>(options_.first_bucket_cap_mb * kMiB), static_cast<size_t>(options_.bucket_cap_mb * kMiB)};
}

void Reducer::install_hook(size_t i, compat::NodePtr acc) {
  if (accumulators_[i]) accumulators_[i]->del_post_hook(hook_keys_[i]);
  hook_keys_[i] = acc->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
      [this, i](const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
        autograd_hook(i);
        return outputs;
      }));
  accumulators_[i] = std::move(acc);
}

void Reducer::refresh_hooks() {
  // Operations such as Module::load (Tensor::set_) can give a parameter a new AccumulateGrad
  // node; the forward just recorded it, so move the hook there or its gradient would be missed.
  for (size_t i = 0; i < params_.size(); ++i) {
    auto acc = torch::autograd::impl::try_get_grad_accumulator(params_[i]);
    if (acc && acc != accumulators_[i]) install_hook(i, std::move(acc));
  }
}

Reducer::~Reducer() {
  for (size_t i = 0; i < accumulators_.size(); ++i) accumulators_[i]->del_post_hook(hook_keys_[i]);
}

// The old buckets' memory, for a rebuild to carve its buckets from: fresh memory costs a page
// fault per 4 KiB in the next backward (11 MB of gradients: ~17 ms on the development VM, the
// second step of every new process). Empty when a gradient still lives there (a bucket view:
// gradient_as_bucket_view with zero_grad(set_to_none=false), torch 1.13's default).
std::vector<torch::Tensor> Reducer::spare_flats() const {
  std::vector<torch::Tensor> spare;
  for (const auto& b : buckets_) spare.push_back(b.flat);
  for (const auto& p : params_) {
    if (!p.grad().defined()) continue;
    for (const auto& flat : spare)
      if (p.grad().storage().is_alias_of(flat.storage())) return {};
  }
  return spare;
}

// `total` zeroed elements of `options`: a slice of a spare flat of the same dtype and device
// that has room (the rest of it stays spare), else fresh memory.
torch::Tensor Reducer::zeroed_flat(std::vector<torch::Tensor>& spare, int64_t total,
                                   const torch::TensorOptions& options) {
  for (auto& s : spare) {
    if (s.dtype() != options.dtype() || s.device() != options.device() || s.numel() < total) continue;
    torch::Tensor out = s.narrow(0, 0, total);
    s = s.narrow(0, total, s.numel() - total);
    return out.zero_();
  }
  return torch::zeros({total}, options);
}

void Reducer::build_buckets(const std::vector<std::vector<size_t>>& assignment) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> spare = spare_flats();
  buckets_.clear();
  locator_.assign(params_.size(), {0, 0});
  for (const auto& indices : assignment) {
    Bucket bucket;
    bucket.params = indices;
    int64_t total = 0;
    for (size_t i : indices) {
      bucket.param_tensors.push_back(params_[i]);  // built once per (re)build, reused by every launch
      total += params_[i].numel();
    }
    bucket.flat = zeroed_flat(spare, total, params_[indices.front()].options().requires_grad(false));
    int64_t offset = 0;
    for (size_t slot = 0; slot < indices.size(); ++slot) {
      const auto& p = params_[indices[slot]];
      // An alias of the flat storage that autograd does not treat as a view, so optimizers may
      // detach_() a gradient that is a bucket view (gradient_as_bucket_view).
      auto view = bucket.flat.narrow(0, offset, p.numel()).view(p.sizes());
      bucket.views.push_back(
          torch::empty({0}, view.options()).set_(view.storage(), view.storage_offset(), view.sizes(), view.strides()));
      locator_[indices[slot]] = {buckets_.size(), slot};
      offset += p.numel();
      if (options_.gradient_as_bucket_view && p.grad().defined()) {
        bucket.views.back().copy_(p.grad());
        params_[indices[slot]].mutable_grad() = bucket.views.back();
      }
    }
    buckets_.push_back(std::move(bucket));
  }
}

std::vector<std::vector<size_t>> Reducer::bucket_indices() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::vector<size_t>> out;
  for (const auto& b : buckets_) out.push_back(b.params);
  return out;
}

void Reducer::set_comm_hook(CommHook hook) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (comm_hook_) throw DdpError("register_comm_hook() may be called only once per DistributedDataParallel");
  comm_hook_ = std::move(hook);
}

std::string Reducer::describe_unready() const {
  std::string list;
  int shown = 0;
  for (size_t i = 0; i < ready_.size(); ++i) {
    if (ready_[i]) continue;
    if (shown++ == 20) {
      list += ", ...";
      break;
    }
    list += (list.empty() ? "" : ", ") + std::to_string(i) + " '" + names_[i] + "'";
  }
  return "DistributedDataParallel: the previous iteration's gradient reduction did not finish on rank " +
         std::to_string(group_.rank()) + ": parameter(s) [" + list +
         "] received no gradient in backward(). Either they were not used to compute the loss — pass "
         "DdpOptions{.find_unused_parameters = true} or remove them from the model — or backward() did not run on "
         "(all of) the output of the DDP forward.";
}

void Reducer::prepare_for_forward() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (expect_hooks_ && !finalized_) {
      if (backward_started_) throw DdpError(describe_unready());
      expect_hooks_ = false;  // a forward whose output never went through backward: discard
      finalized_ = true;
    }
  }
  if (rebuilt_ || !synced_once_) return;
  // Rebuild once, from rank 0's observed gradient-ready order (identical buckets everywhere).
  // A rank that joined before training a step has no order of its own: it offers the default.
  std::vector<int64_t> offered(ready_order_.begin(), ready_order_.end());
  if (offered.size() != params_.size()) {
    offered.clear();
    for (size_t i = 0; i < params_.size(); ++i) offered.push_back(static_cast<int64_t>(params_.size() - 1 - i));
  }
  auto order = torch::tensor(offered, torch::kLong);
  if (world_size_ > 1) broadcast(order, group_.ranks().front(), group_);
  std::vector<size_t> new_order(params_.size());
  auto acc = order.accessor<int64_t, 1>();
  for (size_t i = 0; i < new_order.size(); ++i) new_order[i] = static_cast<size_t>(acc[static_cast<int64_t>(i)]);
  std::lock_guard<std::mutex> lock(mutex_);
  build_buckets(assign_buckets(bucket_inputs_, new_order, bucket_limits()));
  rebuilt_ = true;
}

void Reducer::prepare_for_backward(const std::vector<torch::Tensor>& outputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  refresh_hooks();
  expect_hooks_ = true;
  backward_started_ = false;
  finalized_ = false;
  callback_queued_ = false;
  next_bucket_ = 0;
  std::fill(ready_.begin(), ready_.end(), 0);
  for (auto& b : buckets_) {
    b.pending = b.params.size();
    b.future.reset();
  }
  std::fill(unused_.begin(), unused_.end(), 0);
  if (!options_.find_unused_parameters || outputs.empty()) return;
  // Walk the autograd graph from the outputs; parameters whose AccumulateGrad is not reached
  // will get no gradient in this backward.
  std::unordered_map<const torch::autograd::Node*, size_t> index_of;
  for (size_t i = 0; i < accumulators_.size(); ++i) index_of[accumulators_[i].get()] = i;
  std::fill(unused_.begin(), unused_.end(), 1);
  std::unordered_set<const torch::autograd::Node*> seen;
  std::queue<torch::autograd::Node*> todo;
  for (const auto& t : outputs) {
    if (!t.defined() || !t.requires_grad()) continue;
    if (auto fn = t.grad_fn()) {
      todo.push(fn.get());
    } else if (auto acc = torch::autograd::impl::try_get_grad_accumulator(t)) {
      todo.push(acc.get());
    }
  }
  while (!todo.empty()) {
    auto* node = todo.front();
    todo.pop();
    if (!seen.insert(node).second) continue;
    if (auto it = index_of.find(node); it != index_of.end()) unused_[it->second] = 0;
    for (const auto& edge : node->next_edges()) {
      if (edge.function) todo.push(edge.function.get());
    }
  }
}

void Reducer::autograd_hook(size_t index) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (options_.find_unused_parameters && params_[index].grad().defined()) local_used_.data_ptr<int>()[index] = 1;
  if (!expect_hooks_) return;  // no_sync, or a backward that did not come from a DDP forward
  if (!backward_started_) {
    backward_started_ = true;
    for (size_t i = 0; i < unused_.size(); ++i) {
      if (unused_[i]) mark_ready(i);
    }
  }
  if (!rebuilt_) ready_order_.push_back(index);
  mark_ready(index);
}

void Reducer::mark_ready(size_t index) {
  if (ready_[index]) {
    throw DdpError("DistributedDataParallel: parameter " + std::to_string(index) + " '" + names_[index] +
                   "' was marked ready twice in one backward; a parameter may take part in only one DDP forward "
                   "per backward (no reentrant backward / shared use across two DDP forwards)");
  }
  ready_[index] = 1;
  torch::NoGradGuard no_grad;
  auto [b, slot] = locator_[index];
  Bucket& bucket = buckets_[b];
  torch::Tensor& view = bucket.views[slot];
  const torch::Tensor grad = params_[index].grad();
  if (grad.defined() && grad.is_sparse()) {
    throw DdpError("DistributedDataParallel: parameter " + std::to_string(index) + " '" + names_[index] +
                   "' has a sparse gradient, which libddp does not support; use a dense embedding (sparse=false)");
  }
  const double scale = 1.0 / divisor_;
  if (!grad.defined()) {
    view.zero_();
  } else if (aliases(grad, view)) {
    if (!comm_hook_) view.mul_(scale);
  } else {
    if (comm_hook_) {
      view.copy_(grad);
    } else {
      torch::mul_out(view, grad, scale_);
    }
    if (options_.gradient_as_bucket_view) params_[index].mutable_grad() = view;
  }
  if (--bucket.pending == 0) launch_ready_buckets();
}

Future Reducer::launch(Bucket& bucket, size_t index) {
  if (comm_hook_) {
    GradBucket grad_bucket(index, index + 1 == buckets_.size(), bucket.flat, bucket.views, bucket.param_tensors, group_,
                           bucket.params);
    return comm_hook_(grad_bucket);
  }
  return all_reduce_async(bucket.flat, group_);
}

void Reducer::launch_ready_buckets() {
  // Strictly in bucket order, so every rank issues the same sequence of collectives.
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].pending == 0) {
    // No rank completes this step before this rank's snapshot write in flight (ddp::Snapshot)
    // is in its region: the write overlaps the backward up to here.
    if (next_bucket_ + 1 == buckets_.size()) snapshot_fence::wait_in_backward();
    buckets_[next_bucket_].future = launch(buckets_[next_bucket_], next_bucket_);
    ++next_bucket_;
  }
  if (next_bucket_ < buckets_.size() || callback_queued_) return;
  if (options_.find_unused_parameters) {
    used_future_ =
        all_reduce_async(local_used_.to(params_.front().device(), /*non_blocking=*/false, /*copy=*/true), group_);
  }
  callback_queued_ = true;
  torch::autograd::Engine::get_default_engine().queue_callback([this] { finalize_backward(); });
}

void Reducer::finalize_backward() {
  std::lock_guard<std::mutex> lock(mutex_);
  torch::NoGradGuard no_grad;
  auto wait = [&](const Future& f, const std::string& what) { wait_for(f, what); };
  std::vector<char> used(params_.size(), 1);
  if (options_.find_unused_parameters) {
    wait(used_future_, "all-reduce of the used-parameter map");
    auto counts = result_tensor(used_future_).cpu();
    for (size_t i = 0; i < used.size(); ++i) used[i] = counts.data_ptr<int>()[i] > 0;
    local_used_.zero_();
  }
  for (size_t b = 0; b < buckets_.size(); ++b) {
    Bucket& bucket = buckets_[b];
    wait(bucket.future, "all-reduce of gradient bucket " + std::to_string(b));
    torch::Tensor result = result_tensor(bucket.future);
    const bool in_place = result.data_ptr() == bucket.flat.data_ptr();
    if (!in_place && result.numel() != bucket.flat.numel()) {
      throw DdpError("a communication hook returned " + std::to_string(result.numel()) + " elements for bucket " +
                     std::to_string(b) + " of " + std::to_string(bucket.flat.numel()) + "; return the bucket's size");
    }
    int64_t offset = 0;
    for (size_t slot = 0; slot < bucket.params.size(); ++slot) {
      const size_t i = bucket.params[slot];
      const torch::Tensor& view = bucket.views[slot];
      torch::Tensor out = in_place ? view : result.narrow(0, offset, view.numel()).view(view.sizes());
      offset += view.numel();
      if (!used[i]) continue;  // globally unused: leave .grad untouched
      torch::Tensor& grad = params_[i].mutable_grad();
      if (!grad.defined()) {
        grad = options_.gradient_as_bucket_view && in_place ? view : out.clone();
      } else if (!(in_place && aliases(grad, view))) {
        grad.copy_(out);
      }
    }
    bucket.future.reset();
  }
  used_future_.reset();
  expect_hooks_ = false;
  finalized_ = true;
  synced_once_ = true;
  // The launcher's progress record: every collective of this step has been waited for (their
  // future callbacks may still be on their way), and one more synchronised DDP step is done.
  feed::complete(feed::last_entered());
  feed::step();
}

}  // namespace ddp::detail

namespace ddp::detail {

void Reducer::wait_for(const Future& future, const std::string& what) const {
  try {
    future->wait();
    if (future->hasError()) std::rethrow_exception(future->exception_ptr());
  } catch (...) {
    group_.impl().rethrow_comm_error(what);
  }
}

void Reducer::set_divisor(int divisor) {
  std::lock_guard<std::mutex> lock(mutex_);
  divisor_ = divisor;
  scale_ = torch::scalar_tensor(1.0 / divisor, torch::kDouble);
}

void Reducer::shadow_backward() {
  std::lock_guard<std::mutex> lock(mutex_);
  torch::NoGradGuard no_grad;
  std::vector<Future> futures;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    // Fresh zeros, never the bucket itself: with gradient_as_bucket_view it holds our .grad.
    const Bucket& bucket = buckets_[b];
    torch::Tensor zeros = torch::zeros_like(bucket.flat);
    if (!comm_hook_) {
      futures.push_back(all_reduce_async(zeros, group_));
      continue;
    }
    std::vector<torch::Tensor> views;
    int64_t offset = 0;
    for (const auto& view : bucket.views) {
      views.push_back(zeros.narrow(0, offset, view.numel()).view(view.sizes()));
      offset += view.numel();
    }
    GradBucket grad_bucket(b, b + 1 == buckets_.size(), zeros, views, bucket.param_tensors, group_);
    futures.push_back(comm_hook_(grad_bucket));
  }
  if (options_.find_unused_parameters) {
    futures.push_back(all_reduce_async(torch::zeros_like(local_used_).to(params_.front().device()), group_));
  }
  for (size_t i = 0; i < futures.size(); ++i)
    wait_for(futures[i], "join: shadow of gradient bucket " + std::to_string(i));
  synced_once_ = true;
  feed::complete(feed::last_entered());
  feed::step();  // a joined rank shadowing the others is making progress too
}

}  // namespace ddp::detail
