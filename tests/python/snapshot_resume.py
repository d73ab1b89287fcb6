"""A deterministic DDP job (gloo) that snapshots every step with python/ddp_snapshot.py.

With --kill-at K, rank 1 of attempt 0 SIGKILLs itself at the start of step K; with --heal,
rank 1 of attempt 1 empties its region before restoring (it is healed from rank 0). With
--checkpoint-dir and --checkpoint-every, rank 0 also torch.save's checkpoints there and the
restart resumes from the newer of those and the snapshot. Each rank prints where it started
("resumed from snapshot|checkpoint step S[, healed from rank R]" or "fresh start"),
each step it runs, and the final parameters' hash. check_interop.py's snapshot_resume case reads
these lines. --background: the writes run on a thread (save(..., background=True)), fenced by
ddp_snapshot.allreduce_hook.
"""
import argparse
import hashlib
import os
import signal
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.environ["DDP_TEST_PYTHON_DIR"])
import ddp_snapshot  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=10)
p.add_argument("--kill-at", type=int, default=0)
p.add_argument("--heal", action="store_true")
p.add_argument("--background", action="store_true", help="save(..., background=True) + allreduce_hook")
p.add_argument("--snapshot-every", type=int, default=1)
p.add_argument("--checkpoint-dir", help="rank 0 torch.save's DIR/ckpt_<step>.pt; restore(checkpoint_dir=DIR)")
p.add_argument("--checkpoint-every", type=int, default=0)
args = p.parse_args()

dist.init_process_group("gloo")
rank = dist.get_rank()
attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

# Every rank resumes from the same step (ddp_snapshot.restore agrees on it; with --heal, rank 1
# of the restart first empties its region, as a replacement node has none, and receives rank 0's).
if args.heal and attempt == 1 and rank == 1:
    os.truncate(os.environ["DDP_LAUNCH_SNAPSHOT_FILE"], 0)
found = ddp_snapshot.restore(map_location="cpu", checkpoint_dir=args.checkpoint_dir)
start = 0
if found:
    start, state = found
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
info = ddp_snapshot.last_restore
healed = f", healed from rank {info.source_rank}" if info and info.healed else ""
source = "snapshot" if info is None or info.source == "snapshot" else "checkpoint"
print(f"attempt {attempt}: " + (f"resumed from {source} step {start}{healed}" if found else "fresh start"), flush=True)

ddp = torch.nn.parallel.DistributedDataParallel(model)
if args.background:
    ddp.register_comm_hook(None, ddp_snapshot.allreduce_hook)
for step in range(start, args.steps):
    if attempt == 0 and rank == 1 and step + 1 == args.kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
    g = torch.Generator().manual_seed(1000 * step + rank)
    x, y = torch.randn(32, 8, generator=g), torch.randn(32, 4, generator=g)
    opt.zero_grad()
    torch.nn.functional.mse_loss(ddp(x), y).backward()
    opt.step()
    print(f"attempt {attempt}: step {step + 1}", flush=True)
    state = {"model": model.state_dict(), "opt": opt.state_dict()}
    if (step + 1) % args.snapshot_every == 0:
        ddp_snapshot.save(step + 1, state, background=args.background)
    if args.checkpoint_every and (step + 1) % args.checkpoint_every == 0:
        if rank == 0:
            torch.save(state, os.path.join(args.checkpoint_dir, f"ckpt_{step + 1}.pt"))
        dist.barrier()

digest = hashlib.sha256(b"".join(t.detach().numpy().tobytes() for t in model.state_dict().values())).hexdigest()
print(f"final weights {digest}", flush=True)
dist.destroy_process_group()
