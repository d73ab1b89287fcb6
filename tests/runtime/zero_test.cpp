// ZeroRedundancyOptimizer over gloo with real processes: its worker scenarios (the same steps
// sharded and unsharded, with DDP, consolidate/save/load/continue, misuse, the benchmark MLP's
// state bytes, the inputs the Python peer zero_python.py also runs) and the test cases.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ddp/ddp.hpp"
#include "harness.hpp"
#include "model.hpp"
#include "tests/support/skip.hpp"
#include "tests/support/test_support.hpp"
#include "worker_support.hpp"

namespace ddp::test {
namespace {

// Uneven sizes: the partition is neither in list order nor balanced. zero_python.py has the same.
const std::vector<std::vector<int64_t>> kShapes = {{5, 7}, {13}, {3, 3, 3}, {64}, {1}, {9, 4}, {17, 2}, {30}};

std::vector<torch::Tensor> make_params(int seed) {
  torch::manual_seed(seed);
  std::vector<torch::Tensor> out;
  for (const auto& shape : kShapes) out.push_back(torch::randn(shape).requires_grad_());
  return out;
}

std::vector<torch::Tensor> copies(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> out;
  for (const auto& p : params) out.push_back(p.detach().clone().requires_grad_());
  return out;
}

// Step `step`'s gradients as zero_python.py makes them (seed 100 + 7 step + rank), then the same
// into each of `others`.
void set_grads(const std::vector<torch::Tensor>& params, int step, int rank,
               const std::vector<std::vector<torch::Tensor>*>& others = {}) {
  torch::manual_seed(100 + 7 * step + rank);
  for (size_t i = 0; i < params.size(); ++i) {
    auto g = torch::randn(params[i].sizes());
    params[i].mutable_grad() = g;
    for (auto* o : others) (*o)[i].mutable_grad() = g.clone();
  }
}

// DDP_TEST_ZERO_OPT: adam (lr 0.01) or sgd (lr 0.05, momentum 0.9), as zero_python.py.
OptimizerFactory factory_of(const std::string& name) {
  if (name == "adam") return optimizer_factory<torch::optim::Adam>(torch::optim::AdamOptions(0.01));
  return optimizer_factory<torch::optim::SGD>(torch::optim::SGDOptions(0.05).momentum(0.9));
}

void expect_same(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b, const std::string& what) {
  for (size_t i = 0; i < a.size(); ++i) expect(torch::equal(a[i], b[i]), what + ": parameter " + std::to_string(i));
}

int zero_equal() {
  init_process_group(pg_options());
  const std::string name = env_or("DDP_TEST_ZERO_OPT", "adam");
  const int64_t per_element = name == "adam" ? 8 : 4;  // exp_avg + exp_avg_sq, or the momentum buffer
  for (double cap : {25.0, 1e-4}) {                    // one bucket per owner; one per parameter (and flat ones)
    auto a = make_params(11);
    auto b = copies(a);
    ZeroOptions o;
    o.bucket_cap_mb = cap;
    ZeroRedundancyOptimizer zero(a, factory_of(name), o);
    auto plain = factory_of(name)(b);
    for (int step = 0; step < 5; ++step) {
      zero.zero_grad();
      plain->zero_grad();
      set_grads(a, step, 0, {&b});
      zero.step();
      plain->step();
    }
    expect_same(a, b, name + " sharded vs unsharded, bucket cap " + std::to_string(cap) + " MiB");
    int64_t mine = 0;
    for (size_t i : zero.local_indices()) mine += a[i].numel() * per_element;
    expect(optimizer_state_bytes(zero) == mine, "the local state holds exactly this rank's shard");
    auto total = torch::tensor({optimizer_state_bytes(zero)}, torch::kLong);
    all_reduce(total);
    expect(total.item<int64_t>() == optimizer_state_bytes(*plain), "the shards add up to the unsharded state");
    if (cap < 1) expect(zero.bucket_count() > static_cast<size_t>(get_world_size()), "a small cap makes more buckets");
  }
  destroy_process_group();
  return 0;
}

// DDP averages the gradients; ZeRO over DDP equals the plain optimizer over DDP.
int zero_ddp() {
  init_process_group(pg_options());
  const std::string name = env_or("DDP_TEST_ZERO_OPT", "adam");
  Net net_a = make_net(false, 1000);
  Net net_b = make_net(false, 1000);
  DistributedDataParallel<Net> model_a(net_a);
  DistributedDataParallel<Net> model_b(net_b);
  ZeroRedundancyOptimizer zero(net_a->parameters(), factory_of(name));
  auto plain = factory_of(name)(net_b->parameters());
  train_steps(model_a, zero, 0, 5);
  train_steps(model_b, *plain, 0, 5);
  expect_same(net_a->parameters(), net_b->parameters(), "DDP + ZeRO vs DDP + " + name);
  destroy_process_group();
  return 0;
}

// Consolidate on the last rank, save; an unsharded optimizer and a fresh ZeRO load it and
// continue exactly like the never-sharded run; save_checkpoint/load_checkpoint do the same.
int zero_resume() {
  init_process_group(pg_options());
  const int rank = get_rank();
  const int to = get_world_size() - 1;
  const auto factory = factory_of("adam");
  auto a = make_params(11);
  auto ref = copies(a);
  ZeroRedundancyOptimizer zero(a, factory);
  auto plain = factory(ref);
  for (int step = 0; step < 4; ++step) {
    set_grads(a, step, 0, {&ref});
    zero.step();
    plain->step();
  }
  zero.consolidate_state_dict(to);
  expect(zero.has_consolidated_state() == (rank == to), "the state is consolidated on the last rank only");
  const std::string path = out_path("zero_adam.pt");
  if (rank == to) torch::save(zero, path);
  barrier();
  auto c = copies(a);
  auto loaded = factory(c);
  torch::load(*loaded, path);
  expect(optimizer_state_bytes(*loaded) == optimizer_state_bytes(*plain), "the saved state is the full state");
  auto d = copies(a);
  ZeroRedundancyOptimizer resumed(d, factory);
  torch::load(resumed, path);
  expect(optimizer_state_bytes(resumed) == optimizer_state_bytes(zero), "a fresh ZeRO keeps its shard only");

  torch::nn::Module module;
  for (size_t i = 0; i < a.size(); ++i) module.register_parameter("p" + std::to_string(i), a[i]);
  zero.consolidate_state_dict(0);
  save_checkpoint(out_path("zero_ckpt.pt"), module, &zero);
  auto e = copies(make_params(99));  // other values: the checkpoint brings a's
  torch::nn::Module module_e;
  for (size_t i = 0; i < e.size(); ++i) module_e.register_parameter("p" + std::to_string(i), e[i]);
  ZeroRedundancyOptimizer from_checkpoint(e, factory);
  load_checkpoint(out_path("zero_ckpt.pt"), module_e, &from_checkpoint);

  for (int step = 4; step < 8; ++step) {
    set_grads(a, step, 0, {&ref, &c, &d, &e});
    zero.step();
    plain->step();
    loaded->step();
    resumed.step();
    from_checkpoint.step();
  }
  expect_same(a, ref, "ZeRO after consolidating vs never sharded");
  expect_same(c, ref, "unsharded Adam loaded from the consolidated state vs never sharded");
  expect_same(d, ref, "a fresh ZeRO loaded from it vs never sharded");
  expect_same(e, ref, "a ZeRO from save_checkpoint/load_checkpoint vs never sharded");
  destroy_process_group();
  return 0;
}

template <class E, class F>
void expect_error(F&& body, const std::string& text, const std::string& what) {
  try {
    body();
  } catch (const E& e) {
    log() << what << ": " << e.what();
    expect(std::string(e.what()).find(text) != std::string::npos, what + ": got '" + e.what() + "'");
    return;
  }
  throw std::runtime_error(what + ": no error");
}

std::string archive_of(const torch::optim::Optimizer& optimizer) {
  std::ostringstream out;
  torch::save(optimizer, out);
  return out.str();
}

// Every misuse is the same clear error on every rank; the group stays usable after each.
int zero_misuse() {
  init_process_group(pg_options());
  const int rank = get_rank();
  const int world = get_world_size();
  const auto factory = factory_of("adam");
  expect_error<DdpError>(
      [&] {
        auto p = make_params(11);
        if (rank == 1) p.push_back(torch::zeros({2}, torch::requires_grad()));
        ZeroRedundancyOptimizer z(p, factory);
      },
      "rank 0 passes 8 parameters and rank 1 passes 9", "parameter count differs");
  expect_error<DdpError>(
      [&] {
        auto p = make_params(11);
        if (rank == 1) p[2] = torch::zeros({3, 3, 4}, torch::requires_grad());
        ZeroRedundancyOptimizer z(p, factory);
      },
      "parameter 2 is [3, 3, 3] Float on rank 0 and [3, 3, 4] Float on rank 1", "parameter shape differs");

  auto a = make_params(11);
  ZeroRedundancyOptimizer zero(a, factory);
  set_grads(a, 0, 0);
  zero.step();
  const int64_t bytes = optimizer_state_bytes(zero);
  expect_error<ConfigError>([&] { zero.consolidate_state_dict(world + 2); },
                            "global rank " + std::to_string(world + 2) + " is not a member",
                            "consolidate to a non-member");
  expect_error<DdpError>([&] { zero.consolidate_state_dict(rank); }, "the same to_rank on every rank",
                         "ranks consolidate to different ranks");
  expect_error<CheckpointError>(
      [&] {
        torch::serialize::OutputArchive archive;
        zero.save(archive);
      },
      "call consolidate_state_dict(" + std::to_string(rank) + ")", "save before consolidating");

  auto load_from = [&](const std::string& data) {
    std::istringstream in(data);
    torch::load(zero, in);
  };
  auto fewer = make_params(11);
  fewer.pop_back();
  expect_error<CheckpointError>([&] { load_from(archive_of(*factory(fewer))); }, "different size",
                                "a state of fewer parameters");
  auto reshaped = make_params(11);
  reshaped[0] = torch::randn({7, 5}, torch::requires_grad());
  auto other = factory(reshaped);
  set_grads(reshaped, 0, 0);
  other->step();
  expect_error<CheckpointError>([&] { load_from(archive_of(*other)); }, "parameter 0 is [5, 7] but its state holds",
                                "a state of other shapes");
  auto sgd_params = copies(a);
  auto sgd = factory_of("sgd")(sgd_params);
  set_grads(sgd_params, 0, 0);
  sgd->step();
  expect_error<CheckpointError>([&] { load_from(archive_of(*sgd)); }, "does not fit this ZeroRedundancyOptimizer",
                                "an SGD state into an Adam ZeRO");
  expect(optimizer_state_bytes(zero) == bytes, "a refused load loads nothing");

  Group first = new_group({0});
  if (rank != 0) {
    expect_error<ConfigError>(
        [&] {
          ZeroRedundancyOptimizer z(a, factory, ZeroOptions{first, 25.0});
        },
        "not a member of ZeroOptions::group", "a rank outside the group");
  }
  set_grads(a, 1, 0);
  zero.step();  // still in step with the others after all of the above
  destroy_process_group();
  return 0;
}

// The benchmark MLP (784-1024-1024-1024-10) under ZeRO Adam: one line with this rank's bytes.
int zero_mlp_bytes() {
  init_process_group(pg_options());
  torch::nn::Sequential net(torch::nn::Linear(784, 1024), torch::nn::ReLU(), torch::nn::Linear(1024, 1024),
                            torch::nn::ReLU(), torch::nn::Linear(1024, 1024), torch::nn::ReLU(),
                            torch::nn::Linear(1024, 10));
  ZeroRedundancyOptimizer zero(net->parameters(), optimizer_factory<torch::optim::Adam>(torch::optim::AdamOptions()));
  for (auto& p : net->parameters()) p.mutable_grad() = torch::zeros_like(p);
  zero.step();
  int64_t unsharded = 0;
  for (const auto& p : net->parameters()) unsharded += p.numel() * 8;
  log() << "zero-bytes rank=" << get_rank() << " local=" << optimizer_state_bytes(zero) << " unsharded=" << unsharded;
  destroy_process_group();
  return 0;
}

void write_floats(std::ofstream& out, const torch::Tensor& t) {
  auto f = t.detach().to(torch::kFloat).contiguous();
  out.write(reinterpret_cast<const char*>(f.data_ptr<float>()), static_cast<std::streamsize>(f.numel() * 4));
}

// The inputs of zero_python.py (rank-dependent gradients: the result depends on the partition);
// rank 0 writes the final parameters and the consolidated state, read back through an
// unsharded optimizer, as float32 in parameter order.
int zero_python() {
  init_process_group(pg_options());
  const std::string name = env_or("DDP_TEST_ZERO_OPT", "adam");
  auto a = make_params(11);
  ZeroRedundancyOptimizer zero(a, factory_of(name));
  for (int step = 0; step < 5; ++step) {
    zero.zero_grad();
    set_grads(a, step, get_rank());
    zero.step();
  }
  zero.consolidate_state_dict(0);
  if (get_rank() == 0) {
    std::stringstream saved;
    torch::save(zero, saved);
    auto c = copies(a);
    auto plain = factory_of(name)(c);
    torch::load(*plain, saved);
    std::ofstream params(out_path("cpp_params.bin"), std::ios::binary);
    std::ofstream state(out_path("cpp_state.bin"), std::ios::binary);
    for (size_t i = 0; i < a.size(); ++i) {
      write_floats(params, a[i]);
      const auto& s = *ddp::optimizer_param_state(*plain, c[i]);
      if (name == "adam") {
        const auto& adam = dynamic_cast<const torch::optim::AdamParamState&>(s);
        write_floats(state, adam.exp_avg());
        write_floats(state, adam.exp_avg_sq());
        write_floats(state, torch::tensor({static_cast<float>(adam.step())}));
      } else {
        write_floats(state, dynamic_cast<const torch::optim::SGDParamState&>(s).momentum_buffer());
      }
    }
  }
  destroy_process_group();
  return 0;
}

}  // namespace

const std::map<std::string, std::function<int()>>& zero_scenarios() {
  static const std::map<std::string, std::function<int()>> scenarios = {
      {"zero-equal", zero_equal},         {"zero-ddp", zero_ddp},
      {"zero-resume", zero_resume},       {"zero-misuse", zero_misuse},
      {"zero-mlp-bytes", zero_mlp_bytes}, {"zero-python", zero_python}};
  return scenarios;
}

namespace {

void run_ok(const std::string& scenario, int world, Env env = {}) {
  const TempDir scratch;
  env["DDP_TEST_OUT"] = scratch.path();
  Workers w = run_workers(scenario, world, env, std::chrono::seconds(120));
  INFO(w.describe());
  REQUIRE(w.all_ok());
}

std::vector<float> read_floats(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

}  // namespace

// The expected owners are what PyTorch 1.13's ZeroRedundancyOptimizer._partition_parameters gives.
TEST_CASE("zero_partition is PyTorch's sorted-greedy partition", "[zero]") {
  CHECK(zero_partition({4, 4, 4, 4}, 3) == std::vector<int>{0, 1, 2, 0});
  CHECK(zero_partition({1, 2, 3, 4, 5}, 2) == std::vector<int>{0, 0, 1, 1, 0});
  CHECK(zero_partition({10}, 3) == std::vector<int>{0});
  const std::vector<int64_t> shapes{35, 13, 27, 64, 1, 36, 34, 30};  // kShapes
  CHECK(zero_partition(shapes, 2) == std::vector<int>{1, 1, 0, 0, 1, 1, 0, 1});
  CHECK(zero_partition(shapes, 3) == std::vector<int>{2, 1, 0, 0, 2, 1, 2, 1});
  // The benchmark MLP's weights and biases: three big matrices cannot split evenly over 2 ranks.
  const std::vector<int64_t> mlp{802816, 1024, 1048576, 1024, 1048576, 1024, 10240, 10};
  CHECK(zero_partition(mlp, 2) == std::vector<int>{0, 1, 0, 1, 1, 1, 1, 1});
  CHECK(zero_partition(mlp, 3) == std::vector<int>{2, 2, 0, 2, 1, 2, 2, 2});
}

TEST_CASE("ZeroRedundancyOptimizer equals the unsharded optimizer bitwise (Adam and SGD momentum at world 2 and 3)",
          "[zero]") {
  for (int world : {2, 3}) {
    for (const char* opt : {"adam", "sgd"}) {
      INFO("world " << world << ", " << opt);
      run_ok("zero-equal", world, {{"DDP_TEST_ZERO_OPT", opt}});
    }
  }
}

TEST_CASE("ZeroRedundancyOptimizer over DistributedDataParallel equals the plain optimizer over it", "[zero]") {
  run_ok("zero-ddp", 2, {{"DDP_TEST_ZERO_OPT", "sgd"}});
  run_ok("zero-ddp", 3, {{"DDP_TEST_ZERO_OPT", "adam"}});
}

TEST_CASE("ZeroRedundancyOptimizer state consolidated and saved continues unchanged in an unsharded or a new one",
          "[zero]") {
  run_ok("zero-resume", 2);
  run_ok("zero-resume", 3);
}

TEST_CASE("ZeroRedundancyOptimizer misuse is a clear ddp::Error on every rank and never a hang", "[zero]") {
  run_ok("zero-misuse", 2);
}

TEST_CASE("ZeroRedundancyOptimizer keeps the benchmark MLP's Adam state per rank at world 2 and 3", "[zero]") {
  // Bytes of exp_avg + exp_avg_sq: 8 per element of the partition (zero_partition above).
  const std::map<int, std::vector<int64_t>> expected{{2, {14811136, 8495184}}, {3, {8388608, 8388608, 6529104}}};
  for (const auto& [world, bytes] : expected) {
    Workers w = run_workers("zero-mlp-bytes", world, {}, std::chrono::seconds(120));
    INFO(w.describe());
    REQUIRE(w.all_ok());
    for (int r = 0; r < world; ++r) {
      CHECK_THAT(w.ranks[r].output, Catch::Contains("zero-bytes rank=" + std::to_string(r) +
                                                    " local=" + std::to_string(bytes[r]) + " unsharded=23306320"));
    }
  }
}

TEST_CASE("ZeroRedundancyOptimizer matches Python torch's ZeroRedundancyOptimizer (1e-6)", "[zero][python]") {
  const std::string python = env_or("DDP_TEST_PYTHON", "/usr/bin/python3");
  if (run({python, "-c", "import torch.distributed.optim"}).exit_code != 0) {
    skip_test(python + " has no torch (install python3-torch; DDP_TEST_PYTHON chooses another)");
  }
  // Both optimizers at world 2, Adam at world 3 (each Python rank imports torch: seconds on CI).
  const std::vector<std::pair<int, std::string>> cases{{2, "adam"}, {2, "sgd"}, {3, "adam"}};
  for (const auto& [world, opt] : cases) {
    INFO("world " << world << ", " << opt);
    const TempDir dir;
    Workers w = run_workers("zero-python", world, {{"DDP_TEST_OUT", dir.path()}, {"DDP_TEST_ZERO_OPT", opt}},
                            std::chrono::seconds(120));
    INFO(w.describe());
    REQUIRE(w.all_ok());
    RunResult r = launch({"--nproc-per-node=" + std::to_string(world),
                          std::string(DDP_SOURCE_DIR) + "/tests/runtime/zero_python.py", dir.path(), opt},
                         {{"PYTHON_EXEC", python}, {"OMP_NUM_THREADS", "1"}}, std::chrono::seconds(150));
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    for (const char* what : {"params", "state"}) {
      const auto cpp = read_floats(dir.path() + "/cpp_" + what + ".bin");
      const auto py = read_floats(dir.path() + "/py_" + what + ".bin");
      INFO(what);
      REQUIRE(!cpp.empty());
      REQUIRE(cpp.size() == py.size());
      double diff = 0;
      for (size_t i = 0; i < cpp.size(); ++i) diff = std::max(diff, static_cast<double>(std::abs(cpp[i] - py[i])));
      CHECK(diff <= 1e-6);
    }
  }
}

}  // namespace ddp::test
