// Worker scenarios: what each re-executed test process does ("--worker NAME"). They run under
// ddp::run, so an escaping exception becomes exit code 1 + an error file the parent inspects.
// Results go to $DDP_TEST_OUT (parameters as torch::save files, small text files).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>

#include <unistd.h>

#include "ddp/ddp.hpp"
#include "model.hpp"
#include "worker_support.hpp"

namespace ddp::test {
namespace {

// The address range the parameters' gradients occupy (0 0: none defined).
struct GradSpan {
  uintptr_t begin = 0, end = 0;
};
GradSpan grad_span(const std::vector<torch::Tensor>& params) {
  GradSpan span;
  for (const auto& p : params) {
    if (!p.grad().defined()) continue;
    const auto at = reinterpret_cast<uintptr_t>(p.grad().data_ptr());
    const uintptr_t end = at + p.grad().nbytes();
    span.begin = span.begin == 0 ? at : std::min(span.begin, at);
    span.end = std::max(span.end, end);
  }
  return span;
}

CommHook make_hook(const std::string& name) {
  if (name == "allreduce") return hooks::allreduce();
  if (name == "fp16") return hooks::fp16_compress();
  if (name == "bf16") return hooks::bf16_compress();
  if (name == "powersgd") {
    PowerSgdOptions o;
    o.matrix_approximation_rank = env_int("DDP_TEST_PSGD_RANK", 1);
    o.start_powersgd_iter = env_int("DDP_TEST_PSGD_START", 2);
    o.min_compression_rate = std::stod(env_or("DDP_TEST_PSGD_MIN_RATE", "2"));
    return hooks::powersgd(std::make_shared<PowerSgdState>(o));
  }
  if (name == "custom") {
    // A user hook that does not divide up front and returns a new tensor (not in place).
    return [](GradBucket& bucket) -> Future {
      const int world = bucket.group().size();
      return all_reduce_async(bucket.buffer(), bucket.group())
          ->then(
              [world](c10::ivalue::Future& f) {
                auto v = f.value();
                torch::Tensor t = v.isTensor() ? v.toTensor() : v.toTensorList().get(0);
                return c10::IValue(t / world);
              },
              c10::TensorType::get());
    };
  }
  return nullptr;
}

int train() {
  init_process_group(pg_options());
  // DDP_TEST_SUBGROUPS=1: ranks {0,1} and {2,3} train two independent DDP models.
  const bool subgroups = env_int("DDP_TEST_SUBGROUPS", 0) != 0;
  Group low = subgroups ? new_group({0, 1}) : Group();
  Group high = subgroups ? new_group({2, 3}) : Group();
  Group group = !subgroups ? Group() : (low.is_member() ? low : high);
  TrainConfig c;
  c.world = group.size();
  c.steps = env_int("DDP_TEST_STEPS", 5);
  c.accumulate = env_int("DDP_TEST_ACCUM", 1);
  c.with_unused = env_int("DDP_TEST_UNUSED", 0) != 0;
  const int rank = group.rank();
  Net net = make_net(c.with_unused, 1000 + rank);  // differs per rank: DDP must broadcast the first rank's
  DdpOptions o;
  o.group = group;
  o.bucket_cap_mb = o.first_bucket_cap_mb = std::stod(env_or("DDP_TEST_BUCKET_MB", "25"));
  o.find_unused_parameters = env_int("DDP_TEST_FIND_UNUSED", 0) != 0;
  o.gradient_as_bucket_view = env_int("DDP_TEST_GRAD_VIEW", 0) != 0;
  auto model = DistributedDataParallel(net, o);
  if (auto hook = make_hook(env_or("DDP_TEST_HOOK", "none"))) model.register_comm_hook(hook);
  auto opt = make_optimizer(net->parameters());
  GradSpan first_grads;  // where the gradients lay after the first step (one bucket), and at the end
  const bool set_to_none = env_int("DDP_TEST_SET_TO_NONE", 0) != 0;  // else the torch's own default
  for (int step = 0; step < c.steps; ++step) {
    if (set_to_none) {  // by hand: torch 1.13's zero_grad() takes no set_to_none
      for (auto& p : net->parameters()) p.mutable_grad() = torch::Tensor();
    } else {
      opt.zero_grad();
    }
    for (int micro = 0; micro < c.accumulate; ++micro) {
      auto [x, y] = global_batch(c, step, micro);
      auto xs = x.narrow(0, rank * c.batch, c.batch);
      auto ys = y.narrow(0, rank * c.batch, c.batch);
      auto run_micro = [&] { (torch::mse_loss(model(xs), ys) / c.accumulate).backward(); };
      if (micro + 1 < c.accumulate) {
        auto guard = model.no_sync();
        run_micro();
      } else {
        run_micro();
      }
    }
    opt.step();
    if (step == 0) first_grads = grad_span(net->parameters());
  }
  const GradSpan last_grads = grad_span(net->parameters());
  std::ofstream(out_path("grad_span_" + std::to_string(get_rank()) + ".txt"))
      << first_grads.begin << " " << first_grads.end << " " << last_grads.begin << " " << last_grads.end;
  std::vector<torch::Tensor> params;
  for (auto& p : net->parameters()) params.push_back(p.detach().clone());
  torch::save(params, out_path("params_" + std::to_string(get_rank()) + ".pt"));
  std::ofstream(out_path("buckets_" + std::to_string(get_rank()) + ".txt")) << model.engine().bucket_indices().size();
  destroy_process_group();
  return 0;
}

int collectives() {
  init_process_group(pg_options());
  const int rank = get_rank();
  const int world = get_world_size();
  auto t = torch::full({3}, rank + 1.0);
  all_reduce(t);
  expect(t[0].item<double>() == world * (world + 1) / 2.0, "all_reduce sum");
  auto a = torch::full({2}, rank + 1.0);
  all_reduce(a, ReduceOp::kAvg);
  expect(a[1].item<double>() == (world + 1) / 2.0, "all_reduce avg");
  auto m = torch::full({1}, static_cast<double>(rank));
  all_reduce(m, ReduceOp::kMax);
  expect(m.item<double>() == world - 1, "all_reduce max");
  auto b = torch::full({4}, rank == world - 1 ? 7.0 : 0.0);
  broadcast(b, world - 1);
  expect(b.sum().item<double>() == 28.0, "broadcast from the last rank");
  auto g = all_gather(torch::full({1}, static_cast<double>(rank * 10)));
  for (int r = 0; r < world; ++r) expect(g[static_cast<size_t>(r)].item<double>() == r * 10, "all_gather");
  barrier();
  if (world < 4) {
    destroy_process_group();
    return 0;
  }
  Group odd = new_group({1, 3});
  expect(odd.is_member() == (rank % 2 == 1), "subgroup membership");
  if (odd.is_member()) {
    expect(odd.size() == 2 && odd.rank() == rank / 2, "subgroup rank");
    auto s = torch::full({1}, static_cast<double>(rank));
    all_reduce(s, ReduceOp::kSum, odd);
    expect(s.item<double>() == 4.0, "subgroup all_reduce");
    auto sb = torch::full({1}, static_cast<double>(rank));
    broadcast(sb, 3, odd);
    expect(sb.item<double>() == 3.0, "subgroup broadcast");
  }
  barrier();
  destroy_process_group();
  log() << "collectives ok";
  return 0;
}

int mismatch() {
  init_process_group(pg_options());
  auto net = torch::nn::Sequential(torch::nn::Linear(8, 4), torch::nn::Linear(4, get_rank() == 1 ? 3 : 2));
  auto model = DistributedDataParallel(net);
  return 0;
}

int buffers() {
  init_process_group(pg_options());
  torch::manual_seed(3);
  auto net = torch::nn::Sequential(torch::nn::Linear(4, 4), torch::nn::BatchNorm1d(4));
  if (get_rank() == 1) {
    for (auto& p : net->parameters()) p.detach().add_(1.0);  // init broadcast must undo this
  }
  auto model = DistributedDataParallel(net);
  net->eval();
  if (get_rank() == 1) {
    for (auto& b : net->buffers()) b.fill_(42);  // per-forward broadcast must undo this
  }
  torch::manual_seed(4);
  auto out = model(torch::randn({3, 4})).detach().contiguous();
  auto outs = all_gather(out);
  expect(torch::equal(outs[0], outs[1]), "outputs equal after buffer broadcast");
  destroy_process_group();
  return 0;
}

// init_sync = false (every rank restored the same state): construction broadcasts nothing, so
// rank 1's changed weights stay its own; the default undoes them.
int no_init_sync() {
  init_process_group(pg_options());
  for (const bool sync : {false, true}) {
    torch::manual_seed(3);
    auto net = torch::nn::Sequential(torch::nn::Linear(4, 4));
    if (get_rank() == 1) net->parameters()[0].detach().add_(1.0);
    DdpOptions options;
    options.init_sync = sync;
    auto model = DistributedDataParallel(net, options);
    const auto weights = all_gather(net->parameters()[0].detach().contiguous());
    expect(torch::equal(weights[0], weights[1]) == sync,
           sync ? "init_sync broadcasts rank 0's weights" : "init_sync=false leaves each rank's weights");
  }
  destroy_process_group();
  return 0;
}

int checkpoint() {
  init_process_group(pg_options());
  const int rank = get_rank();
  const std::string path = out_path("ckpt.pt");
  Net net = make_net(false, 1000 + rank);
  auto model = DistributedDataParallel(net);
  auto opt = make_optimizer(net->parameters());
  train_steps(model, opt, 0, 3);
  save_checkpoint(path, net, &opt, {{"step", int64_t{3}}, {"tag", std::string("ckpt")}, {"t", torch::arange(3)}});
  std::vector<torch::Tensor> saved;
  for (auto& p : net->parameters()) saved.push_back(p.detach().clone());
  train_steps(model, opt, 3, 2);

  // Resume the usual way: wrap first, then load (Module::load gives the parameters new
  // gradient accumulators; DDP must follow them).
  Net net2 = make_net(false, 77 + rank);
  auto model2 = DistributedDataParallel(net2);
  auto opt2 = make_optimizer(net2->parameters());
  auto extra = load_checkpoint(path, net2, &opt2);
  expect(extra.at("step").toInt() == 3 && extra.at("tag").toStringRef() == "ckpt", "extra values");
  expect(torch::equal(extra.at("t").toTensor(), torch::arange(3)), "extra tensor");
  for (size_t i = 0; i < saved.size(); ++i) expect(torch::equal(saved[i], net2->parameters()[i]), "loaded == saved");
  train_steps(model2, opt2, 3, 2);
  auto p1 = net->parameters();
  auto p2 = net2->parameters();
  for (size_t i = 0; i < p1.size(); ++i) {
    expect(torch::allclose(p1[i], p2[i], 0, 1e-6),
           "resumed == continued (parameter " + std::to_string(i) + " max diff " +
               std::to_string((p1[i] - p2[i]).abs().max().item<double>()) + ")");
  }

  if (rank == 0) {
    auto expect_error = [&](const std::string& file, const std::string& needle) {
      try {
        load_checkpoint(file, net2, &opt2);
      } catch (const CheckpointError& e) {
        expect(std::string(e.what()).find(needle) != std::string::npos,
               "message '" + std::string(e.what()) + "' has '" + needle + "'");
        return;
      }
      throw std::runtime_error("no CheckpointError for " + file);
    };
    torch::save(torch::ones(3), out_path("foreign.pt"));
    expect_error(out_path("foreign.pt"), "not a libddp checkpoint");
    std::string bytes;
    {
      std::ifstream in(path, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    std::ofstream(out_path("truncated.pt"), std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    expect_error(out_path("truncated.pt"), "not a readable checkpoint");
    std::ofstream(out_path("text.pt")) << "hello";
    expect_error(out_path("text.pt"), "not a readable checkpoint");
    expect_error(out_path("missing.pt"), "does not exist");
  }
  barrier();
  destroy_process_group();
  log() << "checkpoint ok";
  return 0;
}

// Single process, no group: saves ever-newer checkpoints until killed.
int save_loop() {
  const std::string path = env_or("DDP_TEST_CKPT", "/tmp/ckpt.pt");
  auto net = torch::nn::Sequential(torch::nn::Linear(1024, 1024), torch::nn::Linear(1024, 1024),
                                   torch::nn::Linear(1024, 1024));
  torch::NoGradGuard no_grad;
  for (int64_t gen = 0;; ++gen) {
    for (auto& p : net->parameters()) p.fill_(static_cast<double>(gen));
    save_checkpoint(path, *net, nullptr, {{"gen", gen}});
    if (gen == 0) std::ofstream(path + ".first") << "saved";
  }
}

// Rank 1 dies abruptly after joining; rank 0's next collective (a plain all_reduce, or the
// gradient all-reduce inside DDP's backward) must fail fast with CommError, not hang.
int peer_dies() {
  init_process_group(pg_options());
  const bool in_ddp = env_int("DDP_TEST_IN_DDP", 0) != 0;
  Net net = make_net(false, 1000);
  auto model = DistributedDataParallel(net);
  TrainConfig c;
  c.world = 2;
  if (get_rank() == 1) {
    std::fflush(nullptr);
    std::_Exit(7);
  }
  if (in_ddp) {
    auto [x, y] = global_batch(c, 0, 0);
    torch::mse_loss(model(x.narrow(0, 0, c.batch)), y.narrow(0, 0, c.batch)).backward();
  } else {
    auto t = torch::ones({4});
    all_reduce(t);
  }
  return 0;
}

// Joins and vanishes without cleanup, leaving its keys in a file:// store (a crashed attempt).
int join_and_vanish() {
  init_process_group(pg_options());
  barrier();
  std::fflush(nullptr);
  std::_Exit(0);
}

// Rank 1 stops calling collectives for longer than the timeout (run with 4 s): rank 0 gets
// TimeoutError. (The timeout also covers rendezvous, so it cannot be tiny on a busy machine.)
int peer_stalls() {
  init_process_group(pg_options());
  if (get_rank() == 1) {
    std::this_thread::sleep_for(std::chrono::seconds(6));
    return 0;
  }
  auto t = torch::ones({4});
  all_reduce(t);
  return 0;
}

int thread_throws() {
  std::thread([] { throw DdpError("worker thread failed"); }).join();
  return 0;
}

int throws() { throw ConfigError("boom: set DDP_X to fix it"); }

int join_only() {
  init_process_group(pg_options());  // expected to time out / fail
  return 0;
}

int spawn_ok() {
  spawn(3, [](int local_rank) {
    init_process_group(pg_options());
    expect(get_rank() == local_rank && get_world_size() == 3, "spawn env");
    auto t = torch::ones({1}) * local_rank;
    all_reduce(t);
    expect(t.item<float>() == 3.0f, "spawn all_reduce");
    destroy_process_group();
  });
  log() << "spawn ok";
  return 0;
}

int spawn_fail() {
  try {
    spawn(3, [](int local_rank) {
      if (local_rank == 1) throw DdpError("rank one failed on purpose");
      init_process_group(pg_options());  // blocks: rank 1 never joins; spawn must kill us
    });
  } catch (const ProcessFailedError& e) {
    log() << "caught rank=" << e.rank() << " code=" << e.exit_code() << " what=" << e.what();
    return 0;
  }
  return 5;
}

// Rank 1 never finishes: spawn's timeout kills both and names the rank it waited for.
int spawn_timeout() {
  SpawnOptions options;
  options.timeout = std::chrono::milliseconds(1500);
  try {
    spawn(
        2,
        [](int local_rank) {
          if (local_rank == 1) ::pause();
        },
        options);
  } catch (const TimeoutError& e) {
    log() << "caught timeout: " << e.what();
    return 0;
  }
  return 5;
}

}  // namespace

const std::map<std::string, std::function<int()>>& hang_scenarios();         // hang_scenarios.cpp
const std::map<std::string, std::function<int()>>& join_scenarios();         // join_scenarios.cpp
const std::map<std::string, std::function<int()>>& powersgd_scenarios();     // powersgd_test.cpp
const std::map<std::string, std::function<int()>>& snapshot_scenarios();     // snapshot_test.cpp
const std::map<std::string, std::function<int()>>& collectives_scenarios();  // collectives_test.cpp
const std::map<std::string, std::function<int()>>& zero_scenarios();         // zero_test.cpp

int run_scenario(const std::string& name) {
  static const std::map<std::string, std::function<int()>> scenarios = {{"train", train},
                                                                        {"collectives", collectives},
                                                                        {"mismatch", mismatch},
                                                                        {"buffers", buffers},
                                                                        {"no-init-sync", no_init_sync},
                                                                        {"checkpoint", checkpoint},
                                                                        {"save-loop", save_loop},
                                                                        {"throw", throws},
                                                                        {"thread-throws", thread_throws},
                                                                        {"peer-dies", peer_dies},
                                                                        {"peer-stalls", peer_stalls},
                                                                        {"join-and-vanish", join_and_vanish},
                                                                        {"join-only", join_only},
                                                                        {"spawn-ok", spawn_ok},
                                                                        {"spawn-fail", spawn_fail},
                                                                        {"spawn-timeout", spawn_timeout}};
  auto it = scenarios.find(name);
  if (it == scenarios.end() && hang_scenarios().count(name)) return hang_scenarios().at(name)();
  if (it == scenarios.end() && join_scenarios().count(name)) return join_scenarios().at(name)();
  if (it == scenarios.end() && powersgd_scenarios().count(name)) return powersgd_scenarios().at(name)();
  if (it == scenarios.end() && snapshot_scenarios().count(name)) return snapshot_scenarios().at(name)();
  if (it == scenarios.end() && zero_scenarios().count(name)) return zero_scenarios().at(name)();
  if (it == scenarios.end() && collectives_scenarios().count(name)) return collectives_scenarios().at(name)();
  if (it == scenarios.end()) throw std::runtime_error("unknown worker scenario '" + name + "'");
  return it->second();
}

}  // namespace ddp::test
