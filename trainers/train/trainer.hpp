// run_training: the body of `train` on an initialized environment — loads data, joins the
// process group, trains the MLP under DDP with checkpoints/resume and metrics, or runs the
// benchmark. Blocks until done; throws ddp::Error / CsvError on failure. Torch-free header.
#pragma once

#include "train_options.hpp"

namespace ddp::train {

// Returns the process exit code (0 on success).
int run_training(const TrainOptions& options);

}  // namespace ddp::train
