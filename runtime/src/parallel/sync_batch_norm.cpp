// SyncBatchNorm (sync_batch_norm.hpp): torch.nn.SyncBatchNorm's math in plain tensor ops, because
// the ATen kernels torch uses (batch_norm_stats, batch_norm_gather_stats_with_counts,
// batch_norm_backward_reduce/elemt) exist only for CUDA in LibTorch 1.13. Forward: each rank's
// mean, invstd and count all-gathered as one [2C+1] tensor (torch's layout), merged per channel
// rank by rank (Chan's parallel variance, the kernel's order); backward: sum(dy) and
// sum(dy * (x - mean)) all-reduced. Then convert_sync_batchnorm.
#include "ddp/sync_batch_norm.hpp"

#include <algorithm>
#include <functional>
#include <utility>

#include "runtime/src/group/shape_check.hpp"

namespace ddp {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// What the autograd function needs besides its differentiable inputs.
struct SyncContext : torch::CustomClassHolder {
  Group group;
  torch::Tensor running_mean, running_var;  // updated in place; undefined: not tracked
  double eps = 1e-5;
  double momentum = 0.1;
  // false: weight and bias are empty placeholders (LibTorch 1.13's Function::apply refuses
  // undefined tensor arguments).
  bool affine = true;
};

std::vector<int64_t> reduce_dims(const torch::Tensor& x) {
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  return dims;
}

// A per-channel [C] tensor shaped to broadcast against x: [1, C, 1, ...].
torch::Tensor per_channel(const torch::Tensor& t, const torch::Tensor& x) {
  std::vector<int64_t> shape(static_cast<size_t>(x.dim()), 1);
  shape[1] = x.size(1);
  return t.view(shape);
}

struct SyncBatchNormFunction : torch::autograd::Function<SyncBatchNormFunction> {
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor input, torch::Tensor weight_arg,
                               torch::Tensor bias_arg, c10::intrusive_ptr<SyncContext> sync) {
    const torch::Tensor weight = sync->affine ? weight_arg : torch::Tensor();
    const torch::Tensor bias = sync->affine ? bias_arg : torch::Tensor();
    const torch::Tensor x = input.contiguous();
    const int64_t channels = x.size(1);
    torch::Tensor combined;
    if (x.numel() > 0) {
      const auto dims = reduce_dims(x);
      const torch::Tensor mean = x.mean(dims);
      const torch::Tensor invstd = (x.var(dims, /*unbiased=*/false) + sync->eps).rsqrt();
      combined = torch::cat({mean, invstd, torch::full({1}, double(x.numel() / channels), mean.options())});
    } else {  // an empty batch still takes part; its zero count drops it from the merge
      combined = torch::zeros({2 * channels + 1}, x.options());
    }
    // Every forward of every layer: the same module on every rank (no shape-check exchange).
    const std::vector<torch::Tensor> rows = [&] {
      detail::shape_check::Skip unchecked;
      return all_gather(combined, sync->group);
    }();

    torch::Tensor mean = torch::zeros({channels}, x.options());
    torch::Tensor var_n = torch::zeros({channels}, x.options());
    double n = 0;
    for (const auto& row : rows) {
      const double count = row[2 * channels].item<double>();
      if (count < 1) continue;
      const torch::Tensor row_mean = row.slice(0, 0, channels);
      const torch::Tensor row_var = row.slice(0, channels, 2 * channels).pow(-2) - sync->eps;
      const double factor = 1.0 / std::max(1.0, n + count);
      var_n = var_n + row_var * count + (row_mean - mean).pow(2) * (n * count * factor);
      mean = mean * (n * factor) + row_mean * (count * factor);
      n += count;
    }
    if (n < 1) throw ConfigError("SyncBatchNorm: every rank of the group has an empty batch; nothing to normalise");
    const torch::Tensor invstd = (var_n / n + sync->eps).rsqrt();
    if (sync->running_mean.defined()) {
      torch::NoGradGuard no_grad;
      const double m = sync->momentum;
      sync->running_mean.mul_(1 - m).add_(mean.to(sync->running_mean.dtype()) * m);
      // n == 1 (one sample in the whole group) gives inf, as torch's kernel does.
      sync->running_var.mul_(1 - m).add_((var_n / (n - 1)).to(sync->running_var.dtype()) * m);
    }
    ctx->save_for_backward({x, weight, mean, invstd});
    ctx->saved_data["count"] = n;
    ctx->saved_data["sync"] = c10::IValue::make_capsule(sync);
    if (x.numel() == 0) return torch::empty_like(x);
    torch::Tensor y = (x - per_channel(mean, x)) * per_channel(invstd, x);
    if (weight.defined()) y = y * per_channel(weight, x) + per_channel(bias, x);
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &x = saved[0], &weight = saved[1], &mean = saved[2], &invstd = saved[3];
    const double n = ctx->saved_data["count"].toDouble();
    const auto sync = c10::static_intrusive_pointer_cast<SyncContext>(ctx->saved_data["sync"].toCapsule());
    const int64_t channels = x.size(1);
    const bool need_input = ctx->needs_input_grad(0);
    const bool need_weight = weight.defined() && ctx->needs_input_grad(1);
    const bool need_bias = weight.defined() && ctx->needs_input_grad(2);
    torch::Tensor grad_input, grad_weight, grad_bias;
    if (x.numel() > 0) {
      const torch::Tensor dy = grads[0].contiguous();
      const auto dims = reduce_dims(x);
      const torch::Tensor xmu = x - per_channel(mean, x);
      torch::Tensor sum_dy = dy.sum(dims);
      torch::Tensor sum_dy_xmu = (dy * xmu).sum(dims);
      // Local: DDP (or the caller) reduces parameter gradients, as with torch's SyncBatchNorm.
      if (need_weight) grad_weight = sum_dy_xmu * invstd;
      if (need_bias) grad_bias = sum_dy;
      if (need_input) {
        torch::Tensor combined = torch::cat({sum_dy, sum_dy_xmu});
        detail::shape_check::Skip unchecked;  // the forward's channels: same on every rank
        all_reduce(combined, ReduceOp::kSum, sync->group);
        const torch::Tensor mean_dy = combined.slice(0, 0, channels) / n;
        const torch::Tensor mean_dy_xmu = combined.slice(0, channels, 2 * channels) / n;
        const torch::Tensor scale = weight.defined() ? weight * invstd : invstd;
        grad_input = (dy - per_channel(mean_dy, x) - xmu * per_channel(invstd * invstd * mean_dy_xmu, x)) *
                     per_channel(scale, x);
      }
    } else {
      if (need_input) {  // unblocks the ranks that have samples
        torch::Tensor combined = torch::zeros({2 * channels}, x.options());
        detail::shape_check::Skip unchecked;
        all_reduce(combined, ReduceOp::kSum, sync->group);
        grad_input = torch::zeros_like(x);
      }
      // torch leaves these None; zeros are the same gradient and keep DDP's buckets complete.
      if (need_weight) grad_weight = torch::zeros_like(weight);
      if (need_bias) grad_bias = torch::zeros_like(weight);
    }
    return {grad_input, grad_weight, grad_bias, torch::Tensor()};
  }
};

int group_size(const Group& group) {
  if (!is_initialized()) return 1;  // no process group: a plain BatchNorm
  if (!group.is_member())
    throw ConfigError(
        "SyncBatchNorm: this rank is not a member of the module's group; "
        "run it only on the group's ranks or give it a group this rank belongs to");
  return group.size();
}

}  // namespace

SyncBatchNormImpl::SyncBatchNormImpl(const torch::nn::BatchNormOptions& options_, Group group)
    : options(options_), group_(std::move(group)) {
  reset();
}

SyncBatchNormImpl::SyncBatchNormImpl(const torch::nn::BatchNormOptions& options_, Group group, const Adopted& tensors)
    : options(options_), group_(std::move(group)) {
  register_tensors(tensors);
}

void SyncBatchNormImpl::register_tensors(const Adopted& t) {
  if (options.affine()) {
    weight = register_parameter("weight", t.weight, t.weight.requires_grad());
    bias = register_parameter("bias", t.bias, t.bias.requires_grad());
  } else {
    weight = register_parameter("weight", torch::Tensor(), false);
    bias = register_parameter("bias", torch::Tensor(), false);
  }
  if (options.track_running_stats()) {
    running_mean = register_buffer("running_mean", t.running_mean);
    running_var = register_buffer("running_var", t.running_var);
    num_batches_tracked = register_buffer("num_batches_tracked", t.num_batches_tracked);
  } else {
    running_mean = register_buffer("running_mean", torch::Tensor());
    running_var = register_buffer("running_var", torch::Tensor());
    num_batches_tracked = register_buffer("num_batches_tracked", torch::Tensor());
  }
}

void SyncBatchNormImpl::reset() {
  const int64_t c = options.num_features();
  register_tensors({torch::ones({c}).requires_grad_(), torch::zeros({c}).requires_grad_(), torch::zeros({c}),
                    torch::ones({c}), torch::tensor(0, torch::kLong)});
}

void SyncBatchNormImpl::reset_running_stats() {
  if (!options.track_running_stats()) return;
  torch::NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

void SyncBatchNormImpl::reset_parameters() {
  reset_running_stats();
  if (!options.affine()) return;
  torch::NoGradGuard no_grad;
  weight.fill_(1);
  bias.zero_();
}

void SyncBatchNormImpl::pretty_print(std::ostream& stream) const {
  stream << "ddp::SyncBatchNorm(" << options.num_features() << ", eps=" << options.eps() << ", momentum=";
  if (options.momentum()) {
    stream << *options.momentum();
  } else {
    stream << "None";
  }
  stream << ", affine=" << options.affine() << ", track_running_stats=" << options.track_running_stats() << ")";
}

torch::Tensor SyncBatchNormImpl::forward(const torch::Tensor& input) {
  if (input.dim() < 2)
    throw ConfigError("SyncBatchNorm: expected at least 2D input [N, C, ...] (got " + std::to_string(input.dim()) +
                      "D input)");
  if (input.size(1) != options.num_features())
    throw ConfigError("SyncBatchNorm: input has " + std::to_string(input.size(1)) + " channels in dimension 1, " +
                      "the module was built for num_features " + std::to_string(options.num_features()));
  // torch.nn.SyncBatchNorm.forward, step by step.
  double factor = options.momentum().value_or(0.0);
  if (is_training() && options.track_running_stats()) {
    num_batches_tracked.add_(1);
    if (!options.momentum()) factor = 1.0 / num_batches_tracked.item<double>();
  }
  const bool bn_training = is_training() || !running_mean.defined();
  const bool use_running = !is_training() || options.track_running_stats();
  const torch::Tensor mean = use_running ? running_mean : torch::Tensor();
  const torch::Tensor var = use_running ? running_var : torch::Tensor();
  if (!(bn_training && is_training()) || group_size(group_) < 2)
    return torch::batch_norm(input, weight, bias, mean, var, bn_training, factor, options.eps(),
                             /*cudnn_enabled=*/true);
  auto sync = c10::make_intrusive<SyncContext>();
  sync->group = group_;
  sync->running_mean = mean;
  sync->running_var = var;
  sync->eps = options.eps();
  sync->momentum = factor;
  sync->affine = weight.defined();
  if (sync->affine) return SyncBatchNormFunction::apply(input, weight, bias, sync);
  const torch::Tensor none = torch::empty({0}, input.options());
  return SyncBatchNormFunction::apply(input, none, none, sync);
}

// ---- convert_sync_batchnorm -----------------------------------------------------------------

namespace {

// Whether `module` is an Impl (one of BatchNorm1d/2d/3d); then `options` are its options.
template <typename Impl>
bool read_batch_norm(torch::nn::Module& module, torch::nn::BatchNormOptions& options) {
  auto* bn = dynamic_cast<Impl*>(&module);
  if (!bn) return false;
  options = bn->options;
  return true;
}

bool is_batch_norm(torch::nn::Module& m) {
  return dynamic_cast<torch::nn::BatchNorm1dImpl*>(&m) || dynamic_cast<torch::nn::BatchNorm2dImpl*>(&m) ||
         dynamic_cast<torch::nn::BatchNorm3dImpl*>(&m);
}

// Whether the parent keeps its own list of children besides the registration (and which).
bool holds_list(torch::nn::Module& parent) {
  return dynamic_cast<torch::nn::SequentialImpl*>(&parent) || dynamic_cast<torch::nn::ModuleListImpl*>(&parent);
}

// Pass 1: every BatchNorm under `parent` that something outside the tree also holds.
void find_pinned(torch::nn::Module& parent, const std::string& path, std::vector<std::string>& pinned) {
  const auto children = parent.named_children();  // one more reference to each child
  for (const auto& item : children) {
    const std::string child_path = path.empty() ? item.key() : path + "." + item.key();
    const std::shared_ptr<torch::nn::Module>& child = item.value();
    if (is_batch_norm(*child)) {
      // The registration, this copy, and a Sequential's/ModuleList's own list.
      const long expected = 2 + (holds_list(parent) ? 1 : 0);
      if (child.use_count() > expected) pinned.push_back(child_path + " (" + child->name() + ")");
    } else {
      find_pinned(*child, child_path, pinned);
    }
  }
}

}  // namespace

std::shared_ptr<torch::nn::Module> convert_sync_batchnorm(std::shared_ptr<torch::nn::Module> module,
                                                          const Group& group) {
  if (!module) throw ConfigError("convert_sync_batchnorm: the module is null");
  const auto convert_one = [&group](torch::nn::Module& m) -> std::shared_ptr<SyncBatchNormImpl> {
    torch::nn::BatchNormOptions options(0);
    if (!read_batch_norm<torch::nn::BatchNorm1dImpl>(m, options) &&
        !read_batch_norm<torch::nn::BatchNorm2dImpl>(m, options) &&
        !read_batch_norm<torch::nn::BatchNorm3dImpl>(m, options))
      return nullptr;
    const auto params = m.named_parameters(/*recurse=*/false);
    const auto buffers = m.named_buffers(/*recurse=*/false);
    const auto find = [](const auto& dict, const char* key) {
      const auto* t = dict.find(key);
      return t ? *t : torch::Tensor();
    };
    SyncBatchNormImpl::Adopted tensors{find(params, "weight"), find(params, "bias"), find(buffers, "running_mean"),
                                       find(buffers, "running_var"), find(buffers, "num_batches_tracked")};
    auto sync = std::shared_ptr<SyncBatchNormImpl>(new SyncBatchNormImpl(options, group, tensors));
    sync->train(m.is_training());
    return sync;
  };
  if (auto root = convert_one(*module)) return root;

  std::vector<std::string> pinned;
  find_pinned(*module, "", pinned);
  if (!pinned.empty()) {
    std::string names;
    for (const auto& p : pinned) names += (names.empty() ? "" : ", ") + p;
    throw ConfigError("convert_sync_batchnorm: " + names +
                      " is also held outside the module tree (a typed holder member such as `BatchNorm2d bn;`), "
                      "so its parent's forward would keep calling the old module; nothing was converted. Declare "
                      "such members as ddp::SyncBatchNorm, or keep the BatchNorms in a Sequential or ModuleList");
  }
  // Pass 2: swap them (the registration, and a Sequential's or ModuleList's own list).
  const std::function<void(torch::nn::Module&)> walk = [&](torch::nn::Module& parent) {
    const auto children = parent.named_children();
    for (size_t i = 0; i < children.size(); ++i) {
      const auto& item = children[i];
      auto sync = convert_one(*item.value());
      if (!sync) {
        walk(*item.value());
        continue;
      }
      if (auto* seq = dynamic_cast<torch::nn::SequentialImpl*>(&parent)) {
        *(seq->begin() + static_cast<std::ptrdiff_t>(i)) = torch::nn::AnyModule(sync);
      } else if (auto* list = dynamic_cast<torch::nn::ModuleListImpl*>(&parent)) {
        *(list->begin() + static_cast<std::ptrdiff_t>(i)) = sync;
      }
      parent.replace_module(item.key(), sync);
    }
  };
  walk(*module);
  return module;
}

}  // namespace ddp
