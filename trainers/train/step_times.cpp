#include "step_times.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace ddp::train {

StepTimes::StepTimes(const std::string& dir, int rank, int attempt) : attempt_(attempt) {
  const std::string path = fmt::format("{}/rank{}.log", dir, rank);
  file_.reset(std::fopen(path.c_str(), "a"));
  if (!file_) {
    throw std::runtime_error(
        fmt::format("--step-times: cannot open {} for appending: {}; give an existing, writable "
                    "directory",
                    path, std::strerror(errno)));
  }
}

void StepTimes::mark(const char* event, int64_t value) {
  if (!file_) return;
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string text = line(attempt_, event, value, now);
  std::fwrite(text.data(), 1, text.size(), file_.get());
  std::fflush(file_.get());
}

std::string StepTimes::line(int attempt, const char* event, int64_t value, double unix_seconds) {
  return fmt::format("{} {} {} {:.6f}\n", attempt, event, value, unix_seconds);
}

}  // namespace ddp::train
