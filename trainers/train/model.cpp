#include "model.hpp"

#include <algorithm>
#include <cmath>

namespace ddp::train {

torch::nn::Sequential make_mlp(int in_dim, const std::vector<int>& hidden, int classes) {
  torch::nn::Sequential net;
  int64_t width = in_dim;
  for (int h : hidden) {
    net->push_back(torch::nn::Linear(width, h));
    net->push_back(torch::nn::ReLU());
    width = h;
  }
  net->push_back(torch::nn::Linear(width, classes));
  return net;
}

std::string shape_of(int in_dim, const std::vector<int>& hidden, int classes) {
  std::string s = std::to_string(in_dim);
  for (int h : hidden) s += "-" + std::to_string(h);
  return s + "-" + std::to_string(classes);
}

int64_t parameter_count(torch::nn::Module& module) {
  int64_t n = 0;
  for (const auto& p : module.parameters()) n += p.numel();
  return n;
}

std::shared_ptr<ddp::PowerSgdState> make_powersgd_state(const TrainOptions& o) {
  if (o.comm_hook != "powersgd") return nullptr;
  ddp::PowerSgdOptions options;
  options.matrix_approximation_rank = o.powersgd_rank;
  options.start_powersgd_iter = o.powersgd_start_iter;
  return std::make_shared<ddp::PowerSgdState>(options);
}

DdpMlp wrap_ddp(const torch::nn::Sequential& net, const TrainOptions& o, std::shared_ptr<ddp::PowerSgdState> powersgd,
                bool same_weights) {
  ddp::DdpOptions ddp_options;
  ddp_options.bucket_cap_mb = o.bucket_mb;
  ddp_options.init_sync = !same_weights;
  DdpMlp model(net, ddp_options);
  if (o.comm_hook == "fp16") model.register_comm_hook(ddp::hooks::fp16_compress());
  if (o.comm_hook == "bf16") model.register_comm_hook(ddp::hooks::bf16_compress());
  if (o.comm_hook == "powersgd") model.register_comm_hook(ddp::hooks::powersgd(std::move(powersgd)));
  return model;
}

void set_learning_rate(torch::optim::SGD& optimizer, const TrainOptions& o, int64_t step, int64_t total_steps) {
  double lr = o.lr;
  if (o.schedule == "cosine")
    lr *= 0.5 * (1.0 + std::cos(M_PI * double(step) / double(std::max<int64_t>(1, total_steps))));
  for (auto& group : optimizer.param_groups()) static_cast<torch::optim::SGDOptions&>(group.options()).lr(lr);
}

double mean_over_ranks(double value) {
  auto t = torch::tensor({value}, torch::kDouble).to(ddp::device());
  ddp::all_reduce(t);
  return t.item<double>() / ddp::get_world_size();
}

double evaluate(torch::nn::Sequential& net, const Data& data) {
  torch::NoGradGuard no_grad;
  net->eval();
  const int64_t n = data.val_x.size(0);
  const int rank = ddp::get_rank(), world = ddp::get_world_size();
  const int64_t lo = n * rank / world, hi = n * (rank + 1) / world;
  double correct = 0;
  if (hi > lo) {
    const torch::Device device = ddp::device();  // the data stays on the CPU (data.hpp); the model is here
    const auto logits = net->forward(data.val_x.slice(0, lo, hi).to(device));
    correct = logits.argmax(1).eq(data.val_y.slice(0, lo, hi).to(device)).sum().item<double>();
  }
  auto counts = torch::tensor({correct, double(hi - lo)}, torch::kDouble).to(ddp::device());
  ddp::all_reduce(counts);
  net->train();
  return counts[0].item<double>() / counts[1].item<double>();
}

}  // namespace ddp::train
