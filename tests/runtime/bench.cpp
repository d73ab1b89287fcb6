// ddp_bench: the C++ twin of bench/peers/python_ddp_bench.py (same MLP, synthetic data,
// SGD momentum, same flags and output line) for scripts/bench-ddp.sh. Run under a launcher.
// Not in the peer: --optimizer adam, --zero 1 (ZeroRedundancyOptimizer; scripts/bench-zero.sh)
// and the optimizer state's bytes at the end of the line.
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <string>

#include "ddp/ddp.hpp"

namespace {

std::map<std::string, double> parse(int argc, char** argv, std::string& hook, std::string& optimizer) {
  std::map<std::string, double> a{{"steps", 100},   {"warmup", 10},       {"batch", 32},   {"hidden", 1024},
                                  {"layers", 4},    {"in-dim", 784},      {"classes", 10}, {"bucket-mb", 25},
                                  {"grad-view", 0}, {"powersgd-rank", 2}, {"zero", 0}};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string key = argv[i];
    if (key == "--comm-hook") {
      hook = argv[i + 1];
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

// --comm-hook as in the Python peer: allreduce (no hook), fp16, bf16, powersgd (start 2, rate 2).
void register_hook(ddp::DistributedDataParallel<torch::nn::Sequential>& model, const std::string& hook, int rank) {
  if (hook == "allreduce") return;
  if (hook == "fp16") return model.register_comm_hook(ddp::hooks::fp16_compress());
  if (hook == "bf16") return model.register_comm_hook(ddp::hooks::bf16_compress());
  if (hook != "powersgd") throw ddp::ConfigError("--comm-hook must be allreduce, fp16, bf16 or powersgd");
  ddp::PowerSgdOptions o;
  o.matrix_approximation_rank = rank;
  o.start_powersgd_iter = 2;
  o.min_compression_rate = 2;
  model.register_comm_hook(ddp::hooks::powersgd(std::make_shared<ddp::PowerSgdState>(o)));
}

int bench(int argc, char** argv) {
  std::string hook = "allreduce";
  std::string optimizer = "sgd";
  auto a = parse(argc, argv, hook, optimizer);
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
  register_hook(model, hook, static_cast<int>(a["powersgd-rank"]));
  ddp::OptimizerFactory factory =
      optimizer == "adam" ? ddp::optimizer_factory<torch::optim::Adam>(torch::optim::AdamOptions(1e-3))
                          : ddp::optimizer_factory<torch::optim::SGD>(torch::optim::SGDOptions(0.01).momentum(0.9));
  std::unique_ptr<torch::optim::Optimizer> owned =
      a["zero"] != 0 ? std::make_unique<ddp::ZeroRedundancyOptimizer>(net->parameters(), factory)
                     : factory(net->parameters());
  torch::optim::Optimizer& opt = *owned;
  auto gen_seed = 1000 + rank;
  torch::manual_seed(gen_seed);
  const auto batch = static_cast<int64_t>(a["batch"]);
  auto x = torch::randn({batch, static_cast<int64_t>(a["in-dim"])});
  auto y = torch::randint(0, static_cast<int64_t>(a["classes"]), {batch});
  auto step = [&] {
    for (auto& p : net->parameters()) p.mutable_grad() = torch::Tensor();  // zero_grad(set_to_none=True)
    auto loss = torch::nn::functional::cross_entropy(model(x), y);
    loss.backward();
    opt.step();
  };
  for (int i = 0; i < static_cast<int>(a["warmup"]); ++i) step();
  ddp::barrier();
  const auto t0 = std::chrono::steady_clock::now();
  const int steps = static_cast<int>(a["steps"]);
  for (int i = 0; i < steps; ++i) step();
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
    std::cout << line << std::endl;
  }
  ddp::destroy_process_group();
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return ddp::run(argc, argv, bench); }
