"""Replay worker: checks that the torchelastic variables are set (a missing one raises
KeyError), then touches DIR/RANK; --fail raises instead. Accepts both spellings of the
directory flag, as the PyTorch test scripts of 1.13 and 2.x take them."""
import argparse
import os
import pathlib

VARIABLES = ("LOCAL_RANK", "RANK", "GROUP_RANK", "ROLE_RANK", "ROLE_NAME", "LOCAL_WORLD_SIZE", "WORLD_SIZE",
             "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT",
             "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID", "OMP_NUM_THREADS", "TEST_SENTINEL_PARENT",
             "TORCHELASTIC_ERROR_FILE")

parser = argparse.ArgumentParser()
parser.add_argument("--fail", action="store_true")
parser.add_argument("--touch-file-dir", "--touch_file_dir", dest="touch_file_dir")
args = parser.parse_args()
for name in VARIABLES:
    print(f"{name}={os.environ[name]}")
if args.fail:
    raise RuntimeError("--fail was given")
path = pathlib.Path(args.touch_file_dir, os.environ["RANK"])
path.touch()
print(f"touched {path}", flush=True)
