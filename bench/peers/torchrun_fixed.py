# torchrun for the legacy peers only: the benchmarks run it when their Python's torch is 1.x
# (PYTHON=/usr/bin/python3, Debian's python3-torch 1.13; scripts/lib.sh use_bench_python and
# scripts/bench_records.py torchrun_argv choose); torch 2.x runs its own `-m torch.distributed.run`.
# Usage: /usr/bin/python3 bench/peers/torchrun_fixed.py
#   --standalone --nproc_per_node=4 --monitor_interval=0.1 --no_python PROGRAM
# torchrun from Debian's python3-torch 1.13 with its Python 3.11 IntFlag bug worked around
# (Std.from_str("0") gives None on 3.11, which breaks every launch). The __main__ guard
# matters: --run_path workers are multiprocessing "spawn" children that re-import this file.
import re
import sys

from torch.distributed.elastic.multiprocessing import api

_orig = api.Std.from_str


def from_str(vm):
    if re.fullmatch(r"[0-3]", vm):
        return api.Std(int(vm))
    return _orig(vm)


api.Std.from_str = staticmethod(from_str)

if __name__ == "__main__":
    from torch.distributed.run import main

    sys.exit(main())
