#!/usr/bin/env bash
# Containment benchmark (not a test): what ending a job's leftovers costs. ddp-launch with a
# cgroup and with the subreaper alone, beside torchrun (--monitor-interval 0.1) and the floor,
# alternating runs, medians (scripts/bench_containment.py): a job that leaves nothing, and one
# whose 4 workers leave 5 helpers each (ddp-launch ends them; torchrun leaves them).
# Usage: scripts/bench-containment.sh [RUNS]   (default 10)
# Env: BUILD_DIR (scripts/lib.sh), PYTHON (the torchrun's), BEFORE (another ddp-launch to compare).
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$repo_root"
runs=${1:-10}
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a whole number >= 1, got '$runs'"
use_bench_python
[[ -x $build_dir/launcher/ddp-launch ]] || die "no $build_dir/launcher/ddp-launch: build first (cmake --build $build_dir)"
"$python" scripts/bench_containment.py "$build_dir/launcher/ddp-launch" --torchrun "${torchrun[*]@Q}" --runs "$runs" \
  ${BEFORE:+--before "$BEFORE"}
