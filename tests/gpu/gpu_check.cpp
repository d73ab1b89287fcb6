// ddp_gpu_check CHECK [--backend nccl|gloo] [--device cuda|cpu] [--key value ...]
// CHECK: collectives, ddp-matches-single, checkpoint, bench. Each process is one worker of a
// launcher (ddp-launch, or torchrun --no-python); alone it is rank 0 of a world of 1. Errors
// end as ddp::run reports them: "[rank R] error: ..." and exit status 1.
#include <functional>

#include "checks.hpp"
#include "ddp/ddp.hpp"

namespace ddp::gpu_check {
namespace {

Args parse(int argc, char** argv) {
  if (argc < 2) throw ConfigError("usage: ddp_gpu_check CHECK [--key value ...]");
  Args args{{"check", argv[1]}};
  for (int i = 2; i < argc; i += 2) {
    const std::string key = argv[i];
    if (key.rfind("--", 0) != 0 || i + 1 >= argc) throw ConfigError("expected --key value, got '" + key + "'");
    args[key.substr(2)] = argv[i + 1];
  }
  return args;
}

void run_check(const Args& args) {
  static const std::map<std::string, std::function<void(const Args&)>> kChecks{
      {"collectives", collectives},
      {"ddp-matches-single", ddp_matches_single},
      {"checkpoint", checkpoint_round_trip},
      {"snapshot-staging", snapshot_staging},
      {"bench", bench}};
  auto it = kChecks.find(args.at("check"));
  if (it == kChecks.end()) throw ConfigError("unknown check '" + args.at("check") + "'");
  it->second(args);
}

int worker(int argc, char** argv) {
  run_check(parse(argc, argv));
  return 0;
}

}  // namespace
}  // namespace ddp::gpu_check

int main(int argc, char** argv) { return ddp::run(argc, argv, ddp::gpu_check::worker); }
