"""A real gloo job for the multi-host test: every rank all-reduces its rank + 1 and checks
the sum, then (with --hold SECONDS) keeps all-reducing so a node failure hits it mid-job
(every rank the same number of times).
With --ready PATH, each rank writes its pid to PATH.RANK once the first all-reduce is done."""
import argparse
import os
import time

import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--hold", type=float, default=0.0)
p.add_argument("--ready", default="")
a = p.parse_args()
dist.init_process_group("gloo", timeout=__import__("datetime").timedelta(seconds=60))
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
expected = world * (world + 1) / 2
assert t.item() == expected, f"allreduce gave {t.item()}, expected {expected}"
if a.ready:
    with open(f"{a.ready}.{rank}.tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(f"{a.ready}.{rank}.tmp", f"{a.ready}.{rank}")
print(f"allreduce ok rank={rank} world={world} sum={t.item():.0f} host={os.uname().nodename}", flush=True)
# Every rank runs the same number of all-reduces: each one carries whether this rank is
# still within its hold, and all stop together once any rank is past it (ranks that
# simply looped until their own deadline could stop one collective apart, and the last
# all-reduce of the others then failed: the peer had closed its pairs).
deadline = time.time() + a.hold
while True:
    go = torch.tensor([1.0 if time.time() < deadline else 0.0])
    dist.all_reduce(go, op=dist.ReduceOp.MIN)
    if go.item() == 0.0:
        break
    time.sleep(0.05)
dist.destroy_process_group()
