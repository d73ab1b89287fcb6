// The model `train` trains and the collective helpers around it: the MLP (in -> hidden... ->
// classes), its DDP wrapper with the chosen bucket size and comm hook, the learning-rate
// schedule, and all-reduced validation and means. Functions that communicate say so; call
// them on every rank at the same point.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ddp/ddp.hpp>

#include "data.hpp"
#include "train_options.hpp"

namespace ddp::train {

using DdpMlp = ddp::DistributedDataParallel<torch::nn::Sequential>;

torch::nn::Sequential make_mlp(int in_dim, const std::vector<int>& hidden, int classes);
// "8-64-64-4"
std::string shape_of(int in_dim, const std::vector<int>& hidden, int classes);
int64_t parameter_count(torch::nn::Module& module);

// The PowerSGD state for --comm-hook powersgd (--powersgd-rank, --powersgd-start-iter), else null.
std::shared_ptr<ddp::PowerSgdState> make_powersgd_state(const TrainOptions& options);

// DDP around `net` with --bucket-mb and --comm-hook (powersgd over `powersgd`, which must then
// be non-null); broadcasts rank 0's weights (collective) unless `same_weights` (every rank
// restored the same state: nothing to broadcast).
DdpMlp wrap_ddp(const torch::nn::Sequential& net, const TrainOptions& options,
                std::shared_ptr<ddp::PowerSgdState> powersgd = nullptr, bool same_weights = false);

// Cosine decay from --lr to 0 over the run (a function of the step, so resume-safe), or constant.
void set_learning_rate(torch::optim::SGD& optimizer, const TrainOptions& options, int64_t step, int64_t total_steps);

// Mean over ranks of a per-rank value (collective).
double mean_over_ranks(double value);

// Accuracy over the whole validation set: each rank scores a contiguous slice, then the
// correct/total counts are all-reduced (collective). Leaves `net` in training mode.
double evaluate(torch::nn::Sequential& net, const Data& data);

}  // namespace ddp::train
