// The consumer's program: every rank all-reduces (rank + 1) over gloo, launched by ddp-launch
// (RANK, WORLD_SIZE, MASTER_ADDR, ... from its environment), and prints the sum.
#include <ddp/ddp.hpp>
#include <torch/torch.h>

#include <iostream>

int main(int argc, char** argv) {
  return ddp::run(argc, argv, [](int, char**) {
    ddp::init_process_group();
    torch::Tensor t = torch::full({4}, static_cast<float>(ddp::get_rank() + 1));
    ddp::all_reduce(t);
    std::cout << "rank " << ddp::get_rank() << " of " << ddp::get_world_size() << ": sum " << t[0].item<float>()
              << std::endl;
    ddp::destroy_process_group();
  });
}
