#!/usr/bin/env bash
# ZeroRedundancyOptimizer vs the unsharded optimizer under libddp's DDP: the benchmark MLP
# (784-1024-1024-1024-10, batch 32, gloo on CPU, OMP_NUM_THREADS=1) with Adam and SGD momentum,
# each world size, runs alternating plain/ZeRO; prints per case the median samples/s and the
# optimizer state's bytes (rank 0's and the largest rank's; the unsharded state on every rank).
# Env: BUILD_DIR (scripts/lib.sh; ddp_bench and ddp-launch are built there if missing),
#      REPEATS (default 3), WORLDS (default "2 3"), OPTIMIZERS (default "adam sgd"), STEPS (default 50).
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$repo_root"
bench=$build_dir/tests/runtime/ddp_bench
launcher=$build_dir/launcher/ddp-launch
if [[ ! -x $bench || ! -x $launcher ]]; then
  cmake -S . -B "$build_dir" -G Ninja >/dev/null
  cmake --build "$build_dir" --target ddp_bench ddp-launch >/dev/null
fi
repeats=${REPEATS:-3}
export OMP_NUM_THREADS=1
echo "# $(nproc --all) cores, load average $(cut -d" " -f1-3 /proc/loadavg), $(date -u +%FT%TZ), repeats=$repeats"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for world in ${WORLDS:-2 3}; do
  for optimizer in ${OPTIMIZERS:-adam sgd}; do
    for ((i = 0; i < repeats; i++)); do
      for zero in 0 1; do
        "$launcher" --nproc-per-node="$world" "$bench" --optimizer "$optimizer" --zero "$zero" \
          --steps "${STEPS:-50}" --warmup 5 2>/dev/null | grep -o 'peer=.*' | tee -a "$out"
      done
    done
  done
done
/usr/bin/python3 - "$out" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    kv = dict(tok.split("=", 1) for tok in line.split())
    key = (int(kv["world"]), kv["optimizer"], int(kv["zero"]))
    rows.setdefault(key, []).append(kv)
print("| world | optimizer | ZeRO | samples/s (median) | state bytes rank 0 | largest rank | of unsharded |")
print("|---|---|---|---|---|---|---|")
for key in sorted(rows):
    world, optimizer, zero = key
    runs = rows[key]
    rate = statistics.median(float(r["samples_per_s"]) for r in runs)
    full = rows.get((world, optimizer, 0), runs)[0]["state_bytes_max"]
    biggest = int(runs[0]["state_bytes_max"])
    print(f"| {world} | {optimizer} | {'yes' if zero else 'no'} | {rate:.0f} | {runs[0]['state_bytes']} "
          f"| {biggest} | {biggest / int(full):.3f} |")
PY
