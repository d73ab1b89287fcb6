// PowerSGD gradient compression (Vogels et al., NeurIPS 2019), as PyTorch's powerSGD_hook:
// each gradient matrix M (plus the error left from the previous step) travels as a rank-r
// product P Q^T; vectors and matrices that would not shrink by min_compression_rate are
// all-reduced as they are. The state (error feedback, Q for warm start, the iteration) lives
// in a PowerSgdState the hook shares; save it with state() and restore it with load_state().
// The hook blocks the autograd thread for its two collectives (issued in the same order on
// every rank); a state belongs to one DDP model and is used from its backward only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>

#include <torch/torch.h>

#include "ddp/checkpoint.hpp"
#include "ddp/comm_hook.hpp"

namespace ddp {

// The options of PyTorch's PowerSGDState (same names, same defaults).
struct PowerSgdOptions {
  // r: the rank of the approximation (per matrix, at most min(rows, columns)).
  int matrix_approximation_rank = 1;
  // Iterations (synced backward passes) with a plain all-reduce before compression starts.
  // State is kept per parameter, so DDP's bucket rebuild after the first iteration does not
  // matter (PyTorch requires > 1 with error feedback or warm start; libddp accepts 0).
  int64_t start_powersgd_iter = 1000;
  // A matrix n x m is compressed only when (n + m) * r * min_compression_rate < n * m; 0
  // compresses every matrix.
  double min_compression_rate = 2.0;
  // Add what the approximation left out to the next step's gradient (keeps SGD unbiased).
  bool use_error_feedback = true;
  // Reuse the last Q (orthogonalised) instead of a fresh random one each step.
  bool warm_start = true;
  // 0: P and Q are orthonormalised by Householder QR (a zero column stays zero with one
  // column); > 0: Gram-Schmidt dividing each column by (norm + epsilon), as PyTorch.
  double orthogonalization_epsilon = 0.0;
  // Seeds every random Q; must be the same on every rank.
  uint64_t random_seed = 0;
};

class PowerSgdState {
 public:
  // Throws ConfigError for a rank < 1, or a negative start iteration, compression rate or
  // epsilon.
  explicit PowerSgdState(PowerSgdOptions options);

  const PowerSgdOptions& options() const { return options_; }
  // Synced backward passes reduced so far (plain and compressed).
  int64_t iteration() const { return iteration_; }
  // Elements sent per element of gradient in the last compressed bucket (0 before any).
  double last_send_ratio() const { return last_send_ratio_; }
  // A parameter's error-feedback buffer / warm-start Q (registration order); undefined if none.
  torch::Tensor error(size_t parameter) const;
  torch::Tensor q(size_t parameter) const;

  // Checkpointing, as extra values ("powersgd/iteration", "powersgd/q/<i>" and every rank's
  // residual "powersgd/error/<i>/<global rank>"): merge state() into save_checkpoint's extra,
  // pass load_checkpoint's result to load_state(). state() is collective (it all-gathers the
  // residuals: call it on every rank, like save_checkpoint); load_state() takes this rank's.
  // A Q whose shape no longer fits (another r) is drawn afresh; a missing residual is zero.
  CheckpointExtra state() const;
  void load_state(const CheckpointExtra& extra);

  // The hook's work for one bucket (what hooks::powersgd calls).
  Future reduce(GradBucket& bucket);

 private:
  struct Plan;  // one bucket's layout: which gradients are compressed, where their P and Q go
  Plan plan(const GradBucket& bucket) const;
  Future compress_and_reduce(GradBucket& bucket);
  void compute_ps(Plan& plan);
  void compute_qs(Plan& plan, int world);
  void decompress(Plan& plan);
  void finish_bucket(const GradBucket& bucket);
  torch::Tensor fresh_q(size_t parameter, int64_t columns, int64_t rank, const torch::Tensor& like) const;

  PowerSgdOptions options_;
  Group group_;  // the group of the last bucket reduced (state() gathers over it)
  int64_t iteration_ = 0;
  double last_send_ratio_ = 0;
  std::map<size_t, torch::Tensor> errors_;
  std::map<size_t, torch::Tensor> qs_;
};

namespace hooks {
// PowerSGD over `state` (shared: keep a pointer to checkpoint it). Needs the GradBucket's
// parameter_indices() (DDP provides them).
CommHook powersgd(std::shared_ptr<PowerSgdState> state);
}  // namespace hooks

// Orthonormalises the columns of a 2-D tensor in place: Householder QR when epsilon is 0 and
// there are 2+ columns, else (modified) Gram-Schmidt dividing by (norm + epsilon).
void orthogonalize_columns(torch::Tensor& matrix, double epsilon = 0.0);

}  // namespace ddp
