#!/usr/bin/env bash
# Peak RSS of ddp-launch while one worker writes one 50 MB line (no newline until the end),
# against a worker that writes nothing, measured with GNU time (maximum resident set size).
# Usage: scripts/bench-long-line.sh [path/to/ddp-launch] [MEGABYTES]
#   (default: BUILD_DIR's ddp-launch, scripts/lib.sh)
set -eu
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
launcher=${1:-$build_dir/launcher/ddp-launch}
mb=${2:-50}
need 1 /usr/bin/time
peak_kib() {  # peak RSS of the launcher alone (the worker is a child: not counted by -f %M)
  /usr/bin/time -f '%M' -o /tmp/bench-long-line.$$ "$launcher" --nproc-per-node=1 "$@" >/dev/null 2>&1
  cat /tmp/bench-long-line.$$
  rm -f /tmp/bench-long-line.$$
}
quiet=$(peak_kib sh -c 'true')
long=$(peak_kib sh -c "head -c $((mb * 1024 * 1024)) /dev/zero | tr '\\0' x; echo")
echo "ddp-launch peak RSS, worker writes nothing:        $((quiet / 1024)) MiB ($quiet KiB)"
echo "ddp-launch peak RSS, worker writes one ${mb} MB line: $((long / 1024)) MiB ($long KiB)"
