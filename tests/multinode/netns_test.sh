#!/usr/bin/env bash
# Two "hosts" as network namespaces joined by a veth pair, one ddp-launch in each, running
# a real gloo allreduce across them (DDP_TEST_PYTHON's torch), also with a rendezvous token
# (the workers' store refuses a peer that is not a node of the round). Then node failures: the
# follower's launcher SIGKILLed, and the link taken down; the survivor must stop its
# workers and exit (not hang). Last, a 1 s link flap: nothing is lost or restarted.
# Needs root and iproute2; exits 77 (skip) otherwise.
# Usage: netns_test.sh DDP_LAUNCH ALLREDUCE_PY
set -uo pipefail
launch=$1
script=$2
python=${DDP_TEST_PYTHON:-/usr/bin/python3}  # CTest passes the build's (cmake/torch.cmake)
tag="ddpt$$"
a="${tag}a" b="${tag}b"
ip_a=10.231.$(( $$ % 200 )).1 ip_b=10.231.$(( $$ % 200 )).2 ip_c=10.231.$(( $$ % 200 )).3
work=$(mktemp -d)

# shellcheck disable=SC2034  # namespaces: read by netns_lib.sh
namespaces=("$a" "$b")
# shellcheck source=SCRIPTDIR/../../scripts/lib.sh
source "$(dirname "$0")/../../scripts/lib.sh"
# shellcheck source=SCRIPTDIR/netns_lib.sh
source "$(dirname "$0")/netns_lib.sh"
trap netns_cleanup EXIT

[[ $(id -u) -eq 0 ]] || skip "needs root to create network namespaces"
need 77 ip ping
"$python" -c 'import torch.distributed' 2>/dev/null || skip "python3-torch is not installed"
ip netns add "$a" 2>/dev/null || skip "cannot create network namespaces here"
ip netns add "$b" || skip "cannot create a second namespace"
ip link add "${tag}va" type veth peer name "${tag}vb" || skip "cannot create a veth pair"
ip link set "${tag}va" netns "$a" && ip link set "${tag}vb" netns "$b"
ip -n "$a" addr add "$ip_a/24" dev "${tag}va" && ip -n "$b" addr add "$ip_b/24" dev "${tag}vb"
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
ip -n "$a" link set "${tag}va" up && ip -n "$b" link set "${tag}vb" up
ip netns exec "$a" ping -c1 -W2 "$ip_b" >/dev/null || skip "the veth link does not pass traffic"

node() {  # node NS RANK PORT LOG ARGS...: one launcher in a namespace, in the background
  local ns=$1 rank=$2 port=$3 log=$4; shift 4
  ip netns exec "$ns" env PYTHON_EXEC="$python" OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME="${tag}v${ns: -1}" \
    "$launch" --nnodes=2 --node-rank="$rank" --nproc-per-node=2 --master-addr="$ip_a" --master-port="$port" \
    --local-addr="$( [[ $ns == "$a" ]] && echo "$ip_a" || echo "$ip_b")" \
    --rdzv-conf=join_timeout=60 "$@" >"$log" 2>&1 &   # default heartbeats: 1 s, lost after 3 s
}

# 1. A real allreduce across the two hosts.
node "$a" 0 29701 "$work/a1.log" "$script"; pa=$!
node "$b" 1 29701 "$work/b1.log" "$script"; pb=$!
wait_rc $pa 120; rc_a=$rc; wait_rc $pb 120; rc_b=$rc
check "allreduce across namespaces: node 0 exit 0" test "$rc_a" = 0
check "allreduce across namespaces: node 1 exit 0" test "$rc_b" = 0
check "four ranks summed to 10" test "$(cat "$work/a1.log" "$work/b1.log" | grep -c 'allreduce ok .* world=4 sum=10')" = 4
check "ranks 2-3 ran on the second host" grep -q "rank=3 world=4" "$work/b1.log"

# 1b. With a rendezvous token the workers' store (hosted by node 0's launcher) lets in the
# round's nodes only: node 1's workers still join from its address; a peer from another
# address of the second host (not a node of the round) is refused, with one log line.
ip -n "$b" addr add "$ip_c/24" dev "${tag}vb"
DDP_LAUNCH_RDZV_TOKEN=netns-secret node "$a" 0 29705 "$work/a1b.log" "$script" --hold 6; pa=$!
DDP_LAUNCH_RDZV_TOKEN=netns-secret node "$b" 1 29705 "$work/b1b.log" "$script" --hold 6; pb=$!
for _ in $(seq 600); do grep -q "allreduce ok" "$work/b1b.log" 2>/dev/null && break; sleep 0.1; done
wport=$(sed -n "s/.*workers' store at $ip_a:\([0-9]*\).*/\1/p" "$work/a1b.log" | head -1)
ip netns exec "$b" "$python" -c "
import socket, sys
s = socket.socket(); s.bind(('$ip_c', 0)); s.settimeout(10); s.connect(('$ip_a', int(sys.argv[1])))
try:
    s.sendall(b'\x03'); print('refused' if s.recv(1) == b'' else 'served')
except ConnectionResetError:
    print('refused')" "${wport:-1}" >"$work/c1b.log" 2>&1
wait_rc $pa 120; rc_a=$rc; wait_rc $pb 120; rc_b=$rc
check "token: the allreduce across namespaces still succeeds (rc $rc_a/$rc_b)" test "$rc_a" = 0 -a "$rc_b" = 0
check "token: a peer that is not a node of the round is disconnected" grep -q refused "$work/c1b.log"
check "token: node 0 logs the refusal, naming the peer" \
  grep -q "workers' store: refused a connection from $ip_c:.*not one of this round's nodes" "$work/a1b.log"

# 2. The follower's launcher is SIGKILLed mid-job: the leader stops its workers and exits.
node "$a" 0 29702 "$work/a2.log" "$script" --hold 120; pa=$!
node "$b" 1 29702 "$work/b2.log" "$script" --hold 120; pb=$!
for _ in $(seq 600); do grep -q "allreduce ok" "$work/a2.log" 2>/dev/null && break; sleep 0.1; done
start=$(date +%s.%N)
kill -9 $pb
wait_rc $pa 60; rc_a=$rc
took=$(seconds_since "$start")
check "leader exits after the follower is killed (rc $rc_a, ${took}s)" test "$rc_a" != timeout
check "leader reports the failure (lost node, or its own rank hit by it)" grep -Eq "node 1 .* was lost|failed with" "$work/a2.log"
check "no worker left in either namespace" no_processes_left

# 3. The link goes down mid-job: both sides notice missed heartbeats and stop.
node "$a" 0 29703 "$work/a3.log" "$script" --hold 120; pa=$!
node "$b" 1 29703 "$work/b3.log" "$script" --hold 120; pb=$!
for _ in $(seq 600); do grep -q "allreduce ok" "$work/b3.log" 2>/dev/null && break; sleep 0.1; done
start=$(date +%s.%N)
ip -n "$b" link set "${tag}vb" down
wait_rc $pa 60; rc_a=$rc; wait_rc $pb 60; rc_b=$rc
took=$(seconds_since "$start")
check "both launchers exit after the link goes down (rc $rc_a/$rc_b, ${took}s)" \
  test "$rc_a" != timeout -a "$rc_b" != timeout
echo "INFO: detection after the link went down took ${took}s (target: under 5 s with default settings)"
check "leader reports the lost node" grep -q "was lost" "$work/a3.log"
check "follower reports the lost store" grep -q "lost the agent store" "$work/b3.log"
check "no worker left after the link failure" no_processes_left

# 4. A link flap shorter than heartbeat_timeout (down 1 s, then up) mid-job: the store
# connections ride it out (TCP retransmits; a connection that breaks is re-opened): no
# node is lost, nothing restarts, both finish.
ip -n "$b" link set "${tag}vb" up   # down since case 3
for _ in $(seq 50); do ip netns exec "$a" ping -c1 -W1 "$ip_b" >/dev/null 2>&1 && break; sleep 0.1; done
node "$a" 0 29704 "$work/a4.log" "$script" --hold 8; pa=$!
node "$b" 1 29704 "$work/b4.log" "$script" --hold 8; pb=$!
for _ in $(seq 600); do grep -q "allreduce ok" "$work/b4.log" 2>/dev/null && break; sleep 0.1; done
ip -n "$b" link set "${tag}vb" down
sleep 1
ip -n "$b" link set "${tag}vb" up
wait_rc $pa 90; rc_a=$rc; wait_rc $pb 90; rc_b=$rc
check "a 1 s link flap: both launchers finish (rc $rc_a/$rc_b)" test "$rc_a" = 0 -a "$rc_b" = 0
check "a 1 s link flap: no node lost, no restart" \
  bash -c "! grep -Eq 'was lost|lost the agent store|restarting' '$work/a4.log' '$work/b4.log'"

netns_report
