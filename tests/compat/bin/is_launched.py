"""Replay worker: writes torch.distributed.is_torchelastic_launched() ("True"/"False") to
--out-file (either spelling)."""
import argparse

import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--out-file", "--out_file", dest="out_file", required=True)
args = parser.parse_args()
with open(args.out_file, "w") as f:
    f.write(str(dist.is_torchelastic_launched()))
