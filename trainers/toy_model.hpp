// The PyTorch DDP tutorial's ToyModel (Linear 10->10, ReLU, Linear 10->5) and the helpers the
// examples share: a parameter checksum and a cross-rank identity check (collective).
// Header-only so each example stays one translation unit.
#pragma once

#include <cstdio>
#include <string>

#include <ddp/ddp.hpp>

namespace examples {

struct ToyModelImpl : torch::nn::Module {
  ToyModelImpl()
      : net1(register_module("net1", torch::nn::Linear(10, 10))),
        net2(register_module("net2", torch::nn::Linear(10, 5))) {}
  torch::Tensor forward(const torch::Tensor& x) { return net2(torch::relu(net1(x))); }
  torch::nn::Linear net1, net2;
};
TORCH_MODULE(ToyModel);

// All parameters flattened into one float64 vector.
inline torch::Tensor flat_parameters(torch::nn::Module& module) {
  std::vector<torch::Tensor> flat;
  for (const auto& p : module.parameters()) flat.push_back(p.detach().to(torch::kCPU, torch::kDouble).flatten());
  return torch::cat(flat);
}

inline double checksum(torch::nn::Module& module) { return flat_parameters(module).sum().item<double>(); }

// Collective: true when every rank holds exactly the same parameters.
inline bool parameters_identical(torch::nn::Module& module) {
  const auto mine = flat_parameters(module).to(ddp::device());
  const auto all = ddp::all_gather(mine);
  for (const auto& other : all) {
    if (!torch::equal(other, all.front())) return false;
  }
  return true;
}

// One line to stdout, written at once (the launcher prefixes it with [rankN]:).
inline void say(const std::string& line) {
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

// The tutorial's demo_basic: one SGD step of the ToyModel under DDP on random data, then a
// check that all ranks ended with identical parameters. Needs an initialized process group.
inline bool demo_basic() {
  const int rank = ddp::get_rank();
  const int world = ddp::get_world_size();
  torch::manual_seed(rank);  // different initial weights per rank: DDP must broadcast rank 0's
  ToyModel net;
  net->to(ddp::device());
  auto model = ddp::DistributedDataParallel(net);
  torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(0.001));
  optimizer.zero_grad();
  auto outputs = model(torch::randn({20, 10}, ddp::device()));
  auto labels = torch::randn({20, 5}, ddp::device());
  torch::mse_loss(outputs, labels).backward();
  optimizer.step();
  const bool same = parameters_identical(*net);
  char line[160];
  std::snprintf(line, sizeof line, "basic: rank %d/%d stepped, params checksum=%.9f identical_across_ranks=%s", rank,
                world, checksum(*net), same ? "yes" : "NO");
  say(line);
  return same;
}

}  // namespace examples
