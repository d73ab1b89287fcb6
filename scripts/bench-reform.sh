#!/usr/bin/env bash
# bench-reform.sh: how long a two-node job takes to re-form after one node's launcher is
# SIGKILLed, etcd rendezvous vs the agent store (c10d), alternating runs, medians. Time =
# from the SIGKILL to the survivor's worker starting again in the new round (both on
# loopback, --nnodes=1:2 --max-restarts=1, default heartbeats: lost after 3 s). The agent
# store cannot survive the loss of its host, so there the follower is killed; with etcd
# the node killed is the first to join (the leader of round 0). Second table: a worker
# failing on one node -> the other node's worker restarted (the abort record reaches the
# other node as a watched key: an etcd watch, the agent store's server-side wait). A
# benchmark, not a test.
#
#   scripts/bench-reform.sh [REPEATS]      (default 5)
#
# Env: BUILD_DIR (scripts/lib.sh: needs ddp-launch), HEARTBEAT_TIMEOUT (seconds, default 3).
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
launcher="$build_dir/launcher/ddp-launch"
repeats="${1:-5}"
hb="${HEARTBEAT_TIMEOUT:-3}"
[[ -x $launcher ]] || die 1 "build ddp-launch first ($launcher)"
need 1 etcd

tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

read -r cport pport <<<"$(free_port 2)"
etcd --name b --data-dir "$tmp/etcd" --listen-client-urls "http://127.0.0.1:$cport" \
  --advertise-client-urls "http://127.0.0.1:$cport" --listen-peer-urls "http://127.0.0.1:$pport" \
  --initial-advertise-peer-urls "http://127.0.0.1:$pport" --initial-cluster "b=http://127.0.0.1:$pport" \
  --log-level=error >"$tmp/etcd.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -s -X POST "http://127.0.0.1:$cport/v3/kv/range" -d '{"key":"YQ=="}' >/dev/null && break; sleep 0.1; done

# One run: prints the seconds from the SIGKILL to the survivor's restart.
one_run() {  # backend id
  local backend=$1 id=$2 dir="$tmp/$2" endpoint
  mkdir -p "$dir"
  if [[ $backend == etcd ]]; then endpoint="127.0.0.1:$cport"; else endpoint="127.0.0.1:$(free_port)"; fi
  local worker="date +%s.%N >> $dir/start.\$TORCHELASTIC_RESTART_COUNT.\$GROUP_RANK; [ \$TORCHELASTIC_RESTART_COUNT -ge 1 ] && exit 0; sleep 60"
  local args=(--nnodes=1:2 --max-restarts=1 --rdzv-backend="$backend" --rdzv-endpoint="$endpoint" --rdzv-id="$id"
              --nproc-per-node=1 --rdzv-conf="join_timeout=30,last_call_timeout=30,heartbeat_timeout=$hb")
  "$launcher" "${args[@]}" sh -c "$worker" >"$dir/a.log" 2>&1 &
  local a=$!
  sleep 0.3
  "$launcher" "${args[@]}" sh -c "$worker" >"$dir/b.log" 2>&1 &
  local b=$!
  for _ in $(seq 300); do [[ -e $dir/start.0.0 && -e $dir/start.0.1 ]] && break; sleep 0.05; done
  sleep 0.5
  local victim=$a survivor=$b
  [[ $backend == c10d ]] && { victim=$b; survivor=$a; }  # the store's host must live
  local t0; t0=$(date +%s.%N)
  kill -9 "$victim"
  wait "$survivor" || true
  wait "$victim" 2>/dev/null || true
  local t1; t1=$(cat "$dir"/start.1.* 2>/dev/null | head -1)
  [[ -n $t1 ]] || { echo "bench-reform.sh: $backend run $id did not re-form:" >&2; cat "$dir/b.log" "$dir/a.log" >&2; return 1; }
  python3 -c "print(f'{$t1 - $t0:.2f}')"
}

# One run: a worker on one node exits 3; prints the seconds until the other node's worker
# starts again (the abort record has to reach that node).
one_failure() {  # backend id
  local backend=$1 id=$2 dir="$tmp/$2" endpoint
  mkdir -p "$dir"
  if [[ $backend == etcd ]]; then endpoint="127.0.0.1:$cport"; else endpoint="127.0.0.1:$(free_port)"; fi
  local worker="if [ \$TORCHELASTIC_RESTART_COUNT = 0 ]; then
      if [ \$GROUP_RANK = 1 ]; then while [ ! -e $dir/up ]; do sleep 0.01; done; sleep 0.2; date +%s.%N > $dir/fail; exit 3; fi
      : > $dir/up; exec sleep 100; fi
    [ \$GROUP_RANK = 0 ] && date +%s.%N > $dir/restart; exit 0"
  local args=(--nnodes=2 --max-restarts=1 --rdzv-backend="$backend" --rdzv-endpoint="$endpoint" --rdzv-id="$id"
              --nproc-per-node=1 --rdzv-conf="join_timeout=30,heartbeat_timeout=$hb")
  "$launcher" "${args[@]}" --node-rank=0 sh -c "$worker" >"$dir/a.log" 2>&1 &
  local a=$!
  "$launcher" "${args[@]}" --node-rank=1 sh -c "$worker" >"$dir/b.log" 2>&1 || true
  wait "$a" || true
  [[ -e $dir/restart ]] || { echo "bench-reform.sh: $backend run $id did not restart:" >&2; cat "$dir/a.log" "$dir/b.log" >&2; return 1; }
  python3 -c "print(f'{float(open(\"$dir/restart\").read()) - float(open(\"$dir/fail\").read()):.3f}')"
}

declare -A failures=([etcd]="" [c10d]="")
for i in $(seq "$repeats"); do
  for backend in etcd c10d; do
    failures[$backend]+="$(one_failure "$backend" "$backend-fail-$i") "
  done
done

declare -A times=([etcd]="" [c10d]="")
for i in $(seq "$repeats"); do
  for backend in etcd c10d; do
    times[$backend]+="$(one_run "$backend" "$backend-$i") "
  done
done
spread() {  # "SECONDS SECONDS ...": "median (min X, max Y)", to the millisecond
  local v sorted
  read -r -a v <<<"$1"
  sorted=$(printf '%s\n' "${v[@]}" | LC_ALL=C sort -g)
  LC_ALL=C printf '%.3f (min %.3f, max %.3f)' "$(median "${v[@]}")" "$(head -n 1 <<<"$sorted")" "$(tail -n 1 <<<"$sorted")"
}
echo "# $(date -u +%FT%TZ) $(nproc) CPUs, heartbeat_timeout=$hb s, $repeats runs each"
echo "| backend | node killed | SIGKILL -> survivor's worker restarted, median s |"
echo "|---|---|---|"
echo "| etcd | the first to join (round 0's leader) | $(spread "${times[etcd]}") |"
echo "| agent store (c10d) | the follower (its host's loss is fatal) | $(spread "${times[c10d]}") |"
echo
echo "| backend | a worker fails on one node -> the other node's worker restarted, median s |"
echo "|---|---|"
echo "| etcd | $(spread "${failures[etcd]}") |"
echo "| agent store (c10d) | $(spread "${failures[c10d]}") |"
