// port: a typical torch.distributed training script ported to C++ with libddp alone —
//   ddp-launch --nproc_per_node=2 ./port [--epochs N]
// A small CNN whose BatchNorm2d convert_sync_batchnorm turns into SyncBatchNorm, wrapped in DDP and
// stepped by a ZeroRedundancyOptimizer (Adam); each rank reads its shard through
// ddp::DistributedSampler; the loss is averaged for the log by an async all_reduce that overlaps
// the next step; per-class sample counts are summed and sharded with reduce_scatter. Prints one
// line per epoch and a final line per rank; exit 1 if ranks diverge or the counts do not add up.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ddp/ddp.hpp"

namespace {

constexpr int64_t kSamples = 512, kBatch = 32, kSide = 8, kLogEvery = 4;

// A seeded synthetic task, the same on every rank: a class is the argmax of fixed random
// projections of the image (a hidden linear teacher).
struct Data {
  torch::Tensor x, y;
};
Data make_data(int64_t classes) {
  torch::manual_seed(1);
  Data d;
  d.x = torch::randn({kSamples, 1, kSide, kSide});
  const torch::Tensor teacher = torch::randn({kSide * kSide, classes});
  d.y = d.x.reshape({kSamples, -1}).matmul(teacher).argmax(1);
  return d;
}

double checksum(torch::nn::Module& module) {
  double sum = 0;
  for (const auto& p : module.parameters()) sum += p.detach().to(torch::kDouble).abs().sum().item<double>();
  for (const auto& b : module.buffers()) sum += b.detach().to(torch::kDouble).abs().sum().item<double>();
  return sum;
}

// The run's end on every rank: per-class counts over the group (each rank keeping its 2
// classes' sums) against the samples the sampler dealt, the parameters' checksum compared
// across ranks, one line; 0 when both agree.
int finish(torch::nn::Module& net, const torch::Tensor& seen, int64_t expected, double first_loss, double last_loss) {
  const int rank = ddp::get_rank(), world = ddp::get_world_size();
  torch::Tensor shard = torch::zeros({2}, torch::kLong);
  ddp::reduce_scatter_tensor(shard, seen);
  torch::Tensor total = shard.sum().reshape({1});
  ddp::all_reduce(total);

  const double sum = checksum(net);
  const auto sums = ddp::all_gather(torch::tensor({sum}, torch::kDouble));
  bool identical = true;
  for (const auto& s : sums) identical = identical && s.item<double>() == sum;
  std::printf(
      "port: rank %d/%d loss %.4f -> %.4f, class counts %lld+%lld, all %lld of %lld, params checksum=%.10g "
      "identical_across_ranks=%s\n",
      rank, world, first_loss, last_loss, static_cast<long long>(shard[0].item<int64_t>()),
      static_cast<long long>(shard[1].item<int64_t>()), static_cast<long long>(total.item<int64_t>()),
      static_cast<long long>(expected), sum, identical ? "yes" : "no");
  return identical && total.item<int64_t>() == expected ? 0 : 1;
}

int train(int epochs) {
  const int rank = ddp::get_rank(), world = ddp::get_world_size();
  const int64_t classes = 2 * world;  // divisible by world: reduce_scatter gives each rank 2
  const Data data = make_data(classes);

  torch::manual_seed(0);  // the same initial weights on every rank (DDP also broadcasts rank 0's)
  torch::nn::Sequential net(torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 8, 3).padding(1)), torch::nn::BatchNorm2d(8),
                            torch::nn::ReLU(), torch::nn::Flatten(), torch::nn::Linear(8 * kSide * kSide, classes));
  ddp::convert_sync_batchnorm(net.ptr());  // Sequential children are swapped in place
  ddp::DistributedDataParallel model(net);
  ddp::ZeroRedundancyOptimizer optimizer(model.parameters(),
                                         ddp::optimizer_factory<torch::optim::Adam>(torch::optim::AdamOptions(1e-2)));
  ddp::DistributedSampler sampler(kSamples, world, rank);

  double first_loss = -1, last_loss = -1;
  // The loss all_reduce issued kLogEvery steps ago: waited for only when the next one is due.
  struct Pending {
    ddp::Work work;
    torch::Tensor value;
  } pending;
  auto record = [&](Pending& p) {
    if (!p.value.defined()) return;
    p.work.wait();
    last_loss = p.value.item<double>();
    if (first_loss < 0) first_loss = last_loss;
    p.value = torch::Tensor();
  };
  torch::Tensor seen = torch::zeros({classes}, torch::kLong);
  for (int epoch = 0; epoch < epochs; ++epoch) {
    sampler.set_epoch(epoch);
    sampler.reset();
    torch::Tensor loss_sum = torch::zeros({1});
    int64_t steps = 0;
    while (auto indices = sampler.next(kBatch)) {
      std::vector<int64_t> idx(indices->begin(), indices->end());
      const torch::Tensor sel = torch::tensor(idx, torch::kLong);
      const torch::Tensor x = data.x.index_select(0, sel), y = data.y.index_select(0, sel);
      seen += torch::bincount(y, {}, classes);
      optimizer.zero_grad();
      torch::Tensor loss = torch::nn::functional::cross_entropy(model(x), y);
      loss.backward();
      optimizer.step();
      loss_sum += loss.detach().reshape({1});
      if (++steps % kLogEvery == 0) {  // the log's mean loss over the group, in flight meanwhile
        record(pending);
        pending.value = loss_sum / double(kLogEvery);
        loss_sum = torch::zeros({1});
        pending.work = ddp::async::all_reduce(pending.value, ddp::ReduceOp::kAvg);
      }
    }
    record(pending);
    if (rank == 0) std::printf("port: epoch %d mean loss %.4f\n", epoch, last_loss);
  }

  return finish(*net, seen, static_cast<int64_t>(sampler.total_size()) * epochs, first_loss, last_loss);
}

}  // namespace

int main(int argc, char** argv) {
  return ddp::run(argc, argv, [](int n, char** args) -> int {
    int epochs = 3;
    if (n == 3 && std::string(args[1]) == "--epochs") epochs = std::atoi(args[2]);
    if (epochs < 1) throw ddp::ConfigError("port: usage: port [--epochs N] (N >= 1)");
    ddp::init_process_group();
    const int rc = train(epochs);
    ddp::destroy_process_group();
    return rc;
  });
}
