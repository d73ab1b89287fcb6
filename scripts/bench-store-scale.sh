#!/usr/bin/env bash
# bench-store-scale.sh: the workers' store at the scale of jobs of 1k-20k ranks (a benchmark,
# not a test). Emulated torch 2.x ranks (tests/c10d/store_crowd.cpp) against ddp-launch's
# workers' store, torch 2.x's own TCPStore server (libuv backend) and the floor (the least a
# server must do to answer them), side by side, alternating: seconds to release every rank,
# connections refused and reset, the server's RSS growth and CPU seconds, as one Markdown table
# (scripts/bench_store_scale.py says more; docs/store.md "Jobs of many ranks"). Builds the two
# test tools into BUILD_DIR if missing.
#
#   scripts/bench-store-scale.sh [--sizes LIST] [--shapes LIST] [--servers LIST] [--rounds N]
#                                [--per-process N] [--timeout S] [--sources K] [--plot OUT.png]
#
# Defaults: --sizes 1024,4096,16384,max (max: the largest job this process's hard open-file
# limit allows, the limit minus the 256 files the launcher keeps), --shapes barrier,init,
# --servers ddp-launch,torch,floor, --rounds 3, --per-process 8000, --timeout 120, --sources 1
# (K > 1: the ranks connect from 127.0.0.1..K, names torch's server cannot look up); --plot:
# also the medians as a PNG (gnuplot).
# Env: BUILD_DIR (scripts/lib.sh); PYTHON (the Python with torch 2.x for its server, default
# the torch venv's).
# Exit: 0; 1 when a run failed; 2 on bad usage or a missing tool.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
args=()
while (($#)); do
  case $1 in
    -h | --help)
      usage
      exit 0
      ;;
    --sizes | --shapes | --servers | --rounds | --per-process | --timeout | --sources | --plot)
      (($# >= 2)) || die "$1 needs a value; see scripts/bench-store-scale.sh --help"
      args+=("$1" "$2")
      shift 2
      ;;
    *) die "unknown argument '$1'; see scripts/bench-store-scale.sh --help" ;;
  esac
done
use_bench_python
cd "$repo_root" || die "cannot cd to $repo_root"
tools=("$build_dir/tests/c10d/c10d_store_helper" "$build_dir/tests/c10d/c10d_store_crowd")
if [[ ! -x ${tools[0]} || ! -x ${tools[1]} ]]; then
  [[ -f $build_dir/CMakeCache.txt ]] || cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build_dir" --target c10d_store_helper c10d_store_crowd >/dev/null ||
    die 1 "cannot build c10d_store_helper and c10d_store_crowd in $build_dir"
fi
exec "$python" scripts/bench_store_scale.py --helper "${tools[0]}" --crowd "${tools[1]}" "${args[@]}"
