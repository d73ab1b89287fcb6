#!/usr/bin/env bash
# Launcher benchmark (not a test): ddp-launch vs torchrun (Debian's PyTorch 1.13 through
# bench/peers/torchrun_fixed.py, --monitor-interval 0.1), alternating runs, medians.
# Usage: scripts/bench-launcher.sh [RUNS]   (builds ddp-launch into build/ if needed)
# Env: PEERS_DIR (default bench/peers).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
peers=${PEERS_DIR:-bench/peers}
if [[ ! -x build/launcher/ddp-launch ]]; then
  cmake -S . -B build -G Ninja >/dev/null
  cmake --build build --target ddp-launch >/dev/null
fi
/usr/bin/python3 scripts/bench_launcher.py build/launcher/ddp-launch "$peers/torchrun_fixed.py" --runs "$runs"
