#!/usr/bin/env bash
# bench-hosts.sh: starting a job on 2 hosts from one command. The hosts are network
# namespaces on one bridge, each running Debian's sshd (tests/hosts/hosts_lib.sh); the
# launching side is the root namespace. Per run, alternating: `ddp-launch --hosts a:2,b:2`
# vs Debian's `pdsh -R ssh -w a,b ddp-launch --nnodes 2 --node-rank %n ...` (DeepSpeed's way:
# one ssh per host, one ddp-launch per host) vs the same with torchrun (scripts/lib.sh
# use_bench_python: the torch venv's, or PYTHON's) in ddp-launch's place. Time = from the command's start to the last of
# the 4 workers' first line (each worker prints its start time; one kernel, one clock). The
# ssh connection time is measured in the same run (ddp-launch's "ssh: connected" line: the
# masters of both hosts, opened in parallel), and alone: `ssh HOST true` with a fresh
# connection and over an open ControlMaster. Launcher overhead = time - ssh connection time.
# A benchmark, not a test: medians of REPEATS runs each. Needs root, iproute2,
# openssh-server, pdsh.
#
#   scripts/bench-hosts.sh [REPEATS]      (default 7)
#
# Env: BUILD_DIR (scripts/lib.sh: needs ddp-launch), PYTHON (the torch whose torchrun runs).
set -uo pipefail
set -m
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
launch=$(realpath "$build_dir/launcher/ddp-launch")
repeats=${1:-7}
[[ -x $launch ]] || die 1 "build ddp-launch first ($launch)"
need 1 pdsh ssh
use_bench_python  # python, python_torch, torchrun
tag="ddpb$$"
work=$(mktemp -d)
namespaces=()
# shellcheck source=SCRIPTDIR/../tests/multinode/netns_lib.sh
source "$repo_root/tests/multinode/netns_lib.sh"
# shellcheck source=SCRIPTDIR/../tests/hosts/hosts_lib.sh
source "$repo_root/tests/hosts/hosts_lib.sh"
trap hosts_cleanup EXIT
skip() { die 1 "$*"; }  # a benchmark that cannot run fails
hosts_up 2
a=$(host_ip 0) b=$(host_ip 1)
cd "$work" || exit 1
export OMP_NUM_THREADS=1
worker='date +%s.%N | sed "s/^/first /"; exit 0'

# The last worker's first line, in seconds after START, from LOG; "" if not 4 workers.
last_first() {  # last_first LOG START
  grep -o 'first [0-9.]*' "$1" | awk -v s="$2" '{ if ($2 - s > m) m = $2 - s; n++ } END { if (n == 4) printf "%.3f", m }'
}

# pdsh_launch LOG LAUNCHER: pdsh starts LAUNCHER (one word list, run by the remote shell) on
# both hosts as node ranks 0 and 1 at $port; prints the last worker's first line (last_first).
pdsh_launch() {
  local log=$1 launcher=$2 start
  start=$(date +%s.%N)
  PDSH_SSH_ARGS_APPEND="${ssh_plain[*]}" pdsh -R ssh -w "$a,$b" \
    "$launcher" --nnodes 2 --node-rank %n --nproc-per-node 2 --master-addr "$a" --master-port "$port" \
    --no-python sh -c "'$worker'" >"$log" 2>&1 || die 1 "pdsh $launcher failed: $(tail -5 "$log")"
  last_first "$log" "$start"
}

ours=() connect=() overhead=() theirs=() torchruns=() fresh=() muxed=()
port=29900
for run in $(seq "$repeats"); do
  port=$((port + 1))
  start=$(date +%s.%N)
  "$launch" --hosts "$a:2,$b:2" --master-port "$port" "${ssh_opts[@]}" --no-python sh -c "$worker" >ours.log 2>&1 \
    || die 1 "ddp-launch --hosts failed: $(tail -5 ours.log)"
  t=$(last_first ours.log "$start")
  c=$(sed -n 's/.*ssh: connected to 2 host(s) in \([0-9.]*\) s.*/\1/p' ours.log)
  ours+=("$t") connect+=("$c") overhead+=("$(awk "BEGIN{printf \"%.3f\", $t - $c}")")
  port=$((port + 1))
  theirs+=("$(pdsh_launch theirs.log "$launch")")
  port=$((port + 1))
  torchruns+=("$(pdsh_launch torchrun.log "${torchrun[*]}")")
  s=$(date +%s.%N); ssh "${ssh_plain[@]}" "$a" true
  fresh+=("$(awk "BEGIN{printf \"%.3f\", $(date +%s.%N) - $s}")")
  ssh "${ssh_plain[@]}" -o ControlPath="$work/cm" -o ControlMaster=yes -N "$a" & master=$!
  wait_for 10 test -S "$work/cm"
  s=$(date +%s.%N); ssh "${ssh_plain[@]}" -o ControlPath="$work/cm" -o ControlMaster=no "$a" true
  muxed+=("$(awk "BEGIN{printf \"%.3f\", $(date +%s.%N) - $s}")")
  kill "$master"; wait "$master" 2>/dev/null
  echo "run $run: ddp-launch --hosts ${t}s (ssh connect ${c}s), pdsh ${theirs[-1]}s, pdsh torchrun ${torchruns[-1]}s, ssh true ${fresh[-1]}s / muxed ${muxed[-1]}s"
done
mo=$(median "${ours[@]}") mc=$(median "${connect[@]}") mh=$(median "${overhead[@]}") mt=$(median "${theirs[@]}") mr=$(median "${torchruns[@]}")
echo
echo "2 hosts x 2 workers, medians of $repeats runs (seconds to the last worker's first line):"
printf '  %-44s %s\n' "ddp-launch --hosts a:2,b:2" "$mo" \
  "  of which ssh connections (same run)" "$mc" \
  "  launcher overhead beyond ssh" "$mh" \
  "pdsh -R ssh -w a,b ddp-launch --node-rank %n" "$mt" \
  "pdsh -R ssh -w a,b torchrun --node-rank %n (torch $python_torch)" "$mr" \
  "ssh HOST true, a fresh connection" "$(median "${fresh[@]}")" \
  "ssh HOST true, over a ControlMaster" "$(median "${muxed[@]}")"
echo "  ratio pdsh / ddp-launch --hosts: $(awk "BEGIN{printf \"%.2f\", $mt / $mo}")"
echo "  ratio pdsh torchrun / ddp-launch --hosts: $(awk "BEGIN{printf \"%.2f\", $mr / $mo}")"
