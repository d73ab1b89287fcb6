// The test model, its deterministic data and the single-process reference training that the
// multi-process DDP results are compared against. Shared by the parent tests and the workers.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

namespace ddp::test {

struct NetImpl : torch::nn::Module {
  explicit NetImpl(bool with_unused = false) {
    fc1 = register_module("fc1", torch::nn::Linear(8, 32));
    fc2 = register_module("fc2", torch::nn::Linear(32, 32));
    fc3 = register_module("fc3", torch::nn::Linear(32, 4));
    if (with_unused) unused = register_module("unused", torch::nn::Linear(4, 4));
  }
  torch::Tensor forward(const torch::Tensor& x) { return fc3(torch::tanh(fc2(torch::tanh(fc1(x))))); }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr}, unused{nullptr};
};
TORCH_MODULE(Net);

struct TrainConfig {
  int world = 4;
  int batch = 4;  // per rank per micro-batch
  int steps = 5;
  int accumulate = 1;  // micro-batches per step (no_sync for all but the last)
  bool with_unused = false;
};

inline Net make_net(bool with_unused, int seed) {
  torch::manual_seed(seed);
  return Net(with_unused);
}

// Global batch for (step, micro): rows ordered rank-major, so rank r's slice is rows
// [r*batch, (r+1)*batch).
inline std::pair<torch::Tensor, torch::Tensor> global_batch(const TrainConfig& c, int step, int micro) {
  auto gen_seed = 7 + step * 131 + micro * 17;
  torch::manual_seed(gen_seed);
  auto x = torch::randn({c.world * c.batch, 8});
  auto y = torch::randn({c.world * c.batch, 4});
  return {x, y};
}

inline torch::optim::SGD make_optimizer(std::vector<torch::Tensor> params) {
  return torch::optim::SGD(std::move(params), torch::optim::SGDOptions(0.1).momentum(0.9));
}

// Single process on the concatenated batch: the result DDP must reproduce.
inline std::vector<torch::Tensor> reference_training(const TrainConfig& c) {
  Net net = make_net(c.with_unused, 1000);
  auto opt = make_optimizer(net->parameters());
  for (int step = 0; step < c.steps; ++step) {
    opt.zero_grad();
    for (int micro = 0; micro < c.accumulate; ++micro) {
      auto [x, y] = global_batch(c, step, micro);
      auto loss = torch::mse_loss(net->forward(x), y) / c.accumulate;
      loss.backward();
    }
    opt.step();
  }
  std::vector<torch::Tensor> out;
  for (auto& p : net->parameters()) out.push_back(p.detach().clone());
  return out;
}

}  // namespace ddp::test
