#!/usr/bin/env bash
# Launcher benchmark (not a test): ddp-launch vs torchrun (Debian's PyTorch 1.13 through
# bench/peers/torchrun_fixed.py, --monitor-interval 0.1), alternating runs, medians.
# Usage: scripts/bench-launcher.sh [RUNS]   (builds ddp-launch into BUILD_DIR if needed)
# Env: BUILD_DIR (scripts/lib.sh), PEERS_DIR (default bench/peers).
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$repo_root"
runs=${1:-10}
peers=${PEERS_DIR:-bench/peers}
build=${build_dir#"$repo_root/"}
if [[ ! -x $build/launcher/ddp-launch ]]; then
  cmake -S . -B "$build" -G Ninja >/dev/null
  cmake --build "$build" --target ddp-launch >/dev/null
fi
/usr/bin/python3 scripts/bench_launcher.py "$build/launcher/ddp-launch" "$peers/torchrun_fixed.py" --runs "$runs"
