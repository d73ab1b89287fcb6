// hooks::powersgd over gloo with real processes: its worker scenarios (error feedback on known
// matrices, checkpoint and resume) and the test cases; the "train" scenario (scenarios.cpp)
// runs it on the test model for the full-rank and identical-ranks checks.
#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <stdexcept>
#include <string>

#include "ddp/ddp.hpp"
#include "harness.hpp"
#include "model.hpp"
#include "worker_support.hpp"

namespace ddp::test {
namespace {

double max_diff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

// One hook call on a hand-made bucket holding `gradient` (parameter 0); returns what it sent.
torch::Tensor reduce_once(PowerSgdState& state, const torch::Tensor& gradient) {
  torch::Tensor buffer = gradient.reshape({-1}).clone();
  GradBucket bucket(0, true, buffer, {buffer.view(gradient.sizes())}, {gradient}, Group(), {0});
  auto future = state.reduce(bucket);
  future->wait();
  return future->value().toTensor().view(gradient.sizes()).clone();
}

// Every rank holds the same rank-2 matrix M. Error feedback invariant: what was sent so far
// plus the error buffer equals the sum of the gradients; a rank-1 step leaves a residual that
// the next (zero-gradient) step sends, so after two steps everything of M has been sent.
int powersgd_error_feedback() {
  init_process_group(pg_options());
  PowerSgdOptions o;
  o.matrix_approximation_rank = 1;
  o.start_powersgd_iter = 0;
  o.min_compression_rate = 0;
  PowerSgdState state(o);
  const auto u = torch::tensor({1.0f, 2.0f, 0.0f, -1.0f, 0.5f}).view({5, 1});
  const auto w = torch::tensor({0.0f, 1.0f, 1.0f, 2.0f, -1.0f}).view({5, 1});
  const auto m = 3 * u.mm(torch::tensor({{1.0f, 0.0f, 2.0f, 1.0f}})) + w.mm(torch::tensor({{0.0f, 1.0f, -1.0f, 1.0f}}));
  const auto first = reduce_once(state, m);
  const auto singular = torch::linalg_svdvals(first);
  expect(singular[1].item<double>() < 1e-5 * singular[0].item<double>(), "the first step sends a rank-1 matrix");
  expect(max_diff(first, m) > 0.1, "a rank-1 step cannot send all of a rank-2 matrix");
  expect(max_diff(first + state.error(0), m) < 1e-5, "sent + error == gradient after step 1");
  const auto second = reduce_once(state, torch::zeros_like(m));
  expect(max_diff(second, first) > 0.1, "a zero gradient still sends the residual");
  expect(max_diff(first + second + state.error(0), m) < 1e-5, "sent + error == gradients after step 2");
  expect(max_diff(first + second, m) < 1e-4, "two rank-1 steps sent all of the rank-2 matrix");
  expect(state.iteration() == 2 && state.q(0).sizes() == torch::IntArrayRef({4, 1}), "iteration and Q kept");
  PowerSgdOptions no_feedback = o;
  no_feedback.use_error_feedback = false;
  PowerSgdState plain(no_feedback);
  reduce_once(plain, m);
  expect(!plain.error(0).defined() && max_diff(reduce_once(plain, torch::zeros_like(m)), torch::zeros_like(m)) == 0,
         "without error feedback a zero gradient sends nothing");
  destroy_process_group();
  return 0;
}

using Model = DistributedDataParallel<Net>;

std::shared_ptr<PowerSgdState> with_powersgd(Model& model) {
  PowerSgdOptions o;
  o.matrix_approximation_rank = 1;
  o.start_powersgd_iter = 2;
  o.min_compression_rate = 1;
  auto state = std::make_shared<PowerSgdState>(o);
  model.register_comm_hook(hooks::powersgd(state));
  return state;
}

// Mode "restore": a resumed run (fresh process state, new DDP, state loaded) continues
// exactly like the uninterrupted one. Mode "fresh": the same without load_state must differ.
int powersgd_checkpoint() {
  init_process_group(pg_options());
  const bool restore = std::getenv("DDP_TEST_PSGD_MODE") == std::string("restore");
  const std::string path = out_path("psgd.pt");
  Net net = make_net(false, 1000);
  Model model(net);
  auto state = with_powersgd(model);
  auto opt = make_optimizer(net->parameters());
  train_steps(model, opt, 0, 5);
  CheckpointExtra extra = state->state();
  extra["step"] = int64_t{5};
  save_checkpoint(path, net, &opt, extra);
  train_steps(model, opt, 5, 4);

  Net net2 = make_net(false, 77);
  Model model2(net2);
  auto state2 = with_powersgd(model2);
  auto opt2 = make_optimizer(net2->parameters());
  auto loaded = load_checkpoint(path, net2, &opt2);
  if (restore) state2->load_state(loaded);
  expect(state2->iteration() == (restore ? 5 : 0), "restored iteration");
  if (!restore) state2->load_state({{"powersgd/iteration", int64_t{5}}});  // compresses, but no error/Q
  train_steps(model2, opt2, 5, 4);
  double diff = 0;
  for (size_t i = 0; i < net->parameters().size(); ++i) {
    diff = std::max(diff, max_diff(net->parameters()[i], net2->parameters()[i]));
  }
  log() << "resumed vs continued max diff " << diff;
  expect(restore ? diff == 0 : diff > 1e-6, restore ? "resumed == continued" : "without the state it differs");
  destroy_process_group();
  return 0;
}

}  // namespace

const std::map<std::string, std::function<int()>>& powersgd_scenarios() {
  static const std::map<std::string, std::function<int()>> scenarios = {
      {"powersgd-error-feedback", powersgd_error_feedback}, {"powersgd-checkpoint", powersgd_checkpoint}};
  return scenarios;
}

namespace {

std::vector<torch::Tensor> trained_params(const std::string& dir, int rank) {
  std::vector<torch::Tensor> got;
  torch::load(got, dir + "/params_" + std::to_string(rank) + ".pt");
  return got;
}

// The "train" scenario with hooks::powersgd; returns rank 0's and rank 1's parameters.
std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>> train_with_powersgd(Env env, int steps) {
  const TempDir scratch;
  env["DDP_TEST_OUT"] = scratch.path();
  env["DDP_TEST_HOOK"] = "powersgd";
  env["DDP_TEST_STEPS"] = std::to_string(steps);
  Workers w = run_workers("train", 2, env, std::chrono::seconds(90));
  INFO(w.describe());
  REQUIRE(w.all_ok());
  // Both ranks on this host over gloo: said once, by rank 0, though there are many buckets.
  const std::string warning = "warning: hooks::powersgd on gloo with every rank on this host";
  const std::string& out = w.ranks[0].output;
  CHECK(out.find(warning) != std::string::npos);
  CHECK(out.find(warning) == out.rfind(warning));
  CHECK(w.ranks[1].output.find(warning) == std::string::npos);
  return {trained_params(scratch.path(), 0), trained_params(scratch.path(), 1)};
}

}  // namespace

TEST_CASE("PowerSGD at full rank equals plain all-reduce training", "[ddp][powersgd]") {
  TrainConfig c;
  c.world = 2;
  c.steps = 4;
  auto [rank0, rank1] = train_with_powersgd({{"DDP_TEST_PSGD_RANK", "64"},
                                             {"DDP_TEST_PSGD_START", "0"},
                                             {"DDP_TEST_PSGD_MIN_RATE", "0"},
                                             {"DDP_TEST_BUCKET_MB", "0.0005"}},
                                            c.steps);
  const auto expected = reference_training(c);
  REQUIRE(rank0.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("parameter " << i << " max diff " << (rank0[i] - expected[i]).abs().max().item<double>());
    CHECK(torch::allclose(rank0[i], expected[i], 0, 1e-4));
    CHECK(torch::equal(rank0[i], rank1[i]));
  }
}

TEST_CASE("PowerSGD rank 1: ranks end with identical parameters, unlike plain all-reduce's", "[ddp][powersgd]") {
  TrainConfig c;
  c.world = 2;
  c.steps = 6;
  auto [rank0, rank1] = train_with_powersgd(
      {{"DDP_TEST_PSGD_RANK", "1"}, {"DDP_TEST_PSGD_START", "2"}, {"DDP_TEST_PSGD_MIN_RATE", "1"}}, c.steps);
  const auto expected = reference_training(c);
  double from_reference = 0;
  for (size_t i = 0; i < rank0.size(); ++i) {
    CHECK(torch::equal(rank0[i], rank1[i]));
    from_reference = std::max(from_reference, (rank0[i] - expected[i]).abs().max().item<double>());
  }
  INFO("max diff from plain all-reduce training " << from_reference);
  CHECK(from_reference > 1e-4);  // it did compress
}

TEST_CASE("PowerSGD error feedback carries the residual (known rank-2 matrix, rank 1)", "[ddp][powersgd]") {
  Workers w = run_workers("powersgd-error-feedback", 2);
  INFO(w.describe());
  CHECK(w.all_ok());
}

TEST_CASE("PowerSGD state survives a checkpoint: the resumed run continues identically", "[ddp][powersgd]") {
  for (const char* mode : {"restore", "fresh"}) {
    const TempDir scratch;
    Workers w = run_workers("powersgd-checkpoint", 2, {{"DDP_TEST_OUT", scratch.path()}, {"DDP_TEST_PSGD_MODE", mode}});
    INFO(mode << ": " << w.describe());
    CHECK(w.all_ok());
  }
}

TEST_CASE("fp16/bf16 hooks on gloo all-reduce in float32 (never slower) and warn once", "[ddp][hooks]") {
  TrainConfig c;
  c.world = 2;
  c.steps = 3;
  for (const char* hook : {"fp16", "bf16"}) {
    const TempDir scratch;
    Workers w = run_workers("train", 2,
                            {{"DDP_TEST_OUT", scratch.path()},
                             {"DDP_TEST_HOOK", hook},
                             {"DDP_TEST_STEPS", "3"},
                             {"DDP_TEST_BUCKET_MB", "0.0005"}},
                            std::chrono::seconds(90));
    INFO(hook << ": " << w.describe());
    REQUIRE(w.all_ok());
    const std::string& out = w.ranks[0].output;
    const std::string warning = std::string("warning: hooks::") + hook + "_compress on gloo";
    CHECK(out.find(warning) != std::string::npos);
    CHECK(out.find(warning) == out.rfind(warning));               // once, though there are several buckets and steps
    CHECK(w.ranks[1].output.find(warning) == std::string::npos);  // rank 0 only
    const auto expected = reference_training(c);
    const auto got = trained_params(scratch.path(), 0);
    for (size_t i = 0; i < expected.size(); ++i) CHECK(torch::allclose(got[i], expected[i], 0, 1e-5));
  }
}

TEST_CASE("PowerSGD options are validated with a clear error", "[powersgd]") {
  PowerSgdOptions o;
  o.matrix_approximation_rank = 0;
  CHECK_THROWS_WITH(PowerSgdState(o), Catch::Contains("matrix_approximation_rank must be >= 1"));
  o.matrix_approximation_rank = 1;
  o.min_compression_rate = -1;
  CHECK_THROWS_AS(PowerSgdState(o), ConfigError);
  CHECK_THROWS_WITH(hooks::powersgd(nullptr), Catch::Contains("needs a PowerSgdState"));
  PowerSgdState state(PowerSgdOptions{});
  CHECK_THROWS_WITH(state.load_state({{"step", int64_t{3}}}), Catch::Contains("no PowerSGD state"));
}

}  // namespace ddp::test
