// bench: the C++ side of the GPU benchmark (twin of tests/gpu/python_gpu_bench.py: same models,
// synthetic data, SGD momentum 0.9, zero_grad(set_to_none), flags and output line). Times the
// plain model first, then the same model wrapped in DDP, so one run gives DDP's overhead.
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>

#include "checks.hpp"
#include "ddp/ddp.hpp"

namespace ddp::gpu_check {
namespace {

int64_t int_arg(const Args& args, const std::string& key, int64_t fallback) {
  return std::stoll(arg(args, key, std::to_string(fallback)));
}

// MLP in-dim -> hidden x (layers-1) -> classes, or a small conv net on 3x32x32 images.
torch::nn::Sequential make_model(const Args& args) {
  torch::nn::Sequential net;
  const int64_t classes = int_arg(args, "classes", 10);
  if (arg(args, "model", "mlp") == "conv") {
    namespace nn = torch::nn;
    net->push_back(nn::Conv2d(nn::Conv2dOptions(3, 32, 3).padding(1)));
    net->push_back(nn::ReLU());
    net->push_back(nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)));
    net->push_back(nn::ReLU());
    net->push_back(nn::AdaptiveAvgPool2d(1));
    net->push_back(nn::Flatten());
    net->push_back(nn::Linear(64, classes));
    return net;
  }
  int64_t d = int_arg(args, "in-dim", 784);
  for (int64_t i = 0; i < int_arg(args, "layers", 4) - 1; ++i) {
    net->push_back(torch::nn::Linear(d, int_arg(args, "hidden", 1024)));
    net->push_back(torch::nn::ReLU());
    d = int_arg(args, "hidden", 1024);
  }
  net->push_back(torch::nn::Linear(d, classes));
  return net;
}

void sync(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize();
}

// Mean milliseconds per step of `step` after `warmup` untimed steps.
template <typename Step>
double time_steps(Step&& step, int64_t warmup, int64_t steps, const torch::Device& device) {
  for (int64_t i = 0; i < warmup; ++i) step();
  sync(device);
  barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < steps; ++i) step();
  sync(device);
  barrier();
  return 1000 * std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / steps;
}

}  // namespace

void bench(const Args& args) {
  ProcessGroupOptions pg;
  pg.backend = arg(args, "backend", "nccl");
  init_process_group(pg);
  const auto device = check_device(args);
  const int rank = get_rank(), world = get_world_size();
  torch::manual_seed(0);
  auto net = make_model(args);
  net->to(device);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  torch::manual_seed(1000 + rank);
  const int64_t batch = int_arg(args, "batch", 32), classes = int_arg(args, "classes", 10);
  auto x = arg(args, "model", "mlp") == "conv" ? torch::randn({batch, 3, 32, 32})
                                               : torch::randn({batch, int_arg(args, "in-dim", 784)});
  auto y = torch::randint(0, classes, {batch});
  x = x.to(device);
  y = y.to(device);
  auto step_with = [&](std::function<torch::Tensor(const torch::Tensor&)> forward) {
    return [&, forward] {
      for (auto& p : net->parameters()) p.mutable_grad() = torch::Tensor();  // zero_grad(set_to_none=True)
      torch::nn::functional::cross_entropy(forward(x), y).backward();
      opt.step();
    };
  };
  const int64_t warmup = int_arg(args, "warmup", 10), steps = int_arg(args, "steps", 100);
  const double plain_ms =
      time_steps(step_with([&](const torch::Tensor& in) { return net->forward(in); }), warmup, steps, device);
  DdpOptions options;
  options.bucket_cap_mb = std::stod(arg(args, "bucket-mb", "25"));
  auto model = DistributedDataParallel(net, options);
  const double ddp_ms =
      time_steps(step_with([&](const torch::Tensor& in) { return model(in); }), warmup, steps, device);
  if (rank == 0) {
    int64_t nparams = 0;
    for (const auto& p : net->parameters()) nparams += p.numel();
    char line[320];
    std::snprintf(line, sizeof(line),
                  "peer=cpp-ddp model=%s backend=%s device=%s world=%d steps=%lld batch=%lld params=%lld "
                  "plain_ms=%.3f ddp_ms=%.3f overhead_pct=%.1f",
                  arg(args, "model", "mlp").c_str(), pg.backend.c_str(), device.str().c_str(), world,
                  static_cast<long long>(steps), static_cast<long long>(batch), static_cast<long long>(nparams),
                  plain_ms, ddp_ms, 100 * (ddp_ms / plain_ms - 1));
    std::cout << line << std::endl;
  }
  destroy_process_group();
}

}  // namespace ddp::gpu_check
