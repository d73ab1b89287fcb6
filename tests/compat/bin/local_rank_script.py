"""A torch.distributed.launch-era script without torch: it declares only --local_rank
(required) and checks it against LOCAL_RANK. Prints `local_rank_script rank R local_rank L ok`;
argparse exits 2 when the argument is missing."""
import argparse
import os

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, required=True)
parser.add_argument("--tag", default="")
args = parser.parse_args()
if args.local_rank != int(os.environ["LOCAL_RANK"]):
    raise SystemExit(f"--local_rank={args.local_rank} but LOCAL_RANK={os.environ['LOCAL_RANK']}")
print(f"local_rank_script rank {os.environ['RANK']} local_rank {args.local_rank} tag={args.tag} ok", flush=True)
