// The join() tests' model, per-rank data and reference: uneven shards (rank r trains on its
// own batches[r] steps), and the single-process simulation of the same sequence of averaged
// gradients that every rank's final parameters must equal. Shared by workers and parent.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

namespace ddp::test {

// A small MLP with a buffer that counts forwards (so buffer sync from the right rank shows).
struct JoinNetImpl : torch::nn::Module {
  JoinNetImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(8, 16));
    fc2 = register_module("fc2", torch::nn::Linear(16, 16));
    fc3 = register_module("fc3", torch::nn::Linear(16, 4));
    forwards = register_buffer("forwards", torch::zeros({1}));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    {
      torch::NoGradGuard no_grad;
      forwards.add_(1);
    }
    return fc3(torch::tanh(fc2(torch::tanh(fc1(x)))));
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
  torch::Tensor forwards;
};
TORCH_MODULE(JoinNet);

struct JoinConfig {
  std::vector<int> batches;  // steps per rank, e.g. {3, 5, 7}
  int accumulate = 1;        // micro-batches per step (no_sync on all but the last)
  bool divide_by_initial = true;
  int world() const { return static_cast<int>(batches.size()); }
  int max_steps() const {
    int m = 0;
    for (int b : batches) m = std::max(m, b);
    return m;
  }
};

inline JoinNet make_join_net(int seed) {
  torch::manual_seed(seed);
  return JoinNet();
}

inline std::pair<torch::Tensor, torch::Tensor> join_batch(int rank, int step, int micro) {
  torch::manual_seed(11 + rank * 7919 + step * 131 + micro * 17);
  return {torch::randn({4, 8}), torch::randn({4, 4})};
}

inline torch::optim::SGD make_join_optimizer(std::vector<torch::Tensor> params) {
  return torch::optim::SGD(std::move(params), torch::optim::SGDOptions(0.1).momentum(0.9));
}

// One process: at step k the ranks with batches[r] > k contribute their micro-batches' gradients,
// summed and divided by the initial world size or by the number of those ranks.
inline std::vector<torch::Tensor> join_reference(const JoinConfig& c) {
  JoinNet net = make_join_net(1000);
  auto opt = make_join_optimizer(net->parameters());
  for (int step = 0; step < c.max_steps(); ++step) {
    int active = 0;
    for (int b : c.batches) active += b > step ? 1 : 0;
    const double divisor = c.divide_by_initial ? c.world() : active;
    opt.zero_grad();
    for (int r = 0; r < c.world(); ++r) {
      if (c.batches[static_cast<size_t>(r)] <= step) continue;
      for (int micro = 0; micro < c.accumulate; ++micro) {
        auto [x, y] = join_batch(r, step, micro);
        (torch::mse_loss(net->forward(x), y) / c.accumulate / divisor).backward();
      }
    }
    opt.step();
  }
  std::vector<torch::Tensor> out;
  for (auto& p : net->parameters()) out.push_back(p.detach().clone());
  return out;
}

}  // namespace ddp::test
