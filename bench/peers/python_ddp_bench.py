"""Reference peer: PyTorch's own Python DistributedDataParallel on CPU (gloo).

Trains the benchmark MLP on synthetic data and prints one line:
  peer=python-ddp world=W steps=S batch=B params=P samples_per_s=X step_ms=Y
With --data FILE (bench_models.write_dataset's layout) it trains --epochs epochs over the
file's training rows instead (each rank its epoch_shard, batch --batch), times every step after
the first --warmup, and appends accuracy=A (the validation rows, after the last epoch).
Run it under any launcher that sets RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT
(torchrun, or ddp-launch). Model, data, flags and output match its C++ twin
tests/runtime/bench.cpp (ddp_bench); scripts/bench-ddp.sh runs both, alternating. The model
and data: bench_models.py, shared with tests/gpu/python_gpu_bench.py.
"""
import argparse, os, time
import torch
import torch.distributed as dist
import torch.nn as nn

import bench_models  # next to this file

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=100)
p.add_argument("--warmup", type=int, default=10)
bench_models.add_model_args(p)
p.add_argument("--bucket-mb", type=float, default=25.0)
p.add_argument("--comm-hook", default="allreduce", choices=["allreduce", "fp16", "bf16", "powersgd"])
p.add_argument("--powersgd-rank", type=int, default=2)
p.add_argument("--powersgd-start", type=int, default=2, help="plain all-reduce steps before PowerSGD compresses")
p.add_argument("--data", help="train on this data set file (bench_models.write_dataset) for --epochs")
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--lr", type=float, default=0.01)
a = p.parse_args()

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(bench_models.mlp(a.in_dim, a.hidden, a.layers, a.classes),
                                            bucket_cap_mb=a.bucket_mb)
if a.comm_hook != "allreduce":
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
    if a.comm_hook == "fp16":
        model.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif a.comm_hook == "bf16":
        model.register_comm_hook(None, default_hooks.bf16_compress_hook)
    else:
        state = powerSGD_hook.PowerSGDState(process_group=None, matrix_approximation_rank=a.powersgd_rank,
                                            start_powerSGD_iter=a.powersgd_start, min_compression_rate=2)
        model.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
if a.data:
    x_train, y_train, x_val, y_val, _ = bench_models.read_dataset(a.data)
else:
    x, y = bench_models.synthetic_batch((a.batch, a.in_dim), a.classes, rank)

def step():
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    return loss

accuracy = ""
if a.data:
    if len(y_train) // world // a.batch * a.epochs <= a.warmup:
        raise SystemExit(f"--data: {len(y_train) // world // a.batch} steps per epoch x --epochs leave none after "
                         f"--warmup {a.warmup}; more epochs or a smaller --warmup")
    done = 0
    for epoch in range(a.epochs):
        shard = bench_models.epoch_shard(len(y_train), epoch, rank, world)
        for i in range(0, len(shard) - a.batch + 1, a.batch):
            x, y = x_train[shard[i:i + a.batch]], y_train[shard[i:i + a.batch]]
            step()
            done += 1
            if done == a.warmup:
                dist.barrier()
                t0 = time.perf_counter()
    dist.barrier()
    dt = time.perf_counter() - t0
    a.steps = done - a.warmup
    with torch.no_grad():
        accuracy = f" accuracy={(model.module(x_val).argmax(1) == y_val).double().mean().item():.4f}"
else:
    for _ in range(a.warmup):
        step()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    dist.barrier()
    dt = time.perf_counter() - t0
if rank == 0:
    nparams = sum(p.numel() for p in model.parameters())
    print(f"peer=python-ddp world={world} steps={a.steps} batch={a.batch} params={nparams} "
          f"samples_per_s={a.steps * a.batch * world / dt:.1f} step_ms={1000 * dt / a.steps:.2f}{accuracy}", flush=True)
dist.destroy_process_group()
