// Worker scenarios for the hang tests (hang_feed_test.cpp), run by ddp-launch: libddp feeds
// the launcher's progress record by itself; these only train, stop or block, and pause.
// feed-record runs without a launcher and checks the record's fields itself.
#include <signal.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <thread>

#include "contract/progress_file.hpp"
#include "ddp/ddp.hpp"
#include "model.hpp"
#include "worker_support.hpp"

namespace ddp::test {

// Where rank 1 blocks in DDP_TEST_HANG=block: its frame must show in the stacks file.
__attribute__((noinline)) void stuck_before_all_reduce() {
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

namespace {

std::string hang_mode() {
  const char* v = std::getenv("DDP_TEST_HANG");
  return v ? v : "";
}

ProcessGroupOptions gloo_options() {
  ProcessGroupOptions o;
  o.backend = "gloo";
  o.timeout = std::chrono::seconds(120);  // longer than any test: the launcher must act first
  return o;
}

// Three DDP steps, then rank 1 stops itself (DDP_TEST_HANG=stop) or blocks in a known
// function (=block) while rank 0 enters an all_reduce of 4996 float32.
int hang_feed() {
  init_process_group(gloo_options());
  if (!progress_feed_enabled()) throw std::runtime_error("DDP_LAUNCH_PROGRESS_FILE set but the feed is off");
  Net net = make_net(false, 1000);
  auto model = DistributedDataParallel(net);
  auto opt = make_optimizer(net->parameters());
  train_steps(model, opt, 0, 3);
  if (get_rank() == 1) {
    if (hang_mode() == "stop") ::raise(SIGSTOP);
    if (hang_mode() == "block") stuck_before_all_reduce();
  }
  auto t = torch::ones({4996});
  all_reduce(t);
  destroy_process_group();
  return 0;
}

// Long legitimate pauses under --hang-timeout 3: both ranks in an explicit PauseProgress for
// 6 s; then rank 0 takes 6 s before saving a checkpoint while rank 1 waits inside
// save_checkpoint (its own pause). No verdict may come.
int pause_save() {
  init_process_group(gloo_options());
  Net net = make_net(false, 1000);
  auto model = DistributedDataParallel(net);
  auto opt = make_optimizer(net->parameters());
  train_steps(model, opt, 0, 2);
  {
    PauseProgress evaluation(std::chrono::seconds(60));
    std::this_thread::sleep_for(std::chrono::seconds(6));
  }
  if (get_rank() == 0) std::this_thread::sleep_for(std::chrono::seconds(6));
  const char* out = std::getenv("DDP_TEST_OUT");
  save_checkpoint(std::string(out ? out : "/tmp") + "/pause_save.pt", net, &opt);
  train_steps(model, opt, 0, 2);
  destroy_process_group();
  return 0;
}

// No launcher: each rank maps its own record (DDP_LAUNCH_PROGRESS_FILE set here, before
// init_process_group) and checks, field by field, what libddp wrote (the layout of
// contract/progress_record.hpp).
void expect(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("check failed: " + what);
}

ddp::progress::Record read_record(const std::string& path) {
  auto r = ddp::progress::read_record_file(path);
  expect(r.has_value(), path + ": no initialised record");
  return *r;
}

void expect_collective(const ddp::progress::Record& r, uint64_t seq, ddp::progress::Op op, uint64_t numel,
                       ddp::progress::DType dtype, uint32_t group, const std::string& what) {
  expect(r.seq_entered == seq && r.seq_completed == seq, what + ": seq " + std::to_string(r.seq_entered) + "/" +
                                                             std::to_string(r.seq_completed) + ", want " +
                                                             std::to_string(seq));
  expect(r.op == static_cast<uint32_t>(op), what + ": op " + std::to_string(r.op));
  expect(r.numel == numel, what + ": numel " + std::to_string(r.numel));
  expect(r.dtype == static_cast<uint32_t>(dtype), what + ": dtype " + std::to_string(r.dtype));
  expect(r.group == group, what + ": group " + std::to_string(r.group));
  expect(r.collective_time_ns > 0 && r.write_time_ns >= r.collective_time_ns, what + ": times");
}

int feed_record() {
  const char* out = std::getenv("DDP_TEST_OUT");
  const std::string path = std::string(out ? out : "/tmp") + "/progress_" + std::getenv("RANK");
  expect(ddp::progress::create_record_file(path) == 0, "create " + path);
  ::setenv(ddp::progress::kEnvVar, path.c_str(), 1);
  expect(!progress_feed_enabled(), "no feed before init_process_group");
  init_process_group(gloo_options());
  expect(progress_feed_enabled(), "feed on after init_process_group");
  auto r = read_record(path);
  expect(r.magic == ddp::progress::kMagic && r.version == ddp::progress::kVersion && r.updates > 0, "header");
  uint64_t updates = r.updates;
  auto t = torch::ones({7}, torch::kDouble);
  all_reduce(t);
  r = read_record(path);
  expect_collective(r, 1, ddp::progress::Op::kAllReduce, 7, ddp::progress::DType::kFloat64, 0, "all_reduce");
  expect(r.updates > updates, "updates grows");
  updates = r.updates;
  Group g = new_group({0, 1});
  auto l = torch::zeros({3}, torch::kLong);
  broadcast(l, 0, g);
  expect_collective(read_record(path), 2, ddp::progress::Op::kBroadcast, 3, ddp::progress::DType::kInt64, 1,
                    "broadcast");
  barrier();
  expect_collective(read_record(path), 3, ddp::progress::Op::kBarrier, 0, ddp::progress::DType::kUnknown, 0, "barrier");
  Net net = make_net(false, 1000);
  auto model = DistributedDataParallel(net);
  auto opt = make_optimizer(net->parameters());
  train_steps(model, opt, 0, 2);
  r = read_record(path);
  expect(r.step == 2 && r.step_time_ns > 0, "two DDP steps, got " + std::to_string(r.step));
  int64_t params = 0;
  for (const auto& p : net->parameters()) params += p.numel();
  // After 3 + DDP's own (2 all_gathers, 1 broadcast, 2 bucket all-reduces, 1 rebuild broadcast).
  expect_collective(r, 9, ddp::progress::Op::kAllReduce, static_cast<uint64_t>(params), ddp::progress::DType::kFloat32,
                    0, "DDP bucket");
  // The other collectives too, async ones once their Work was waited for; send/recv as well.
  auto scattered = torch::empty({2});
  std::vector<torch::Tensor> ins{torch::ones({2}), torch::ones({2})};
  Work w = async::reduce_scatter(scattered, ins);
  w.wait();
  expect_collective(read_record(path), 10, ddp::progress::Op::kReduceScatter, 2, ddp::progress::DType::kFloat32, 0,
                    "async reduce_scatter");
  auto p2p = torch::ones({5}, torch::kInt);
  if (get_rank() == 0) {
    send(p2p, 1);
  } else {
    recv(p2p, 0);
  }
  expect_collective(read_record(path), 11, get_rank() == 0 ? ddp::progress::Op::kSend : ddp::progress::Op::kRecv, 5,
                    ddp::progress::DType::kInt32, 0, "send/recv");
  {
    PauseProgress pause(std::chrono::seconds(100));
    r = read_record(path);
    expect(r.paused == 1 && r.pause_deadline_ns > r.write_time_ns + 90'000'000'000ull, "pause with a limit");
    {
      PauseProgress unlimited;
      r = read_record(path);
      expect(r.paused == 2 && r.pause_deadline_ns == 0, "nested pause without a limit");
    }
    expect(read_record(path).paused == 1, "inner pause ended");
  }
  r = read_record(path);
  expect(r.paused == 0 && r.pause_deadline_ns == 0, "pause ended");
  expect(r.updates > updates, "updates grows");
  destroy_process_group();
  return 0;
}
}  // namespace

const std::map<std::string, std::function<int()>>& hang_scenarios() {
  static const std::map<std::string, std::function<int()>> scenarios = {
      {"hang-feed", hang_feed}, {"pause-save", pause_save}, {"feed-record", feed_record}};
  return scenarios;
}

}  // namespace ddp::test
