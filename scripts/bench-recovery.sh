#!/usr/bin/env bash
# bench-recovery.sh: where a restart's time goes. RUNS single-node jobs of NPROC workers
# (--max-restarts=1); rank 1 fails once in attempt 0 (py, torch: exits 3; train: SIGKILLs
# itself at step 5, --fail-at-step); the other ranks go on until stopped.
# Each run's `recovery` summary in events.jsonl (docs/events.md "Recovery") gives the stop,
# store, start and first-step phases; the medians are printed. A benchmark, not a test.
#
#   scripts/bench-recovery.sh RUNS KIND [NPROC]
#   KIND: py    (python3, the standard library and python/ddp_progress.py: no torch)
#         torch (/usr/bin/python3 importing torch first, as a real training script does)
#         train (the C++ trainer on libddp: LibTorch loaded at every start; a full build)
# Env: BUILD_DIR (scripts/lib.sh: needs ddp-launch), PYTHON (default python3, /usr/bin/python3 for
# torch), TRAIN (default BUILD_DIR/trainers/train).
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
runs=${1:?usage: bench-recovery.sh RUNS py|torch|train [NPROC]}
kind=${2:?usage: bench-recovery.sh RUNS py|torch|train [NPROC]}
nproc=${3:-2}
launcher=$build_dir/launcher/ddp-launch
[[ -x $launcher ]] || die "no $launcher: build the ddp-launch target first (BUILD_DIR=$build_dir)"
work=$(mktemp -d)
trap '[[ -n ${KEEP:-} ]] || rm -rf "$work"' EXIT
case $kind in
  py) python=${PYTHON:-python3} imports="" ;;
  torch) python=${PYTHON:-/usr/bin/python3} imports="import torch" ;;
  train) train=${TRAIN:-$build_dir/trainers/train} imports="" ;;
  *) die "KIND is py, torch or train, not '$kind'" ;;
esac
if [[ $kind == train ]]; then
  [[ -x $train ]] || die "no $train: build the train target (a full build, with LibTorch) or set TRAIN"
  program=("$train" --epochs 1 --train-samples 8192 --val-samples 512 --fail-at-step 5 --fail-rank 1
           --checkpoint-dir "$work/checkpoints" --no-resume)
else
  program=("$python" "$work/worker.py")
fi
cat > "$work/worker.py" <<W
import os, sys, time
$imports
sys.path.insert(0, "$repo_root/python")
import ddp_progress as p
p.heartbeat(1)
if os.environ["TORCHELASTIC_RESTART_COUNT"] == "0":
    if os.environ["RANK"] == "1":
        time.sleep(0.5)
        sys.exit(3)
    time.sleep(100)
for step in range(2, 4):
    p.heartbeat(step)
W
for ((i = 0; i < runs; i++)); do
  OMP_NUM_THREADS=1 "$launcher" --nproc-per-node="$nproc" --max-restarts=1 --log-dir "$work/logs.$i" \
    "${program[@]}" >/dev/null 2>&1 || die "run $i failed"
done
echo "# $(date -u +%FT%TZ) $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $runs runs, $kind, $nproc workers"
python3 - "$work" "$runs" <<'P'
import glob, json, statistics, sys
work, runs = sys.argv[1], int(sys.argv[2])
rows = []
for i in range(runs):
    for path in glob.glob(f"{work}/logs.{i}/*/events.jsonl"):
        for line in open(path):
            e = json.loads(line)
            if e["event"] == "recovery" and e["phase"] == "summary":
                rows.append(e)
keys = ["stop_s", "store_s", "start_s", "first_step_s", "total_s"]
print("| phase | median | min | max |")
print("|---|---:|---:|---:|")
for k in keys:
    v = [r[k] for r in rows if k in r]
    if v:
        print(f"| {k[:-2]} | {statistics.median(v) * 1000:.1f} ms | {min(v) * 1000:.1f} ms | {max(v) * 1000:.1f} ms |")
P
