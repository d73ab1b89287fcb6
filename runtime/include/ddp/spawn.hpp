// spawn: torch.multiprocessing.spawn for C++ programs that start their own workers on one
// node. Forks nprocs children, each with the launcher's env contract set (RANK, WORLD_SIZE,
// MASTER_ADDR/PORT, ...), runs fn(local_rank) in each and waits. The first failure kills the
// others and is rethrown in the parent as ProcessFailedError. Call it before the parent does
// any torch computation (forking after thread pools exist is unsafe). Blocks.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "ddp/errors.hpp"

namespace ddp {

struct SpawnOptions {
  std::string master_addr = "127.0.0.1";
  int master_port = 0;                    // 0: pick a free port
  std::chrono::milliseconds timeout{0};   // 0: no limit; else kill all and throw TimeoutError
  std::chrono::milliseconds grace{3000};  // SIGTERM → SIGKILL delay when tearing down
};

// fn runs in the child with the env set; ddp::init_process_group() inside it joins the group.
// An exception escaping fn is reported (type and message) in the ProcessFailedError.
void spawn(int nprocs, const std::function<void(int local_rank)>& fn, const SpawnOptions& options = {});

// A TCP port that was free a moment ago on 127.0.0.1 (bind to port 0).
int find_free_port();

}  // namespace ddp
