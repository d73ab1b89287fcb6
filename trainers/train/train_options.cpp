#include "train_options.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace ddp::train {

std::string validate(const TrainOptions& o) {
  if (o.hidden.empty()) return "--hidden needs at least one layer size, e.g. --hidden 64,64";
  for (int h : o.hidden) {
    if (h <= 0) return fmt::format("--hidden sizes must be positive, got {}; e.g. --hidden 64,64", h);
  }
  if (o.in_dim <= 0) return fmt::format("--in-dim must be positive, got {}", o.in_dim);
  if (o.classes < 2) return fmt::format("--classes must be at least 2, got {}", o.classes);
  if (o.train_samples <= 0 || o.val_samples <= 0) {
    return fmt::format("--train-samples and --val-samples must be positive, got {} and {}", o.train_samples,
                       o.val_samples);
  }
  if (!(o.val_fraction > 0 && o.val_fraction < 1)) {
    return fmt::format("--val-fraction must be between 0 and 1 (exclusive), got {}", o.val_fraction);
  }
  if (o.epochs <= 0) return fmt::format("--epochs must be at least 1, got {}", o.epochs);
  if (o.batch_size <= 0) return fmt::format("--batch-size must be at least 1, got {}", o.batch_size);
  if (!(o.lr > 0)) return fmt::format("--lr must be positive, got {}", o.lr);
  if (!(o.momentum >= 0 && o.momentum < 1)) return fmt::format("--momentum must be in [0, 1), got {}", o.momentum);
  if (o.schedule != "cosine" && o.schedule != "constant") {
    return fmt::format("--schedule must be cosine or constant, got '{}'", o.schedule);
  }
  if (o.accum_steps <= 0) return fmt::format("--accum-steps must be at least 1, got {}", o.accum_steps);
  if (!(o.bucket_mb > 0)) return fmt::format("--bucket-mb must be positive, got {}", o.bucket_mb);
  if (o.comm_hook != "allreduce" && o.comm_hook != "fp16" && o.comm_hook != "bf16" && o.comm_hook != "powersgd") {
    return fmt::format("--comm-hook must be allreduce, fp16, bf16 or powersgd, got '{}'", o.comm_hook);
  }
  if (o.powersgd_rank < 1) return fmt::format("--powersgd-rank must be at least 1, got {}", o.powersgd_rank);
  if (o.powersgd_start_iter < 0) {
    return fmt::format("--powersgd-start-iter must be >= 0, got {}", o.powersgd_start_iter);
  }
  if (o.checkpoint_dir.empty()) return "--checkpoint-dir must not be empty";
  if (o.checkpoint_interval < 0) {
    return fmt::format("--checkpoint-interval must be >= 0 (0: at epoch ends only), got {}", o.checkpoint_interval);
  }
  if (o.snapshot_every < 0) {
    return fmt::format("--snapshot-every must be >= 0 (0: no in-memory snapshots), got {}", o.snapshot_every);
  }
  if (o.keep_checkpoints <= 0) return fmt::format("--keep-checkpoints must be at least 1, got {}", o.keep_checkpoints);
  if (o.progress != "auto" && o.progress != "bar" && o.progress != "plain" && o.progress != "none") {
    return fmt::format("--progress must be auto, bar, plain or none, got '{}'", o.progress);
  }
  if (o.log_every <= 0) return fmt::format("--log-every must be at least 1, got {}", o.log_every);
  if (o.threads < 0) return fmt::format("--threads must be >= 0 (0: OMP_NUM_THREADS or 1), got {}", o.threads);
  if (o.steps <= 0 || o.warmup < 0) {
    return fmt::format("--steps must be >= 1 and --warmup >= 0, got {} and {}", o.steps, o.warmup);
  }
  if (o.fail_rank < 0) return fmt::format("--fail-rank must be >= 0, got {}", o.fail_rank);
  if (o.fail_empty_snapshot && o.fail_at_step < 0) return "--fail-empty-snapshot needs --fail-at-step";
  if (o.uneven && o.bench) return "--uneven trains on uneven shards of the data; it does not apply to --bench";
  return "";
}

namespace {

// The options --bench gives the Python peer's defaults to when the user did not set them.
struct BenchDefaulted {
  CLI::Option* hidden = nullptr;
  CLI::Option* in_dim = nullptr;
  CLI::Option* classes = nullptr;
  CLI::Option* batch = nullptr;
  CLI::Option* lr = nullptr;
  CLI::Option* snapshot_every = nullptr;
};

// The option tables, by help group, in help order.
void add_model_and_data_options(CLI::App& app, TrainOptions& o, BenchDefaulted& given) {
  given.hidden = app.add_option("--hidden", o.hidden, "MLP hidden layer sizes, comma separated")
                     ->delimiter(',')
                     ->capture_default_str()
                     ->group("Model");
  app.add_option("--data", o.data, "'synthetic' or a CSV file of f1,...,fn,label rows")
      ->capture_default_str()
      ->group("Data");
  given.in_dim = app.add_option("--in-dim", o.in_dim, "synthetic input size")->capture_default_str()->group("Data");
  given.classes = app.add_option("--classes", o.classes, "synthetic classes")->capture_default_str()->group("Data");
  app.add_option("--train-samples", o.train_samples, "synthetic training samples")
      ->capture_default_str()
      ->group("Data");
  app.add_option("--val-samples", o.val_samples, "synthetic validation samples")->capture_default_str()->group("Data");
  app.add_option("--val-fraction", o.val_fraction, "CSV: fraction of rows (the last ones) held out")
      ->capture_default_str()
      ->group("Data");
  app.add_option("--data-seed", o.data_seed, "seed of the synthetic teacher and samples")
      ->capture_default_str()
      ->group("Data");
  app.add_flag("--uneven", o.uneven,
               "uneven shards: rank r gets a (world+r)/sum share of each epoch, no padding; trained under join()")
      ->group("Data");
}

void add_optimisation_options(CLI::App& app, TrainOptions& o, BenchDefaulted& given) {
  app.add_option("--epochs", o.epochs, "training epochs")->capture_default_str()->group("Optimisation");
  given.batch = app.add_option("--batch-size,--batch", o.batch_size, "samples per rank per micro-batch")
                    ->capture_default_str()
                    ->group("Optimisation");
  given.lr = app.add_option("--lr", o.lr, "SGD learning rate")->capture_default_str()->group("Optimisation");
  app.add_option("--momentum", o.momentum, "SGD momentum")->capture_default_str()->group("Optimisation");
  app.add_option("--schedule", o.schedule, "learning-rate schedule: cosine (to 0 at the last step) or constant")
      ->capture_default_str()
      ->group("Optimisation");
  app.add_option("--accum-steps", o.accum_steps, "gradient accumulation: micro-batches per step (no_sync)")
      ->capture_default_str()
      ->group("Optimisation");
  app.add_option("--seed", o.seed, "model initialisation seed")->capture_default_str()->group("Optimisation");

  app.add_option("--bucket-mb", o.bucket_mb, "DDP gradient bucket cap in MiB")->capture_default_str()->group("DDP");
  app.add_option("--comm-hook", o.comm_hook, "gradient reduction: allreduce, fp16, bf16 or powersgd")
      ->capture_default_str()
      ->group("DDP");
  app.add_option("--powersgd-rank", o.powersgd_rank, "powersgd: rank of each gradient matrix's approximation")
      ->capture_default_str()
      ->group("DDP");
  app.add_option("--powersgd-start-iter", o.powersgd_start_iter, "powersgd: steps with plain all-reduce first")
      ->capture_default_str()
      ->group("DDP");
}

void add_run_options(CLI::App& app, TrainOptions& o, BenchDefaulted& given) {
  app.add_option("--checkpoint-dir", o.checkpoint_dir, "where checkpoints (and by default metrics.csv) go")
      ->capture_default_str()
      ->group("Checkpoints");
  app.add_option("--checkpoint-interval", o.checkpoint_interval, "steps between checkpoints; 0: epoch ends only")
      ->capture_default_str()
      ->group("Checkpoints");
  app.add_option("--keep-checkpoints", o.keep_checkpoints, "checkpoints kept (oldest removed)")
      ->capture_default_str()
      ->group("Checkpoints");
  given.snapshot_every =
      app.add_option("--snapshot-every", o.snapshot_every,
                     "steps between in-memory snapshots (under ddp-launch; a restart resumes from the newest "
                     "before trying checkpoints); 0: off; --bench: off unless given")
          ->capture_default_str()
          ->group("Checkpoints");
  app.add_flag("!--no-resume", o.resume, "start fresh even if checkpoint-dir has a checkpoint")->group("Checkpoints");
  app.add_option("--metrics", o.metrics, "metrics CSV path (default <checkpoint-dir>/metrics.csv)")
      ->group("Checkpoints");

  app.add_option("--progress", o.progress, "auto (bar on a terminal), bar, plain or none")
      ->capture_default_str()
      ->group("Output");
  app.add_option("--log-every", o.log_every, "plain progress: a line every N steps")
      ->capture_default_str()
      ->group("Output");
  app.add_option("--threads", o.threads, "intra-op threads per worker (0: OMP_NUM_THREADS or 1)")
      ->capture_default_str()
      ->group("Output");

  app.add_flag("--bench", o.bench, "benchmark: train on one fixed batch, print the python_ddp_bench.py line")
      ->group("Benchmark");
  app.add_option("--steps", o.steps, "benchmark steps timed")->capture_default_str()->group("Benchmark");
  app.add_option("--warmup", o.warmup, "benchmark warm-up steps")->capture_default_str()->group("Benchmark");

  app.add_option("--fail-at-step", o.fail_at_step,
                 "testing: --fail-rank kills itself (SIGKILL) after this many optimizer steps "
                 "(first attempt only)")
      ->group("Testing");
  app.add_option("--fail-rank", o.fail_rank, "testing: the rank that --fail-at-step kills")
      ->capture_default_str()
      ->group("Testing");
  app.add_flag("--fail-empty-snapshot", o.fail_empty_snapshot,
               "testing: the rank --fail-at-step kills first empties its in-memory snapshot region (as a "
               "replacement node has none)")
      ->group("Testing");
  app.add_option("--step-times", o.step_times,
                 "benchmarks: each rank appends '<attempt> <event> <value> <unix time>' lines (start, init_start, "
                 "init_end, resumed, step) to DIR/rank<R>.log")
      ->check(CLI::ExistingDirectory)
      ->group("Testing");
}

// The Python peer's model and optimizer (784-1024-1024-1024-10, batch 32, lr 0.01), unless given.
void apply_bench_defaults(TrainOptions& o, const BenchDefaulted& given) {
  if (given.hidden->count() == 0) o.hidden = {1024, 1024, 1024};
  if (given.in_dim->count() == 0) o.in_dim = 784;
  if (given.classes->count() == 0) o.classes = 10;
  if (given.batch->count() == 0) o.batch_size = 32;
  if (given.lr->count() == 0) o.lr = 0.01;
  if (given.snapshot_every->count() == 0) o.snapshot_every = 0;  // the peers' numbers are without snapshots
}

}  // namespace

ParsedOptions parse_train_options(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  ParsedOptions parsed;
  TrainOptions& o = parsed.options;
  CLI::App app{
      "train: distributed MLP classifier on libddp (synthetic teacher task or a CSV), with checkpoints, "
      "elastic resume, metrics and a benchmark mode.\nRun under a launcher: ddp-launch --nproc_per_node=4 train"};
  app.get_formatter()->column_width(34);
  BenchDefaulted given;
  add_model_and_data_options(app, o, given);
  add_optimisation_options(app, o, given);
  add_run_options(app, o, given);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    parsed.exit_code = 0;
    return parsed;
  } catch (const CLI::ParseError& e) {
    err << "train: error: " << e.what() << "; run 'train --help' for the options\n";
    parsed.exit_code = 2;
    return parsed;
  }

  if (o.bench) apply_bench_defaults(o, given);
  if (const std::string problem = validate(o); !problem.empty()) {
    err << "train: error: " << problem << '\n';
    parsed.exit_code = 2;
  }
  return parsed;
}

}  // namespace ddp::train
