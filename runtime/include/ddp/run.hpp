// run(): wraps a worker's main. An exception escaping main is logged with the rank prefix,
// written to TORCHELASTIC_ERROR_FILE in PyTorch's @record JSON format and turned into exit
// code 1, so ddp-launch's failure report shows the cause. Logging helpers prefix the rank and
// write each line with one write() (lines of concurrent workers do not interleave).
#pragma once

#include <functional>
#include <sstream>
#include <string>

namespace ddp {

// Returns main_fn's exit code, or 1 after recording an uncaught exception.
int run(int argc, char** argv, const std::function<int(int, char**)>& main_fn);
int run(int argc, char** argv, const std::function<void(int, char**)>& main_fn);

// Writes the @record JSON for (type, message) to TORCHELASTIC_ERROR_FILE if it is set.
void write_error_file(const std::string& type, const std::string& message);

// One log line: "[rank R] text\n" to stderr on destruction. Usage: ddp::log() << "loss " << x;
class LogLine {
 public:
  explicit LogLine(bool enabled = true) : enabled_(enabled) {}
  LogLine(LogLine&&) = default;
  ~LogLine();
  template <typename T>
  LogLine& operator<<(const T& value) {
    if (enabled_) stream_ << value;
    return *this;
  }

 private:
  bool enabled_;
  std::ostringstream stream_;
};

LogLine log();        // every rank
LogLine log_rank0();  // rank 0 only

}  // namespace ddp
