#!/usr/bin/env bash
# File timers benchmark (not a test): torch's FileTimerClient under ddp-launch and under torchrun
# of the same torch, alternating runs, medians (scripts/bench_file_timers.py): how long after its
# deadline a guarded worker dies, and what 1000 live timers from 8 workers cost the launcher
# process (its own CPU time, as a share of one core), beside the same run without timers.
# Usage: scripts/bench-file-timers.sh [RUNS] [HOLD_S]   (default 5 runs, 10 s held)
# Env: BUILD_DIR (scripts/lib.sh), PYTHON (the workers' and torchrun's; default the torch venv's).
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$repo_root"
case ${1:-} in
  -h | --help)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
esac
runs=${1:-5}
hold=${2:-10}
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a whole number >= 1, got '$runs'"
[[ $hold =~ ^[0-9]+([.][0-9]+)?$ ]] || die "HOLD_S must be a number of seconds, got '$hold'"
use_bench_python
build=${build_dir#"$repo_root/"}
if [[ ! -x $build/launcher/ddp-launch ]]; then
  cmake -S . -B "$build" -G Ninja >/dev/null
  cmake --build "$build" --target ddp-launch >/dev/null
fi
"$python" scripts/bench_file_timers.py --launcher "$build/launcher/ddp-launch" --python "$python" --runs "$runs" \
  --hold "$hold"
