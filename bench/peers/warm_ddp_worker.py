"""A plain PyTorch DDP script for scripts/bench-warm-restarts.sh (gloo, CPU).

Usage: warm_ddp_worker.py OUTDIR STEPS. Imports torch, joins the group, wraps a small model
in DistributedDataParallel and trains STEPS steps (attempt 0: until killed). After its first
optimizer step it writes OUTDIR/a<restart>.r<rank>: "<pid> <CLOCK_MONOTONIC seconds>", the
benchmark's "first step" of an attempt.
"""
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main():
    out, steps = sys.argv[1], int(sys.argv[2])
    dist.init_process_group("gloo")
    model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                                        torch.nn.Linear(64, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 32), torch.randint(0, 4, (64,))
    restart, rank = os.environ["TORCHELASTIC_RESTART_COUNT"], os.environ["RANK"]
    step = 0
    while restart == "0" or step < steps:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        step += 1
        if step == 1:
            with open(os.path.join(out, f"a{restart}.r{rank}"), "w") as f:
                f.write(f"{os.getpid()} {time.monotonic()}\n")
        if restart == "0":
            time.sleep(0.01)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
