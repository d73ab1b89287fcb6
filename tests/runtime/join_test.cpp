// join() for uneven inputs over gloo with 2-3 real processes: rank r trains on its own number
// of batches; no hang, every rank ends with the same parameters, equal to the single-process
// simulation of the same averaged gradients (either division rule), buffers follow the last
// rank training; misuse inside a join is a DdpError on every rank.
#include <catch2/catch.hpp>

#include <sstream>

#include "harness.hpp"
#include "join_model.hpp"

namespace ddp::test {
namespace {

struct RankResult {
  bool last_joiner = false;
  int64_t shadowed = 0;
  double forwards = 0;
  int buckets = 0;
};

std::string joined(const std::vector<int>& batches) {
  std::string s;
  for (int b : batches) s += (s.empty() ? "" : ",") + std::to_string(b);
  return s;
}

// Trains c under join() on c.world() ranks and checks every rank against the reference.
std::vector<RankResult> check_join(const JoinConfig& c, Env env) {
  const TempDir scratch;
  env["DDP_TEST_OUT"] = scratch.path();
  env["DDP_TEST_JOIN_BATCHES"] = joined(c.batches);
  env["DDP_TEST_ACCUM"] = std::to_string(c.accumulate);
  env["DDP_TEST_JOIN_DIVIDE"] = c.divide_by_initial ? "initial" : "active";
  Workers w = run_workers("join-uneven", c.world(), env, std::chrono::seconds(120));
  INFO(w.describe());
  REQUIRE(w.all_ok());
  const auto expected = join_reference(c);
  std::vector<RankResult> results;
  for (int r = 0; r < c.world(); ++r) {
    std::vector<torch::Tensor> got;
    torch::load(got, scratch.path() + "/params_" + std::to_string(r) + ".pt");
    REQUIRE(got.size() == expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("rank " << r << " parameter " << i << " max diff " << (got[i] - expected[i]).abs().max().item<double>());
      CHECK(torch::allclose(got[i], expected[i], 0, 1e-5));
    }
    RankResult result;
    std::istringstream(read_file(scratch.path() + "/result_" + std::to_string(r) + ".txt")) >> result.last_joiner >>
        result.shadowed >> result.forwards >> result.buckets;
    results.push_back(result);
    const int mine = c.batches[static_cast<size_t>(r)];
    INFO("rank " << r << " with " << mine << " batches");
    CHECK(result.last_joiner == (mine == c.max_steps()));
    CHECK(result.shadowed == c.max_steps() * c.accumulate - mine * c.accumulate);
    // The buffer counts forwards: synced from the highest rank training, then from the last joiner.
    CHECK(result.forwards == c.max_steps() * c.accumulate);
  }
  return results;
}

}  // namespace

TEST_CASE("join: uneven shards (3, 5, 7 batches), divided by the initial world size, equal the reference", "[join]") {
  JoinConfig c;
  c.batches = {3, 5, 7};
  check_join(c, {});
}

TEST_CASE("join: uneven shards (7, 3, 5 batches), divided by the ranks still training, equal the reference", "[join]") {
  JoinConfig c;
  c.batches = {7, 3, 5};
  c.divide_by_initial = false;
  check_join(c, {});
}

TEST_CASE("join: the division rules differ (a reference of the other rule does not match)", "[join]") {
  JoinConfig initial;
  initial.batches = {3, 5, 7};
  JoinConfig active = initial;
  active.divide_by_initial = false;
  const auto a = join_reference(initial);
  const auto b = join_reference(active);
  bool differ = false;
  for (size_t i = 0; i < a.size(); ++i) differ = differ || !torch::allclose(a[i], b[i], 0, 1e-5);
  CHECK(differ);
}

TEST_CASE("join: a rank with no batches, rebuilt small buckets and no_sync accumulation", "[join]") {
  JoinConfig c;
  c.batches = {0, 2, 4};
  c.accumulate = 2;
  c.divide_by_initial = false;
  const auto results = check_join(c, {{"DDP_TEST_BUCKET_MB", "0.0002"}});
  CHECK(results[0].buckets >= 3);  // several buckets, rebuilt in step with the others
}

TEST_CASE("join: with the allreduce comm hook and gradient_as_bucket_view; with find_unused_parameters", "[join]") {
  JoinConfig c;
  c.batches = {5, 2};
  check_join(c, {{"DDP_TEST_HOOK", "allreduce"}, {"DDP_TEST_GRAD_VIEW", "1"}});
  JoinConfig even;
  even.batches = {3, 3};
  check_join(even, {{"DDP_TEST_FIND_UNUSED", "1"}});
}

TEST_CASE("join: another collective or an evaluation forward inside join() is a DdpError on every rank", "[join]") {
  Workers w = run_workers("join-misuse", 2, {}, std::chrono::seconds(120));
  INFO(w.describe());
  REQUIRE(w.all_ok());
  for (const auto& r : w.ranks) CHECK(r.output.find("misuse ok") != std::string::npos);
}

}  // namespace ddp::test
