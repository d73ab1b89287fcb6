// The training half of `train`: the epoch loop with ddp::DistributedSampler (Python's order) and set_epoch
// (or, with --uneven, shards of different sizes trained under ddp::join()), no_sync accumulation, periodic and
// epoch-end checkpoints, resume, rank-0 progress and metrics, the --step-times record, the test-only fault injection,
// and the --bench mode. The model and its collective helpers come from model.hpp, checkpoints from resume.hpp, data
// from data.hpp.
#include "trainer.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
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
#include "model.hpp"
#include "progress.hpp"
#include "resume.hpp"
#include "step_times.hpp"
#include "uneven_shards.hpp"

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

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

void set_threads(int requested) {
  int n = requested;
  if (n == 0) {
    const char* env = std::getenv("OMP_NUM_THREADS");
    n = env ? std::atoi(env) : 1;
  }
  torch::set_num_threads(std::max(1, n));
}

// ---- bench --------------------------------------------------------------------------------

int run_bench(const TrainOptions& o) {
  ddp::init_process_group();
  const int rank = ddp::get_rank(), world = ddp::get_world_size();
  const auto device = ddp::device();
  torch::manual_seed(0);
  auto net = make_mlp(o.in_dim, o.hidden, o.classes);
  net->to(device);
  auto model = wrap_ddp(net, o, make_powersgd_state(o));
  torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(o.lr).momentum(o.momentum));
  torch::manual_seed(1000 + rank);
  const auto x = torch::randn({int64_t(o.batch_size), int64_t(o.in_dim)}).to(device);
  const auto y = torch::randint(0, o.classes, {int64_t(o.batch_size)}, torch::kLong).to(device);
  ddp::Snapshot snapshot;  // --snapshot-every N (off unless given): the snapshots' cost inside the timed steps
  const bool snapshots = o.snapshot_every > 0 && snapshot.enabled();
  int saves = 0;
  auto step = [&](int64_t i) {
    optimizer.zero_grad();
    torch::nn::functional::cross_entropy(model(x), y).backward();
    optimizer.step();
    if (snapshots && i >= 0 && (i + 1) % o.snapshot_every == 0) {
      snapshot.save(i + 1, *net, &optimizer);
      ++saves;
    }
  };
  for (int i = 0; i < o.warmup; ++i) step(-1);  // -1: never a snapshot step
  ddp::barrier();
  const auto start = Clock::now();
  for (int i = 0; i < o.steps; ++i) step(i);
  if (saves > 0) snapshot.wait();  // the last write counts inside the timed steps
  ddp::barrier();
  const double elapsed = seconds_since(start);
  if (rank == 0) std::cout << bench_line(world, o.steps, o.batch_size, parameter_count(*net), elapsed) << std::endl;
  if (rank == 0 && saves > 0)
    // Blocked: in save() (on the CPU the whole write, in place; on a GPU staging the tensors and
    // waiting for the previous write) and in the all-reduces that waited for a write in flight.
    std::cout << format(
                     "train: bench snapshots: %d of %llu bytes every %lld steps, %.2f ms blocked each (save() %.2f "
                     "ms the last, waited %.2f ms for writes in all; %s %.2f ms the last), %.1f%% of the timed steps",
                     saves, (unsigned long long)snapshot.last_bytes(), (long long)o.snapshot_every,
                     snapshot.total_blocked_seconds() * 1e3 / saves, snapshot.last_serialize_seconds() * 1e3,
                     snapshot.total_wait_seconds() * 1e3,
                     snapshot.last_in_place()                           ? "of it the copy into the region"
                     : snapshot.last_background_serialize_seconds() > 0 ? "background serialise + checksum + copy"
                                                                        : "background checksum + copy",
                     snapshot.last_copy_seconds() * 1e3, 100 * snapshot.total_blocked_seconds() / elapsed)
              << std::endl;
  ddp::destroy_process_group();
  return 0;
}

// ---- training -----------------------------------------------------------------------------

// FNV-1a 64 over the parameters' bytes and their momentum buffers, in parameter order: equal
// digests mean bit-identical weights and optimizer state (the files' byte layout is not stable:
// the optimizer state's keys are addresses).
uint64_t weights_digest(torch::nn::Sequential& net, torch::optim::SGD& optimizer) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](const torch::Tensor& t) {
    const torch::Tensor c = t.detach().to(torch::kCPU).contiguous();
    const auto* p = static_cast<const unsigned char*>(c.data_ptr());
    for (size_t i = 0; i < c.nbytes(); ++i) h = (h ^ p[i]) * 1099511628211ull;
  };
  for (const auto& p : net->parameters()) {
    mix(p);
    const auto* state = ddp::optimizer_param_state(optimizer, p);
    if (!state) continue;
    const auto& buffer = static_cast<const torch::optim::SGDParamState&>(*state).momentum_buffer();
    if (buffer.defined()) mix(buffer);
  }
  return h;
}

ProgressMode progress_mode(const TrainOptions& o, int rank) {
  ProgressMode mode = ProgressMode::kNone;
  if (rank == 0) choose_progress_mode(o.progress, ::isatty(STDOUT_FILENO) != 0, mode);
  return mode;
}

// Model initialised from --seed (rank 0's weights are the ones DDP broadcasts), on the CPU.
torch::nn::Sequential seeded_mlp(const TrainOptions& o, const Data& data) {
  torch::manual_seed(o.seed);
  return make_mlp(data.in_dim, o.hidden, data.classes);
}

torch::nn::Sequential on_device(torch::nn::Sequential net, const torch::Device& device) {
  net->to(device);
  return net;
}

// Optimizer steps per epoch: each rank's share of the samples in micro-batches, accum_steps a step.
int64_t steps_per_epoch(const TrainOptions& o, int64_t train_samples, int world) {
  if (o.uneven) return uneven_steps_per_epoch(train_samples, world, o.batch_size, o.accum_steps);
  const int64_t local_samples = (train_samples + world - 1) / world;
  const int64_t micro_batches = (local_samples + o.batch_size - 1) / o.batch_size;
  return (micro_batches + o.accum_steps - 1) / o.accum_steps;
}

// Where a run starts: the newest state there is, the in-memory snapshot the ranks agree on
// (--snapshot-every; ranks without it healed from one with it) or the latest checkpoint, else
// nothing (--no-resume: nothing). Collective.
std::optional<ResumePoint> resume(const TrainOptions& o, torch::nn::Sequential& net, torch::optim::SGD& optimizer,
                                  ddp::PowerSgdState* powersgd, ddp::Snapshot& snapshot) {
  if (!o.resume) return std::nullopt;
  if (o.snapshot_every == 0) return resume_latest(o, net, optimizer, powersgd);
  return resume_newest(o, snapshot, net, optimizer, powersgd);
}

// One rank's training run inside an initialised process group. The constructor sets it up in
// order (model from --seed, optimizer, resume, DDP, sampler, start-up lines, rank 0's metrics
// file); run() trains the remaining epochs and prints the summary. Collective throughout.
class TrainingRun {
 public:
  TrainingRun(const TrainOptions& o, const Data& data, torch::nn::Sequential net, StepTimes& times);
  void run(Clock::time_point started);

 private:
  void announce();
  void run_epoch();
  void run_uneven_epoch();
  void start_epoch();
  std::vector<torch::Tensor> next_step_batches();
  void train_step(const std::vector<torch::Tensor>& batches);
  double micro_batch_loss(const torch::Tensor& indices, size_t micro_batches);
  void finish_step(double step_loss);
  void end_epoch();
  void maybe_inject_failure();
  void report_done(Clock::time_point started);
  double samples_per_s() const;
  void say(const std::string& line);

  const TrainOptions& o_;
  const Data& data_;
  StepTimes& times_;  // --step-times
  const int rank_, world_;
  const torch::Device device_;
  ProgressReporter progress_;
  const torch::Tensor train_x_, train_y_;
  torch::nn::Sequential net_;
  torch::optim::SGD optimizer_;
  const std::shared_ptr<ddp::PowerSgdState> powersgd_;  // --comm-hook powersgd; saved with checkpoints
  ddp::Snapshot snapshot_;                              // --snapshot-every: the launcher's region
  const std::optional<ResumePoint> resumed_;
  Position pos_;
  DdpMlp model_;
  ddp::DistributedSampler sampler_;  // Python's DistributedSampler order (seed 0, as its default)
  const int64_t steps_per_epoch_;
  std::optional<MetricsWriter> metrics_;
  Clock::time_point epoch_start_;
  int64_t samples_seen_ = 0;  // this attempt, this epoch, this rank
  double accuracy_ = -1;
  // --uneven: this epoch's permutation of the samples, this rank's shard of it, the next position.
  torch::Tensor permutation_;
  Shard shard_;
  int64_t shard_next_ = 0;
  int64_t shadowed_ = 0;  // forwards of other ranks this rank matched in join() (last epoch)
};

TrainingRun::TrainingRun(const TrainOptions& o, const Data& data, torch::nn::Sequential net, StepTimes& times)
    : o_(o),
      data_(data),
      times_(times),
      rank_(ddp::get_rank()),
      world_(ddp::get_world_size()),
      device_(ddp::device()),
      progress_(std::cout, progress_mode(o, rank_), o.log_every),
      train_x_(data.train_x.to(device_)),
      train_y_(data.train_y.to(device_)),
      net_(on_device(std::move(net), device_)),
      optimizer_(net_->parameters(), torch::optim::SGDOptions(o.lr).momentum(o.momentum)),
      powersgd_(make_powersgd_state(o)),
      resumed_(resume(o, net_, optimizer_, powersgd_.get(), snapshot_)),
      pos_(resumed_ ? resumed_->position : Position{}),
      model_(wrap_ddp(net_, o, powersgd_, resumed_.has_value())),  // every rank restored the same state
      sampler_(static_cast<size_t>(train_x_.size(0)), world_, rank_),
      steps_per_epoch_(steps_per_epoch(o, train_x_.size(0), world_)) {
  announce();
  if (rank_ == 0) metrics_.emplace(o.metrics_path(), resumed_ ? std::optional<int64_t>(pos_.step) : std::nullopt);
}

void TrainingRun::say(const std::string& line) {
  if (rank_ == 0) progress_.message(line);
}

void TrainingRun::announce() {
  say(
      format("train: %d worker(s), %lld train / %lld val samples (%s); model %s (%lld params); "
             "global batch %lld; %lld steps/epoch",
             world_, (long long)train_x_.size(0), (long long)data_.val_x.size(0), data_.description.c_str(),
             shape_of(data_.in_dim, o_.hidden, data_.classes).c_str(), (long long)parameter_count(*net_),
             (long long)o_.batch_size * world_ * o_.accum_steps, (long long)steps_per_epoch_));
  if (o_.uneven) {
    std::string sizes;
    for (int r = 0; r < world_; ++r) {
      sizes += (r ? "/" : "") + std::to_string(uneven_shard(train_x_.size(0), world_, r).size());
    }
    say("train: uneven shards (--uneven): " + sizes +
        " samples per rank, no padding, trained under join(); "
        "checkpoints at epoch ends only");
  }
  if (resumed_) {
    times_.mark("resumed", pos_.step);
    say("train: resumed from " + resumed_from_text(*resumed_, ddp::worker_env().restart_count));
  }
}

void TrainingRun::run(Clock::time_point started) {
  for (; pos_.epoch < o_.epochs; ++pos_.epoch) run_epoch();
  if (accuracy_ < 0) accuracy_ = evaluate(net_, data_);  // resumed after the last epoch
  report_done(started);
}

void TrainingRun::run_epoch() {
  start_epoch();
  if (o_.uneven) {
    run_uneven_epoch();
  } else {
    for (auto batches = next_step_batches(); !batches.empty(); batches = next_step_batches()) train_step(batches);
  }
  end_epoch();
}

// This rank's shard under join(): ranks whose shard ends first shadow the others' steps. The
// step counter then moves on by the longest shard's steps on every rank (same schedule).
void TrainingRun::run_uneven_epoch() {
  const int64_t epoch_first_step = pos_.step - pos_.batch;
  const ddp::JoinResult joined = model_.join([&] {
    for (auto batches = next_step_batches(); !batches.empty(); batches = next_step_batches()) train_step(batches);
  });
  shadowed_ = joined.shadowed_steps;
  pos_.step = epoch_first_step + steps_per_epoch_;
}

// Reshuffles for this epoch and skips the micro-batches a resumed position already trained on.
void TrainingRun::start_epoch() {
  if (o_.uneven) {
    torch::manual_seed(o_.data_seed + static_cast<uint64_t>(pos_.epoch));  // the same permutation on every rank
    permutation_ = torch::randperm(train_x_.size(0), torch::kLong);
    shard_ = uneven_shard(train_x_.size(0), world_, rank_);
    shard_next_ = std::min(shard_.end, shard_.begin + pos_.batch * o_.accum_steps * o_.batch_size);
  } else {
    sampler_.set_epoch(static_cast<size_t>(pos_.epoch));
    sampler_.reset();
    for (int64_t skip = 0; skip < pos_.batch * o_.accum_steps; ++skip) sampler_.next(o_.batch_size);
  }
  epoch_start_ = Clock::now();
  samples_seen_ = 0;
}

// Up to accum_steps micro-batches of sample indices (on the device); empty at the epoch's end.
std::vector<torch::Tensor> TrainingRun::next_step_batches() {
  std::vector<torch::Tensor> batches;
  for (int k = 0; k < o_.accum_steps; ++k) {
    if (o_.uneven) {
      if (shard_next_ >= shard_.end) break;
      const int64_t take = std::min<int64_t>(o_.batch_size, shard_.end - shard_next_);
      batches.push_back(permutation_.slice(0, shard_next_, shard_next_ + take).to(device_));
      shard_next_ += take;
      continue;
    }
    auto indices = sampler_.next(o_.batch_size);
    if (!indices) break;
    batches.push_back(torch::tensor(std::vector<int64_t>(indices->begin(), indices->end()), torch::kLong).to(device_));
  }
  return batches;
}

// One optimizer step: gradients accumulate under no_sync on all micro-batches but the last,
// whose backward all-reduces them.
void TrainingRun::train_step(const std::vector<torch::Tensor>& batches) {
  maybe_inject_failure();
  set_learning_rate(optimizer_, o_, pos_.step, steps_per_epoch_ * o_.epochs);
  optimizer_.zero_grad();
  double step_loss = 0;
  for (size_t k = 0; k < batches.size(); ++k) {
    if (k + 1 < batches.size()) {
      auto guard = model_.no_sync();
      step_loss += micro_batch_loss(batches[k], batches.size());
    } else {
      step_loss += micro_batch_loss(batches[k], batches.size());
    }
    samples_seen_ += batches[k].numel();
  }
  optimizer_.step();
  finish_step(step_loss);
}

// Forward and backward of one micro-batch, its loss scaled by 1/micro_batches; returns that loss.
double TrainingRun::micro_batch_loss(const torch::Tensor& indices, size_t micro_batches) {
  auto loss = torch::nn::functional::cross_entropy(model_(train_x_.index_select(0, indices)),
                                                   train_y_.index_select(0, indices)) /
              double(micro_batches);
  loss.backward();
  return loss.item<double>();
}

// Counts the step, reports progress and writes the periodic checkpoint (not at an epoch's end,
// which end_epoch checkpoints).
void TrainingRun::finish_step(double step_loss) {
  ++pos_.step;
  ++pos_.batch;
  times_.mark("step", pos_.step);
  pos_.loss_sum += step_loss;
  ++pos_.loss_count;
  progress_.step({int(pos_.epoch), o_.epochs, pos_.batch, steps_per_epoch_, pos_.step, pos_.loss_sum / pos_.loss_count,
                  samples_per_s()});
  if (o_.checkpoint_interval > 0 && pos_.step % o_.checkpoint_interval == 0 && pos_.batch < steps_per_epoch_ &&
      !o_.uneven) {  // inside join() no collective but the model's may run
    save_position(o_, net_, optimizer_, pos_, powersgd_.get());
  }
  if (o_.snapshot_every > 0 && pos_.step % o_.snapshot_every == 0 && !o_.uneven)  // --uneven: positions move in join
    save_snapshot(snapshot_, net_, optimizer_, pos_, powersgd_.get());
}

// Validation, the epoch line, the metrics row and the checkpoint of the next epoch's start.
void TrainingRun::end_epoch() {
  // --uneven: every rank's own samples over the epoch (the ranks trained different amounts).
  const double samples_per_s =
      o_.uneven ? mean_over_ranks(double(samples_seen_)) * world_ / std::max(seconds_since(epoch_start_), 1e-9)
                : this->samples_per_s();
  const double loss = mean_over_ranks(pos_.loss_count ? pos_.loss_sum / pos_.loss_count : 0.0);
  accuracy_ = evaluate(net_, data_);
  progress_.epoch_end(int(pos_.epoch), o_.epochs, loss, accuracy_, samples_per_s);
  if (metrics_) metrics_->write({int(pos_.epoch) + 1, pos_.step, loss, accuracy_, samples_per_s});
  save_position(o_, net_, optimizer_, Position{pos_.epoch + 1, 0, pos_.step, 0.0, 0}, powersgd_.get());
  pos_.batch = pos_.loss_count = 0;
  pos_.loss_sum = 0;
}

// Test-only fault injection (--fail-at-step, --fail-rank): that rank SIGKILLs itself once it
// has done that many steps, on the first attempt only, so the restarted group can resume;
// --fail-empty-snapshot: it empties its snapshot region first (a replacement node's state).
void TrainingRun::maybe_inject_failure() {
  if (o_.fail_at_step < 0 || pos_.step != o_.fail_at_step || rank_ != o_.fail_rank) return;
  if (ddp::worker_env().restart_count != 0) return;
  const char* region = std::getenv("DDP_LAUNCH_SNAPSHOT_FILE");
  // The background write in flight lands first: one that ran on after the truncate would
  // leave the region holding a snapshot again (a replacement node's region is empty).
  if (o_.fail_empty_snapshot) snapshot_.wait();
  if (o_.fail_empty_snapshot && region && ::truncate(region, 0) == 0)
    std::cerr << "train: rank " << rank_ << " emptied its in-memory snapshot region (--fail-empty-snapshot)"
              << std::endl;
  std::cerr << "train: rank " << rank_ << " killing itself (SIGKILL) after " << pos_.step << " steps (--fail-at-step)"
            << std::endl;
  std::raise(SIGKILL);
}

void TrainingRun::report_done(Clock::time_point started) {
  const auto latest = latest_checkpoint(o_.checkpoint_dir);
  say(format("train: done: val_accuracy %.2f%% after %d epochs (%lld steps) on %d worker(s) in %.1f s", accuracy_ * 100,
             o_.epochs, (long long)pos_.step, world_, seconds_since(started)));
  if (o_.uneven)
    say(format("train: uneven: rank 0 shadowed %lld forwards of the others in join() in the last epoch",
               (long long)shadowed_));
  say(format("train: final weights digest %016llx", (unsigned long long)weights_digest(net_, optimizer_)));
  say("train: checkpoint: " + (latest ? fs::absolute(*latest).string() : std::string("<none>")));
  say("train: metrics: " + fs::absolute(o_.metrics_path()).string());
}

// Global samples/s of this epoch so far (this attempt).
double TrainingRun::samples_per_s() const {
  return double(samples_seen_) * world_ / std::max(seconds_since(epoch_start_), 1e-9);
}

int run_train(const TrainOptions& o) {
  // The same for every rank and attempt: under ddp-launch's warm restarts a standby does it
  // before a failure happens and waits at the standby point (bad data fails before rendezvous).
  const Data data = load_data(o);
  torch::nn::Sequential net = seeded_mlp(o, data);
  ddp::standby_point();
  const auto started = Clock::now();
  const ddp::WorkerEnv& env = ddp::worker_env();
  StepTimes times = o.step_times.empty() ? StepTimes() : StepTimes(o.step_times, env.rank, env.restart_count);
  times.mark("start", ::getpid());
  times.mark("init_start");
  ddp::init_process_group();
  times.mark("init_end");
  if (ddp::get_rank() == 0) fs::create_directories(o.checkpoint_dir);
  TrainingRun run(o, data, std::move(net), times);
  run.run(started);
  ddp::destroy_process_group();
  return 0;
}

}  // namespace

int run_training(const TrainOptions& o) {
  set_threads(o.threads);
  return o.bench ? run_bench(o) : run_train(o);
}

}  // namespace ddp::train
