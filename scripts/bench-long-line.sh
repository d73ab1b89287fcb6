#!/bin/sh
# Peak RSS of ddp-launch while one worker writes one 50 MB line (no newline until the end),
# against a worker that writes nothing, measured with GNU time (maximum resident set size).
# Usage: scripts/bench-long-line.sh [path/to/ddp-launch] [MEGABYTES]
set -eu
launcher=${1:-build-l/launcher/ddp-launch}
mb=${2:-50}
[ -x /usr/bin/time ] || { echo "needs GNU time (/usr/bin/time, Debian package 'time')" >&2; exit 1; }
peak_kib() {  # peak RSS of the launcher alone (the worker is a child: not counted by -f %M)
  /usr/bin/time -f '%M' -o /tmp/bench-long-line.$$ "$launcher" --nproc-per-node=1 "$@" >/dev/null 2>&1
  cat /tmp/bench-long-line.$$
  rm -f /tmp/bench-long-line.$$
}
quiet=$(peak_kib sh -c 'true')
long=$(peak_kib sh -c "head -c $((mb * 1024 * 1024)) /dev/zero | tr '\\0' x; echo")
echo "ddp-launch peak RSS, worker writes nothing:        $((quiet / 1024)) MiB ($quiet KiB)"
echo "ddp-launch peak RSS, worker writes one ${mb} MB line: $((long / 1024)) MiB ($long KiB)"
