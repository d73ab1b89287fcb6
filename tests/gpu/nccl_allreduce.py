"""A plain PyTorch NCCL script (no libddp): init_process_group("nccl") from the launcher's env,
all_reduce on the worker's GPU, checks the sum and prints "ok nccl_allreduce world=W nccl=V".
Exits non-zero on a wrong result. Run it under ddp-launch (or torchrun).
"""
import os

import torch
import torch.distributed as dist

local_rank = int(os.environ.get("LOCAL_RANK", "0"))
torch.cuda.set_device(local_rank)
dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.full((1 << 20,), float(rank + 1), device="cuda")
dist.all_reduce(t)
expected = world * (world + 1) / 2
if not bool((t == expected).all()):
    raise SystemExit(f"rank {rank}: all_reduce gave {t[0].item()}, expected {expected}")
dist.barrier()
if rank == 0:
    version = ".".join(map(str, torch.cuda.nccl.version()))
    print(f"ok nccl_allreduce world={world} nccl={version} device={torch.cuda.get_device_name()}", flush=True)
dist.destroy_process_group()
