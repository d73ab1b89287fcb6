// libddp umbrella header: process groups, DistributedDataParallel (and join()), DistributedSampler,
// SyncBatchNorm, ZeroRedundancyOptimizer, checkpoints, spawn, run, the progress feed (PauseProgress).
#pragma once

#include "ddp/checkpoint.hpp"
#include "ddp/comm_hook.hpp"
#include "ddp/powersgd.hpp"
#include "ddp/distributed_data_parallel.hpp"
#include "ddp/distributed_sampler.hpp"
#include "ddp/env.hpp"
#include "ddp/errors.hpp"
#include "ddp/join.hpp"
#include "ddp/process_group.hpp"
#include "ddp/progress.hpp"
#include "ddp/run.hpp"
#include "ddp/snapshot.hpp"
#include "ddp/spawn.hpp"
#include "ddp/standby.hpp"
#include "ddp/sync_batch_norm.hpp"
#include "ddp/zero_redundancy_optimizer.hpp"
