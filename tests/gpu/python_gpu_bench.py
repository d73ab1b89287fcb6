"""Python twin of the GPU check's C++ bench (tests/gpu/bench.cpp): PyTorch's own
DistributedDataParallel on the same MLP (bench/peers/python_ddp_bench.py's model, flags and
defaults: bench/peers/bench_models.py) or small conv net, synthetic data, SGD momentum 0.9,
zero_grad(set_to_none=True).
Times the plain model first, then the same model wrapped in DDP, and prints one line:
  peer=python-ddp model=M backend=B device=D world=W steps=S batch=N params=P plain_ms=X ddp_ms=Y overhead_pct=Z
Run it under a launcher (ddp-launch, torchrun). --device cpu runs it with gloo on CPU.
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "peers"))
import bench_models  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--model", default="mlp", choices=["mlp", "conv"])
p.add_argument("--backend", default="nccl", choices=["nccl", "gloo"])
p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
p.add_argument("--steps", type=int, default=100)
p.add_argument("--warmup", type=int, default=10)
bench_models.add_model_args(p)
p.add_argument("--bucket-mb", type=float, default=25.0)
a = p.parse_args()

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
dist.init_process_group(a.backend)
rank, world = dist.get_rank(), dist.get_world_size()
local_rank = int(os.environ.get("LOCAL_RANK", "0"))
if a.device == "cuda":
    device = torch.device("cuda", local_rank if a.backend == "nccl" and local_rank < torch.cuda.device_count() else 0)
    torch.cuda.set_device(device)
else:
    device = torch.device("cpu")

torch.manual_seed(0)
if a.model == "conv":
    net = bench_models.conv_net(a.classes)
else:
    net = bench_models.mlp(a.in_dim, a.hidden, a.layers, a.classes)
net = net.to(device)
opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
shape = (a.batch, 3, 32, 32) if a.model == "conv" else (a.batch, a.in_dim)
x, y = bench_models.synthetic_batch(shape, a.classes, rank)
x, y = x.to(device), y.to(device)


def sync():
    if device.type == "cuda":
        torch.cuda.synchronize()


def time_steps(model):
    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()
    for _ in range(a.warmup):
        step()
    sync()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    sync()
    dist.barrier()
    return 1000 * (time.perf_counter() - t0) / a.steps


plain_ms = time_steps(net)
ids = [device.index] if device.type == "cuda" else None
ddp_ms = time_steps(nn.parallel.DistributedDataParallel(net, device_ids=ids, bucket_cap_mb=a.bucket_mb))
if rank == 0:
    nparams = sum(p.numel() for p in net.parameters())
    print(f"peer=python-ddp model={a.model} backend={a.backend} device={device} world={world} steps={a.steps} "
          f"batch={a.batch} params={nparams} plain_ms={plain_ms:.3f} ddp_ms={ddp_ms:.3f} "
          f"overhead_pct={100 * (ddp_ms / plain_ms - 1):.1f}", flush=True)
dist.destroy_process_group()
