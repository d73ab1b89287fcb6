"""Replay worker: joins a gloo group through --init-method (env:// or tcp://), all-reduces
a one-hot vector of its rank and checks that the sum is the world size."""
import argparse
import os

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--init-method", "--init_method", dest="init_method", required=True)
parser.add_argument("--world-size", "--world_size", dest="world_size", type=int,
                    default=int(os.environ.get("WORLD_SIZE", -1)))
parser.add_argument("--rank", type=int, default=int(os.environ.get("RANK", -1)))
args = parser.parse_args()
dist.init_process_group("gloo", init_method=args.init_method, world_size=args.world_size, rank=args.rank)
t = torch.zeros(dist.get_world_size(), dtype=torch.int64)
t[dist.get_rank()] = 1
dist.all_reduce(t)
if int(t.sum()) != dist.get_world_size():
    raise SystemExit(f"all_reduce gave {t.tolist()}, expected ones")
print("init_method ok", flush=True)
dist.destroy_process_group()
