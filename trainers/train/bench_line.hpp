// The benchmark summary line shared with bench/peers/python_ddp_bench.py:
//   peer=cpp-ddp world=W steps=S batch=B params=P samples_per_s=X step_ms=Y
// Pure formatting.
#pragma once

#include <cstdint>
#include <string>

namespace ddp::train {

std::string bench_line(int world, int steps, int batch, int64_t params, double seconds);

}  // namespace ddp::train
