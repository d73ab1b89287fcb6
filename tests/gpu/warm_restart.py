"""Warm restarts on the GPU machine (scripts/gpu-check.sh warm-restart; its CPU mode runs
anywhere): a plain PyTorch script killed once under --max-restarts 1.

Usage: warm_restart.py --backend nccl|gloo --device cuda|cpu. Attempt 0: joins the group,
all-reduces, waits until this node's standbys are ready (the launcher's events.jsonl, found
from DDP_LAUNCH_PROGRESS_FILE), then the last rank SIGKILLs itself. Attempt 1 (the restart)
must have run in a standby (torch imported before its first line) when ddp-launch runs it,
must see its GPU (CUDA_VISIBLE_DEVICES is fixed per local rank: the standby had it too) and
all-reduce again; rank 0 prints "ok warm_restart ...".
"""
import sys
warm = "torch" in sys.modules  # noqa: E402 - before any import: true only in a standby
import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402


def standbys_ready(expected):
    progress = os.environ.get("DDP_LAUNCH_PROGRESS_FILE")
    if not progress:
        return True  # not ddp-launch (torchrun): no standbys to wait for
    events = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(progress))), "events.jsonl")
    try:
        with open(events) as f:
            lines = [json.loads(line) for line in f if line.strip()]
    except OSError:
        return False
    return sum(1 for e in lines if e["event"] == "standby" and e["state"] == "ready") >= expected


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--backend", default="nccl")
    p.add_argument("--device", default="cuda")
    a = p.parse_args()
    restart = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    local_rank = int(os.environ["LOCAL_RANK"])
    if a.device == "cuda":
        torch.cuda.set_device(local_rank % torch.cuda.device_count())
    dist.init_process_group(a.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    t = torch.full((1 << 16,), float(rank + 1), device=a.device)
    dist.all_reduce(t)
    if not bool((t == world * (world + 1) / 2).all()):
        raise SystemExit(f"rank {rank}: wrong all_reduce result {t[0].item()}")
    if restart == 0:
        deadline = time.time() + 120
        while not standbys_ready(int(os.environ["LOCAL_WORLD_SIZE"])) and time.time() < deadline:
            time.sleep(0.05)
        dist.barrier()
        if rank == world - 1:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(120)  # stopped by the launcher
        return
    under_ddp_launch = "DDP_LAUNCH_PROGRESS_FILE" in os.environ
    if under_ddp_launch and not warm:
        raise SystemExit(f"rank {rank}: the restart did not run in a standby")
    dist.barrier()
    if rank == 0:
        where = torch.cuda.get_device_name() if a.device == "cuda" else "cpu"
        print(f"ok warm_restart world={world} backend={a.backend} restart={restart} warm={warm} device={where}",
              flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
