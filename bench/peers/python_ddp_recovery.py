"""Recovery peer: a plain PyTorch DDP training script as the DDP tutorial writes it, which
records when things happen, for scripts/bench-recovery.sh. No dependency on ddp-launch: run it
under torchrun or ddp-launch (anything that sets RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT).

gloo, a small MLP (bench_models.mlp) on a synthetic data set sharded by DistributedSampler
(set_epoch each epoch), SGD; rank 0 saves a checkpoint (torch.save, atomically) every
--checkpoint-every steps, then a barrier; on start (every restart too) each rank loads the
latest one with map_location and goes on from its step (--checkpoint-every 0: none).

With --snapshot-every N (under ddp-launch) every rank also snapshots its state into memory
every N steps with python/ddp_snapshot.py, and a restart resumes from the snapshot the ranks
agree on (ddp_snapshot.restore) before it tries the checkpoint (resume_from_snapshot below).

Under ddp-launch it feeds its progress record (python/ddp_progress.py: each global step, the
checkpoint saves' time; elsewhere a no-op), as the launcher's goodput ledger reads it, and its standbys build the model and the data set before a failure and wait at
ddp_standby.point() (python/ddp_standby.py; elsewhere the call returns at once).

The record: with BENCH_RECOVERY_DIR set, each rank appends lines to DIR/rank<RANK>.log,
    <attempt> <event> <value> <unix time, CLOCK_REALTIME>
attempt = TORCHELASTIC_RESTART_COUNT; events: start (value: the pid, written before torch is
imported; in a standby run up to the point, when it becomes the worker there), init_start and init_end (value 0) around init_process_group, resumed (the step
loaded), step (value: the global step just completed, after optimizer.step()). The same
format as train's --step-times (trainers/train/step_times.hpp).
"""
import os
import time

_log, _attempt = None, "0"


def open_log():
    global _log, _attempt
    _attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    d = os.environ.get("BENCH_RECOVERY_DIR")
    _log = open(os.path.join(d, f"rank{os.environ['RANK']}.log"), "a", buffering=1) if d else None


def mark(event, value=0):
    if _log:
        _log.write(f"{_attempt} {event} {value} {time.time():.6f}\n")


worker = "RANK" in os.environ  # False only in a standby that ddp-launch runs up to the point below
if worker:
    open_log()
    mark("start", os.getpid())

import argparse  # noqa: E402  (after the start mark: the imports are part of the start-up)
import sys  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset  # noqa: E402

import bench_models  # noqa: E402  (next to this file)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import ddp_progress  # noqa: E402  (python/ in this repository)
import ddp_snapshot  # noqa: E402  (the same)
import ddp_standby  # noqa: E402  (the same; under ddp-launch the launcher's copy)

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=200, help="global steps to train (then exit 0)")
p.add_argument("--checkpoint-every", type=int, default=10, help="rank 0 torch.saves every N steps; 0: never")
p.add_argument("--snapshot-every", type=int, default=0,
               help="every rank saves an in-memory snapshot (python/ddp_snapshot.py) every N steps; 0: never")
p.add_argument("--checkpoint", default="", help="checkpoint file (default: BENCH_RECOVERY_DIR/ckpt.pt)")
p.add_argument("--samples", type=int, default=4096)
bench_models.add_model_args(p)
p.set_defaults(batch=64, hidden=64, layers=3, in_dim=8, classes=4)  # train's default model
a = p.parse_args()
ckpt = a.checkpoint or os.path.join(os.environ.get("BENCH_RECOVERY_DIR") or ".", "ckpt.pt")

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
# The same on every rank: under ddp-launch a standby does this before a failure, then waits at
# ddp_standby.point() for its worker's identity (elsewhere the point returns at once).
torch.manual_seed(0)
module = bench_models.mlp(a.in_dim, a.hidden, a.layers, a.classes)
g = torch.Generator().manual_seed(1234)
data = TensorDataset(torch.randn(a.samples, a.in_dim, generator=g), torch.randint(0, a.classes, (a.samples,), generator=g))
loss_fn = nn.CrossEntropyLoss()
if not os.environ.get("BENCH_NO_STANDBY_POINT"):  # the benchmark's comparison without it
    ddp_standby.point()
if not worker:
    open_log()
    mark("start", os.getpid())

mark("init_start")
dist.init_process_group("gloo")
mark("init_end")
rank = dist.get_rank()


def resume_from_snapshot(model, opt):
    """The step every rank resumes from its in-memory snapshot (loaded into model and opt), or
    None when no rank holds one: ddp_snapshot.restore() agrees on the step (a rank one
    snapshot ahead loads it from its older slot; a rank without it receives it by broadcast)."""
    found = ddp_snapshot.restore(map_location="cpu")
    if found is None:
        return None
    step, state = found
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    return step


model = nn.parallel.DistributedDataParallel(module)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
step = 0
from_snapshot = resume_from_snapshot(model, opt) if a.snapshot_every > 0 else None
if from_snapshot is not None:
    step = from_snapshot
    mark("resumed", step)
elif os.path.exists(ckpt):
    state = torch.load(ckpt, map_location="cpu")  # the tutorial maps cuda:0 to this rank's device
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    step = state["step"]
    ddp_progress.restored(step)
    mark("resumed", step)

sampler = DistributedSampler(data)
loader = DataLoader(data, batch_size=a.batch, sampler=sampler)
per_epoch = len(loader)
epoch, skip = divmod(step, per_epoch)
while step < a.steps:
    sampler.set_epoch(epoch)
    for i, (x, y) in enumerate(loader):
        if i < skip:
            continue
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()
        step += 1
        ddp_progress.heartbeat(step)
        mark("step", step)
        if a.snapshot_every > 0 and step % a.snapshot_every == 0:
            ddp_snapshot.save(step, {"model": model.state_dict(), "opt": opt.state_dict()})
        if a.checkpoint_every > 0 and step % a.checkpoint_every == 0:
            with ddp_progress.saving():
                if rank == 0:
                    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, ckpt + ".tmp")
                    os.replace(ckpt + ".tmp", ckpt)
                dist.barrier()
        if step >= a.steps:
            break
    epoch, skip = epoch + 1, 0
dist.destroy_process_group()
