#!/usr/bin/env bash
# bench-store-hostile.sh: the agent store's host under hostile load on loopback — its RSS
# and a well-behaved client's PING latency with no other client, then with N hostile ones
# (see bench/store_hostile_bench.cpp and docs/store.md). Torch-free. A benchmark, not a test.
#
#   scripts/bench-store-hostile.sh [HOSTILE_CLIENTS (default 100)] [SECONDS per phase (default 6)]
#
# Env: BUILD_DIR (scripts/lib.sh; configured there if it is not yet, store_hostile_bench
# built there), JOBS (default 2).
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
jobs="${JOBS:-2}"

[[ -f $build_dir/CMakeCache.txt ]] || cmake -S "$repo_root" -B "$build_dir" -G Ninja >/dev/null
cmake --build "$build_dir" --target store_hostile_bench -j "$jobs" >/dev/null
echo "# $(date -u +%FT%TZ) $(nproc) CPUs, $(uname -r), git $(git -C "$repo_root" rev-parse --short HEAD)"
exec "$build_dir/tests/store/store_hostile_bench" "${1:-100}" "${2:-6}"
