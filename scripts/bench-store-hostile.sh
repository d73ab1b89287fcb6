#!/usr/bin/env bash
# bench-store-hostile.sh: the agent store's host under hostile load on loopback — its RSS
# and a well-behaved client's PING latency with no other client, then with N hostile ones
# (see bench/store_hostile_bench.cpp and docs/store.md). Torch-free. A benchmark, not a test.
#
#   scripts/bench-store-hostile.sh [HOSTILE_CLIENTS (default 100)] [SECONDS per phase (default 6)]
#
# Env: BUILD_DIR (default build-l, the launcher-only build), JOBS (default 2).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build-l}"
jobs="${JOBS:-2}"

cmake -S "$root" -B "$build" -G Ninja -DDDP_BUILD_RUNTIME=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target store_hostile_bench -j "$jobs" >/dev/null
echo "# $(date -u +%FT%TZ) $(nproc) CPUs, $(uname -r), git $(git -C "$root" rev-parse --short HEAD)"
exec "$build/tests/store/store_hostile_bench" "${1:-100}" "${2:-6}"
