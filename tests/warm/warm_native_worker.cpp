// A program linked with libddp for tests/warm (it uses nothing of it: the standby hook comes
// with the link). Usage: warm_native_worker OUTDIR. Writes OUTDIR/a<restart>.r<rank>.txt
// ("pid"); attempt 0 waits for OUTDIR/go, then rank 1 exits 3; attempt 1 exits 0.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string out = argv[1];
  const char* restart = std::getenv("TORCHELASTIC_RESTART_COUNT");
  const char* rank = std::getenv("RANK");
  if (!restart || !rank) return 2;
  std::ofstream(out + "/a" + restart + ".r" + rank + ".txt") << getpid() << "\n";
  std::printf("native worker rank %s restart %s\n", rank, restart);
  std::fflush(stdout);
  if (std::string(restart) != "0") return 0;
  while (::access((out + "/go").c_str(), F_OK) != 0) ::usleep(50000);
  if (std::string(rank) == "1") return 3;
  ::sleep(120);  // stopped by the launcher
  return 0;
}
