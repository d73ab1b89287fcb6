// LaunchError: the launcher's one exception type. It carries a message that says what is
// wrong and what to do, plus the exit code from exit_status.hpp. Only main() catches it.
#pragma once

#include <stdexcept>
#include <string>

namespace ddp::launch {

class LaunchError : public std::runtime_error {
 public:
  LaunchError(int exit_code, const std::string& message) : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

}  // namespace ddp::launch
