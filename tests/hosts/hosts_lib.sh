# Hosts for the many-host tests and benchmark (sourced after scripts/lib.sh and
# tests/multinode/netns_lib.sh): network namespaces on one bridge in the root namespace,
# each running Debian's sshd on its own address with keys made here. The caller sets
# `tag`, `work`, `namespaces` (empty: hosts_up fills it). Every namespace names its link
# `ddpv`, so GLOO_SOCKET_IFNAME=ddpv is right on every host. Each host has an IPv4 and a
# ULA IPv6 address (`nodad`: usable at once), and its sshd listens on both. Where unshare can
# (own_names=1), each host's sshd and sessions see their own host name (the namespace's) mapped
# to 127.0.0.1 in their own /etc/hosts, the default of many cloud images and containers.
# shellcheck shell=bash disable=SC2034,SC2154
sshd=/usr/sbin/sshd
net=10.232.$(( $$ % 200 ))

net6=fd00:ddb:$(( $$ % 200 ))
host_ip() { echo "$net.$(( $1 + 1 ))"; }   # host_ip INDEX (0-based)
host_ip6() { echo "$net6::$(( $1 + 1 ))"; }  # host_ip6 INDEX: its IPv6 address

hosts_up() {  # hosts_up N [NOSSHD_INDEX]: N namespaces, sshd in each except NOSSHD_INDEX
  local n=$1 nosshd=${2:--1} i ns
  [[ $(id -u) -eq 0 ]] || skip "needs root to create network namespaces and run sshd"
  need 77 ip ssh ssh-keygen "$sshd"
  ip link add "${tag}br" type bridge 2>/dev/null || skip "cannot create a bridge here"
  ip addr add "$net.254/24" dev "${tag}br" && ip link set "${tag}br" up
  ip addr add "$net6::fe/64" dev "${tag}br" nodad 2>/dev/null || true
  ssh-keygen -q -t ed25519 -N '' -f "$work/host_key" && ssh-keygen -q -t ed25519 -N '' -f "$work/id"
  cp "$work/id.pub" "$work/authorized_keys"
  mkdir -p /run/sshd
  own_names=0  # 1: each host has its own name (its namespace's), which its /etc/hosts maps to 127.0.0.1
  unshare -m -u --propagation private true 2>/dev/null && own_names=1
  for (( i = 0; i < n; i++ )); do
    ns="${tag}h$i"
    ip netns add "$ns" || skip "cannot create network namespaces here"
    namespaces+=("$ns")
    ip link add "${tag}v$i" type veth peer name "${tag}p$i"
    ip link set "${tag}p$i" netns "$ns"
    ip -n "$ns" link set "${tag}p$i" name ddpv
    ip -n "$ns" addr add "$(host_ip "$i")/24" dev ddpv
    ip -n "$ns" addr add "$(host_ip6 "$i")/64" dev ddpv nodad 2>/dev/null || true
    ip -n "$ns" link set lo up && ip -n "$ns" link set ddpv up
    ip link set "${tag}v$i" master "${tag}br" && ip link set "${tag}v$i" up
    (( i == nosshd )) && continue
    cat >"$work/sshd_$i.conf" <<CONF
ListenAddress $(host_ip "$i")
$(ip -n "$ns" -6 addr show dev ddpv | grep -q "$(host_ip6 "$i")/" && echo "ListenAddress $(host_ip6 "$i")")
HostKey $work/host_key
AuthorizedKeysFile $work/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
StrictModes no
UsePAM no
PidFile $work/sshd_$i.pid
MaxSessions 64
MaxStartups 64
LogLevel ERROR
CONF
    # Its own host name, mapped to loopback in the /etc/hosts it sees (as many cloud images and
    # containers do): a private UTS and mount namespace for sshd and every session it starts.
    if (( own_names )); then
      printf '127.0.0.1 localhost\n::1 localhost\n127.0.0.1 %s\n' "$ns" >"$work/etc_hosts_$i"
      # shellcheck disable=SC2016  # $1 and $2 are the inner shell's
      ip netns exec "$ns" unshare -m -u --propagation private sh -c \
        'hostname "$1" && mount --bind "$2" /etc/hosts && shift 2 && exec "$@"' sh "$ns" "$work/etc_hosts_$i" \
        "$sshd" -D -e -f "$work/sshd_$i.conf" 2>>"$work/sshd_$i.log" &
    else
      ip netns exec "$ns" "$sshd" -D -e -f "$work/sshd_$i.conf" 2>>"$work/sshd_$i.log" &
    fi
  done
  ssh_opts=(--ssh-option "IdentityFile=$work/id" --ssh-option UserKnownHostsFile=/dev/null
            --ssh-option StrictHostKeyChecking=no --ssh-option LogLevel=ERROR)
  ssh_plain=(-i "$work/id" -o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no -o LogLevel=ERROR
             -o BatchMode=yes)
  for (( i = 0; i < n; i++ )); do
    (( i == nosshd )) && continue
    wait_for 10 ssh "${ssh_plain[@]}" "$(host_ip "$i")" true || skip "sshd in ${tag}h$i does not answer"
  done
}

hosts_cleanup() {
  netns_cleanup
  ip link del "${tag}br" 2>/dev/null
  for (( i = 0; i < 4; i++ )); do ip link del "${tag}v$i" 2>/dev/null; done
  true
}
