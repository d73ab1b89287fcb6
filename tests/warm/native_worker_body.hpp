// What tests/warm's native workers do as workers (warm_native_worker, warm_point_worker): write
// OUTDIR/a<restart>.r<rank>.txt ("pid") and "<label> worker rank R restart N"; attempt 0 waits for
// OUTDIR/go, then rank 1 exits 3; attempt 1 exits 0. 2 without RANK or TORCHELASTIC_RESTART_COUNT.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

inline int native_worker_body(const std::string& out, const char* label) {
  const char* restart = std::getenv("TORCHELASTIC_RESTART_COUNT");
  const char* rank = std::getenv("RANK");
  if (!restart || !rank) return 2;
  std::ofstream(out + "/a" + restart + ".r" + rank + ".txt") << getpid() << "\n";
  std::printf("%s worker rank %s restart %s\n", label, rank, restart);
  std::fflush(stdout);
  if (std::string(restart) != "0") return 0;
  while (::access((out + "/go").c_str(), F_OK) != 0) ::usleep(50000);
  if (std::string(rank) == "1") return 3;
  ::sleep(120);  // stopped by the launcher
  return 0;
}
