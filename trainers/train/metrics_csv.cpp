#include "metrics_csv.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

namespace ddp::train {
namespace {

// Rows of an existing metrics file whose step column is <= max_step (header excluded).
std::vector<std::string> rows_through(const std::string& path, int64_t max_step) {
  std::vector<std::string> kept;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line == kMetricsHeader) continue;
    const auto comma = line.find(',');
    if (comma == std::string::npos) continue;
    try {
      if (std::stoll(line.substr(comma + 1)) <= max_step) kept.push_back(line);
    } catch (const std::exception&) {
      // not a row we wrote: drop it
    }
  }
  return kept;
}

}  // namespace

std::string format_metrics_row(const MetricsRow& row) {
  return fmt::format("{},{},{:.6f},{:.6f},{:.1f}", row.epoch, row.step, row.loss, row.accuracy, row.samples_per_s);
}

MetricsWriter::MetricsWriter(std::string path, std::optional<int64_t> resume_step) : path_(std::move(path)) {
  std::vector<std::string> kept;
  if (resume_step) kept = rows_through(path_, *resume_step);
  const auto parent = std::filesystem::path(path_).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  out_.open(path_, std::ios::trunc);
  if (!out_) {
    throw std::runtime_error(fmt::format("cannot write metrics file '{}': {}; pass --metrics with a writable path",
                                         path_, std::strerror(errno)));
  }
  out_ << kMetricsHeader << '\n';
  for (const auto& line : kept) out_ << line << '\n';
  out_.flush();
}

void MetricsWriter::write(const MetricsRow& row) {
  out_ << format_metrics_row(row) << '\n';
  out_.flush();
}

}  // namespace ddp::train
