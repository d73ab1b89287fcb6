// torch_parity: libddp's DistributedSampler and SyncBatchNorm, printed for check_torch_parity.py to
// compare with Python torch 1.13 (one program, one mode per run):
//   torch_parity sampler < cases        one line "size replicas rank seed epoch shuffle drop_last"
//                                       per case in, that rank's indices per line out
//   torch_parity syncbn DIR             (under ddp-launch) every SyncBatchNorm case: DIR/rank<R>.txt
//   torch_parity ddp DIR                (under ddp-launch) a SyncBatchNorm model under DDP: DIR/rank<R>.txt
//   torch_parity convert                convert_sync_batchnorm on module trees, bad input, the
//                                       sampler's save/load; exit 0 when all hold
// Output files hold lines "name|d0,d1,...|v v v" (float64, %.17g).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <ddp/ddp.hpp>

namespace {

using torch::nn::BatchNormOptions;

class Dump {
 public:
  explicit Dump(const std::string& path) : out_(path) {
    if (!out_) throw std::runtime_error("cannot write " + path);
  }
  void put(const std::string& name, const torch::Tensor& tensor) {
    const torch::Tensor t = tensor.detach().to(torch::kDouble).contiguous();
    out_ << name << '|';
    for (int64_t d = 0; d < t.dim(); ++d) out_ << (d ? "," : "") << t.size(d);
    out_ << '|';
    const double* v = t.data_ptr<double>();
    char buffer[32];
    for (int64_t i = 0; i < t.numel(); ++i) {
      std::snprintf(buffer, sizeof buffer, "%.17g", v[i]);
      out_ << (i ? " " : "") << buffer;
    }
    out_ << '\n';
  }

 private:
  std::ofstream out_;
};

int sampler_mode() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    size_t size = 0, replicas = 0, rank = 0, epoch = 0;
    uint64_t seed = 0;
    int shuffle = 0, drop_last = 0;
    if (!(in >> size >> replicas >> rank >> seed >> epoch >> shuffle >> drop_last)) continue;
    ddp::DistributedSamplerOptions options;
    options.shuffle = shuffle != 0;
    options.seed = seed;
    options.drop_last = drop_last != 0;
    // Through the data-loader interface: set_epoch, reset, next in batches of 7.
    ddp::DistributedSampler sampler(size, replicas, rank, options);
    sampler.set_epoch(epoch);
    sampler.reset();
    std::string text;
    while (auto batch = sampler.next(7))
      for (size_t i : *batch) text += (text.empty() ? "" : " ") + std::to_string(i);
    std::cout << text << '\n';
  }
  return 0;
}

// Rank r's batch size: uneven, and a rank without samples at world 3.
int64_t batch_size(int rank, int world) {
  static const std::vector<std::vector<int64_t>> sizes{{6}, {3, 5}, {4, 0, 3}, {2, 3, 1, 4}};
  return sizes.at(static_cast<size_t>(world - 1)).at(static_cast<size_t>(rank));
}

struct BnCase {
  std::string name;
  std::vector<int64_t> tail;  // input dims after [N, C]
  bool affine = true;
  bool track = true;
  bool cumulative = false;  // momentum None
};

constexpr int64_t kChannels = 3;

torch::Tensor input(const std::vector<int64_t>& tail, int64_t n, uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<int64_t> shape{n, kChannels};
  shape.insert(shape.end(), tail.begin(), tail.end());
  return torch::randn(shape, torch::kDouble) * 2 + 0.5;
}

int syncbn_mode(const std::string& dir) {
  ddp::init_process_group();
  const int rank = ddp::get_rank(), world = ddp::get_world_size();
  Dump dump(dir + "/rank" + std::to_string(rank) + ".txt");
  const std::vector<BnCase> cases{{"1d_2", {}},
                                  {"1d_3", {4}},
                                  {"2d", {2, 3}},
                                  {"3d", {2, 2, 2}},
                                  {"2d_no_affine", {2, 3}, false},
                                  {"2d_no_stats", {2, 3}, true, false},
                                  {"2d_cumulative", {2, 3}, true, true, true}};
  uint64_t seed = 100;
  for (const auto& c : cases) {
    BatchNormOptions options(kChannels);
    options.affine(c.affine).track_running_stats(c.track).eps(1e-3);
    if (c.cumulative) options.momentum(torch::nullopt);
    ddp::SyncBatchNorm bn(options);
    bn->to(torch::kDouble);
    if (c.affine) {
      torch::manual_seed(7);
      torch::NoGradGuard no_grad;
      bn->weight.copy_(1 + 0.3 * torch::randn({kChannels}, torch::kDouble));
      bn->bias.copy_(0.3 * torch::randn({kChannels}, torch::kDouble));
      dump.put(c.name + ".weight", bn->weight);
      dump.put(c.name + ".bias", bn->bias);
    }
    const int64_t n = batch_size(rank, world);
    for (int step = 1; step <= 2; ++step) {  // two training steps, then eval
      const std::string at = c.name + ".step" + std::to_string(step);
      const torch::Tensor x = input(c.tail, n, seed + 10 * uint64_t(step) + uint64_t(rank)).requires_grad_();
      const torch::Tensor dy = input(c.tail, n, seed + 10 * uint64_t(step) + uint64_t(rank) + 5);
      const torch::Tensor y = bn->forward(x);
      (y * dy).sum().backward();
      dump.put(at + ".x", x);
      dump.put(at + ".dy", dy);
      dump.put(at + ".y", y);
      dump.put(at + ".grad_x", x.grad());
      if (c.affine) {
        dump.put(at + ".grad_weight", bn->weight.grad());
        dump.put(at + ".grad_bias", bn->bias.grad());
        bn->weight.mutable_grad().zero_();
        bn->bias.mutable_grad().zero_();
      }
      if (c.track) {
        dump.put(at + ".running_mean", bn->running_mean);
        dump.put(at + ".running_var", bn->running_var);
      }
    }
    bn->eval();
    const torch::Tensor xe = input(c.tail, 2, seed + 50 + uint64_t(rank));
    dump.put(c.name + ".eval.x", xe);
    dump.put(c.name + ".eval.y", bn->forward(xe));
    seed += 100;
  }
  ddp::destroy_process_group();
  return 0;
}

// Linear(4, 3) -> SyncBatchNorm(3) -> ReLU -> Linear(3, 2) under DDP, uneven batches.
int ddp_mode(const std::string& dir) {
  ddp::init_process_group();
  const int rank = ddp::get_rank(), world = ddp::get_world_size();
  Dump dump(dir + "/rank" + std::to_string(rank) + ".txt");
  torch::manual_seed(3);
  torch::nn::Sequential net(torch::nn::Linear(4, 3), torch::nn::BatchNorm1d(3), torch::nn::ReLU(),
                            torch::nn::Linear(3, 2));
  net = torch::nn::Sequential(
      std::dynamic_pointer_cast<torch::nn::SequentialImpl>(ddp::convert_sync_batchnorm(net.ptr())));
  net->to(torch::kDouble);
  for (const auto& p : net->named_parameters()) dump.put("param." + p.key(), p.value());
  auto model = ddp::DistributedDataParallel(net);
  const int64_t n = batch_size(rank, world);
  torch::manual_seed(200 + uint64_t(rank));
  const torch::Tensor x = torch::randn({n, 4}, torch::kDouble);
  const torch::Tensor dy = torch::randn({n, 2}, torch::kDouble);
  (model(x) * dy).sum().backward();
  dump.put("x", x);
  dump.put("dy", dy);
  for (const auto& p : net->named_parameters()) dump.put("grad." + p.key(), p.value().grad());
  for (const auto& b : net->named_buffers())
    if (b.key().find("num_batches") == std::string::npos) dump.put("buffer." + b.key(), b.value());
  ddp::destroy_process_group();
  return 0;
}

// ---- convert_sync_batchnorm ---------------------------------------------------------------

int failures = 0;
void check(bool ok, const std::string& what) {
  std::cout << (ok ? "ok: " : "FAILED: ") << what << std::endl;
  if (!ok) ++failures;
}

struct HeadImpl : torch::nn::Module {
  HeadImpl() : blocks(register_module("blocks", torch::nn::ModuleList())) {
    blocks->push_back(torch::nn::Sequential(torch::nn::Linear(3, 3),
                                            torch::nn::BatchNorm1d(BatchNormOptions(3).eps(1e-3).momentum(0.3))));
    blocks->push_back(torch::nn::BatchNorm1d(BatchNormOptions(3).affine(false)));
  }
  torch::nn::ModuleList blocks;
};
TORCH_MODULE(Head);

struct NetImpl : torch::nn::Module {
  NetImpl()
      : features(register_module("features", torch::nn::Sequential(torch::nn::Conv2d(2, 3, 1),
                                                                   torch::nn::BatchNorm2d(3), torch::nn::ReLU()))),
        head(register_module("head", Head())) {}
  torch::nn::Sequential features;
  Head head;
};
TORCH_MODULE(Net);

struct PinnedImpl : torch::nn::Module {
  PinnedImpl() : bn(register_module("bn", torch::nn::BatchNorm2d(3))) {}
  torch::nn::BatchNorm2d bn;
};
TORCH_MODULE(Pinned);

int count_batch_norms(torch::nn::Module& m) {
  int n = 0;
  for (const auto& child : m.modules(/*include_self=*/true))
    n += dynamic_cast<torch::nn::BatchNorm1dImpl*>(child.get()) ||
         dynamic_cast<torch::nn::BatchNorm2dImpl*>(child.get());
  return n;
}

template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const ddp::ConfigError& e) {
    return e.what();
  }
  return "";
}

int convert_mode() {
  torch::manual_seed(0);
  Net net;
  auto* old_bn = net->features[1]->as<torch::nn::BatchNorm2dImpl>();
  {
    torch::NoGradGuard no_grad;
    old_bn->running_mean.uniform_();
    old_bn->running_var.uniform_(0.5, 2);
    old_bn->weight.uniform_();
  }
  const torch::Tensor old_weight = old_bn->weight, old_mean = old_bn->running_mean;
  net->head->blocks[1]->eval();
  net->features->eval();
  const torch::Tensor x = torch::randn({4, 2, 3, 3});
  const torch::Tensor before = net->features->forward(x);
  const size_t parameters = net->parameters().size();
  const auto root = ddp::convert_sync_batchnorm(net.ptr());
  check(root.get() == net.ptr().get(), "a tree's root stays the same module");
  check(count_batch_norms(*net) == 0, "no BatchNorm left in the tree (Sequential, ModuleList, nested)");
  auto* sync = net->features[1]->as<ddp::SyncBatchNormImpl>();
  check(sync != nullptr, "the Sequential's own list holds the SyncBatchNorm (its forward calls it)");
  check(sync && net->features->named_children()["1"].get() == sync, "the registration names it too");
  check(sync && sync->weight.is_same(old_weight) && sync->running_mean.is_same(old_mean),
        "weight and running stats are the BatchNorm's own tensors");
  check(sync && !sync->is_training(), "training mode kept (eval)");
  check(torch::equal(net->features->forward(x), before), "eval forward unchanged (running stats)");
  auto* inner = net->head->blocks[0]->as<torch::nn::SequentialImpl>()->ptr(1)->as<ddp::SyncBatchNormImpl>();
  check(inner && inner->options.eps() == 1e-3 && inner->options.momentum() == 0.3 && inner->is_training(),
        "options (eps, momentum) kept in a Sequential inside a ModuleList");
  auto* plain = net->head->blocks[1]->as<ddp::SyncBatchNormImpl>();
  check(plain && !plain->options.affine() && !plain->weight.defined() && !plain->is_training(),
        "affine=false converted in a ModuleList");
  check(net->parameters().size() == parameters, "the same parameters (" + std::to_string(parameters) + ")");
  const auto bn3 = ddp::convert_sync_batchnorm(torch::nn::BatchNorm3d(5).ptr());
  check(std::dynamic_pointer_cast<ddp::SyncBatchNormImpl>(bn3) != nullptr,
        "a BatchNorm3d root becomes a new SyncBatchNorm");

  Pinned pinned;
  const std::string error = error_of([&] { ddp::convert_sync_batchnorm(pinned.ptr()); });
  check(error.find("bn (torch::nn::BatchNorm2dImpl)") != std::string::npos &&
            error.find("nothing was converted") != std::string::npos,
        "a holder member is refused by name: " + error);
  check(count_batch_norms(*pinned) == 1, "and left unchanged");

  // The sampler's save/load (a resumed loader continues in the same epoch at the same place).
  ddp::DistributedSampler sampler(100, 3, 1);
  sampler.set_epoch(4);
  sampler.reset();
  sampler.next(5);
  torch::serialize::OutputArchive archive;
  sampler.save(archive);
  std::ostringstream bytes;
  archive.save_to(bytes);
  ddp::DistributedSampler resumed(100, 3, 1);
  torch::serialize::InputArchive in;
  std::istringstream from(bytes.str());
  in.load_from(from);
  resumed.load(in);
  check(resumed.epoch() == 4 && resumed.next(7) == sampler.next(7), "sampler save/load resumes the epoch's position");
  check(error_of([] { ddp::DistributedSampler(10, 4, 4); }).find("invalid rank 4, rank should be in [0, 3]") !=
            std::string::npos,
        "a rank outside the replicas refused");

  ddp::SyncBatchNorm bn(4);
  check(error_of([&] { bn->forward(torch::randn({4})); }).find("expected at least 2D input") != std::string::npos,
        "1D input refused");
  check(error_of([&] {
          bn->forward(torch::randn({2, 3}));
        }).find("3 channels") != std::string::npos,
        "wrong channel count refused");
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "sampler") return sampler_mode();
    if (mode == "syncbn" && argc > 2) return syncbn_mode(argv[2]);
    if (mode == "ddp" && argc > 2) return ddp_mode(argv[2]);
    if (mode == "convert") return convert_mode();
  } catch (const std::exception& e) {
    std::cerr << "torch_parity: " << e.what() << std::endl;
    return 1;
  }
  std::cerr << "usage: torch_parity sampler | syncbn DIR | ddp DIR | convert" << std::endl;
  return 2;
}
