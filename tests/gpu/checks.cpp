// Correctness checks on the device: collectives, DDP vs single-process training, checkpoints.
// Reuses the runtime tests' model and reference training (tests/runtime/model.hpp).
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>

#include "../runtime/model.hpp"
#include "checks.hpp"
#include "ddp/ddp.hpp"

namespace ddp::gpu_check {
namespace {

void expect(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("rank " + std::to_string(get_rank()) + ": check failed: " + what);
}

void init(const Args& args) {
  ProcessGroupOptions o;
  o.backend = arg(args, "backend", "nccl");
  o.timeout = std::chrono::seconds(60);
  init_process_group(o);
}

void report(const std::string& line) {
  if (get_rank() == 0) std::cout << line << std::endl;
}

std::string where(const torch::Device& device) {
  return "backend=" + Group().backend() + " device=" + device.str() + " world=" + std::to_string(get_world_size());
}

}  // namespace

std::string arg(const Args& args, const std::string& key, const std::string& fallback) {
  auto it = args.find(key);
  return it == args.end() ? fallback : it->second;
}

torch::Device check_device(const Args& args) {
  if (arg(args, "device", "cuda") == "cpu") return torch::kCPU;
  if (!torch::cuda::is_available()) throw ConfigError("--device cuda, but torch::cuda::is_available() is false");
  return arg(args, "backend", "nccl") == "nccl" ? device() : torch::Device(torch::kCUDA, 0);
}

void collectives(const Args& args) {
  init(args);
  const auto device = check_device(args);
  const int rank = get_rank(), world = get_world_size();
  auto t = torch::full({1024}, static_cast<float>(rank + 1), torch::TensorOptions().device(device));
  all_reduce(t);
  expect(t.device() == device, "all_reduce moved the tensor to " + t.device().str());
  expect(t.eq(world * (world + 1) / 2.0f).all().item<bool>(),
         "all_reduce sum is " + std::to_string(t[0].item<float>()));
  auto avg = torch::full({7}, static_cast<float>(rank), torch::TensorOptions().device(device));
  all_reduce(avg, ReduceOp::kAvg);
  expect(avg.sub((world - 1) / 2.0f).abs().max().item<float>() < 1e-6f, "all_reduce avg");
  auto b = torch::arange(16, torch::TensorOptions().device(device).dtype(torch::kFloat)) * (rank + 1);
  broadcast(b, 0);
  expect(b.equal(torch::arange(16, b.options())), "broadcast from rank 0");
  auto parts = all_gather(torch::full({3}, static_cast<float>(rank), torch::TensorOptions().device(device)));
  expect(static_cast<int>(parts.size()) == world, "all_gather returned " + std::to_string(parts.size()) + " tensors");
  for (int r = 0; r < world; ++r)
    expect(parts[r].eq(static_cast<float>(r)).all().item<bool>(), "all_gather part " + std::to_string(r));
  auto on_cpu = torch::ones({5});  // NCCL stages CPU tensors on the worker's GPU and back
  all_reduce(on_cpu);
  expect(on_cpu.device().is_cpu() && on_cpu.eq(static_cast<float>(world)).all().item<bool>(),
         "all_reduce of a CPU tensor");
  barrier();
  report("ok collectives " + where(device));
  destroy_process_group();
}

void ddp_matches_single(const Args& args) {
  init(args);
  const auto device = check_device(args);
  ddp::test::TrainConfig c;
  c.world = get_world_size();
  c.steps = std::stoi(arg(args, "steps", "5"));
  const int rank = get_rank();
  ddp::test::Net net = ddp::test::make_net(false, 1000 + rank);  // differs per rank: DDP broadcasts rank 0's
  net->to(device);
  DdpOptions o;
  o.bucket_cap_mb = o.first_bucket_cap_mb = std::stod(arg(args, "bucket-mb", "25"));
  auto model = DistributedDataParallel(net, o);
  auto opt = ddp::test::make_optimizer(net->parameters());
  for (int step = 0; step < c.steps; ++step) {
    opt.zero_grad();
    auto [x, y] = ddp::test::global_batch(c, step, 0);
    auto xs = x.narrow(0, rank * c.batch, c.batch).to(device);
    auto ys = y.narrow(0, rank * c.batch, c.batch).to(device);
    torch::mse_loss(model(xs), ys).backward();
    opt.step();
  }
  auto reference = ddp::test::reference_training(c);  // one CPU process, the combined batch
  auto params = net->parameters();
  expect(params.size() == reference.size(), "parameter count");
  double worst = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    expect(params[i].device() == device, "parameter " + std::to_string(i) + " left " + device.str());
    worst = std::max(worst, (params[i].detach().cpu() - reference[i]).abs().max().item<double>());
  }
  const double tolerance = std::stod(arg(args, "tolerance", "1e-4"));
  expect(worst <= tolerance, "max |ddp - single| = " + std::to_string(worst) + " > " + std::to_string(tolerance));
  char diff[32];
  std::snprintf(diff, sizeof(diff), "%.2e", worst);
  report("ok ddp-matches-single " + where(device) + " steps=" + std::to_string(c.steps) + " max_abs_diff=" + diff);
  destroy_process_group();
}

namespace {

// Every tensor of a model and its Adam state, cloned (the expected snapshot).
struct StateCopy {
  std::vector<torch::Tensor> params, buffers, adam;
};

StateCopy copy_state(torch::nn::Module& net, torch::optim::Adam& opt) {
  StateCopy c;
  for (const auto& p : net.parameters()) c.params.push_back(p.detach().clone());
  for (const auto& b : net.buffers()) c.buffers.push_back(b.clone());
  for (const auto& p : net.parameters()) {
    const auto* state = ddp::optimizer_param_state(opt, p);
    if (!state) continue;
    const auto& s = static_cast<const torch::optim::AdamParamState&>(*state);
    c.adam.push_back(s.exp_avg().clone());
    c.adam.push_back(s.exp_avg_sq().clone());
  }
  return c;
}

void expect_same(const StateCopy& got, const StateCopy& want, const std::string& when) {
  auto same = [&](const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b, const char* what) {
    expect(a.size() == b.size(),
           when + ": " + what + " count " + std::to_string(a.size()) + " vs " + std::to_string(b.size()));
    for (size_t i = 0; i < a.size(); ++i)
      expect(a[i].to(torch::kCPU).equal(b[i].to(torch::kCPU)),
             when + ": " + what + " " + std::to_string(i) + " is not the state of save() time");
  };
  same(got.params, want.params, "parameter");
  same(got.buffers, want.buffers, "buffer");
  same(got.adam, want.adam, "Adam state tensor");
}

torch::nn::Sequential staging_net(const torch::Device& device) {
  torch::manual_seed(7);
  namespace nn = torch::nn;
  nn::Sequential net(nn::Linear(256, 1024), nn::BatchNorm1d(1024), nn::ReLU(), nn::Linear(1024, 1024),
                     nn::BatchNorm1d(1024), nn::ReLU(), nn::Linear(1024, 10));
  net->to(device);
  return net;
}

}  // namespace

void snapshot_staging(const Args& args) {
  init(args);
  const auto device = check_device(args);
  Snapshot snap;
  expect(snap.enabled(), "no snapshot region (run under ddp-launch)");
  auto net = staging_net(device);
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(1e-3));
  auto model = DistributedDataParallel(net);
  int64_t step = 0;
  // One training step: the forward updates the BatchNorm buffers, the step every parameter and
  // the Adam state (all on the device, queued after save() returned).
  auto train = [&](bool with_ddp) {
    torch::manual_seed(100 + step);
    auto x = torch::randn({64, 256}).to(device);
    auto y = torch::randint(10, {64}).to(device);
    opt.zero_grad();
    auto out = with_ddp ? model(x) : net->forward(x);
    torch::nn::functional::cross_entropy(out, y).backward();
    opt.step();
    ++step;
  };
  double blocked = 0, background = 0;
  int saves = 0;
  // First without DDP (no backward fence: the current stream waits for every copy), then with
  // it (parameters and Adam state copied while the next forward and backward run).
  for (const bool with_ddp : {false, true}) {
    for (int round = 0; round < 5; ++round) {
      train(with_ddp);
      const StateCopy expected = copy_state(*net, opt);
      expect(snap.save(step, *net, &opt), "save() failed");
      blocked += snap.last_serialize_seconds();
      ++saves;
      train(with_ddp);  // changes everything while the copies may still run
      auto fresh = staging_net(device);
      torch::optim::Adam fresh_opt(fresh->parameters(), torch::optim::AdamOptions(1e-3));
      const auto restored = snap.restore(*fresh, &fresh_opt, device);
      expect(restored && restored->step == step - 1, "restore() found no snapshot of step " + std::to_string(step - 1));
      background += snap.last_background_serialize_seconds();
      expect_same(copy_state(*fresh, fresh_opt), expected,
                  std::string(with_ddp ? "with DDP" : "without DDP") + ", step " + std::to_string(step - 1));
    }
  }
  char line[256];
  std::snprintf(line, sizeof line,
                "ok snapshot-staging %s: %d saves of %llu bytes, save() blocked %.2f ms each, "
                "background serialisation %.2f ms each",
                where(device).c_str(), saves, static_cast<unsigned long long>(snap.last_staged_bytes()),
                blocked * 1e3 / saves, background * 1e3 / saves);
  report(line);
  destroy_process_group();
}

void checkpoint_round_trip(const Args& args) {
  init(args);
  const auto device = check_device(args);
  const std::string dir = arg(args, "dir", "/tmp");
  auto net = ddp::test::make_net(false, 1000);
  net->to(device);
  auto opt = ddp::test::make_optimizer(net->parameters());
  ddp::test::TrainConfig c;
  c.world = 1;
  for (int step = 0; step < 2; ++step) {  // momentum buffers make the optimizer state non-empty
    opt.zero_grad();
    auto [x, y] = ddp::test::global_batch(c, step, 0);
    torch::mse_loss(net->forward(x.to(device)), y.to(device)).backward();
    opt.step();
  }
  const std::string first = dir + "/gpu_check_from_device.pt", second = dir + "/gpu_check_from_cpu.pt";
  save_checkpoint(first, net, &opt, {{"step", int64_t{2}}});
  auto on_cpu = ddp::test::make_net(false, 1);
  auto cpu_opt = ddp::test::make_optimizer(on_cpu->parameters());
  auto extra = load_checkpoint(first, on_cpu, &cpu_opt, torch::Device(torch::kCPU));
  expect(extra.at("step").toInt() == 2, "extra value 'step'");
  const auto original = net->parameters(), loaded = on_cpu->parameters();
  for (size_t i = 0; i < original.size(); ++i) {
    expect(loaded[i].device().is_cpu(), "parameter " + std::to_string(i) + " not mapped to CPU");
    expect(loaded[i].equal(original[i].detach().cpu()), "parameter " + std::to_string(i) + " differs after CPU load");
  }
  save_checkpoint(second, on_cpu, &cpu_opt, {{"step", int64_t{2}}});
  auto back = ddp::test::make_net(false, 2);
  back->to(device);
  auto back_opt = ddp::test::make_optimizer(back->parameters());
  load_checkpoint(second, back, &back_opt, device);
  const auto returned = back->parameters();
  for (size_t i = 0; i < original.size(); ++i) {
    expect(returned[i].device() == device, "parameter " + std::to_string(i) + " not mapped back to " + device.str());
    expect(returned[i].equal(original[i]), "parameter " + std::to_string(i) + " differs after the round trip");
  }
  report("ok checkpoint " + where(device) + " (saved on " + device.str() + ", loaded on cpu, saved, loaded on " +
         device.str() + ")");
  destroy_process_group();
}

}  // namespace ddp::gpu_check
