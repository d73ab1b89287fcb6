// The minimal trainer of docs/runtime.md, built against an installed libddp.
#include <ddp/ddp.hpp>

int train(int, char**) {
  ddp::init_process_group();
  auto net = torch::nn::Sequential(torch::nn::Linear(8, 16), torch::nn::ReLU(), torch::nn::Linear(16, 2));
  auto model = ddp::DistributedDataParallel(net);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  for (int step = 0; step < 5; ++step) {
    auto x = torch::randn({16, 8});
    auto y = torch::randint(0, 2, {16});
    opt.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(model(x), y);
    loss.backward();
    opt.step();
    ddp::log_rank0() << "step " << step << " loss " << loss.item<float>();
  }
  ddp::destroy_process_group();
  return 0;
}

int main(int argc, char** argv) { return ddp::run(argc, argv, train); }
