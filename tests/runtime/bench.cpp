// ddp_bench: the C++ twin of bench/peers/python_ddp_bench.py (same MLP, synthetic data,
// SGD momentum, same flags and output line) for scripts/bench-ddp.sh. Run under a launcher.
// --data FILE --epochs E (scripts/bench-compress.sh): trains on a data set file made by
// bench/peers/bench_models.py (write_dataset) as the Python twin does, same shards, and
// appends accuracy=A; --comm-hook none: no communication at all (the compute floor).
// Not in the peer: --optimizer adam, --zero 1 (ZeroRedundancyOptimizer; scripts/bench-zero.sh)
// and the optimizer state's bytes at the end of the line.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ddp/ddp.hpp"

namespace {

std::map<std::string, double> parse(int argc, char** argv, std::string& hook, std::string& data,
                                    std::string& optimizer) {
  std::map<std::string, double> a{{"steps", 100},   {"warmup", 10},       {"batch", 32},         {"hidden", 1024},
                                  {"layers", 4},    {"in-dim", 784},      {"classes", 10},       {"bucket-mb", 25},
                                  {"grad-view", 0}, {"powersgd-rank", 2}, {"powersgd-start", 2}, {"epochs", 3},
                                  {"lr", 0.01},     {"zero", 0}};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string key = argv[i];
    if (key == "--comm-hook" || key == "--data") {
      (key == "--data" ? data : hook) = argv[i + 1];
      continue;
    }
    if (key == "--optimizer") {
      optimizer = argv[i + 1];
      if (optimizer != "sgd" && optimizer != "adam") throw ddp::ConfigError("--optimizer must be sgd or adam");
      continue;
    }
    if (key.rfind("--", 0) != 0 || !a.count(key.substr(2))) throw ddp::ConfigError("unknown flag " + key);
    a[key.substr(2)] = std::stod(argv[i + 1]);
  }
  return a;
}

// --comm-hook as in the Python peer: allreduce (no hook), fp16, bf16, powersgd (--powersgd-start
// plain steps first, default 2; min compression rate 2), and none (no communication).
void register_hook(ddp::DistributedDataParallel<torch::nn::Sequential>& model, const std::string& hook, int rank,
                   int start) {
  if (hook == "allreduce") return;
  if (hook == "none") {  // the bucket as it is: each rank trains on its own gradients
    return model.register_comm_hook([](ddp::GradBucket& bucket) -> ddp::Future {
      auto done = c10::make_intrusive<c10::ivalue::Future>(c10::TensorType::get());
      done->markCompleted(c10::IValue(bucket.buffer()));
      return done;
    });
  }
  if (hook == "fp16") return model.register_comm_hook(ddp::hooks::fp16_compress());
  if (hook == "bf16") return model.register_comm_hook(ddp::hooks::bf16_compress());
  if (hook != "powersgd") throw ddp::ConfigError("--comm-hook must be allreduce, none, fp16, bf16 or powersgd");
  ddp::PowerSgdOptions o;
  o.matrix_approximation_rank = rank;
  o.start_powersgd_iter = start;
  o.min_compression_rate = 2;
  model.register_comm_hook(ddp::hooks::powersgd(std::make_shared<ddp::PowerSgdState>(o)));
}

// A data set file in bench_models.py's layout: magic, int64 n_train n_val dim classes,
// float32 rows, int64 labels. Returns {x_train, y_train, x_val, y_val}.
std::vector<torch::Tensor> read_dataset(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ddp::ConfigError("--data " + path + ": cannot open it");
  char magic[8];
  int64_t head[4];
  in.read(magic, 8);
  in.read(reinterpret_cast<char*>(head), sizeof(head));
  if (!in || std::memcmp(magic, "DDPDATA1", 8) != 0)
    throw ddp::ConfigError("--data " + path +
                           ": not a benchmark data set; make one with scripts/bench_compress.py data");
  const int64_t n = head[0] + head[1], dim = head[2];
  auto x = torch::empty({n, dim}, torch::kFloat32);
  auto y = torch::empty({n}, torch::kInt64);
  in.read(reinterpret_cast<char*>(x.data_ptr<float>()), static_cast<std::streamsize>(4 * n * dim));
  in.read(reinterpret_cast<char*>(y.data_ptr<int64_t>()), static_cast<std::streamsize>(8 * n));
  if (!in) throw ddp::ConfigError("--data " + path + ": truncated");
  return {x.slice(0, 0, head[0]), y.slice(0, 0, head[0]), x.slice(0, head[0]), y.slice(0, head[0])};
}

// bench_models.epoch_shard: a permutation seeded with the epoch, every world-th from rank.
torch::Tensor epoch_shard(int64_t n, int epoch, int rank, int world) {
  auto gen = at::detail::createCPUGenerator(static_cast<uint64_t>(epoch));
  auto perm = torch::randperm(n, gen, torch::kInt64);
  const int64_t share = n / world;
  return perm.slice(0, rank, share * world, world);
}

int bench(int argc, char** argv) {
  std::string hook = "allreduce", data, optimizer = "sgd";
  auto a = parse(argc, argv, hook, data, optimizer);
  const char* threads = std::getenv("OMP_NUM_THREADS");
  torch::set_num_threads(threads ? std::atoi(threads) : 1);
  ddp::ProcessGroupOptions pg;
  pg.backend = "gloo";
  ddp::init_process_group(pg);
  const int rank = ddp::get_rank();
  const int world = ddp::get_world_size();
  torch::manual_seed(0);
  torch::nn::Sequential net;
  int64_t d = static_cast<int64_t>(a["in-dim"]);
  for (int i = 0; i < static_cast<int>(a["layers"]) - 1; ++i) {
    net->push_back(torch::nn::Linear(d, static_cast<int64_t>(a["hidden"])));
    net->push_back(torch::nn::ReLU());
    d = static_cast<int64_t>(a["hidden"]);
  }
  net->push_back(torch::nn::Linear(d, static_cast<int64_t>(a["classes"])));
  ddp::DdpOptions options;
  options.bucket_cap_mb = a["bucket-mb"];
  options.gradient_as_bucket_view = a["grad-view"] != 0;  // not in the Python peer; off by default
  auto model = ddp::DistributedDataParallel(net, options);
  register_hook(model, hook, static_cast<int>(a["powersgd-rank"]), static_cast<int>(a["powersgd-start"]));
  ddp::OptimizerFactory factory =
      optimizer == "adam" ? ddp::optimizer_factory<torch::optim::Adam>(torch::optim::AdamOptions(1e-3))
                          : ddp::optimizer_factory<torch::optim::SGD>(torch::optim::SGDOptions(a["lr"]).momentum(0.9));
  std::unique_ptr<torch::optim::Optimizer> owned =
      a["zero"] != 0 ? std::make_unique<ddp::ZeroRedundancyOptimizer>(net->parameters(), factory)
                     : factory(net->parameters());
  torch::optim::Optimizer& opt = *owned;
  auto gen_seed = 1000 + rank;
  torch::manual_seed(gen_seed);
  const auto batch = static_cast<int64_t>(a["batch"]);
  torch::Tensor x = torch::randn({batch, static_cast<int64_t>(a["in-dim"])});
  torch::Tensor y = torch::randint(0, static_cast<int64_t>(a["classes"]), {batch});
  auto step = [&] {
    for (auto& p : net->parameters()) p.mutable_grad() = torch::Tensor();  // zero_grad(set_to_none=True)
    auto loss = torch::nn::functional::cross_entropy(model(x), y);
    loss.backward();
    opt.step();
  };
  const int warmup = static_cast<int>(a["warmup"]);
  int steps = static_cast<int>(a["steps"]);
  auto t0 = std::chrono::steady_clock::now();
  std::string accuracy;
  if (!data.empty()) {
    const auto set = read_dataset(data);
    const int64_t per_epoch = set[1].size(0) / world / batch;
    if (per_epoch * static_cast<int64_t>(a["epochs"]) <= warmup)
      throw ddp::ConfigError("--data: " + std::to_string(per_epoch) +
                             " steps per epoch x --epochs leave none after --warmup " + std::to_string(warmup) +
                             "; more epochs or a smaller --warmup");
    int done = 0;
    for (int epoch = 0; epoch < static_cast<int>(a["epochs"]); ++epoch) {
      const auto shard = epoch_shard(set[1].size(0), epoch, rank, world);
      for (int64_t i = 0; i + batch <= shard.size(0); i += batch) {
        const auto index = shard.slice(0, i, i + batch);
        x = set[0].index_select(0, index);
        y = set[1].index_select(0, index);
        step();
        if (++done == warmup) {
          ddp::barrier();
          t0 = std::chrono::steady_clock::now();
        }
      }
    }
    steps = done - warmup;
    torch::NoGradGuard no_grad;
    const double right = net->forward(set[2]).argmax(1).eq(set[3]).sum().item<double>();
    char text[32];
    std::snprintf(text, sizeof(text), " accuracy=%.4f", right / static_cast<double>(set[3].size(0)));
    accuracy = text;
  } else {
    for (int i = 0; i < warmup; ++i) step();
    ddp::barrier();
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) step();
  }
  ddp::barrier();
  const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto state_bytes = torch::tensor({ddp::optimizer_state_bytes(opt)}, torch::kLong);
  const int64_t rank0_bytes = state_bytes.item<int64_t>();
  ddp::all_reduce(state_bytes, ddp::ReduceOp::kMax);
  if (rank == 0) {
    int64_t nparams = 0;
    for (const auto& p : net->parameters()) nparams += p.numel();
    char line[512];
    std::snprintf(line, sizeof(line),
                  "peer=cpp-ddp world=%d steps=%d batch=%lld params=%lld samples_per_s=%.1f step_ms=%.2f "
                  "optimizer=%s zero=%d state_bytes=%lld state_bytes_max=%lld",
                  world, steps, static_cast<long long>(batch), static_cast<long long>(nparams),
                  steps * batch * world / dt, 1000 * dt / steps, optimizer.c_str(), a["zero"] != 0 ? 1 : 0,
                  static_cast<long long>(rank0_bytes), static_cast<long long>(state_bytes.item<int64_t>()));
    std::cout << line << accuracy << std::endl;
  }
  ddp::destroy_process_group();
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return ddp::run(argc, argv, bench); }
