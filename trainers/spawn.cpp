// spawn: the basic demo started without a launcher, like torch.multiprocessing.spawn —
//   ./spawn --nprocs 4
// The parent forks nprocs workers through ddp::spawn (which sets the launcher's env
// contract); each runs demo_basic. The first failing worker fails the whole run.
#include <cstdio>

#include <CLI/CLI.hpp>

#include "toy_model.hpp"

int main(int argc, char** argv) {
  CLI::App app{"spawn: runs the DDP basic demo in N forked workers (torch.multiprocessing.spawn style)"};
  int nprocs = 2;
  app.add_option("--nprocs,-n", nprocs, "number of workers")->capture_default_str()->check(CLI::Range(1, 256));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {
      std::fputs(app.help().c_str(), stdout);
      return 0;
    }
    std::fprintf(stderr, "spawn: error: %s; run 'spawn --help' for the options\n", e.what());
    return 2;
  }
  try {
    ddp::spawn(nprocs, [](int) {
      ddp::init_process_group();
      const bool ok = examples::demo_basic();
      ddp::destroy_process_group();
      if (!ok) throw ddp::DdpError("parameters differ across ranks after the DDP step");
    });
  } catch (const ddp::ProcessFailedError& e) {
    std::fprintf(stderr, "spawn: %s\n", e.what());
    return e.exit_code() == 0 ? 1 : e.exit_code();
  } catch (const ddp::Error& e) {
    std::fprintf(stderr, "spawn: %s\n", e.what());
    return 1;
  }
  std::printf("spawn: all %d workers finished\n", nprocs);
  return 0;
}
