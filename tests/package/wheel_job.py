"""The wheel test's job: a gloo DDP script as a user of the installed wheel writes it, nothing
from a source tree: `import ddp_snapshot` comes from the wheel. Rank 1 of attempt 0 SIGKILLs
itself at the start of step --kill-at; the restart resumes from the newest in-memory snapshot.
Prints "attempt A: resumed from step S" or "attempt A: fresh start", then "done at step N"."""
import argparse
import os
import signal

import ddp_snapshot
import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=8)
p.add_argument("--kill-at", type=int, default=4)
args = p.parse_args()

dist.init_process_group("gloo")
rank = dist.get_rank()
attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
torch.manual_seed(0)
model = torch.nn.Linear(8, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
found = ddp_snapshot.restore(map_location="cpu")
start = 0
if found:
    start, state = found
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
print(f"attempt {attempt}: " + (f"resumed from step {start}" if found else "fresh start"), flush=True)
ddp = torch.nn.parallel.DistributedDataParallel(model)
for step in range(start, args.steps):
    if attempt == 0 and rank == 1 and step + 1 == args.kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
    opt.zero_grad()
    ddp(torch.randn(16, 8)).sum().backward()
    opt.step()
    ddp_snapshot.save(step + 1, {"model": model.state_dict(), "opt": opt.state_dict()})
print(f"done at step {args.steps}", flush=True)
dist.destroy_process_group()
