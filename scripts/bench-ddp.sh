#!/usr/bin/env bash
# C++ DDP (libddp, tests/runtime/bench.cpp) vs PyTorch's Python DDP (bench/peers/python_ddp_bench.py)
# on gloo/CPU: the MLP 784-1024-1024-1024-10 (batch 32) and the tiny 10-10-5 model (batch 20),
# world 1 and 2, runs alternating C++/Python, medians and ratios. Both are started by the same
# launcher, the torchrun of the peers' Python, OMP_NUM_THREADS=1.
# Env: PYTHON: the peers' Python (scripts/lib.sh use_bench_python; default the torch venv's, its
#      torchrun `-m torch.distributed.run`; PYTHON=/usr/bin/python3: Debian's 1.13, torchrun
#      through bench/peers/torchrun_fixed.py).
#      BUILD_DIR (scripts/lib.sh; ddp_bench is built there if missing), REPEATS (default 3),
#      PEERS (default bench/peers), WORLDS (default "1 2"), CASES (default "mlp tiny"; "" skips).
# Comm hooks section (hook_rows below): HOOKS (default "allreduce fp16 bf16 powersgd"; ""
#      skips it), PSGD_RANK (default 2): the MLP at world 2 with each hook, libddp and Python DDP
#      side by side, plus the compute floor (one worker alone, no communication);
#      PY_HOOK_TIMEOUT (default 180 s): a Python hook run that hangs is stopped and reported.
# FEED=1: only the hang-detection feed's cost, on vs off (section "feed on/off" below).
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$repo_root"
use_bench_python  # python, python_torch, torchrun
build=${build_dir#"$repo_root/"}
repeats=${REPEATS:-3}
peers=${PEERS:-$PWD/bench/peers}
bench=$build/tests/runtime/ddp_bench
if [[ ! -x $bench ]]; then
  cmake -S . -B "$build" -G Ninja >/dev/null
  cmake --build "$build" --target ddp_bench >/dev/null
fi
cores=$(nproc --all)
export OMP_NUM_THREADS=1
if ls /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3 >/dev/null 2>&1; then
  blas=$(readlink -f /etc/alternatives/libblas.so.3-x86_64-linux-gnu 2>/dev/null || true)
  echo "# BLAS: ${blas:-unknown}"
fi
echo "# $cores cores, load average $(cut -d" " -f1-3 /proc/loadavg), $(date -u +%FT%TZ), repeats=$repeats"
echo "# peers: torch $python_torch ($python), torchrun: ${torchrun[*]}"

# ---- feed on/off (FEED=1; the hangs engineer's section, docs/hangs.md) -------------------
# The hang-detection progress feed's cost on the tiny model's step: ddp_bench under
# ddp-launch with the feed on (DDP_LAUNCH_PROGRESS_FILE set by the launcher) and off (`env -u`
# in front of the program), runs alternating, medians of the step time and their ratio.
# Env: FEED_RUNS (default 15 pairs), FEED_STEPS (default 10000), FEED_WORLD (default 1).
feed_bench() {
  local launcher=$build/launcher/ddp-launch runs=${FEED_RUNS:-15} steps=${FEED_STEPS:-10000}
  local world=${FEED_WORLD:-1} out on off
  [[ -x $launcher ]] || cmake --build "$build" --target ddp-launch >/dev/null
  local args="--in-dim 10 --hidden 10 --layers 2 --classes 5 --batch 20 --warmup 50 --steps $steps"
  out=$(mktemp)
  for ((i = 0; i < runs; i++)); do
    # shellcheck disable=SC2086
    on=$("$launcher" --nproc-per-node="$world" "$bench" $args 2>/dev/null | grep -o 'peer=.*' | head -1)
    # shellcheck disable=SC2086
    off=$("$launcher" --nproc-per-node="$world" env -u DDP_LAUNCH_PROGRESS_FILE "$bench" $args 2>/dev/null |
      grep -o 'peer=.*' | head -1)
    echo "feed=on $on" | tee -a "$out"
    echo "feed=off $off" | tee -a "$out"
  done
  "$python" - "$out" "$world" <<'PY'
import statistics, sys
step = {"on": [], "off": []}
for line in open(sys.argv[1]):
    kv = dict(tok.split("=", 1) for tok in line.split())
    # step_ms is printed to 0.01 ms: the step time from the throughput is finer
    step[kv["feed"]].append(1000 * int(kv["batch"]) * int(kv["world"]) / float(kv["samples_per_s"]))
on, off = statistics.median(step["on"]), statistics.median(step["off"])
pairs = [a / b for a, b in zip(step["on"], step["off"])]
print(f"\n# feed on/off, tiny model, world {sys.argv[2]}, {len(pairs)} pairs: median step {on:.4f} ms on, "
      f"{off:.4f} ms off, ratio {on / off:.3f}; per-pair ratio median {statistics.median(pairs):.3f}, "
      f"feed on faster in {sum(p < 1 for p in pairs)} of {len(pairs)}")
PY
  rm -f "$out"
}
if [[ ${FEED:-0} == 1 ]]; then
  feed_bench
  exit 0
fi
# ---- end of feed on/off ------------------------------------------------------------------

args_for() {
  case $1 in
    mlp) echo "--steps 100 --warmup 10" ;;
    tiny) echo "--in-dim 10 --hidden 10 --layers 2 --classes 5 --batch 20 --steps 2000 --warmup 50" ;;
  esac
}

launch() {  # world, then the program and its arguments
  local world=$1; shift
  "${torchrun[@]}" --standalone --nproc_per_node="$world" \
    --monitor_interval=0.1 "$@" 2>/dev/null | grep '^peer='
}

results=$(mktemp)
trap 'rm -f "$results"' EXIT
for case_name in ${CASES-mlp tiny}; do
  for world in ${WORLDS:-1 2}; do
    for ((i = 0; i < repeats; i++)); do
      # shellcheck disable=SC2046
      line=$(launch "$world" --no_python "$bench" $(args_for "$case_name"))
      echo "case=$case_name $line" | tee -a "$results"
      # shellcheck disable=SC2046
      line=$(launch "$world" "$peers/python_ddp_bench.py" $(args_for "$case_name"))
      echo "case=$case_name $line" | tee -a "$results"
    done
  done
done

summarize_cases() {
"$python" - "$1" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    kv = dict(tok.split("=", 1) for tok in line.split())
    key = (kv["case"], kv["peer"], int(kv["world"]))
    rows.setdefault(key, []).append((float(kv["samples_per_s"]), float(kv["step_ms"])))
med = {k: (statistics.median(v[0] for v in vs), statistics.median(v[1] for v in vs)) for k, vs in rows.items()}
print("\n# medians")
print(f"{'case':5} {'world':>5} {'cpp samples/s':>14} {'py samples/s':>13} {'cpp step_ms':>12} {'py step_ms':>11} {'cpp/py speed':>13}")
for case in sorted({k[0] for k in med}):
    for world in sorted({k[2] for k in med if k[0] == case}):
        c, p = med.get((case, "cpp-ddp", world)), med.get((case, "python-ddp", world))
        if c and p:
            print(f"{case:5} {world:5d} {c[0]:14.1f} {p[0]:13.1f} {c[1]:12.3f} {p[1]:11.3f} {c[0] / p[0]:13.2f}")
    for peer in ("cpp-ddp", "python-ddp"):
        one, two = med.get((case, peer, 1)), med.get((case, peer, 2))
        if one and two:
            print(f"{case:5} scaling efficiency {peer}: {two[0] / (2 * one[0]):.2f} (world 2 vs 2x world 1)")
PY
}
[[ -s $results ]] && summarize_cases "$results"

# ---- comm hooks (libddp hooks::*, PyTorch's default_hooks / powerSGD_hook) ----------------
# One Python run; prints its peer= line, or "peer=python-ddp world=W reason=<first error line>".
python_run() {
  local world=$1; shift
  local log line
  log=$(mktemp)
  # PyTorch 1.13's PowerSGD hook on gloo usually aborts, but once in a while it hangs instead.
  line=$(timeout -k 5 "${PY_HOOK_TIMEOUT:-180}" "${torchrun[@]}" --standalone \
    --nproc_per_node="$world" --monitor_interval=0.1 "$peers/python_ddp_bench.py" "$@" 2>"$log" |
    grep '^peer=' || true)
  if [[ -z $line ]]; then
    line="peer=python-ddp world=$world reason=$(grep -m1 -oE '(enforce fail[^"]*|[A-Za-z]+Error: [^"]*)' "$log" | cut -c1-110)"
    [[ $line == *reason= ]] && line+="no result line (it failed, or hung past PY_HOOK_TIMEOUT=${PY_HOOK_TIMEOUT:-180} s)"
  fi
  rm -f "$log"
  echo "$line"
}

hook_rows() {
  local out=$1 hook line
  for ((i = 0; i < repeats; i++)); do
    # shellcheck disable=SC2046
    line=$(launch 1 --no_python "$bench" $(args_for mlp) || true)
    echo "hook=floor $line" | tee -a "$out"
    # Two such workers at once (no communication at all): what two workers can compute on
    # this machine, the true ceiling of any hook at world 2.
    # shellcheck disable=SC2046
    { launch 1 --no_python "$bench" $(args_for mlp) > "$out.a" || true; } &
    # shellcheck disable=SC2046
    launch 1 --no_python "$bench" $(args_for mlp) > "$out.b" || true
    wait
    line=$(cat "$out.a" "$out.b" | "$python" -c '
import sys
kv = [dict(t.split("=", 1) for t in l.split()) for l in sys.stdin if l.strip()]
if len(kv) == 2:
    total = sum(float(k["samples_per_s"]) for k in kv)
    slowest = max(float(k["step_ms"]) for k in kv)
    print("peer=cpp-ddp world=2 samples_per_s=%.1f step_ms=%.3f" % (total, slowest))')
    rm -f "$out.a" "$out.b"
    [[ -n $line ]] && echo "hook=floor2 $line" | tee -a "$out"
    for hook in $HOOKS; do
      # shellcheck disable=SC2046
      line=$(launch 2 --no_python "$bench" $(args_for mlp) --comm-hook "$hook" --powersgd-rank "$PSGD_RANK" || true)
      echo "hook=$hook ${line:-peer=cpp-ddp world=2 reason=no result line}" | tee -a "$out"
      # shellcheck disable=SC2046
      line=$(python_run 2 $(args_for mlp) --comm-hook "$hook" --powersgd-rank "$PSGD_RANK")
      echo "hook=$hook $line" | tee -a "$out"
    done
  done
}

summarize_hooks() {
"$python" - "$1" <<'PY'
import statistics, sys
rows, reasons = {}, {}
for line in open(sys.argv[1]):
    head, _, reason = line.rstrip("\n").partition(" reason=")
    kv = dict(tok.split("=", 1) for tok in head.split())
    key = (kv["hook"], kv["peer"])
    if reason:
        reasons[key] = reason
    else:
        rows.setdefault(key, []).append((float(kv["samples_per_s"]), float(kv["step_ms"])))
med = {k: (statistics.median(v[0] for v in vs), statistics.median(v[1] for v in vs)) for k, vs in rows.items()}
base = med.get(("allreduce", "python-ddp"))
print("\n# comm hooks: MLP, world 2, medians (x py allreduce: samples/s over Python DDP's plain all-reduce)")
print(f"{'hook':10} {'cpp samples/s':>14} {'cpp step_ms':>12} {'x py allreduce':>15}   {'py samples/s':>12} {'py step_ms':>11}")
def cell(key):
    if key in med:
        return med[key]
    return None
for hook in [h for h in dict.fromkeys(k[0] for k in list(med) + list(reasons)) if h not in ("floor", "floor2")]:
    c, p = cell((hook, "cpp-ddp")), cell((hook, "python-ddp"))
    left = f"{c[0]:14.1f} {c[1]:12.2f} {c[0] / base[0] if base else float('nan'):15.2f}" if c else \
        f"{'fails: ' + reasons.get((hook, 'cpp-ddp'), '?'):>42}"
    right = f"{p[0]:12.1f} {p[1]:11.2f}" if p else "fails: " + reasons.get((hook, "python-ddp"), "?")
    print(f"{hook:10} {left}   {right}")
floor = med.get(("floor", "cpp-ddp"))
if floor:
    print(f"compute floor: 1 worker alone {floor[0]:.1f} samples/s ({floor[1]:.2f} ms/step); world 2 with free "
          f"communication would reach 2x = {2 * floor[0]:.1f} samples/s"
          + (f" = {2 * floor[0] / base[0]:.2f}x py allreduce" if base else ""))
floor2 = med.get(("floor2", "cpp-ddp"))
if floor2:
    print(f"compute floor, two workers at once (no communication): {floor2[0]:.1f} samples/s"
          + (f" = {floor2[0] / base[0]:.2f}x py allreduce: no hook at world 2 can go faster" if base else ""))
PY
}

if [[ -n ${HOOKS-allreduce fp16 bf16 powersgd} ]]; then
  HOOKS=${HOOKS-allreduce fp16 bf16 powersgd}
  PSGD_RANK=${PSGD_RANK:-2}
  hook_results=$(mktemp)
  trap 'rm -f "$results" "$hook_results"' EXIT
  echo "# comm hooks: HOOKS='$HOOKS' PSGD_RANK=$PSGD_RANK"
  hook_rows "$hook_results"
  summarize_hooks "$hook_results"
fi
