// run(): wraps a worker's main. An exception escaping main is logged with the rank prefix,
// written to TORCHELASTIC_ERROR_FILE in PyTorch's @record JSON format and turned into exit
// code 1, so ddp-launch's failure report shows the cause (one escaping another thread is
// recorded the same way, then the process aborts). Logging helpers prefix the rank and
// write each line with one write() (lines of concurrent workers do not interleave).
#pragma once

#include <functional>
#include <sstream>
#include <string>
#include <type_traits>

namespace ddp {

namespace detail {
int run_main(int argc, char** argv, const std::function<int(int, char**)>& main_fn);
}

// Calls main_fn(argc, argv) (returning int, or void = 0) and returns its exit code, or 1 after
// recording an uncaught exception. Usage: int main(int c, char** v) { return ddp::run(c, v, train); }
template <typename Fn>
int run(int argc, char** argv, Fn&& main_fn) {
  if constexpr (std::is_void_v<std::invoke_result_t<Fn&, int, char**>>) {
    return detail::run_main(argc, argv, [&](int c, char** v) {
      main_fn(c, v);
      return 0;
    });
  } else {
    return detail::run_main(argc, argv, [&](int c, char** v) { return static_cast<int>(main_fn(c, v)); });
  }
}

// Writes the @record JSON for (type, message) to TORCHELASTIC_ERROR_FILE if it is set.
void write_error_file(const std::string& type, const std::string& message);

// One log line: "[rank R] text\n" to stderr on destruction. Usage: ddp::log() << "loss " << x;
class LogLine {
 public:
  explicit LogLine(bool enabled = true) : enabled_(enabled) {}
  LogLine(LogLine&& other) noexcept : enabled_(other.enabled_), stream_(std::move(other.stream_)) {
    other.enabled_ = false;
  }
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
