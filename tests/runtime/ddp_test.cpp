// DistributedDataParallel correctness over gloo with 2-4 real processes: equality with
// single-process training on the concatenated batch, no_sync accumulation, bucket layouts,
// unused parameters, comm hooks, buffer broadcast, model mismatch.
#include <catch2/catch.hpp>

#include <cstdint>
#include <sstream>

#include "harness.hpp"
#include "model.hpp"

namespace ddp::test {
namespace {

// Runs the "train" scenario on `world` ranks and checks every rank against the reference.
Workers check_training(Env env, TrainConfig c, double tolerance, int processes = 0) {
  env["DDP_TEST_STEPS"] = std::to_string(c.steps);
  env["DDP_TEST_ACCUM"] = std::to_string(c.accumulate);
  env["DDP_TEST_UNUSED"] = c.with_unused ? "1" : "0";
  const TempDir scratch;
  const std::string& dir = scratch.path();
  env["DDP_TEST_OUT"] = dir;
  const int procs = processes > 0 ? processes : c.world;
  Workers w = run_workers("train", procs, env, std::chrono::seconds(90));
  INFO(w.describe());
  REQUIRE(w.all_ok());
  const auto expected = reference_training(c);
  std::vector<torch::Tensor> rank0;
  for (int r = 0; r < procs; ++r) {
    std::vector<torch::Tensor> got;
    torch::load(got, dir + "/params_" + std::to_string(r) + ".pt");
    REQUIRE(got.size() == expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("rank " << r << " parameter " << i << " max diff " << (got[i] - expected[i]).abs().max().item<double>());
      CHECK(torch::allclose(got[i], expected[i], 0, tolerance));
      if (r == 0) {
        rank0.push_back(got[i]);
      } else {
        CHECK(torch::equal(got[i], rank0[i]));  // identical on every rank
      }
    }
  }
  return w;
}

int bucket_count(const Workers&, const std::string& dir) { return std::stoi(read_file(dir + "/buckets_0.txt")); }

}  // namespace

TEST_CASE("DDP world 4 equals single-process training on the 4x batch (one bucket)", "[ddp]") {
  TrainConfig c;
  Env env{{"DDP_TEST_BUCKET_MB", "25"}};
  check_training(env, c, 1e-5);
}

TEST_CASE("DDP with many small buckets (rebuilt after the first step) equals the reference", "[ddp]") {
  TrainConfig c;
  c.world = 3;
  Env env{{"DDP_TEST_BUCKET_MB", "0.0005"}};
  check_training(env, c, 1e-5);
}

TEST_CASE("DDP bucket layout: small cap gives several buckets, large cap one", "[ddp]") {
  TrainConfig c;
  c.world = 2;
  c.steps = 2;
  for (auto [cap, several] : {std::pair<const char*, bool>{"0.0005", true}, {"25", false}}) {
    Env env{{"DDP_TEST_BUCKET_MB", cap}, {"DDP_TEST_STEPS", "2"}};
    const TempDir scratch;
    const std::string& dir = scratch.path();
    env["DDP_TEST_OUT"] = dir;
    Workers w = run_workers("train", 2, env, std::chrono::seconds(60));
    INFO(w.describe());
    REQUIRE(w.all_ok());
    const int buckets = bucket_count(w, dir);
    INFO("cap " << cap << " MiB -> " << buckets << " buckets");
    CHECK((several ? buckets >= 3 : buckets == 1));
  }
}

TEST_CASE("DDP bucket rebuild: the new buckets reuse the first bucket's memory (no fresh pages in step 2)", "[ddp]") {
  // Gradients as bucket views (so their addresses are the buckets') and set to none between
  // steps (torch 2.x's zero_grad default; 1.13 zeroes them in place, and a gradient living in a
  // bucket keeps the rebuild from reusing it).
  Env env{{"DDP_TEST_BUCKET_MB", "0.0005"},
          {"DDP_TEST_STEPS", "3"},
          {"DDP_TEST_GRAD_VIEW", "1"},
          {"DDP_TEST_SET_TO_NONE", "1"}};
  const TempDir scratch;
  env["DDP_TEST_OUT"] = scratch.path();
  Workers w = run_workers("train", 2, env, std::chrono::seconds(60));
  INFO(w.describe());
  REQUIRE(w.all_ok());
  REQUIRE(bucket_count(w, scratch.path()) >= 3);  // rebuilt into several
  for (int rank = 0; rank < 2; ++rank) {
    std::istringstream in(read_file(scratch.path() + "/grad_span_" + std::to_string(rank) + ".txt"));
    uintptr_t first_begin = 0, first_end = 0, last_begin = 0, last_end = 0;
    in >> first_begin >> first_end >> last_begin >> last_end;
    INFO("rank " << rank << ": gradients in [" << first_begin << ", " << first_end << ") after step 1, [" << last_begin
                 << ", " << last_end << ") at the end");
    REQUIRE(first_begin != 0);
    CHECK((last_begin >= first_begin && last_end <= first_end));
  }
}

TEST_CASE("DDP no_sync accumulation over 3 micro-batches equals one big batch", "[ddp]") {
  TrainConfig c;
  c.accumulate = 3;
  check_training({{"DDP_TEST_BUCKET_MB", "0.0005"}}, c, 1e-5);
}

TEST_CASE("DDP gradient_as_bucket_view with no_sync equals the reference", "[ddp]") {
  TrainConfig c;
  c.world = 2;
  c.accumulate = 2;
  check_training({{"DDP_TEST_BUCKET_MB", "0.0005"}, {"DDP_TEST_GRAD_VIEW", "1"}}, c, 1e-5);
}

TEST_CASE("DDP unused parameter without find_unused_parameters is a clear error", "[ddp]") {
  Workers w = run_workers("train", 2, {{"DDP_TEST_UNUSED", "1"}, {"DDP_TEST_STEPS", "3"}});
  INFO(w.describe());
  for (const auto& r : w.ranks) {
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.error_file, Catch::Contains("ddp::DdpError") && Catch::Contains("find_unused_parameters") &&
                                 Catch::Contains("unused.weight") && Catch::Contains("unused.bias"));
  }
}

TEST_CASE("DDP unused parameter with find_unused_parameters equals the reference", "[ddp]") {
  TrainConfig c;
  c.world = 3;
  c.with_unused = true;
  check_training({{"DDP_TEST_FIND_UNUSED", "1"}, {"DDP_TEST_BUCKET_MB", "0.0005"}}, c, 1e-5);
}

TEST_CASE("DDP comm hooks: allreduce and a user hook are exact, fp16/bf16 close to fp32", "[ddp][hooks]") {
  TrainConfig c;
  c.world = 2;
  c.steps = 3;
  SECTION("allreduce") { check_training({{"DDP_TEST_HOOK", "allreduce"}, {"DDP_TEST_BUCKET_MB", "0.0005"}}, c, 1e-5); }
  SECTION("user hook returning a new tensor") { check_training({{"DDP_TEST_HOOK", "custom"}}, c, 1e-5); }
  SECTION("fp16") { check_training({{"DDP_TEST_HOOK", "fp16"}}, c, 2e-3); }
  SECTION("bf16") { check_training({{"DDP_TEST_HOOK", "bf16"}, {"DDP_TEST_BUCKET_MB", "0.0005"}}, c, 2e-2); }
}

TEST_CASE("DDP on subgroups: ranks {0,1} and {2,3} train two independent models", "[ddp]") {
  TrainConfig c;
  c.world = 2;  // each subgroup is a world of 2 for the reference
  c.steps = 3;
  check_training({{"DDP_TEST_SUBGROUPS", "1"}, {"DDP_TEST_BUCKET_MB", "0.0005"}}, c, 1e-5, 4);
}

TEST_CASE("DDP broadcasts parameters at construction and buffers at each forward", "[ddp]") {
  Workers w = run_workers("buffers", 2);
  INFO(w.describe());
  CHECK(w.all_ok());
}

TEST_CASE("DDP with init_sync = false broadcasts nothing at construction", "[ddp]") {
  Workers w = run_workers("no-init-sync", 2);
  INFO(w.describe());
  CHECK(w.all_ok());
}

TEST_CASE("DDP with different models on different ranks names the ranks", "[ddp]") {
  Workers w = run_workers("mismatch", 2);
  INFO(w.describe());
  for (const auto& r : w.ranks) {
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.error_file, Catch::Contains("same model") && Catch::Contains("rank 0") && Catch::Contains("rank 1"));
  }
}

}  // namespace ddp::test
