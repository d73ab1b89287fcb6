#!/usr/bin/env bash
# bench-store.sh: the agent store vs c10d's TCPStore (Debian's LibTorch) on loopback —
# rendezvous rounds for K agents (default K = 8, 64, 256, 1024, 4096; TCPStore up to
# --c10d-max-agents, 1024) and single-client SET/GET throughput, alternating runs, medians
# and ratios as a Markdown table (see docs/store.md). A benchmark, not a test.
#
#   scripts/bench-store.sh [store_bench options]   e.g. --agents 8,64,256 --repeats 5 --ops 20000
#
# Env: BUILD_DIR (default build-bench), JOBS (default 2).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build-bench}"
jobs="${JOBS:-2}"

cmake -S "$root" -B "$build" -G Ninja -DDDP_BUILD_RUNTIME=ON -DDDP_BUILD_BENCH=ON -DDDP_BUILD_TESTS=OFF \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
if ! cmake --build "$build" --target store_bench -j "$jobs"; then
  echo "bench-store.sh: cannot build store_bench (is LibTorch installed? see scripts/install-deps.sh)" >&2
  exit 1
fi
echo "# $(date -u +%FT%TZ) $(nproc) CPUs, $(uname -r)"
exec "$build/bench/store_bench" "$@"
