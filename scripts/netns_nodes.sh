# shellcheck shell=bash
# scripts/netns_nodes.sh: "nodes" for the benchmarks, each a network namespace with one veth on
# a bridge in this namespace (sourced, never run; by bench-preflight.sh and bench-spare.sh, after
# lib.sh). netns_nodes_make K makes them: node i at 10.232.N.(i+1)/24, its interface
# ${netns_tag}v$i inside, ${netns_tag}b$i on the bridge; the arrays netns_names and netns_addrs
# hold them (empty, and status 1, where this machine cannot: not root, no iproute2 or tc, no
# bridge). netns_nodes_shape I on|off shapes node I's link both ways (tc tbf at $1 Mbit/s);
# netns_nodes_cleanup kills every process in them and removes them (call it from the EXIT trap).
# Defines functions and the netns_* variables, nothing else.

netns_tag="dpn$$" netns_bridge="" netns_names=() netns_addrs=()

netns_nodes_make() {
  local k=$1 net=$((RANDOM % 200)) i
  (($(id -u) == 0)) && command -v ip >/dev/null && command -v tc >/dev/null || return 1
  ip link add "${netns_tag}br" type bridge 2>/dev/null || return 1
  netns_bridge="${netns_tag}br"
  ip link set "$netns_bridge" up
  for ((i = 0; i < k; i++)); do
    netns_names+=("${netns_tag}n$i")
    if ! { ip netns add "${netns_tag}n$i" && ip link add "${netns_tag}v$i" type veth peer name "${netns_tag}b$i" &&
      ip link set "${netns_tag}v$i" netns "${netns_tag}n$i" && ip link set "${netns_tag}b$i" master "$netns_bridge" &&
      ip link set "${netns_tag}b$i" up && ip -n "${netns_tag}n$i" addr add "10.232.$net.$((i + 1))/24" dev "${netns_tag}v$i" &&
      ip -n "${netns_tag}n$i" link set "${netns_tag}v$i" up && ip -n "${netns_tag}n$i" link set lo up; }; then
      netns_nodes_cleanup
      return 1
    fi
    netns_addrs+=("10.232.$net.$((i + 1))")
  done
  ip netns exec "${netns_tag}n0" ping -c1 -W2 "10.232.$net.$k" >/dev/null 2>&1 || {
    netns_nodes_cleanup
    return 1
  }
}

# netns_nodes_shape I on RATE_MBIT | netns_nodes_shape I off
netns_nodes_shape() {
  local i=$1
  if [[ $2 == on ]]; then
    ip netns exec "${netns_tag}n$i" tc qdisc add dev "${netns_tag}v$i" root tbf rate "${3}mbit" burst 32kbit latency 50ms
    tc qdisc add dev "${netns_tag}b$i" root tbf rate "${3}mbit" burst 32kbit latency 50ms
  else
    ip netns exec "${netns_tag}n$i" tc qdisc del dev "${netns_tag}v$i" root 2>/dev/null || true
    tc qdisc del dev "${netns_tag}b$i" root 2>/dev/null || true
  fi
}

netns_nodes_cleanup() {
  local ns
  for ns in "${netns_names[@]}"; do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
  [[ -n $netns_bridge ]] && ip link del "$netns_bridge" 2>/dev/null
  netns_names=() netns_addrs=() netns_bridge=""
  return 0
}
