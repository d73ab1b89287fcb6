"""The PyTorch tutorial's env:// example, unchanged for torchrun or ddp-launch (gloo, CPU).

Each rank reads its place from the launcher's environment, joins the process group
through env:// (MASTER_ADDR/MASTER_PORT), all-reduces a tensor holding rank+1, checks the
sum is W(W+1)/2, then takes one DDP step on the tutorial's ToyModel and checks every rank
ends with the same parameters. Prints one line per check; exits non-zero on a mismatch.
--device-id (torch 2.x): init_process_group(device_id=cpu:LOCAL_RANK), binding the group to
a device as 2.x scripts do.
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn


class ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net1 = nn.Linear(10, 10)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(10, 5)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def run_allreduce(rank, world):
    tensor = torch.ones(4) * (rank + 1)
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    expected = world * (world + 1) / 2
    ok = bool(torch.all(tensor == expected))
    print(f"rank {rank}/{world}: allreduce sum={tensor[0].item():g} expected={expected:g} "
          f"{'ok' if ok else 'MISMATCH'}", flush=True)
    return ok


def run_ddp_step(rank, world):
    torch.manual_seed(rank)  # different initial weights: DDP must broadcast rank 0's
    model = nn.parallel.DistributedDataParallel(ToyModel())
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    opt.zero_grad()
    out = model(torch.randn(20, 10))
    nn.MSELoss()(out, torch.randn(20, 5)).backward()
    opt.step()
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    ok = all(torch.equal(g, gathered[0]) for g in gathered)
    print(f"rank {rank}/{world}: ddp step params_identical={'ok' if ok else 'MISMATCH'} "
          f"checksum={flat.sum().item():.6f}", flush=True)
    return ok


def main():
    env = {k: os.environ.get(k) for k in
           ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    missing = [k for k, v in env.items() if v is None]
    if missing:
        print(f"env_allreduce: launcher did not set {', '.join(missing)}; run it under ddp-launch or torchrun",
              file=sys.stderr)
        return 2
    if "--device-id" in sys.argv[1:]:
        dist.init_process_group("gloo", init_method="env://",
                                device_id=torch.device("cpu", int(env["LOCAL_RANK"])))
    else:
        dist.init_process_group("gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"rank {rank}/{world}: local_rank={env['LOCAL_RANK']} local_world_size={env['LOCAL_WORLD_SIZE']} "
          f"master={env['MASTER_ADDR']}:{env['MASTER_PORT']}", flush=True)
    ok = run_allreduce(rank, world) and run_ddp_step(rank, world)
    dist.barrier()
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
