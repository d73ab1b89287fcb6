// The checkpoint archive without the file: what ddp::save_checkpoint writes and
// ddp::load_checkpoint reads, built and loaded in memory, so that ddp::Snapshot's payload is
// byte for byte a checkpoint file. Private to libddp; throws CheckpointError.
#pragma once

#include <string>

#include <torch/torch.h>

#include "ddp/checkpoint.hpp"

namespace ddp::detail {

// {ddp/format, model, optimizer (if not null), extra/*, ddp/extra_keys}.
torch::serialize::OutputArchive checkpoint_archive(const torch::nn::Module& model,
                                                   const torch::optim::Optimizer* optimizer,
                                                   const CheckpointExtra& extra);

bool is_checkpoint_archive(torch::serialize::InputArchive& archive);  // carries the format marker

// Throws the CheckpointError load_checkpoint_archive would throw before loading anything: no
// format marker, no model state, a parameter or buffer missing or of another shape or dtype, no
// optimizer state while `optimizer` is not null. Loads nothing (ranks check, agree, then load).
void check_checkpoint_archive(torch::serialize::InputArchive& archive, const std::string& what,
                              const torch::nn::Module& model, const torch::optim::Optimizer* optimizer);

// Loads a checkpoint archive into model (and optimizer). Every parameter and buffer is checked
// first (present, same shape and dtype): a mismatch names the tensor and loads nothing.
// `what` names the source in errors ("checkpoint 'PATH'", "the in-memory snapshot of step 5").
CheckpointExtra load_checkpoint_archive(torch::serialize::InputArchive& archive, const std::string& what,
                                        torch::nn::Module& model, torch::optim::Optimizer* optimizer);

}  // namespace ddp::detail
