// Rank 0's metrics file: one CSV row per epoch (epoch,step,loss,accuracy,samples_per_s),
// flushed as written so a killed run keeps its rows. On resume from step S the rows past S
// (written after the checkpoint by the failed attempt) are dropped so no step appears twice.
#pragma once

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>

namespace ddp::train {

struct MetricsRow {
  int epoch = 0;     // 1-based
  int64_t step = 0;  // global optimizer steps so far
  double loss = 0;
  double accuracy = 0;  // 0..1
  double samples_per_s = 0;
};

inline constexpr const char* kMetricsHeader = "epoch,step,loss,accuracy,samples_per_s";

class MetricsWriter {
 public:
  // Creates parent directories. `resume_step`: keep existing rows with step <= it; nullopt
  // starts a fresh file. Throws std::runtime_error naming the path if it cannot be written.
  MetricsWriter(std::string path, std::optional<int64_t> resume_step);
  void write(const MetricsRow& row);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::ofstream out_;
};

std::string format_metrics_row(const MetricsRow& row);

}  // namespace ddp::train
