#!/usr/bin/env bash
# bench-recovery.sh: what a failure costs, torchrun and ddp-launch side by side (a benchmark,
# not a test). 2 workers under --max-restarts 1; (a) launch -> first completed training step,
# (b) SIGKILL of rank 1 after step KILL_STEP, KILL_AFTER s after the first step -> first
# completed step of the new attempt (any rank; then the job is stopped), (c)
# init_process_group per rank; medians (min-max) and ratios vs torchrun, as
# markdown. Configurations alternate run by run: torchrun (PYTHON's, below) and
# ddp-launch with bench/peers/python_ddp_recovery.py, and ddp-launch with build/trainers/train;
# cold, warm (--warm-restarts), launcher store (--worker-store) where this ddp-launch has them
# (skipped, saying so, where not). Builds ddp-launch and train into BUILD_DIR if missing.
#
#   scripts/bench-recovery.sh [RUNS]      RUNS per configuration, default 5, at least 5
#   QUICK=1 scripts/bench-recovery.sh     one run per configuration (a smoke run, no figures)
#
# Env: BUILD_DIR (scripts/lib.sh); PYTHON (the peers' Python, default the torch venv's: its
# torchrun, `-m torch.distributed.run`; PYTHON=/usr/bin/python3 for Debian's 1.13 through
# bench/peers/torchrun_fixed.py); CONFIGS (parts of configuration names separated by /, e.g.
# "torchrun/train" or "py, warm"); KILL_STEP (30), KILL_AFTER (3 s, QUICK: 0: time for the
# standbys to get ready), CHECKPOINT_EVERY (10), RUN_TIMEOUT (90 s).
# Exit: 0; 1 when a run failed (listed under the tables); 2 on bad usage or a missing tool.
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
(($# <= 1)) || die "one argument at most, RUNS; see scripts/bench-recovery.sh --help"
runs=${1:-${RUNS:-5}}
kill_step=${KILL_STEP:-30} kill_after=${KILL_AFTER:-3}
if [[ -n ${QUICK:-} ]]; then
  runs=1 kill_after=${KILL_AFTER:-0}
fi
[[ $runs =~ ^[0-9]+$ ]] || die "RUNS must be a whole number, got '$runs'"
[[ -n ${QUICK:-} ]] || ((runs >= 5)) || die "RUNS must be at least 5 for a median worth reporting, got $runs (QUICK=1 for a smoke run)"
positive() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }
checkpoint_every=${CHECKPOINT_EVERY:-10} run_timeout=${RUN_TIMEOUT:-90}
positive "$kill_step" || die "KILL_STEP must be a whole number >= 1, got '$kill_step'"
positive "$checkpoint_every" || die "CHECKPOINT_EVERY must be a whole number >= 1, got '$checkpoint_every'"
positive "$run_timeout" || die "RUN_TIMEOUT must be whole seconds >= 1, got '$run_timeout'"
[[ $kill_after =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "KILL_AFTER must be seconds (e.g. 3 or 0.5), got '$kill_after'"
need_bench_peers  # python (PYTHON or the torch venv's) and its torchrun; ddp-launch and train built; cd to the repository
exec "$python" scripts/bench_recovery.py --ddp-launch "$build_dir/launcher/ddp-launch" \
  --train "$build_dir/trainers/train" --torchrun "${torchrun[*]@Q}" \
  --peer bench/peers/python_ddp_recovery.py --runs "$runs" --kill-step "$kill_step" --kill-after "$kill_after" \
  --checkpoint-every "$checkpoint_every" --timeout "$run_timeout" --configs "${CONFIGS:-}"
