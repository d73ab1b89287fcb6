#!/usr/bin/env bash
# bench-warm-restarts.sh: SIGKILL of one worker -> the first training step of the restart,
# warm (standbys, the default with --max-restarts) vs cold (--no-warm-restarts), for a plain
# Python DDP script and for libddp's `train` (when built), medians of RUNS; and a standby's
# cost. Uses BUILD_DIR's ddp-launch and train. A benchmark, not a test (docs/warm-restarts.md).
#
#   scripts/bench-warm-restarts.sh [RUNS]     (default 5; PYTHON: an interpreter with torch)
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
runs=${1:-5}
python=${PYTHON:-/usr/bin/python3}
launcher=$build_dir/launcher/ddp-launch
[[ -x $launcher ]] || die "no $launcher; build it first (cmake --build $build_dir --target ddp-launch)"
train=()
[[ -x $build_dir/trainers/train ]] && train=(--train "$build_dir/trainers/train")
exec "$python" "$repo_root/scripts/bench_warm_restarts.py" --launcher "$launcher" --python "$python" \
  "${train[@]}" --runs "$runs"
