"""The floor under any c10d-gloo DDP step: time one all_reduce of N floats (env N, default
165, the tiny model's parameter count; 2913290 for the benchmark MLP) between the workers.
Run with the peers' Python (scripts/lib.sh torch_python, the torch venv's; /usr/bin/python3 for
Debian's 1.13):
  PYTHON_EXEC=/opt/ddp-launch/torch-2.15.0/bin/python N=165 build/launcher/ddp-launch --nproc-per-node=2 scripts/gloo_floor.py
"""
import os
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
tensor = torch.ones(int(os.environ.get("N", "165")))
iterations = int(os.environ.get("ITERS", "2000" if tensor.numel() < 100000 else "30"))
for _ in range(10):
    dist.all_reduce(tensor)
start = time.perf_counter()
for _ in range(iterations):
    dist.all_reduce(tensor)
elapsed = (time.perf_counter() - start) / iterations
if dist.get_rank() == 0:
    print(f"gloo all_reduce of {tensor.numel()} floats, world {dist.get_world_size()}: "
          f"{elapsed * 1e6:.0f} us", flush=True)
dist.destroy_process_group()
