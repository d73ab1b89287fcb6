// Broadcast of many tensors coalesced into flat buffers per dtype/device (DDP's parameter and
// buffer sync). Collective and blocking; every rank passes tensors of the same shapes.
#pragma once

#include <vector>

#include "ddp/process_group.hpp"

namespace ddp::detail {

// Broadcasts `tensors` in place from global rank `root` (-1: the group's first rank).
void broadcast_coalesced(const std::vector<torch::Tensor>& tensors, const Group& group, int root = -1);

}  // namespace ddp::detail
