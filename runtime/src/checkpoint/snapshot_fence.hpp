// The snapshot write fence: while a ddp::Snapshot write runs in the background, this process
// must not let the other ranks finish the next step, or a rank killed mid-write could hold no
// step in common with them (two slots). The writer holds the fence; the reducer waits on it
// before the last bucket's all-reduce of a backward, and the synchronous collectives before
// they start. Process-wide, thread-safe; wait() blocks only while a write is in flight.
#pragma once

namespace ddp::detail::snapshot_fence {

void hold();     // a write starts
void release();  // it ended (written or failed)

// Blocks until no write is in flight; the seconds it blocked (0 when none was).
double wait();

// wait() from a DDP backward, before its last all-reduce: from then on this process's
// optimizer steps follow a fence, and a snapshot's device copies may overlap the next step.
double wait_in_backward();
bool backward_fenced();

// The seconds wait() blocked in this process, all calls together.
double waited_seconds();

}  // namespace ddp::detail::snapshot_fence
