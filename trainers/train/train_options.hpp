// Every option of the `train` trainer with its default, parsed with CLI11 and validated.
// parse_train_options never exits the process: it returns the options, or an exit code after
// printing help (stdout) or one clear error line (stderr). Pure: no torch.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace ddp::train {

// The default --snapshot-every: docs/snapshots.md has the measurement behind it.
inline constexpr int64_t kDefaultSnapshotEvery = 10;

struct TrainOptions {
  // Model: an MLP in_dim -> hidden... -> classes (ReLU between layers).
  std::vector<int> hidden{64, 64};
  // Data: "synthetic" (inputs ~ N(0,1), labels from a fixed hidden teacher network) or a CSV path.
  std::string data = "synthetic";
  int in_dim = 8;                 // synthetic only (CSV: number of feature columns)
  int classes = 4;                // synthetic only (CSV: max label + 1)
  int64_t train_samples = 32768;  // synthetic only
  int64_t val_samples = 4096;     // synthetic only
  double val_fraction = 0.2;      // CSV only: the last fraction of rows is validation
  uint64_t data_seed = 1234;      // teacher and samples; independent of world size
  // Uneven shards: rank r trains on a share proportional to world + r of each epoch's samples
  // (no padding, nothing dropped), under ddp::join(); checkpoints at epoch ends only.
  bool uneven = false;
  // Optimisation.
  int epochs = 8;
  int batch_size = 64;  // per rank; global batch = batch_size * world * accum_steps
  double lr = 0.1;
  double momentum = 0.9;
  std::string schedule = "cosine";  // cosine (decay to 0 over the run) | constant
  int accum_steps = 1;              // micro-batches per optimizer step (no_sync on all but the last)
  uint64_t seed = 0;                // model initialisation (rank 0's weights are broadcast)
  // DDP.
  double bucket_mb = 25.0;
  std::string comm_hook = "allreduce";  // allreduce | fp16 | bf16 | powersgd
  int powersgd_rank = 2;                // powersgd: rank of each gradient matrix's approximation
  int64_t powersgd_start_iter = 100;    // powersgd: optimizer steps with plain all-reduce first
  // Checkpoints, resume and metrics.
  std::string checkpoint_dir = "checkpoints";
  int64_t checkpoint_interval = 100;  // optimizer steps between checkpoints; 0: at epoch ends only
  int keep_checkpoints = 2;
  bool resume = true;  // resume from the latest checkpoint in checkpoint_dir
  // Optimizer steps between in-memory snapshots (ddp::Snapshot, docs/snapshots.md); 0: off.
  // A restart resumes from the newest snapshot every rank holds before trying checkpoint_dir.
  int64_t snapshot_every = kDefaultSnapshotEvery;
  std::string metrics;  // default: <checkpoint_dir>/metrics.csv
  // Reporting.
  std::string progress = "auto";  // auto | bar | plain | none
  int log_every = 50;             // plain mode: a line every N steps
  int threads = 0;                // intra-op threads per worker; 0: OMP_NUM_THREADS or 1
  // Benchmark mode: fixed random batch, prints the python_ddp_bench.py line.
  bool bench = false;
  int steps = 100;
  int warmup = 10;
  // Fault injection for tests: fail_rank dies (SIGKILL) once it has done N optimizer steps, on
  // the first attempt only (TORCHELASTIC_RESTART_COUNT 0), so a restarted run can resume.
  int64_t fail_at_step = -1;
  int fail_rank = 0;
  // With fail_at_step: that rank empties its in-memory snapshot region first, as a replacement
  // node would have none (the restart heals it from another rank).
  bool fail_empty_snapshot = false;
  // Benchmarks: each rank appends start/init/step times to <step_times>/rank<R>.log (step_times.hpp).
  std::string step_times;

  std::string metrics_path() const { return metrics.empty() ? checkpoint_dir + "/metrics.csv" : metrics; }
};

struct ParsedOptions {
  TrainOptions options;
  int exit_code = -1;  // -1: go on and train; otherwise exit with it (0 after --help)
};

// Parses argv (argv[0] is the program name). In --bench mode, model/batch/optimizer options
// the user did not give default to the Python peer's (784-1024-1024-1024-10, batch 32, lr 0.01).
ParsedOptions parse_train_options(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

// Cross-option checks; returns "" when valid, else one line saying what is wrong and what to do.
std::string validate(const TrainOptions& options);

}  // namespace ddp::train
