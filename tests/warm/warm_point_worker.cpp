// A program linked with libddp that calls ddp::standby_point() (tests/warm, case point_restart).
// Usage: warm_point_worker OUTDIR. Above the point it writes OUTDIR/above.<pid>.txt: whether RANK
// was set and whether WorkerEnv::from_env() answered; below it native_worker_body.hpp.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include <ddp/env.hpp>
#include <ddp/errors.hpp>
#include <ddp/standby.hpp>

#include "native_worker_body.hpp"

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string out = argv[1];
  {
    std::ofstream above(out + "/above." + std::to_string(::getpid()) + ".txt");
    above << "RANK " << (std::getenv("RANK") ? "set" : "unset") << "\n";
    try {
      above << "worker_env rank " << ddp::WorkerEnv::from_env().rank << "\n";
    } catch (const ddp::ConfigError& e) {
      above << "worker_env refused: " << e.what() << "\n";
    }
  }
  ddp::standby_point();
  return native_worker_body(out, "point");
}
