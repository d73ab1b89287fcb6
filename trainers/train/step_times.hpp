// StepTimes: train's --step-times DIR record, for scripts/bench-recovery.sh. Each rank appends
// "<attempt> <event> <value> <unix seconds>" lines to DIR/rank<RANK>.log, the format of
// bench/peers/python_ddp_recovery.py (events start, init_start, init_end, resumed, step), each
// line written and flushed at once. A default-constructed StepTimes records nothing. Not
// thread-safe; torch-free; the clock is CLOCK_REALTIME, comparable across processes.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

namespace ddp::train {

class StepTimes {
 public:
  StepTimes() = default;
  // Opens DIR/rank<rank>.log for appending (DIR must exist); throws std::runtime_error naming
  // the file and the reason when it cannot.
  StepTimes(const std::string& dir, int rank, int attempt);

  void mark(const char* event, int64_t value = 0);
  bool enabled() const { return file_ != nullptr; }

  // One line, newline included: "0 step 30 1796122519.538452\n" (microseconds).
  static std::string line(int attempt, const char* event, int64_t value, double unix_seconds);

 private:
  struct Close {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, Close> file_;
  int attempt_ = 0;
};

}  // namespace ddp::train
