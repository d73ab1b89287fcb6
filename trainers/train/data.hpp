// The data `train` learns from, as tensors: the synthetic teacher task (inputs ~ N(0, 1),
// labels from a fixed random network; the same on every world size) or a CSV file split
// into train/validation. Built on every rank before the process group exists; CSV problems
// throw CsvError.
#pragma once

#include <string>

#include <torch/torch.h>

#include "train_options.hpp"

namespace ddp::train {

struct Data {
  torch::Tensor train_x, train_y, val_x, val_y;  // CPU; float features, int64 labels
  int in_dim = 0;
  int classes = 0;
  std::string description;  // for the start-up line
};

Data load_data(const TrainOptions& options);

}  // namespace ddp::train
