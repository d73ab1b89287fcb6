#!/usr/bin/env bash
# bench-restart.sh: multi-node failure -> restart on the OTHER node, on loopback. Two
# launchers (static rendezvous, one worker each, --max-restarts=1); node 1's worker exits 3
# once both run; the time from just before that exit to node 0's worker of the next
# round starting. Alternating runs of each binary given, medians. A benchmark, not a test.
#
#   scripts/bench-restart.sh RUNS LAUNCHER [LAUNCHER...]
#   e.g. scripts/bench-restart.sh 10 build/launcher/ddp-launch /tmp/old/ddp-launch
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
runs=${1:?usage: bench-restart.sh RUNS LAUNCHER [LAUNCHER...]}
shift
[[ $# -ge 1 ]] || die "name at least one ddp-launch binary"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/worker.sh" <<'W'
d=$BENCH_DIR
if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then
  if [ "$RANK" = 1 ]; then
    while [ ! -e "$d/up.0" ]; do sleep 0.01; done
    sleep 0.2; date +%s.%N > "$d/fail"; exit 3
  fi
  : > "$d/up.0"; exec sleep 100
fi
[ "$RANK" = 0 ] && date +%s.%N > "$d/restart"
exit 0
W
one() {  # LAUNCHER -> seconds from failure to node 0's restart
  local bin=$1 d port
  d=$(mktemp -d -p "$work")
  port=$(free_port)
  local common=(--nnodes=2 --nproc-per-node=1 --master-addr=127.0.0.1 --master-port="$port" --max-restarts=1
                --rdzv-conf=join_timeout=60)
  BENCH_DIR=$d "$bin" "${common[@]}" --node-rank=1 sh "$work/worker.sh" >/dev/null 2>&1 &
  local pid1=$!
  BENCH_DIR=$d "$bin" "${common[@]}" --node-rank=0 sh "$work/worker.sh" >/dev/null 2>&1 || true
  wait "$pid1" || true
  python3 -c "print('%.4f' % (float(open('$d/restart').read()) - float(open('$d/fail').read())))"
}
declare -A samples
for ((i = 0; i < runs; i++)); do
  for bin in "$@"; do samples[$bin]+="$(one "$bin") "; done
done
echo "# $(date -u +%FT%TZ) $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $runs runs each"
echo "| launcher | failure -> restart on the other node: median | min | max |"
echo "|---|---:|---:|---:|"
for bin in "$@"; do
  read -r -a v <<<"${samples[$bin]}"
  sorted=$(printf '%s\n' "${v[@]}" | LC_ALL=C sort -g)
  awk -v bin="$bin" -v med="$(median "${v[@]}")" -v lo="$(head -n 1 <<<"$sorted")" -v hi="$(tail -n 1 <<<"$sorted")" \
    'BEGIN { printf "| %s | %.0f ms | %.0f ms | %.0f ms |\n", bin, med * 1000, lo * 1000, hi * 1000 }'
done
