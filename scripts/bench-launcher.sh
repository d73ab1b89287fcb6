#!/usr/bin/env bash
# Launcher benchmark (not a test): ddp-launch vs torchrun (--monitor-interval 0.1), alternating
# runs, medians, and in case (a) two floors in the same runs (scripts/bench_launcher.py). torchrun
# is that of PYTHON (scripts/lib.sh use_bench_python; default the torch venv's, `python -m
# torch.distributed.run`; PYTHON=/usr/bin/python3: Debian's 1.13 through
# bench/peers/torchrun_fixed.py).
# Usage: scripts/bench-launcher.sh [RUNS]   (default 10; builds ddp-launch into BUILD_DIR if needed)
# Env: BUILD_DIR (scripts/lib.sh), PYTHON.
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
runs=${1:-10}
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a whole number >= 1, got '$runs'"
use_bench_python  # python (PYTHON or the torch venv's) and its torchrun
build=${build_dir#"$repo_root/"}
if [[ ! -x $build/launcher/ddp-launch ]]; then
  cmake -S . -B "$build" -G Ninja >/dev/null
  cmake --build "$build" --target ddp-launch >/dev/null
fi
"$python" scripts/bench_launcher.py "$build/launcher/ddp-launch" --torchrun "${torchrun[*]@Q}" --runs "$runs"
