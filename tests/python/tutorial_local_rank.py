"""The original DDP tutorial's style of script (torch.distributed.launch era): it declares
only `--local_rank` (required, as PyTorch's own launcher test script does), reads nothing
else from argv, and joins the group through env://. Prints `tutorial rank R local_rank L ok`.
"""
import argparse

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, required=True)
args = parser.parse_args()

dist.init_process_group(backend="gloo", init_method="env://")
t = torch.ones(1)
dist.all_reduce(t)
assert int(t.item()) == dist.get_world_size(), t
print(f"tutorial rank {dist.get_rank()} local_rank {args.local_rank} ok", flush=True)
dist.destroy_process_group()
