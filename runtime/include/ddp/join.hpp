// join(): training on uneven inputs (PyTorch's Join context with DDP's join hook). A rank whose
// data runs out leaves the body and keeps shadowing the others' DDP communication (zeros) until
// every rank is done; then the last rank to finish broadcasts its model. Blocking, collective:
// every rank of the DDP group calls it once around its own loop, from the training thread.
#pragma once

#include <cstdint>
#include <functional>

namespace ddp {

class DataParallelEngine;

struct JoinOptions {
  // true (PyTorch's default): gradients are divided by the initial world size, so a rank that
  // has joined counts as a zero gradient; false: divided by the ranks still training, so each
  // step averages only real gradients. With a comm hook the hook divides (by the group size).
  bool divide_by_initial_world_size = true;
};

struct JoinResult {
  bool last_joiner = false;    // this rank was among the last to run out of inputs (its model wins)
  int64_t shadowed_steps = 0;  // forwards of other ranks this rank matched after its body returned
};

// Runs `body` (this rank's training loop) with `engine` in join mode, then shadows the ranks
// still training. Inside the body: only the DDP model's forward/backward may communicate; any
// other collective (ddp::all_reduce, barrier, save_checkpoint, ...) and a forward with gradients
// disabled throw DdpError (they could not be matched by ranks that have joined). An exception
// escaping `body` ends the join on this rank without shadowing and propagates.
JoinResult join(DataParallelEngine& engine, const std::function<void()>& body, const JoinOptions& options = {});

}  // namespace ddp
