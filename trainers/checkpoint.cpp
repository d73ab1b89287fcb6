// checkpoint: the PyTorch DDP tutorial's demo_checkpoint —
//   ddp-launch --nproc_per_node=2 ./checkpoint [--path FILE]
// rank 0 saves the DDP model (ddp::save_checkpoint: atomic write + barrier), every rank
// loads it mapped to its own device, checks it got rank 0's parameters, takes one more
// step, and rank 0 removes the file. Exit 1 if the round trip or the step disagree.
#include <cstdio>
#include <filesystem>

#include "toy_model.hpp"

int main(int argc, char** argv) {
  return ddp::run(argc, argv, [](int n, char** args) -> int {
    ddp::init_process_group();
    const int rank = ddp::get_rank();
    const auto& env = ddp::worker_env();
    std::string path =
        (std::filesystem::temp_directory_path() / ("ddp_checkpoint_demo_" + std::to_string(env.master_port) + ".pt"))
            .string();
    if (n == 3 && std::string(args[1]) == "--path") path = args[2];

    torch::manual_seed(rank);
    examples::ToyModel net;
    net->to(ddp::device());
    auto model = ddp::DistributedDataParallel(net);
    torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(0.001));

    const double saved = examples::checksum(*net);  // rank 0's weights, broadcast by DDP
    ddp::save_checkpoint(path, *net, &optimizer);   // rank 0 writes, then all meet at a barrier
    {
      torch::NoGradGuard no_grad;  // scribble over the weights so the load has to restore them
      for (auto& p : net->parameters()) p.fill_(rank + 100.0);
    }
    ddp::load_checkpoint(path, *net, &optimizer);  // mapped to ddp::device()
    const double loaded = examples::checksum(*net);
    const bool round_trip = loaded == saved && examples::parameters_identical(*net);
    char line[200];
    std::snprintf(line, sizeof line, "checkpoint: rank %d loaded %s checksum=%.9f saved=%.9f round_trip=%s", rank,
                  path.c_str(), loaded, saved, round_trip ? "ok" : "MISMATCH");
    examples::say(line);

    optimizer.zero_grad();
    auto outputs = model(torch::randn({20, 10}, ddp::device()));
    torch::mse_loss(outputs, torch::randn({20, 5}, ddp::device())).backward();
    optimizer.step();
    const bool same = examples::parameters_identical(*net);
    std::snprintf(line, sizeof line, "checkpoint: rank %d stepped after load, checksum=%.9f identical_across_ranks=%s",
                  rank, examples::checksum(*net), same ? "yes" : "NO");
    examples::say(line);

    ddp::barrier();  // everyone has loaded before the file goes
    if (rank == 0) {
      std::filesystem::remove(path);
      examples::say("checkpoint: rank 0 removed " + path);
    }
    ddp::destroy_process_group();
    return round_trip && same ? 0 : 1;
  });
}
