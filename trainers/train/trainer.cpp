// The training half of `train`: the MLP under DDP, the epoch loop with DistributedRandomSampler
// and set_epoch, no_sync accumulation, cosine schedule, all-reduced validation, checkpoints +
// resume, rank-0 progress and metrics, and the --bench mode. Data comes from data.hpp.
#include "trainer.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>

#include <ddp/ddp.hpp>

#include "bench_line.hpp"
#include "checkpoint_files.hpp"
#include "data.hpp"
#include "metrics_csv.hpp"
#include "progress.hpp"

namespace ddp::train {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string format(const char* pattern, ...) {
  char buffer[512];
  va_list args;
  va_start(args, pattern);
  std::vsnprintf(buffer, sizeof buffer, pattern, args);
  va_end(args);
  return buffer;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// ---- model --------------------------------------------------------------------------------

torch::nn::Sequential make_mlp(int in_dim, const std::vector<int>& hidden, int classes) {
  torch::nn::Sequential net;
  int64_t width = in_dim;
  for (int h : hidden) {
    net->push_back(torch::nn::Linear(width, h));
    net->push_back(torch::nn::ReLU());
    width = h;
  }
  net->push_back(torch::nn::Linear(width, classes));
  return net;
}

std::string shape_of(int in_dim, const std::vector<int>& hidden, int classes) {
  std::string s = std::to_string(in_dim);
  for (int h : hidden) s += "-" + std::to_string(h);
  return s + "-" + std::to_string(classes);
}

int64_t parameter_count(torch::nn::Module& module) {
  int64_t n = 0;
  for (const auto& p : module.parameters()) n += p.numel();
  return n;
}

template <typename Model>
void apply_comm_hook(Model& model, const std::string& hook) {
  if (hook == "fp16") model.register_comm_hook(ddp::hooks::fp16_compress());
  if (hook == "bf16") model.register_comm_hook(ddp::hooks::bf16_compress());
}

void set_threads(int requested) {
  int n = requested;
  if (n == 0) {
    const char* env = std::getenv("OMP_NUM_THREADS");
    n = env ? std::atoi(env) : 1;
  }
  torch::set_num_threads(std::max(1, n));
}

// Cosine decay from --lr to 0 over the run (a function of the step, so resume-safe).
void set_learning_rate(torch::optim::SGD& optimizer, const TrainOptions& o, int64_t step, int64_t total_steps) {
  double lr = o.lr;
  if (o.schedule == "cosine") lr *= 0.5 * (1.0 + std::cos(M_PI * double(step) / double(std::max<int64_t>(1, total_steps))));
  for (auto& group : optimizer.param_groups()) static_cast<torch::optim::SGDOptions&>(group.options()).lr(lr);
}

// Mean over ranks of a per-rank value (collective).
double mean_over_ranks(double value) {
  auto t = torch::tensor({value}, torch::kDouble).to(ddp::device());
  ddp::all_reduce(t);
  return t.item<double>() / ddp::get_world_size();
}

// Accuracy over the whole validation set: each rank scores a contiguous slice, then the
// correct/total counts are all-reduced.
double evaluate(torch::nn::Sequential& net, const Data& data) {
  torch::NoGradGuard no_grad;
  net->eval();
  const int64_t n = data.val_x.size(0);
  const int rank = ddp::get_rank(), world = ddp::get_world_size();
  const int64_t lo = n * rank / world, hi = n * (rank + 1) / world;
  double correct = 0;
  if (hi > lo) {
    const auto logits = net->forward(data.val_x.slice(0, lo, hi));
    correct = logits.argmax(1).eq(data.val_y.slice(0, lo, hi)).sum().item<double>();
  }
  auto counts = torch::tensor({correct, double(hi - lo)}, torch::kDouble).to(ddp::device());
  ddp::all_reduce(counts);
  net->train();
  return counts[0].item<double>() / counts[1].item<double>();
}

// ---- checkpoints --------------------------------------------------------------------------

// Where training stands; saved in each checkpoint's extra values.
struct Position {
  int64_t epoch = 0;       // current epoch (0-based)
  int64_t batch = 0;       // optimizer steps done in this epoch
  int64_t step = 0;        // optimizer steps done in total
  double loss_sum = 0;     // sum of step losses this epoch (mean over ranks)
  int64_t loss_count = 0;  // steps in loss_sum
};

int64_t extra_int(const ddp::CheckpointExtra& extra, const std::string& key, const std::string& path) {
  const auto it = extra.find(key);
  if (it == extra.end() || !it->second.isInt()) {
    throw ddp::CheckpointError("checkpoint " + path + " has no '" + key +
                               "' entry: it was not written by train; remove it or pass --no-resume");
  }
  return it->second.toInt();
}

void save(const TrainOptions& o, torch::nn::Sequential& net, torch::optim::SGD& optimizer, Position pos) {
  pos.loss_sum = mean_over_ranks(pos.loss_sum);
  const ddp::CheckpointExtra extra{{"epoch", pos.epoch},       {"batch", pos.batch},
                                   {"step", pos.step},         {"loss_sum", pos.loss_sum},
                                   {"loss_count", pos.loss_count}, {"world_size", int64_t(ddp::get_world_size())}};
  ddp::save_checkpoint((fs::path(o.checkpoint_dir) / checkpoint_name(pos.step)).string(), *net, &optimizer, extra);
  if (ddp::get_rank() == 0) remove_stale_checkpoints(o.checkpoint_dir, o.keep_checkpoints);
}

// Rank 0 picks the latest checkpoint; every rank loads that same file. nullopt: none found.
std::optional<Position> resume(const TrainOptions& o, torch::nn::Sequential& net, torch::optim::SGD& optimizer,
                               std::string& path) {
  int64_t step = -1;
  if (ddp::get_rank() == 0) {
    if (auto latest = latest_checkpoint(o.checkpoint_dir)) step = *checkpoint_step(fs::path(*latest).filename());
  }
  auto t = torch::tensor({step}, torch::kLong).to(ddp::device());
  ddp::broadcast(t, 0);
  step = t.item<int64_t>();
  if (step < 0) return std::nullopt;
  path = (fs::path(o.checkpoint_dir) / checkpoint_name(step)).string();
  ddp::CheckpointExtra extra;
  try {
    extra = ddp::load_checkpoint(path, *net, &optimizer);
  } catch (const ddp::CheckpointError& e) {
    throw ddp::CheckpointError(std::string(e.what()) + " (resuming from " + o.checkpoint_dir +
                               "; pass --no-resume or another --checkpoint-dir to start fresh)");
  }
  Position pos;
  pos.epoch = extra_int(extra, "epoch", path);
  pos.batch = extra_int(extra, "batch", path);
  pos.step = extra_int(extra, "step", path);
  pos.loss_count = extra_int(extra, "loss_count", path);
  const auto loss = extra.find("loss_sum");
  pos.loss_sum = loss != extra.end() && loss->second.isDouble() ? loss->second.toDouble() : 0.0;
  if (extra_int(extra, "world_size", path) != ddp::get_world_size() && pos.batch > 0) {
    pos.batch = pos.loss_count = 0;  // another world size shards the epoch differently: redo it
    pos.loss_sum = 0;
  }
  return pos;
}

// ---- modes --------------------------------------------------------------------------------

int run_bench(const TrainOptions& o) {
  ddp::init_process_group();
  const int rank = ddp::get_rank(), world = ddp::get_world_size();
  const auto device = ddp::device();
  torch::manual_seed(0);
  auto net = make_mlp(o.in_dim, o.hidden, o.classes);
  net->to(device);
  ddp::DdpOptions ddp_options;
  ddp_options.bucket_cap_mb = o.bucket_mb;
  auto model = ddp::DistributedDataParallel(net, ddp_options);
  apply_comm_hook(model, o.comm_hook);
  torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(o.lr).momentum(o.momentum));
  torch::manual_seed(1000 + rank);
  const auto x = torch::randn({int64_t(o.batch_size), int64_t(o.in_dim)}).to(device);
  const auto y = torch::randint(0, o.classes, {int64_t(o.batch_size)}, torch::kLong).to(device);
  auto step = [&] {
    optimizer.zero_grad();
    torch::nn::functional::cross_entropy(model(x), y).backward();
    optimizer.step();
  };
  for (int i = 0; i < o.warmup; ++i) step();
  ddp::barrier();
  const auto start = Clock::now();
  for (int i = 0; i < o.steps; ++i) step();
  ddp::barrier();
  const double elapsed = seconds_since(start);
  if (rank == 0) std::cout << bench_line(world, o.steps, o.batch_size, parameter_count(*net), elapsed) << std::endl;
  ddp::destroy_process_group();
  return 0;
}

int run_train(const TrainOptions& o) {
  const auto started = Clock::now();
  const Data data = load_data(o);  // bad data fails before rendezvous
  ddp::init_process_group();
  const int rank = ddp::get_rank(), world = ddp::get_world_size();
  const auto device = ddp::device();
  ProgressMode mode = ProgressMode::kNone;
  if (rank == 0) choose_progress_mode(o.progress, ::isatty(STDOUT_FILENO) != 0, mode);
  ProgressReporter progress(std::cout, mode, o.log_every);
  auto say = [&](const std::string& line) {
    if (rank == 0) progress.message(line);
  };
  if (rank == 0) fs::create_directories(o.checkpoint_dir);

  const auto train_x = data.train_x.to(device), train_y = data.train_y.to(device);
  torch::manual_seed(o.seed);
  auto net = make_mlp(data.in_dim, o.hidden, data.classes);
  net->to(device);
  torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(o.lr).momentum(o.momentum));
  Position pos;
  std::string resumed_from;
  if (o.resume) {
    if (auto found = resume(o, net, optimizer, resumed_from)) pos = *found;
  }
  ddp::DdpOptions ddp_options;
  ddp_options.bucket_cap_mb = o.bucket_mb;
  auto model = ddp::DistributedDataParallel(net, ddp_options);  // broadcasts rank 0's weights
  apply_comm_hook(model, o.comm_hook);

  const auto n_train = static_cast<size_t>(train_x.size(0));
  torch::data::samplers::DistributedRandomSampler sampler(n_train, world, rank);
  const int64_t local_samples = (int64_t(n_train) + world - 1) / world;
  const int64_t micro_batches = (local_samples + o.batch_size - 1) / o.batch_size;
  const int64_t steps_per_epoch = (micro_batches + o.accum_steps - 1) / o.accum_steps;
  say(format("train: %d worker(s), %lld train / %lld val samples (%s); model %s (%lld params); "
             "global batch %lld; %lld steps/epoch",
             world, (long long)n_train, (long long)data.val_x.size(0), data.description.c_str(),
             shape_of(data.in_dim, o.hidden, data.classes).c_str(), (long long)parameter_count(*net),
             (long long)o.batch_size * world * o.accum_steps, (long long)steps_per_epoch));
  if (!resumed_from.empty()) {
    say(format("train: resumed from %s (epoch %lld, step %lld, restart %d)", resumed_from.c_str(),
               (long long)pos.epoch + 1, (long long)pos.step, ddp::worker_env().restart_count));
  }
  std::optional<MetricsWriter> metrics;
  if (rank == 0) {
    metrics.emplace(o.metrics_path(), resumed_from.empty() ? std::nullopt : std::optional<int64_t>(pos.step));
  }

  const bool fail_here = o.fail_at_step >= 0 && rank == o.fail_rank && ddp::worker_env().restart_count == 0;
  double accuracy = -1;
  for (; pos.epoch < o.epochs; ++pos.epoch) {
    sampler.set_epoch(static_cast<size_t>(pos.epoch));
    sampler.reset();
    for (int64_t skip = 0; skip < pos.batch * o.accum_steps; ++skip) sampler.next(o.batch_size);
    const auto epoch_start = Clock::now();
    int64_t samples_seen = 0;  // this attempt, this epoch, this rank
    while (true) {
      std::vector<torch::Tensor> batches;
      for (int k = 0; k < o.accum_steps; ++k) {
        auto indices = sampler.next(o.batch_size);
        if (!indices) break;
        batches.push_back(torch::tensor(std::vector<int64_t>(indices->begin(), indices->end()), torch::kLong).to(device));
      }
      if (batches.empty()) break;
      if (fail_here && pos.step == o.fail_at_step) {
        std::cerr << "train: rank " << rank << " killing itself (SIGKILL) after " << pos.step
                  << " steps (--fail-at-step)" << std::endl;
        std::raise(SIGKILL);
      }
      set_learning_rate(optimizer, o, pos.step, steps_per_epoch * o.epochs);
      optimizer.zero_grad();
      double step_loss = 0;
      for (size_t k = 0; k < batches.size(); ++k) {
        auto run_micro_batch = [&] {
          auto loss = torch::nn::functional::cross_entropy(model(train_x.index_select(0, batches[k])),
                                                           train_y.index_select(0, batches[k])) /
                      double(batches.size());
          loss.backward();
          step_loss += loss.item<double>();
        };
        if (k + 1 < batches.size()) {
          auto guard = model.no_sync();
          run_micro_batch();
        } else {
          run_micro_batch();
        }
        samples_seen += batches[k].numel();
      }
      optimizer.step();
      ++pos.step;
      ++pos.batch;
      pos.loss_sum += step_loss;
      ++pos.loss_count;
      const double samples_per_s = double(samples_seen) * world / std::max(seconds_since(epoch_start), 1e-9);
      progress.step({int(pos.epoch), o.epochs, pos.batch, steps_per_epoch, pos.step, pos.loss_sum / pos.loss_count,
                     samples_per_s});
      if (o.checkpoint_interval > 0 && pos.step % o.checkpoint_interval == 0 && pos.batch < steps_per_epoch) {
        save(o, net, optimizer, pos);
      }
    }
    const double samples_per_s = double(samples_seen) * world / std::max(seconds_since(epoch_start), 1e-9);
    const double loss = mean_over_ranks(pos.loss_count ? pos.loss_sum / pos.loss_count : 0.0);
    accuracy = evaluate(net, data);
    progress.epoch_end(int(pos.epoch), o.epochs, loss, accuracy, samples_per_s);
    if (metrics) metrics->write({int(pos.epoch) + 1, pos.step, loss, accuracy, samples_per_s});
    Position next{pos.epoch + 1, 0, pos.step, 0.0, 0};
    save(o, net, optimizer, next);
    pos.batch = pos.loss_count = 0;
    pos.loss_sum = 0;
  }
  if (accuracy < 0) accuracy = evaluate(net, data);  // resumed after the last epoch
  const auto latest = latest_checkpoint(o.checkpoint_dir);
  say(format("train: done: val_accuracy %.2f%% after %d epochs (%lld steps) on %d worker(s) in %.1f s", accuracy * 100,
             o.epochs, (long long)pos.step, world, seconds_since(started)));
  say("train: checkpoint: " + (latest ? fs::absolute(*latest).string() : std::string("<none>")));
  say("train: metrics: " + fs::absolute(o.metrics_path()).string());
  ddp::destroy_process_group();
  return 0;
}

}  // namespace

int run_training(const TrainOptions& o) {
  set_threads(o.threads);
  return o.bench ? run_bench(o) : run_train(o);
}

}  // namespace ddp::train
