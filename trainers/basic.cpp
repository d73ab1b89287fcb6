// basic: the PyTorch DDP tutorial's demo_basic under a launcher —
//   ddp-launch --nproc_per_node=4 ./basic
// joins the process group (env://), takes one DDP step of the ToyModel (MSE, SGD lr 0.001)
// and checks every rank ends with identical parameters; exit 1 if not.
#include "toy_model.hpp"

int main(int argc, char** argv) {
  return ddp::run(argc, argv, [](int, char**) -> int {
    ddp::init_process_group();
    const bool ok = examples::demo_basic();
    ddp::destroy_process_group();
    return ok ? 0 : 1;
  });
}
