#!/usr/bin/env bash
# The etcd backend across separate "hosts": etcd (one member) in a third network namespace,
# a bridge there joining it to two launcher namespaces by veth pairs, each launcher with
# --rdzv-backend=etcd --rdzv-endpoint=<etcd's address>. Shell workers (no torch).
# "node a" and "node b" below: the launcher in namespace a, in namespace b.
#  (a) a two-node job end to end;
#  (b) node b's link taken down mid-job: node a sees node b's lease expire, re-forms alone
#      (--nnodes=1:2 --max-restarts=1) and finishes; node b loses etcd, stops its worker
#      and exits with the error;
#  (c) a 1 s link flap between node b and etcd (heartbeat_timeout is 5 s): no restart.
# Needs root, iproute2 and the etcd binary; exits 77 (skip) otherwise.
# Usage: netns_etcd_test.sh DDP_LAUNCH
set -uo pipefail
launch=$1
tag="dde$$"
a="${tag}a" b="${tag}b" e="${tag}e"
net=10.232.$(( $$ % 200 ))
ip_a=$net.1 ip_b=$net.2 ip_e=$net.3
port=23790
work=$(mktemp -d)

# shellcheck disable=SC2034  # namespaces: read by netns_lib.sh
namespaces=("$a" "$b" "$e")
# shellcheck source=SCRIPTDIR/../../scripts/lib.sh
source "$(dirname "$0")/../../scripts/lib.sh"
# shellcheck source=SCRIPTDIR/../multinode/netns_lib.sh
source "$(dirname "$0")/../multinode/netns_lib.sh"
trap netns_cleanup EXIT

[[ $(id -u) -eq 0 ]] || skip "needs root to create network namespaces"
need 77 ip ping etcd
ip netns add "$e" 2>/dev/null || skip "cannot create network namespaces here"
if ! ip netns add "$a" || ! ip netns add "$b"; then skip "cannot create more namespaces"; fi
ip -n "$e" link add "${tag}br" type bridge || skip "cannot create a bridge"
for n in a b; do  # veth "${tag}vN" in namespace N, its peer "${tag}pN" on the bridge in e
  ns="${tag}$n"
  ip link add "${tag}v$n" netns "$ns" type veth peer name "${tag}p$n" netns "$e" || skip "cannot create a veth pair"
  ip -n "$e" link set "${tag}p$n" master "${tag}br" up
done
ip -n "$a" addr add "$ip_a/24" dev "${tag}va" && ip -n "$b" addr add "$ip_b/24" dev "${tag}vb"
ip -n "$e" addr add "$ip_e/24" dev "${tag}br"
for ns in "$a" "$b" "$e"; do ip -n "$ns" link set lo up; done
ip -n "$e" link set "${tag}br" up && ip -n "$a" link set "${tag}va" up && ip -n "$b" link set "${tag}vb" up
wait_for 10 ip netns exec "$a" ping -c1 -W1 "$ip_e" >/dev/null || skip "the bridge does not pass traffic (a to etcd)"
wait_for 10 ip netns exec "$b" ping -c1 -W1 "$ip_a" >/dev/null || skip "the bridge does not pass traffic (b to a)"

# etcd as tests/etcd/etcd_cluster.cpp starts a member: one node, default heartbeat and
# election settings, clients on the bridge address, peers on the namespace's loopback.
ip netns exec "$e" etcd --name=m0 --data-dir="$work/etcd" \
  --listen-client-urls="http://$ip_e:$port" --advertise-client-urls="http://$ip_e:$port" \
  --listen-peer-urls=http://127.0.0.1:2380 --initial-advertise-peer-urls=http://127.0.0.1:2380 \
  --initial-cluster=m0=http://127.0.0.1:2380 --initial-cluster-state=new --initial-cluster-token="$tag" \
  --log-level=warn >"$work/etcd.log" 2>&1 &
etcd_pid=$!
# shellcheck disable=SC2317  # called through wait_for
etcd_healthy() { ip netns exec "$a" env ETCDCTL_API=3 etcdctl --endpoints="$ip_e:$port" endpoint health >/dev/null 2>&1; }
if command -v etcdctl >/dev/null; then
  wait_for 30 etcd_healthy || { cat "$work/etcd.log"; echo "FAIL: etcd did not come up"; exit 1; }
else
  wait_for 30 ip netns exec "$a" bash -c "exec 3<>/dev/tcp/$ip_e/$port" || { cat "$work/etcd.log"; exit 1; }
fi

# A worker that records each start (rank, world size, restart count) in DIR/starts.<node's
# namespace: a or b>.<pid>, then waits for DIR/go; after a restart it finishes at once.
# shellcheck disable=SC2016  # expanded by the worker's sh, not here
worker='echo "$RANK $WORLD_SIZE $TORCHELASTIC_RESTART_COUNT" >> "$DIR/starts.$NODE.$$";
  [ "$TORCHELASTIC_RESTART_COUNT" -ge 1 ] && exit 0; while [ ! -e "$DIR/go" ]; do sleep 0.1; done'
node() {  # node NS DIR LOG ARGS...: one launcher in a namespace, in the background
  local ns=$1 dir=$2 log=$3; shift 3
  mkdir -p "$dir"
  ip netns exec "$ns" env DIR="$dir" NODE="${ns: -1}" "$launch" --rdzv-backend=etcd --rdzv-endpoint="$ip_e:$port" \
    --nproc-per-node=1 --monitor-interval=0.1 \
    --local-addr="$( [[ $ns == "$a" ]] && echo "$ip_a" || echo "$ip_b")" "$@" sh -c "$worker" >"$log" 2>&1 &
}
starts() { cat "$1"/starts.* 2>/dev/null | wc -l; }
# shellcheck disable=SC2317  # called through wait_for
both_started() { [[ $(starts "$1") == 2 ]]; }
link() { ip -n "$b" link set "${tag}vb" "$1"; }  # node b's only link: to etcd and to node a

# (a) A two-node job end to end through etcd in another namespace.
d=$work/a; mkdir -p "$d"; touch "$d/go"
conf=join_timeout=60,last_call_timeout=1
node "$a" "$d" "$work/a-node0.log" --nnodes=2 --rdzv-id=a --rdzv-conf=$conf; pa=$!
node "$b" "$d" "$work/a-node1.log" --nnodes=2 --rdzv-id=a --rdzv-conf=$conf; pb=$!
wait_rc $pa 90; rc_a=$rc; wait_rc $pb 90; rc_b=$rc
check "(a) two nodes through etcd: both exit 0 (rc $rc_a/$rc_b)" test "$rc_a" = 0 -a "$rc_b" = 0
check "(a) both joined etcd at $ip_e:$port" \
  test "$(grep -l "joined etcd at $ip_e:$port" "$work/a-node0.log" "$work/a-node1.log" | wc -l)" = 2
check "(a) one worker on each node, ranks 0 and 1 of 2" \
  test "$(cat "$d"/starts.a.*) / $(cat "$d"/starts.b.*)" = "0 2 0 / 1 2 0" -o \
       "$(cat "$d"/starts.a.*) / $(cat "$d"/starts.b.*)" = "1 2 0 / 0 2 0"

# (b) Node b's link goes down mid-job (3 s leases). Node a: node b's lease expires, it
# re-forms alone and finishes. Node b: no etcd member answers, its worker is stopped.
d=$work/b
conf=join_timeout=60,last_call_timeout=30,heartbeat_timeout=3
node "$a" "$d" "$work/b-node0.log" --nnodes=1:2 --max-restarts=1 --rdzv-id=b --rdzv-conf=$conf; pa=$!
node "$b" "$d" "$work/b-node1.log" --nnodes=1:2 --max-restarts=1 --rdzv-id=b --rdzv-conf=$conf; pb=$!
wait_for 60 both_started "$d" || echo "INFO: the workers did not both start within 60 s"
start=$(date +%s.%N)
link down
wait_rc $pa 60; rc_a=$rc; wait_rc $pb 60; rc_b=$rc
took=$(seconds_since "$start")
check "(b) link down: node a re-forms alone and finishes (rc $rc_a, both done ${took}s after the cut)" test "$rc_a" = 0
check "(b) node a saw node b's lease expire and restarted" \
  bash -c "grep -q 'was lost: its etcd lease expired' '$work/b-node0.log' && grep -q '(restart 1)' '$work/b-node0.log'"
check "(b) node a's worker restarted as rank 0 of 1" grep -qx "0 1 1" "$d"/starts.a.*
check "(b) the cut-off node exits with an error (rc $rc_b)" test "$rc_b" != 0 -a "$rc_b" != timeout
check "(b) the cut-off node says it lost etcd" \
  grep -Eq "lost the agent store at etcd|no etcd member answered|lease .*(expired|gone)" "$work/b-node1.log"
echo "INFO: the cut-off node said: $(grep -E "lost the agent store|no etcd member" "$work/b-node1.log" | head -1 | cut -c1-300)"
check "(b) no worker left in either launcher namespace" no_processes_left "$a" "$b"
link up
wait_for 10 ip netns exec "$b" ping -c1 -W1 "$ip_e" >/dev/null

# (c) A 1 s flap of node b's link, shorter than heartbeat_timeout (5 s): the client
# retries and reconnects within the request deadline, the leases outlive it; no restart.
d=$work/c
conf=join_timeout=60,last_call_timeout=1,heartbeat_timeout=5
node "$a" "$d" "$work/c-node0.log" --nnodes=2 --max-restarts=1 --rdzv-id=c --rdzv-conf=$conf; pa=$!
node "$b" "$d" "$work/c-node1.log" --nnodes=2 --max-restarts=1 --rdzv-id=c --rdzv-conf=$conf; pb=$!
wait_for 60 both_started "$d" || echo "INFO: the workers did not both start within 60 s"
link down; sleep 1; link up
sleep 7  # past the lease TTL: a lease lost to the flap would have expired by now
touch "$d/go"
wait_rc $pa 60; rc_a=$rc; wait_rc $pb 60; rc_b=$rc
check "(c) a 1 s link flap: both finish (rc $rc_a/$rc_b)" test "$rc_a" = 0 -a "$rc_b" = 0
check "(c) each worker started once" test "$(starts "$d")" = 2
check "(c) no node lost, no restart" \
  bash -c "! grep -Eq 'was lost|lost the agent store|restarting' '$work/c-node0.log' '$work/c-node1.log'"

kill "$etcd_pid" 2>/dev/null
netns_report
