"""A real gloo job for the multi-host test: every rank all-reduces its rank + 1 and checks
the sum, then (with --hold SECONDS) keeps all-reducing so a node failure hits it mid-job.
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
deadline = time.time() + a.hold
while time.time() < deadline:
    dist.all_reduce(torch.ones(1))
    time.sleep(0.05)
dist.destroy_process_group()
