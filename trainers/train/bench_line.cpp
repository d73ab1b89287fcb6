#include "bench_line.hpp"

#include <fmt/format.h>

namespace ddp::train {

std::string bench_line(int world, int steps, int batch, int64_t params, double seconds) {
  return fmt::format("peer=cpp-ddp world={} steps={} batch={} params={} samples_per_s={:.1f} step_ms={:.2f}", world,
                     steps, batch, params, double(steps) * batch * world / seconds, 1000.0 * seconds / steps);
}

}  // namespace ddp::train
