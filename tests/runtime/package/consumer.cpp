// The minimal trainer shown in docs/runtime.md, built against an installed libddp.
#include <ddp/ddp.hpp>

int train(int, char**) {
  ddp::init_process_group();  // env:// from ddp-launch / torchrun; gloo or NCCL
  auto net = torch::nn::Sequential(torch::nn::Linear(8, 16), torch::nn::ReLU(), torch::nn::Linear(16, 2));
  net->to(ddp::device());                          // cuda:LOCAL_RANK with NCCL, else CPU
  auto model = ddp::DistributedDataParallel(net);  // checks shapes on all ranks, broadcasts rank 0's weights
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  const auto on_device = torch::TensorOptions().device(ddp::device());
  for (int step = 0; step < 5; ++step) {
    auto x = torch::randn({16, 8}, on_device);
    auto y = torch::randint(0, 2, {16}, on_device.dtype(torch::kLong));
    opt.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(model(x), y);
    loss.backward();  // gradients are averaged across ranks when this returns
    opt.step();
    ddp::log_rank0() << "step " << step << " loss " << loss.item<float>();
  }
  ddp::save_checkpoint("checkpoint.pt", net, &opt, {{"step", int64_t{5}}});
  ddp::destroy_process_group();
  return 0;
}

int main(int argc, char** argv) { return ddp::run(argc, argv, train); }
