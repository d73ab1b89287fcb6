// A program linked with libddp for tests/warm (it uses nothing of it: the standby hook comes
// with the link). Usage: warm_native_worker OUTDIR; what it does: native_worker_body.hpp.
#include <string>

#include "native_worker_body.hpp"

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  return native_worker_body(argv[1], "native");
}
