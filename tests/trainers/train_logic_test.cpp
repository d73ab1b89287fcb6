// Unit tests for the torch-free logic of `train`: option parsing and validation, CSV
// parsing errors, progress formatting, metrics resume, checkpoint naming/discovery, the
// benchmark line and the --step-times record. No processes, no torch.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_line.hpp"
#include "checkpoint_files.hpp"
#include "csv_table.hpp"
#include "metrics_csv.hpp"
#include "progress.hpp"
#include "step_times.hpp"
#include "train_options.hpp"
#include "uneven_shards.hpp"
#include "tests/support/files.hpp"

using namespace ddp::train;
namespace fs = std::filesystem;

namespace {

struct Parse {
  ParsedOptions parsed;
  std::string out, err;
};

Parse parse(std::vector<std::string> args) {
  args.insert(args.begin(), "train");
  std::vector<const char*> argv;
  for (auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  Parse p{parse_train_options(static_cast<int>(argv.size()), argv.data(), out, err), "", ""};
  p.out = out.str();
  p.err = err.str();
  return p;
}

}  // namespace

TEST_CASE("options: defaults parse and validate") {
  auto p = parse({});
  REQUIRE(p.parsed.exit_code == -1);
  CHECK(p.err.empty());
  CHECK(p.parsed.options.hidden == std::vector<int>{64, 64});
  CHECK(p.parsed.options.metrics_path() == "checkpoints/metrics.csv");
  CHECK(validate(TrainOptions{}).empty());
}

TEST_CASE("options: values, lists and the no-resume flag") {
  auto p = parse({"--hidden", "32,16,8", "--epochs", "3", "--batch", "10", "--lr", "0.1", "--no-resume",
                  "--checkpoint-dir", "/tmp/x", "--comm-hook", "bf16", "--accum-steps", "2"});
  REQUIRE(p.parsed.exit_code == -1);
  const auto& o = p.parsed.options;
  CHECK(o.hidden == std::vector<int>{32, 16, 8});
  CHECK(o.epochs == 3);
  CHECK(o.batch_size == 10);
  CHECK(o.lr == Approx(0.1));
  CHECK_FALSE(o.resume);
  CHECK(o.comm_hook == "bf16");
  CHECK(o.accum_steps == 2);
  CHECK(o.schedule == "cosine");
  CHECK(o.metrics_path() == "/tmp/x/metrics.csv");
}

TEST_CASE("options: powersgd hook with its rank and start iteration") {
  auto p = parse({"--comm-hook", "powersgd", "--powersgd-rank", "4", "--powersgd-start-iter", "0"});
  REQUIRE(p.parsed.exit_code == -1);
  CHECK(p.parsed.options.comm_hook == "powersgd");
  CHECK(p.parsed.options.powersgd_rank == 4);
  CHECK(p.parsed.options.powersgd_start_iter == 0);
  CHECK(parse({}).parsed.options.powersgd_rank == 2);
}

TEST_CASE("options: bench mode takes the Python peer's model unless overridden") {
  auto p = parse({"--bench"});
  REQUIRE(p.parsed.exit_code == -1);
  CHECK(p.parsed.options.hidden == std::vector<int>{1024, 1024, 1024});
  CHECK(p.parsed.options.in_dim == 784);
  CHECK(p.parsed.options.classes == 10);
  CHECK(p.parsed.options.batch_size == 32);
  CHECK(p.parsed.options.lr == Approx(0.01));
  auto tiny = parse({"--bench", "--in-dim", "10", "--hidden", "10", "--classes", "5", "--batch", "20"});
  CHECK(tiny.parsed.options.hidden == std::vector<int>{10});
  CHECK(tiny.parsed.options.in_dim == 10);
  CHECK(tiny.parsed.options.batch_size == 20);
}

TEST_CASE("options: bad values give one clear error line and exit code 2") {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--epochs", "0"}, "--epochs must be at least 1"},
      {{"--batch-size", "-3"}, "--batch-size must be at least 1"},
      {{"--lr", "0"}, "--lr must be positive"},
      {{"--momentum", "1.5"}, "--momentum must be in [0, 1)"},
      {{"--comm-hook", "int8"}, "--comm-hook must be allreduce, fp16, bf16 or powersgd, got 'int8'"},
      {{"--powersgd-rank", "0"}, "--powersgd-rank must be at least 1"},
      {{"--powersgd-start-iter", "-1"}, "--powersgd-start-iter must be >= 0"},
      {{"--hidden", "64,0"}, "--hidden sizes must be positive"},
      {{"--progress", "fancy"}, "--progress must be auto, bar, plain or none"},
      {{"--classes", "1"}, "--classes must be at least 2"},
      {{"--schedule", "step"}, "--schedule must be cosine or constant, got 'step'"},
      {{"--epochs", "many"}, "--epochs"},
      {{"--no-such-option"}, "--no-such-option"},
  };
  for (const auto& [args, expected] : cases) {
    INFO(args.front());
    auto p = parse(args);
    CHECK(p.parsed.exit_code == 2);
    CHECK(p.err.rfind("train: error: ", 0) == 0);
    CHECK(p.err.find(expected) != std::string::npos);
    CHECK(std::count(p.err.begin(), p.err.end(), '\n') == 1);
  }
}

TEST_CASE("options: --help prints the options and exits 0") {
  auto p = parse({"--help"});
  CHECK(p.parsed.exit_code == 0);
  CHECK(p.out.find("--checkpoint-interval") != std::string::npos);
  CHECK(p.out.find("--bench") != std::string::npos);
  CHECK(p.err.empty());
}

TEST_CASE("csv: header, comments, blank lines and labels") {
  std::istringstream in("x1,x2,label\n# a comment\n0.5,1,0\n\n-2, 3e-1 ,2\n1,1,1\n");
  auto t = parse_csv(in, "d.csv");
  CHECK(t.rows() == 3);
  CHECK(t.num_features == 2);
  CHECK(t.num_classes == 3);
  CHECK(t.features == std::vector<float>{0.5f, 1.f, -2.f, 0.3f, 1.f, 1.f});
  CHECK(t.labels == std::vector<int64_t>{0, 2, 1});
}

TEST_CASE("csv: malformed input names the file, line and what to do") {
  auto error_of = [](const std::string& text) -> std::string {
    std::istringstream in(text);
    try {
      parse_csv(in, "d.csv");
    } catch (const CsvError& e) {
      return e.what();
    }
    return "no error";
  };
  CHECK_THAT(error_of("1,2,0\n1,2\n"), Catch::Contains("d.csv:2: expected 3 columns") && Catch::Contains("got 2"));
  CHECK_THAT(error_of("1,2,0\n1,abc,1\n"), Catch::Contains("d.csv:2: column 2 is 'abc'"));
  CHECK_THAT(error_of("1,2,0\n1,2,1.5\n"), Catch::Contains("d.csv:2: label (last column) is '1.5'"));
  CHECK_THAT(error_of("1,2,-1\n"), Catch::Contains("not a non-negative integer"));
  CHECK_THAT(error_of("a,b\n"), Catch::Contains("d.csv: no data rows"));
  CHECK_THAT(error_of(""), Catch::Contains("no data rows"));
  CHECK_THAT(error_of("1,0\n2,0\n"), Catch::Contains("at least 2 classes"));
  CHECK_THAT(error_of("1,nan,0\n"), Catch::Contains("not a finite number"));
}

TEST_CASE("csv: a missing file or a directory is a clear error") {
  CHECK_THROWS_WITH(
      read_csv("/nonexistent/data.csv"),
      Catch::Contains("cannot read data file '/nonexistent/data.csv'") && Catch::Contains("No such file or directory"));
  CHECK_THROWS_WITH(read_csv("/tmp"), Catch::Contains("is a directory"));
}

TEST_CASE("progress: mode selection and formats") {
  ProgressMode mode{};
  REQUIRE(choose_progress_mode("auto", true, mode));
  CHECK(mode == ProgressMode::kBar);
  REQUIRE(choose_progress_mode("auto", false, mode));
  CHECK(mode == ProgressMode::kPlain);
  CHECK_FALSE(choose_progress_mode("loud", false, mode));

  ProgressUpdate u;
  u.epoch = 1;
  u.epochs = 5;
  u.step_in_epoch = 50;
  u.steps_per_epoch = 100;
  u.global_step = 150;
  u.loss = 0.25;
  u.samples_per_s = 1234.4;
  CHECK(format_bar(u, 10) == "epoch 2/5 [#####-----]  50% 50/100  1234 samples/s  loss 0.2500");
  CHECK(format_plain(u) == "epoch 2/5 step 50/100 (global 150) loss 0.2500 samples/s 1234");
}

TEST_CASE("progress: plain mode prints every log_every steps, bar mode redraws in place") {
  ProgressUpdate u;
  u.epochs = 1;
  u.steps_per_epoch = 6;
  std::ostringstream plain_out;
  ProgressReporter plain(plain_out, ProgressMode::kPlain, 3);
  for (int s = 1; s <= 6; ++s) {
    u.step_in_epoch = s;
    plain.step(u);
  }
  plain.epoch_end(0, 1, 0.5, 0.875, 100);
  const std::string text = plain_out.str();
  CHECK(std::count(text.begin(), text.end(), '\n') == 3);
  CHECK(text.find("step 3/6") != std::string::npos);
  CHECK(text.find("epoch 1/1 done: loss 0.5000 val_accuracy 87.50%") != std::string::npos);
  CHECK(text.find('\r') == std::string::npos);

  std::ostringstream bar_out;
  ProgressReporter bar(bar_out, ProgressMode::kBar, 3);
  u.step_in_epoch = 1;
  bar.step(u);
  u.step_in_epoch = 2;
  bar.step(u);
  bar.message("done");
  const std::string drawn = bar_out.str();
  CHECK(std::count(drawn.begin(), drawn.end(), '\r') == 2);
  CHECK(drawn.size() > 5);
  CHECK(drawn.substr(drawn.size() - 6) == "\ndone\n");
}

TEST_CASE("metrics: header and rows, resume drops rows past the checkpoint step") {
  const ddp::test::TempDir scratch;
  const fs::path dir = scratch.path();
  const auto path = (dir / "sub" / "metrics.csv").string();
  {
    MetricsWriter w(path, std::nullopt);
    w.write({1, 100, 0.5, 0.8, 1000});
    w.write({2, 200, 0.25, 0.9, 1100});
    w.write({3, 300, 0.125, 0.95, 1200});
  }
  CHECK(ddp::test::read_file(path) ==
        "epoch,step,loss,accuracy,samples_per_s\n1,100,0.500000,0.800000,1000.0\n"
        "2,200,0.250000,0.900000,1100.0\n3,300,0.125000,0.950000,1200.0\n");
  {
    MetricsWriter w(path, int64_t{200});
    w.write({3, 300, 0.1, 0.96, 900});
  }
  CHECK(ddp::test::read_file(path) ==
        "epoch,step,loss,accuracy,samples_per_s\n1,100,0.500000,0.800000,1000.0\n"
        "2,200,0.250000,0.900000,1100.0\n3,300,0.100000,0.960000,900.0\n");
  { MetricsWriter w(path, std::nullopt); }
  CHECK(ddp::test::read_file(path) == "epoch,step,loss,accuracy,samples_per_s\n");
  CHECK_THROWS_WITH(MetricsWriter("/proc/nope/metrics.csv", std::nullopt), Catch::Contains("cannot write metrics"));
}

TEST_CASE("checkpoint files: names, latest, stale removal, temp files ignored") {
  CHECK(checkpoint_name(42) == "ckpt_000000042.pt");
  CHECK(checkpoint_step("ckpt_000000042.pt") == 42);
  CHECK_FALSE(checkpoint_step("ckpt_000000042.pt.tmp"));
  CHECK_FALSE(checkpoint_step("ckpt_.pt"));
  CHECK_FALSE(checkpoint_step("ckpt_12a.pt"));
  CHECK_FALSE(checkpoint_step("metrics.csv"));

  const ddp::test::TempDir scratch;
  const fs::path dir = scratch.path();
  CHECK_FALSE(latest_checkpoint(dir.string()));
  CHECK_FALSE(latest_checkpoint((dir / "missing").string()));
  for (int step : {5, 100, 20}) std::ofstream(dir / checkpoint_name(step)) << "x";
  std::ofstream(dir / "ckpt_000000999.pt.tmp.1234") << "partial";
  REQUIRE(latest_checkpoint(dir.string()) == (dir / checkpoint_name(100)).string());
  auto removed = remove_stale_checkpoints(dir.string(), 2);
  CHECK(removed == std::vector<std::string>{(dir / checkpoint_name(5)).string()});
  CHECK(list_checkpoints(dir.string()) ==
        std::vector<std::string>{(dir / checkpoint_name(20)).string(), (dir / checkpoint_name(100)).string()});
}

TEST_CASE("bench line: same format as python_ddp_bench.py") {
  CHECK(bench_line(2, 100, 32, 2913290, 3.2) ==
        "peer=cpp-ddp world=2 steps=100 batch=32 params=2913290 samples_per_s=2000.0 step_ms=32.00");
}

TEST_CASE("uneven shards: consecutive, cover every sample once, sizes proportional to world + rank") {
  for (int world : {1, 2, 3, 4, 7}) {
    for (int64_t samples : {0, 1, 5, 99, 8192}) {
      INFO("world " << world << " samples " << samples);
      int64_t next = 0;
      for (int r = 0; r < world; ++r) {
        const Shard s = uneven_shard(samples, world, r);
        CHECK(s.begin == next);
        CHECK(s.size() >= 0);
        // Within one sample of the exact share samples * (world + r) / sum of (world + q).
        const double total = world * world + world * (world - 1) / 2.0;
        CHECK(std::abs(double(s.size()) - double(samples) * (world + r) / total) < 1.0);
        next = s.end;
      }
      CHECK(next == samples);
    }
  }
  CHECK(uneven_shard(1000, 2, 0).size() == 400);  // 2/5 and 3/5
  CHECK(uneven_shard(1000, 2, 1).size() == 600);
  CHECK(uneven_steps_per_epoch(1000, 2, 64, 1) == 10);  // ceil(600 / 64)
  CHECK(uneven_steps_per_epoch(1000, 2, 64, 4) == 3);
}

TEST_CASE("options: --uneven parses, and is refused with --bench") {
  CHECK(parse({"--uneven"}).parsed.options.uneven);
  auto p = parse({"--uneven", "--bench"});
  CHECK(p.parsed.exit_code == 2);
  CHECK(p.err == "train: error: --uneven trains on uneven shards of the data; it does not apply to --bench\n");
}

TEST_CASE("step times: one line per event, appended to DIR/rank<R>.log, across attempts") {
  CHECK(StepTimes::line(1, "step", 30, 1796122519.5384521) == "1 step 30 1796122519.538452\n");
  const ddp::test::TempDir scratch;
  StepTimes().mark("step", 1);  // disabled: nothing to write to, no error
  {
    StepTimes first(scratch.path(), 3, 0);
    CHECK(first.enabled());
    first.mark("start", 4242);
    first.mark("step", 1);
  }
  StepTimes(scratch.path(), 3, 1).mark("init_start");
  const auto lines = ddp::test::lines_of(ddp::test::read_file(scratch / "rank3.log"));
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].rfind("0 start 4242 ", 0) == 0);
  CHECK(lines[1].rfind("0 step 1 ", 0) == 0);
  CHECK(lines[2].rfind("1 init_start 0 ", 0) == 0);
  const double t = std::stod(lines[2].substr(lines[2].rfind(' ') + 1));
  CHECK(t > 1.7e9);  // unix seconds, not a monotonic clock
  CHECK_THROWS_WITH(StepTimes(scratch / "missing", 0, 0),
                    Catch::Contains("--step-times: cannot open " + (scratch / "missing") + "/rank0.log"));
}

TEST_CASE("options: --step-times takes an existing directory") {
  const ddp::test::TempDir scratch;
  CHECK(parse({"--step-times", scratch.path()}).parsed.options.step_times == scratch.path());
  CHECK(parse({}).parsed.options.step_times.empty());
  auto p = parse({"--step-times", scratch / "missing"});
  CHECK(p.parsed.exit_code == 2);
  CHECK(p.err.find("--step-times") != std::string::npos);
}
