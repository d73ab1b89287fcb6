// A program linked with libddp that calls ddp::standby_point() (tests/warm, case point_restart).
// Usage: warm_point_worker OUTDIR. Above the point it writes OUTDIR/above.<pid>.txt: whether RANK
// was set and whether WorkerEnv::from_env() answered; below it, as warm_native_worker:
// OUTDIR/a<restart>.r<rank>.txt ("pid"); attempt 0 waits for OUTDIR/go, then rank 1 exits 3;
// attempt 1 exits 0.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <ddp/env.hpp>
#include <ddp/errors.hpp>
#include <ddp/standby.hpp>

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
  const char* restart = std::getenv("TORCHELASTIC_RESTART_COUNT");
  const char* rank = std::getenv("RANK");
  if (!restart || !rank) return 2;
  std::ofstream(out + "/a" + restart + ".r" + rank + ".txt") << getpid() << "\n";
  std::printf("point worker rank %s restart %s\n", rank, restart);
  std::fflush(stdout);
  if (std::string(restart) != "0") return 0;
  while (::access((out + "/go").c_str(), F_OK) != 0) ::usleep(50000);
  if (std::string(rank) == "1") return 3;
  ::sleep(120);  // stopped by the launcher
  return 0;
}
