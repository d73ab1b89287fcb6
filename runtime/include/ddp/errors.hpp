// The runtime's one error model: every failure libddp reports is a ddp::Error subclass whose
// what() says what went wrong and what to do next. c10/gloo exceptions are translated at the
// boundary. Only ddp::run() (or the user's main) turns them into exit codes.
#pragma once

#include <stdexcept>
#include <string>

namespace ddp {

// Base of everything libddp throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad or inconsistent configuration: env contract, init_method, options.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// A blocking call (store connect, rendezvous, collective) ran past its timeout.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

// A collective failed (peer died, connection reset) or the group is unusable.
class CommError : public Error {
 public:
  using Error::Error;
};

// DDP misuse detected at runtime: model differs across ranks, parameters that got no
// gradient without find_unused_parameters, a gradient marked ready twice, ...
class DdpError : public Error {
 public:
  using Error::Error;
};

// A checkpoint could not be written or read (missing, truncated, foreign file).
class CheckpointError : public Error {
 public:
  using Error::Error;
};

// A worker started by ddp::spawn failed; what() names the rank and its exit status.
class ProcessFailedError : public Error {
 public:
  ProcessFailedError(const std::string& what, int rank, int exit_code)
      : Error(what), rank_(rank), exit_code_(exit_code) {}
  int rank() const { return rank_; }
  // Exit status in shell convention: the worker's code, or 128+signal.
  int exit_code() const { return exit_code_; }

 private:
  int rank_;
  int exit_code_;
};

}  // namespace ddp
