#!/usr/bin/env bash
# bench-worker-store.sh: how long init_process_group("gloo") takes per rank with the launcher
# hosting the workers' store (--worker-store=launcher) and with worker rank 0 hosting it
# (--worker-store=rank0): RUNS launches of NPROC Python workers each, alternating, every
# rank's time; prints median, maximum and how many ranks took 0.9 s or more (c10d's client
# sleeps about a second after a refused connect). A benchmark, not a test.
#
#   scripts/bench-worker-store.sh [RUNS] [NPROC]      (default 8 4; PYTHON: python3 with torch)
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
runs=${1:-8} nproc=${2:-4} python=${PYTHON:-/usr/bin/python3}
launcher=$build_dir/launcher/ddp-launch
[[ -x $launcher ]] || die "no $launcher: build it first (cmake --build $build_dir --target ddp-launch)"
"$python" -c 'import torch' 2>/dev/null || die "$python has no torch; set PYTHON"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/init.py" <<'W'
import os, time
import torch.distributed as dist
t = time.monotonic()
dist.init_process_group("gloo")
print(f"INIT {time.monotonic() - t:.3f}", flush=True)
W
for ((i = 0; i < runs; i++)); do
  for mode in launcher rank0; do
    PYTHON_EXEC=$python "$launcher" --nproc-per-node="$nproc" --worker-store=$mode "$work/init.py" 2>&1 |
      sed -n 's/.*INIT \([0-9.]*\)$/\1/p' >>"$work/$mode"
  done
done
for mode in launcher rank0; do
  mapfile -t times < <(sort -n "$work/$mode")
  slow=$(awk '$1 >= 0.9' "$work/$mode" | wc -l)
  printf '%-8s ranks %3d  median %ss  max %ss  >=0.9s: %d\n' "$mode" "${#times[@]}" \
    "$(median "${times[@]}")" "${times[-1]}" "$slow"
done
