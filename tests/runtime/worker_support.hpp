// What every worker scenario of the runtime tests needs: the DDP_TEST_* settings the parent
// passes in the environment, where results go ($DDP_TEST_OUT), a check that throws (the
// scenario runs under ddp::run, so it becomes exit 1 + an error file), the gloo group's
// options, and the standard training loop on the test model's deterministic batches.
#pragma once

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "ddp/ddp.hpp"
#include "model.hpp"

namespace ddp::test {

inline std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}
inline int env_int(const char* name, int fallback) { return std::stoi(env_or(name, std::to_string(fallback))); }
inline std::string out_path(const std::string& name) { return env_or("DDP_TEST_OUT", "/tmp") + "/" + name; }

inline void expect(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("check failed: " + what);
}

// gloo, DDP_TEST_INIT_METHOD (env://), DDP_TEST_TIMEOUT_MS (60 s).
inline ProcessGroupOptions pg_options() {
  ProcessGroupOptions o;
  o.backend = "gloo";
  o.init_method = env_or("DDP_TEST_INIT_METHOD", "env://");
  o.timeout = std::chrono::milliseconds(env_int("DDP_TEST_TIMEOUT_MS", 60000));
  return o;
}

// Steps [first, first + count) of the test model's global batches, each rank on its slice.
template <class Model>
void train_steps(Model& model, torch::optim::Optimizer& opt, int first, int count) {
  TrainConfig c;
  c.world = get_world_size();
  const int rank = get_rank();
  for (int step = first; step < first + count; ++step) {
    opt.zero_grad();
    auto [x, y] = global_batch(c, step, 0);
    torch::mse_loss(model(x.narrow(0, rank * c.batch, c.batch)), y.narrow(0, rank * c.batch, c.batch)).backward();
    opt.step();
  }
}

}  // namespace ddp::test
