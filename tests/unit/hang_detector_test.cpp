// judge(): the hang verdict from the workers' progress records (no processes).
#include <catch2/catch.hpp>

#include "launcher/progress/hang_detector.hpp"

using namespace ddp::launch;
using namespace ddp::launch::progress;
namespace progress = ddp::progress;

namespace {

ddp::progress::Record record(uint64_t step, uint64_t entered, uint64_t completed,
                             ddp::progress::Op op = ddp::progress::Op::kAllReduce, uint64_t numel = 4996) {
  ddp::progress::Record r{};
  r.magic = ddp::progress::kMagic;
  r.version = ddp::progress::kVersion;
  r.step = step;
  r.seq_entered = entered;
  r.seq_completed = completed;
  r.op = static_cast<uint32_t>(op);
  r.numel = numel;
  r.dtype = static_cast<uint32_t>(ddp::progress::DType::kFloat32);
  return r;
}

RankProgress rank(int r, std::optional<ddp::progress::Record> rec, double idle = 40) {
  return RankProgress{r, 4700 + r, rec, idle, false};
}

}  // namespace

TEST_CASE("judge: the rank behind is named with its collective and what the others wait in") {
  std::vector<RankProgress> ranks = {rank(0, record(12, 4597, 4596)), rank(1, record(12, 4596, 4596)),
                                     rank(2, record(12, 4597, 4596)), rank(3, record(12, 4597, 4596))};
  auto v = judge(ranks, 30);
  REQUIRE(v);
  CHECK_FALSE(v->desync);
  CHECK(v->culprit == 1);
  CHECK(v->summary ==
        "hang: no progress for 40 s; rank 1 (pid 4701) at step 12, last completed all_reduce "
        "#4596, in no collective; ranks 0,2,3 wait in all_reduce #4597 (4996 float32)");
}

TEST_CASE("judge: no verdict while a rank progresses, pauses, or nobody ever fed a record") {
  std::vector<RankProgress> ranks = {rank(0, record(3, 5, 4)), rank(1, record(3, 4, 4), 2)};
  CHECK_FALSE(judge(ranks, 30));
  ranks[1].idle_s = 40;
  ranks[1].paused = true;
  CHECK_FALSE(judge(ranks, 30));
  CHECK_FALSE(judge({rank(0, std::nullopt), rank(1, std::nullopt)}, 30));
}

TEST_CASE("judge: a rank that never fed is behind every rank that did") {
  auto v = judge({rank(0, record(3, 5, 4)), rank(1, std::nullopt)}, 30);
  REQUIRE(v);
  CHECK(v->culprit == 1);
  CHECK_THAT(v->summary, Catch::Contains("rank 1 (pid 4701) never reported progress; rank 0 waits in all_reduce #5"));
}

TEST_CASE("judge: the same sequence number in different collectives is a desync") {
  auto v = judge({rank(0, record(3, 5, 4, ddp::progress::Op::kBroadcast, 10)), rank(1, record(3, 5, 4))}, 30);
  REQUIRE(v);
  CHECK(v->desync);
  CHECK(v->summary ==
        "desync: no progress for 40 s; at collective #5 the ranks differ: rank 0 in broadcast #5 "
        "(10 float32); rank 1 in all_reduce #5 (4996 float32)");
}

TEST_CASE("auto_hang_limit: long before the first step, then k times the slowest rank's step time, with a floor") {
  CHECK(auto_hang_limit({}) == AutoHangLimit::kBeforeFirstStepS);
  CHECK(auto_hang_limit({std::nullopt, std::nullopt}) == 600);
  CHECK(auto_hang_limit({0.1, std::nullopt}) == AutoHangLimit::kFloorS);  // 10 x 0.1 s < the floor
  CHECK(auto_hang_limit({0.5, 30.0, 2.0}) == 300);                        // 10 x the slowest
  CHECK(auto_hang_limit({12.0, 11.0}) == 120);
  CHECK(auto_hang_limit({std::nullopt, 13.0}) == 130);
}

TEST_CASE("judge: a job that feeds nothing is hung only when every rank is silent (no output, no CPU)") {
  std::vector<RankProgress> ranks = {rank(0, std::nullopt), rank(1, std::nullopt)};
  ranks[0].silent_s = 35;
  ranks[1].silent_s = 5;  // rank 1 computes or prints: the job is alive
  CHECK_FALSE(judge(ranks, 30));
  ranks[1].silent_s = 41;
  auto v = judge(ranks, 30);
  REQUIRE(v);
  CHECK_FALSE(v->desync);
  CHECK(v->culprit == 1);  // silent the longest
  CHECK(v->summary ==
        "hang: rank 1 (pid 4701) fed no progress record; no output and no CPU time for 41 s; "
        "rank 0 silent too");
  // In a job where some rank feeds, silence is not looked at: the records decide.
  ranks[0] = rank(0, record(3, 5, 4), 2);
  CHECK_FALSE(judge(ranks, 30));
}
