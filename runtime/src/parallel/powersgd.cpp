// PowerSGD (PyTorch's powerSGD_hook, one bucket at a time): plain all-reduce before
// start_powersgd_iter; then per bucket one all-reduce of [uncompressed tensors | every P = M Q]
// and one of [every Q = M^T P], both synchronous on the autograd thread so every rank issues
// its collectives in the same order. State is keyed by parameter index, not bucket.
#include "ddp/powersgd.hpp"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "ddp/errors.hpp"
#include "ddp/process_group.hpp"
#include "ddp/run.hpp"
#include "runtime/src/parallel/powersgd_kernels.hpp"
#include "runtime/src/group/shape_check.hpp"

namespace ddp {
namespace {

const std::string kPrefix = "powersgd/";

uint64_t mix(uint64_t x) {  // splitmix64: spreads (seed, parameter, iteration) over the seed space
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

Future completed(const torch::Tensor& value) {
  auto future = c10::make_intrusive<c10::ivalue::Future>(c10::TensorType::get());
  future->markCompleted(c10::IValue(value));
  return future;
}

bool same_shape(const torch::Tensor& t, const torch::Tensor& like) {
  return t.defined() && t.sizes() == like.sizes() && t.scalar_type() == like.scalar_type();
}

}  // namespace

void orthogonalize_columns(torch::Tensor& matrix, double epsilon) {
  const int64_t columns = matrix.size(1);
  if (epsilon == 0 && columns > 1) {
    // Householder QR: orthonormal to rounding even when the columns are nearly dependent (a
    // gradient of lower rank than r), where one Gram-Schmidt pass loses orthogonality.
    matrix.copy_(std::get<0>(torch::linalg_qr(matrix)));
    return;
  }
  for (int64_t i = 0; i < columns; ++i) {
    auto column = matrix.narrow(1, i, 1);
    auto norm = column.norm();
    // epsilon 0: a zero column stays zero (0 / tiny), like PyTorch's ZeroDivisionError branch.
    column.div_(epsilon == 0 ? norm.clamp_min(std::numeric_limits<float>::min()) : norm + epsilon);
    if (i + 1 < columns) {
      auto rest = matrix.narrow(1, i + 1, columns - i - 1);
      rest.sub_((column * rest).sum(0, /*keepdim=*/true) * column);
    }
  }
}

PowerSgdState::PowerSgdState(PowerSgdOptions options) : options_(options) {
  if (options_.matrix_approximation_rank < 1) {
    throw ConfigError("PowerSgdOptions::matrix_approximation_rank must be >= 1, got " +
                      std::to_string(options_.matrix_approximation_rank));
  }
  if (options_.start_powersgd_iter < 0 || options_.min_compression_rate < 0 || options_.orthogonalization_epsilon < 0) {
    throw ConfigError(
        "PowerSgdOptions: start_powersgd_iter, min_compression_rate and orthogonalization_epsilon "
        "must be >= 0");
  }
}

torch::Tensor PowerSgdState::error(size_t parameter) const {
  auto it = errors_.find(parameter);
  return it == errors_.end() ? torch::Tensor() : it->second;
}

torch::Tensor PowerSgdState::q(size_t parameter) const {
  auto it = qs_.find(parameter);
  return it == qs_.end() ? torch::Tensor() : it->second;
}

// Error buffers differ per rank: state() gathers them ("powersgd/error/<i>/<global rank>");
// Q and the iteration are the same everywhere.
CheckpointExtra PowerSgdState::state() const {
  CheckpointExtra extra{{kPrefix + "iteration", iteration_}};
  for (const auto& [i, q] : qs_) extra[kPrefix + "q/" + std::to_string(i)] = q;
  if (errors_.empty()) return extra;
  const auto ranks = group_.ranks();
  for (const auto& [i, e] : errors_) {
    const auto parts = all_gather(e.contiguous(), group_);
    for (size_t r = 0; r < parts.size(); ++r) {
      extra[kPrefix + "error/" + std::to_string(i) + "/" + std::to_string(ranks[r])] = parts[r];
    }
  }
  return extra;
}

void PowerSgdState::load_state(const CheckpointExtra& extra) {
  auto it = extra.find(kPrefix + "iteration");
  if (it == extra.end() || !it->second.isInt()) {
    throw CheckpointError("the checkpoint holds no PowerSGD state ('" + kPrefix +
                          "iteration'); save it with PowerSgdState::state() in the extra values");
  }
  errors_.clear();
  qs_.clear();
  iteration_ = it->second.toInt();
  const std::string mine = "/" + std::to_string(get_rank());
  for (const auto& [key, value] : extra) {
    if (key.rfind(kPrefix, 0) != 0 || !value.isTensor()) continue;
    const std::string rest = key.substr(kPrefix.size());  // q/<i> or error/<i>/<rank>
    const bool is_error = rest.rfind("error/", 0) == 0;
    if (is_error && (rest.size() < mine.size() || rest.compare(rest.size() - mine.size(), mine.size(), mine) != 0)) {
      continue;  // another rank's residual (or a rank that no longer exists: it starts at zero)
    }
    const size_t index = std::stoul(rest.substr(rest.find('/') + 1));
    (is_error ? errors_ : qs_)[index] = value.toTensor().clone();
  }
}

Future PowerSgdState::reduce(GradBucket& bucket) {
  group_ = bucket.group();
  if (iteration_ >= options_.start_powersgd_iter) return compress_and_reduce(bucket);
  torch::Tensor buffer = bucket.buffer();
  buffer.div_(bucket.group().size());
  auto future = all_reduce_async(buffer, bucket.group());
  finish_bucket(bucket);
  return future;
}

void PowerSgdState::finish_bucket(const GradBucket& bucket) {
  if (bucket.is_last()) ++iteration_;
}

torch::Tensor PowerSgdState::fresh_q(size_t parameter, int64_t columns, int64_t rank, const torch::Tensor& like) const {
  const uint64_t seed = mix(options_.random_seed ^ mix(parameter ^ mix(static_cast<uint64_t>(iteration_))));
  auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  return torch::randn({columns, rank}, generator, torch::kFloat).to(like.options());
}

// One gradient of the bucket: sent as is (rank 0) or as P (rows x rank) and Q (cols x rank).
struct Slot {
  torch::Tensor grad;  // view of the bucket's buffer
  size_t parameter = 0;
  int64_t rows = 0, cols = 0, rank = 0;
  int64_t offset = 0;    // in the send buffer: its elements (uncompressed) or its P
  int64_t q_offset = 0;  // in the Q buffer
  torch::Tensor matrix() const { return grad.view({rows, cols}); }
  powersgd_kernels::Shape shape() const { return {rows, cols, rank}; }
};

namespace {

// The fused kernels take contiguous float32 (the error buffer too, when there is one); other
// dtypes and layouts take the torch path.
bool fusable(const torch::Tensor& m, const torch::Tensor& e) {
  const auto ok = [](const torch::Tensor& t) { return t.scalar_type() == torch::kFloat && t.is_contiguous(); };
  return ok(m) && (!e.defined() || ok(e));
}

}  // namespace

// P and Q are stored transposed (rank x rows, rank x cols): each column of P and Q is a
// contiguous row. Contiguous float32 gradients take the fused row loops of
// powersgd_kernels.hpp (three passes per matrix); other dtypes and layouts take matrix-vector
// products and rank-1 updates (OpenBLAS's single-thread GEMM with an inner or outer size of
// 1-4 is 5-40x slower here).
struct PowerSgdState::Plan {
  std::vector<Slot> slots;
  int64_t send_size = 0;     // uncompressed elements, then every P
  int64_t uncompressed = 0;  // the send buffer's first elements
  int64_t q_size = 0;
  torch::Tensor send, qs;
  torch::Tensor pt(const Slot& s) const { return send.narrow(0, s.offset, s.rows * s.rank).view({s.rank, s.rows}); }
  torch::Tensor qt(const Slot& s) const { return qs.narrow(0, s.q_offset, s.cols * s.rank).view({s.rank, s.cols}); }
};

// Uncompressed tensors (1-D, or too small to shrink by min_compression_rate) first, then P's.
PowerSgdState::Plan PowerSgdState::plan(const GradBucket& bucket) const {
  const auto& grads = bucket.gradients();
  const auto& indices = bucket.parameter_indices();
  if (indices.size() != grads.size()) {
    throw DdpError(
        "hooks::powersgd needs each gradient's parameter index (GradBucket::parameter_indices()); "
        "register it on a ddp::DistributedDataParallel");
  }
  Plan plan;
  for (size_t k = 0; k < grads.size(); ++k) {
    Slot s;
    s.grad = grads[k];
    s.parameter = indices[k];
    if (s.grad.dim() >= 2 && s.grad.numel() > 0) {
      s.rows = s.grad.size(0);
      s.cols = s.grad.numel() / s.rows;
      const int64_t r = std::min<int64_t>({s.rows, s.cols, options_.matrix_approximation_rank});
      if (double(s.rows + s.cols) * double(r) * options_.min_compression_rate < double(s.rows * s.cols)) s.rank = r;
    }
    if (s.rank == 0) {
      s.offset = plan.send_size;
      plan.send_size += s.grad.numel();
    }
    plan.slots.push_back(std::move(s));
  }
  plan.uncompressed = plan.send_size;
  for (Slot& s : plan.slots) {
    if (s.rank == 0) continue;
    s.offset = plan.send_size;
    plan.send_size += s.rows * s.rank;
    s.q_offset = plan.q_size;
    plan.q_size += s.cols * s.rank;
  }
  return plan;
}

// M += error; Q = orthogonalised (warm or fresh random) Q; P = M Q into the send buffer.
void PowerSgdState::compute_ps(Plan& plan) {
  for (const Slot& s : plan.slots) {
    if (s.rank == 0) {
      plan.send.narrow(0, s.offset, s.grad.numel()).copy_(s.grad.reshape({-1}));
      continue;
    }
    auto m = s.matrix();
    torch::Tensor e;
    if (options_.use_error_feedback) {
      auto& error = errors_[s.parameter];
      if (!same_shape(error, m)) error = torch::zeros_like(m);
      e = error;
    }
    auto qt = plan.qt(s);
    auto warm = qs_.find(s.parameter);
    const bool reuse = options_.warm_start && warm != qs_.end() && warm->second.sizes() == qt.t().sizes();
    qt.copy_((reuse ? warm->second : fresh_q(s.parameter, s.cols, s.rank, qt)).t());
    auto q = qt.t();
    orthogonalize_columns(q, options_.orthogonalization_epsilon);
    auto pt = plan.pt(s);
    if (fusable(m, e)) {
      powersgd_kernels::add_error_and_project(s.shape(), m.data_ptr<float>(),
                                              e.defined() ? e.data_ptr<float>() : nullptr, qt.data_ptr<float>(),
                                              pt.data_ptr<float>());
      continue;
    }
    if (e.defined()) m.add_(e);
    for (int64_t j = 0; j < s.rank; ++j) {
      auto column = pt.select(0, j);
      torch::mv_out(column, m, qt.select(0, j));
    }
  }
}

// After the P all-reduce: uncompressed tensors get their mean; P is orthogonalised; Q = M^T P.
void PowerSgdState::compute_qs(Plan& plan, int world) {
  if (plan.uncompressed > 0) plan.send.narrow(0, 0, plan.uncompressed).div_(world);
  for (const Slot& s : plan.slots) {
    if (s.rank == 0) {
      s.grad.copy_(plan.send.narrow(0, s.offset, s.grad.numel()).view(s.grad.sizes()));
      continue;
    }
    auto pt = plan.pt(s);
    auto p = pt.t();
    orthogonalize_columns(p, options_.orthogonalization_epsilon);
    auto qt = plan.qt(s);
    if (fusable(s.matrix(), torch::Tensor())) {
      powersgd_kernels::project_back(s.shape(), s.grad.data_ptr<float>(), pt.data_ptr<float>(), qt.data_ptr<float>());
      continue;
    }
    const auto mt = s.matrix().t();
    for (int64_t j = 0; j < s.rank; ++j) {
      auto column = qt.select(0, j);
      torch::mv_out(column, mt, pt.select(0, j));
    }
  }
}

// After the Q all-reduce (Q averaged): error = M - P Q^T, M = P Q^T, Q kept for warm start.
void PowerSgdState::decompress(Plan& plan) {
  for (const Slot& s : plan.slots) {
    if (s.rank == 0) continue;
    auto m = s.matrix();
    auto pt = plan.pt(s);
    auto qt = plan.qt(s);
    // P Q^T from the all-reduced P and Q only: bit-identical on every rank.
    const torch::Tensor e = options_.use_error_feedback ? errors_[s.parameter] : torch::Tensor();
    if (fusable(m, e)) {
      powersgd_kernels::reconstruct(s.shape(), m.data_ptr<float>(), e.defined() ? e.data_ptr<float>() : nullptr,
                                    pt.data_ptr<float>(), qt.data_ptr<float>());
    } else {
      if (e.defined()) e.copy_(m);
      m.zero_();
      for (int64_t j = 0; j < s.rank; ++j) m.addr_(pt.select(0, j), qt.select(0, j));
      if (e.defined()) e.sub_(m);
    }
    if (options_.warm_start) qs_[s.parameter] = qt.t().clone();
  }
}

Future PowerSgdState::compress_and_reduce(GradBucket& bucket) {
  torch::NoGradGuard no_grad;
  Plan plan = this->plan(bucket);
  torch::Tensor buffer = bucket.buffer();
  const int world = bucket.group().size();
  if (plan.q_size == 0) {  // nothing worth compressing: exactly the plain all-reduce
    buffer.div_(world);
    auto future = all_reduce_async(buffer, bucket.group());
    finish_bucket(bucket);
    return future;
  }
  plan.send = torch::empty({plan.send_size}, buffer.options());
  plan.qs = torch::empty({plan.q_size}, buffer.options());
  compute_ps(plan);
  detail::shape_check::Skip unchecked;  // every bucket, every step: sizes agree by construction
  all_reduce(plan.send, ReduceOp::kSum, bucket.group());
  compute_qs(plan, world);
  all_reduce(plan.qs, ReduceOp::kSum, bucket.group());
  plan.qs.div_(world);
  decompress(plan);
  last_send_ratio_ = double(plan.send_size + plan.q_size) / double(buffer.numel());
  finish_bucket(bucket);
  return completed(buffer);
}

namespace hooks {

namespace {

// Every rank of the group on this host, over gloo: the all-reduce PowerSGD shrinks is a
// memory copy, and its own passes over the gradients cost about as much as they save (the
// benchmark MLP: ~5 % slower than plain all-reduce, docs/runtime.md). Said once, on rank 0.
void warn_single_host_gloo(const GradBucket& bucket) {
  if (bucket.group().backend() != "gloo" || worker_env().local_world_size < bucket.group().size()) return;
  log_rank0() << "warning: hooks::powersgd on gloo with every rank on this host: the all-reduce it shrinks is a "
                 "local memory copy, so its compression work may cost more than it saves (measured ~5 % slower "
                 "than no hook on a 3M-parameter MLP); it pays across hosts with a slow network";
}

}  // namespace

CommHook powersgd(std::shared_ptr<PowerSgdState> state) {
  if (!state)
    throw ConfigError("hooks::powersgd needs a PowerSgdState (std::make_shared<ddp::PowerSgdState>(options))");
  auto warned = std::make_shared<std::once_flag>();
  return [state, warned](GradBucket& bucket) {
    std::call_once(*warned, warn_single_host_gloo, bucket);
    return state->reduce(bucket);
  };
}

}  // namespace hooks
}  // namespace ddp
