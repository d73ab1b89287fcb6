"""A plain PyTorch (gloo) script whose rank 1 stops itself (SIGSTOP) after three fed
all_reduces, so that rank 0 waits in the fourth: ddp-launch --hang-timeout must name rank 1,
and faulthandler must show where each rank's Python code is (check_interop.py hang_all_reduce)."""
import os
import signal
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.environ["DDP_PROGRESS_DIR"])
import ddp_progress  # noqa: E402

ddp_progress.wrap_torch_distributed()
dist.init_process_group("gloo")
rank = dist.get_rank()
t = torch.ones(4996)
for step in range(1, 4):
    dist.all_reduce(t)
    ddp_progress.heartbeat(step)
print(f"rank {rank}: three steps done", flush=True)
if rank == 1:
    os.kill(os.getpid(), signal.SIGSTOP)  # STOP-LINE: the peer stops
dist.all_reduce(t)  # WAIT-LINE: rank 0 waits here
