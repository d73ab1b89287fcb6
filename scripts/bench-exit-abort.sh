#!/usr/bin/env bash
# bench-exit-abort.sh: how often a job that did its work still ends non-zero (a benchmark, not a
# test; docs/benchmarks.md "Job-end aborts"). Each run is the elastic agent's "distributed sum"
# (tests/c10d/check_launch.py distributed_sum): two ddp-launch launchers (--nnodes=2,
# --rdzv-backend=c10d on loopback) x 4 Python workers (tests/c10d/store_worker.py) doing one
# all_reduce and returning, while BURNERS CPU burners (started and stopped here) load the
# machine. Prints one line per run that ended non-zero (both launchers' exit codes, and the
# worker lines that say how: "terminate called ...", a signal), then the count.
#
#   scripts/bench-exit-abort.sh [RUNS]    RUNS runs, default 100
#
# Env: PYTHON (the workers' interpreter, with torch; default the torch 2.x venv's, scripts/lib.sh
# torch_python; /usr/bin/python3 for Debian's torch 1.13), LAUNCHER (default
# BUILD_DIR/launcher/ddp-launch; PEER=torchrun runs that torch's torchrun instead, the same
# flags), DDP_LAUNCH_EXIT_DRAIN (passed to the workers: 0 turns ddp-launch's exit drain off,
# for the figure without it), BURNERS (2), RUN_TIMEOUT (seconds per run, 300), KEEP (a folder
# that keeps the failed runs' output; default a temporary one, removed unless a run failed).
# Exit: 0 when every run exited 0; 1 when a run did not; 2 on bad usage or a missing tool.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
case ${1:-} in
  -h | --help)
    usage
    exit 0
    ;;
esac
(($# <= 1)) || die "one argument at most, RUNS; see scripts/bench-exit-abort.sh --help"
runs=${1:-100}
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a whole number >= 1, got '$runs'"
burners=${BURNERS:-2} run_timeout=${RUN_TIMEOUT:-300}
[[ $burners =~ ^[0-9]+$ ]] || die "BURNERS must be a whole number, got '$burners'"
[[ $run_timeout =~ ^[1-9][0-9]*$ ]] || die "RUN_TIMEOUT must be whole seconds >= 1, got '$run_timeout'"
use_bench_python  # python, python_torch, torchrun
torch=$python_torch
case ${PEER:-ddp-launch} in
  ddp-launch)
    launcher=${LAUNCHER:-$build_dir/launcher/ddp-launch}
    [[ -x $launcher ]] || die "no $launcher: build ddp-launch first (or set LAUNCHER)"
    launch=("$launcher")
    ;;
  torchrun) launch=("${torchrun[@]}") launcher="torchrun (${torchrun[*]})" ;;
  *) die "PEER must be ddp-launch or torchrun, got '$PEER'" ;;
esac
need timeout
worker=$repo_root/tests/c10d/store_worker.py

keep=${KEEP:-}
logs=${keep:-$(mktemp -d)}
mkdir -p "$logs"
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done  # a SIGTERM can be lost
  wait 2>/dev/null || true
}
trap cleanup EXIT
for ((i = 0; i < burners; i++)); do
  sh -c 'while :; do :; done' &
  pids+=($!)
done

built=""
[[ -n ${LAUNCHER:-} || ${PEER:-} == torchrun ]] || built=" (checkout at git $(git -C "$repo_root" rev-parse --short HEAD))"
echo "# $(date -u +%FT%TZ) $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), torch $torch ($python)," \
  "$burners burners, launcher $launcher$built, DDP_LAUNCH_EXIT_DRAIN=${DDP_LAUNCH_EXIT_DRAIN-unset}"
failed=0
declare -A how=()
for ((run = 1; run <= runs; run++)); do
  port=$(free_port)
  common=(--nnodes=2 --nproc-per-node=4 --rdzv-backend=c10d "--rdzv-endpoint=127.0.0.1:$port" "--rdzv-id=abort$run"
    --max-restarts=0)
  codes=()
  launched=()
  for node in a b; do
    PYTHON_EXEC=$python OMP_NUM_THREADS=1 timeout -s KILL "$run_timeout" "${launch[@]}" "${common[@]}" "$worker" \
      >"$logs/run$run.$node" 2>&1 &
    launched+=($!)
  done
  for pid in "${launched[@]}"; do
    code=0
    wait "$pid" || code=$?
    codes+=("$code")
  done
  if [[ ${codes[*]} == "0 0" ]]; then
    rm -f "$logs/run$run.a" "$logs/run$run.b"
    continue
  fi
  failed=$((failed + 1))
  # How: the first worker line that names an abort or a signal, else the exit codes alone.
  why=$(grep -hoE '(\[rank[0-9]+\]: )?terminate called [a-z ]+|rank [0-9]+ \(local_rank [0-9]+, pid [0-9]+\) failed with [^;]+' \
    "$logs/run$run.a" "$logs/run$run.b" | head -1 || true)
  key="exit ${codes[*]}: ${why:-no worker line}"
  key=$(sed -E 's/\[rank[0-9]+\]/[rankN]/; s/rank [0-9]+ \(local_rank [0-9]+, pid [0-9]+\)/rank N/' <<<"$key")
  how[$key]=$((${how[$key]:-0} + 1))
  echo "run $run: launchers exited ${codes[0]} and ${codes[1]}${why:+; $why} (output: $logs/run$run.a, .b)"
done

echo "$failed of $runs runs ended non-zero (torch $torch, $burners burners, ${PEER:-ddp-launch})"
for key in "${!how[@]}"; do echo "  ${how[$key]} x $key"; done
if ((failed == 0)) && [[ -z $keep ]]; then rm -rf "$logs"; fi
((failed == 0))
