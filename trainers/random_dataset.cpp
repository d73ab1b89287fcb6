// random_dataset: the PyTorch tutorial's RandomDataset with a DistributedSampler —
//   ddp-launch --nproc_per_node=4 ./random_dataset [--sequential]
// 90 random samples of size 5, Linear(5, 2) under DDP, batch 30. Each epoch (set_epoch
// reshuffles) every rank prints the sample indices it drew (those of Python's DistributedSampler
// for seed 0; --sequential: shuffle=False) and, like the tutorial, the input and output sizes
// inside and outside the model.
#include <cstdio>
#include <string>

#include "toy_model.hpp"

namespace {

constexpr int64_t kSamples = 90;
constexpr int64_t kInputSize = 5;
constexpr int64_t kOutputSize = 2;
constexpr int64_t kBatch = 30;
constexpr int kEpochs = 2;

// Sample i is row i of a fixed random matrix; the target carries i so ranks can report it.
class RandomDataset : public torch::data::datasets::Dataset<RandomDataset> {
 public:
  RandomDataset(int64_t size, int64_t length) : data_(torch::randn({length, size})) {}
  torch::data::Example<> get(size_t index) override {
    return {data_[static_cast<int64_t>(index)], torch::tensor(static_cast<int64_t>(index))};
  }
  torch::optional<size_t> size() const override { return static_cast<size_t>(data_.size(0)); }

 private:
  torch::Tensor data_;
};

std::string sizes(const torch::Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

struct ModelImpl : torch::nn::Module {
  ModelImpl() : fc(register_module("fc", torch::nn::Linear(kInputSize, kOutputSize))) {}
  torch::Tensor forward(const torch::Tensor& input) {
    auto output = fc(input);
    examples::say("\tIn Model: input size " + sizes(input) + " output size " + sizes(output));
    return output;
  }
  torch::nn::Linear fc;
};
TORCH_MODULE(Model);

void train(ddp::DistributedSampler sampler, int rank) {
  torch::manual_seed(0);  // the same data set on every rank
  auto dataset = RandomDataset(kInputSize, kSamples).map(torch::data::transforms::Stack<>());
  Model net;
  auto model = ddp::DistributedDataParallel(net);
  torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(0.01));
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    sampler.set_epoch(epoch);
    auto loader = torch::data::make_data_loader(dataset, sampler, torch::data::DataLoaderOptions(kBatch));
    std::string drawn;
    for (auto& batch : *loader) {
      optimizer.zero_grad();
      auto output = model(batch.data);
      examples::say("Outside: input size " + sizes(batch.data) + " output_size " + sizes(output));
      output.pow(2).mean().backward();
      optimizer.step();
      const auto ids = batch.target.contiguous();
      const int64_t* id = ids.template data_ptr<int64_t>();
      for (int64_t i = 0; i < ids.numel(); ++i) drawn += (drawn.empty() ? "" : " ") + std::to_string(id[i]);
    }
    examples::say("rank " + std::to_string(rank) + " epoch " + std::to_string(epoch) + " indices: " + drawn);
  }
}

}  // namespace

int main(int argc, char** argv) {
  return ddp::run(argc, argv, [](int n, char** args) -> int {
    const bool sequential = n > 1 && std::string(args[1]) == "--sequential";
    ddp::init_process_group();
    const int rank = ddp::get_rank();
    const int world = ddp::get_world_size();
    ddp::DistributedSamplerOptions options;
    options.shuffle = !sequential;
    train(ddp::DistributedSampler(kSamples, size_t(world), size_t(rank), options), rank);
    ddp::destroy_process_group();
    return 0;
  });
}
