#!/usr/bin/env bash
# bench-preflight.sh: --preflight on K launchers (a benchmark, not a test), each in its own
# network namespace on a bridge where this machine allows (root, iproute2, tc), else on
# loopback. Each run is an elastic c10d job of K nodes x 1 worker (`true`, --nnodes 2:K) with
# --preflight (the CPU and link checks' default thresholds; memory, /dev/shm and disk set to
# pass: not what this measures):
#   capped runs: the last node runs in a cgroup whose CPU is capped (--cap, % of one CPU): is
#     it left out by the round's leader, and nobody else?
#   slow-link runs (namespaces only): the last node's link is shaped both ways with tc (tbf,
#     --rate Mbit/s): is it left out, and nobody else?
#   clean runs: no cap, --burners CPU burners (`yes`) beside the job: is anyone left out?
#   In both the nodes start --stagger seconds apart: on one machine, nodes measuring at the
#   same time share its cores, which separate machines would not (their 200 ms windows must
#   not overlap for the comparison to mean what it means across machines).
#   timing: the same clean job with and without --preflight, alternating: the median wall
#     time of each and their difference (what the checks add to a start).
# Prints one Markdown table (docs/preflight.md). Needs root and a cgroup cpu controller (v1
# cpu.cfs_quota_us or v2 cpu.max) for the capped runs (skipped with a note otherwise).
#
#   scripts/bench-preflight.sh [--nodes K] [--capped-runs N] [--slow-runs S] [--clean-runs M]
#                              [--timing-runs T] [--cap PCT] [--rate MBIT] [--burners B]
#                              [--stagger-ms MS] [--loopback]
#
# Defaults: --nodes 4, --capped-runs 10, --slow-runs 10, --clean-runs 20, --timing-runs 5,
# --cap 25, --rate 100, --burners 2, --stagger-ms 400 (the timing runs start every node at
# once); --loopback: no namespaces even where they could be made.
# Env: BUILD_DIR (scripts/lib.sh: its ddp-launch).
# Exit: 0; 1 when a run did not end as expected (what happened is printed); 2 on bad usage.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=SCRIPTDIR/netns_nodes.sh
source "$(dirname "$0")/netns_nodes.sh"
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
nodes=4 capped_runs=10 slow_runs=10 clean_runs=20 timing_runs=5 cap=25 rate=100 burners=2 stagger_ms=400 loopback=0
while (($#)); do
  case $1 in
    -h | --help)
      usage
      exit 0
      ;;
    --loopback)
      loopback=1
      shift
      ;;
    --nodes | --capped-runs | --slow-runs | --clean-runs | --timing-runs | --cap | --rate | --burners | --stagger-ms)
      (($# >= 2)) || die "$1 needs a value; see scripts/bench-preflight.sh --help"
      [[ $2 =~ ^[0-9]+$ ]] || die "$1 takes a whole number, not '$2'"
      case $1 in
        --nodes) nodes=$2 ;;
        --capped-runs) capped_runs=$2 ;;
        --slow-runs) slow_runs=$2 ;;
        --rate) rate=$2 ;;
        --clean-runs) clean_runs=$2 ;;
        --timing-runs) timing_runs=$2 ;;
        --cap) cap=$2 ;;
        --burners) burners=$2 ;;
        --stagger-ms) stagger_ms=$2 ;;
      esac
      shift 2
      ;;
    *) die "unknown argument '$1'; see scripts/bench-preflight.sh --help" ;;
  esac
done
((nodes >= 3)) || die "--nodes must be at least 3 (a median of the others to compare with)"
((cap >= 1 && cap <= 100)) || die "--cap is a percentage of one CPU, 1 to 100"
launcher=$build_dir/launcher/ddp-launch
[[ -x $launcher ]] || die "no ddp-launch at $launcher (build it, or set BUILD_DIR)"
tmp=$(mktemp -d)
cgroup=""
burner_pids=()
cleanup() {
  [[ $BASHPID == "$$" ]] || return 0  # the main shell's: a subshell that exits cleans nothing
  ((${#burner_pids[@]})) && kill -KILL "${burner_pids[@]}" 2>/dev/null
  [[ -n $cgroup && -d $cgroup ]] && rmdir "$cgroup" 2>/dev/null
  netns_nodes_cleanup
  rm -rf "$tmp"
}
trap cleanup EXIT

# A cgroup capped at $cap% of one CPU: its path, or "" where this machine cannot make one.
make_capped_cgroup() {
  local quota=$((cap * 1000))
  if [[ -w /sys/fs/cgroup/cpu/cgroup.procs ]]; then
    cgroup=/sys/fs/cgroup/cpu/ddp-bench-preflight-$$
    mkdir -p "$cgroup" && echo 100000 >"$cgroup/cpu.cfs_period_us" && echo "$quota" >"$cgroup/cpu.cfs_quota_us" &&
      return 0
  elif grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
    echo +cpu >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
    cgroup=/sys/fs/cgroup/ddp-bench-preflight-$$
    mkdir -p "$cgroup" && echo "$quota 100000" >"$cgroup/cpu.max" && return 0
  fi
  [[ -n $cgroup ]] && rmdir "$cgroup" 2>/dev/null
  cgroup=""
}

# One job: run_job NAME PREFLIGHT(0|1) CAPPED(0|1) STAGGER_MS; the nodes' exit codes in
# $tmp/NAME.codes, the wall seconds in $tmp/NAME.seconds.
run_job() {
  local name=$1 preflight=$2 capped=$3 stagger=$4 port i start
  port=$(free_port)
  local host=127.0.0.1
  ((${#netns_addrs[@]})) && host=${netns_addrs[0]}
  local common=("$launcher" --nnodes "2:$nodes" --nproc-per-node 1 --rdzv-backend c10d
    --rdzv-endpoint "$host:$port" --rdzv-id "$name")
  ((preflight)) && common+=(--preflight --preflight-conf "mem_gib=0,shm_gib_per_worker=0,disk_gib=0")
  local pids=()
  start=$(date +%s.%N)
  for ((i = 0; i < nodes; i++)); do
    ((i && stagger)) && sleep "$(awk -v ms="$stagger" 'BEGIN { print ms / 1000 }')"
    # Node 0 hosts the store (the capped or slow node never wins the race: a host is never left out).
    local node=("${common[@]}" --rdzv-conf "join_timeout=60,last_call_timeout=20,is_host=$((i == 0 ? 1 : 0))")
    ((${#netns_addrs[@]})) && node=(ip netns exec "${netns_names[$i]}" "${common[@]}" --local-addr "${netns_addrs[$i]}")
    if ((capped && i == nodes - 1)); then
      (echo "$BASHPID" >"$cgroup/cgroup.procs" && exec "${node[@]}" --no-python true) 2>"$tmp/$name.$i.err" &
    else
      "${node[@]}" --no-python true 2>"$tmp/$name.$i.err" &
    fi
    pids+=($!)
  done
  : >"$tmp/$name.codes"
  for i in "${!pids[@]}"; do
    local rc=0
    wait "${pids[$i]}" || rc=$?
    echo "$i $rc" >>"$tmp/$name.codes"
  done
  awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN { printf "%.3f\n", a - b }' >"$tmp/$name.seconds"
}

# The nodes of run NAME that were left out, "I J " (by their start order).
left_out() {
  { grep -l "this node was left out" "$tmp/$1".*.err 2>/dev/null || true; } | sed 's/.*\.\([0-9]*\)\.err$/\1/' |
    sort -n | tr '\n' ' '
}

where="loopback"
((loopback == 0)) && netns_nodes_make "$nodes" && where="network namespaces on a bridge"

# Runs NAME0.. COUNT times with the last node held back by HOW (capped: the cgroup; slow: its link
# shaped); prints how many left out that node and nobody else (each other outcome on stderr).
target_runs() {
  local name=$1 count=$2 how=$3 ok=0 r out
  for ((r = 0; r < count; r++)); do
    [[ $how == slow ]] && netns_nodes_shape $((nodes - 1)) on "$rate"
    run_job "$name$r" 1 "$([[ $how == capped ]] && echo 1 || echo 0)" "$stagger_ms"
    [[ $how == slow ]] && netns_nodes_shape $((nodes - 1)) off
    out=$(left_out "$name$r")
    if [[ $out == "$((nodes - 1)) " ]]; then
      ok=$((ok + 1))
    else
      echo "$how run $r: left out: '${out}' (expected node $((nodes - 1)) only); codes: $(tr '\n' ' ' <"$tmp/$name$r.codes")" >&2
      grep -h "preflight\|pre-flight\|network" "$tmp/$name$r".*.err >&2 || true
    fi
  done
  echo "$ok"
}

capped_ok=0 capped_note=""
make_capped_cgroup || true
if [[ -n $cgroup ]]; then
  capped_ok=$(target_runs capped "$capped_runs" capped)
  capped_note="$capped_ok of $capped_runs"
else
  capped_note="not run (no writable cgroup cpu controller; root and cgroup v1 cpu or v2 cpu.max needed)"
fi

slow_ok=0 slow_note=""
if ((${#netns_addrs[@]})); then
  slow_ok=$(target_runs slow "$slow_runs" slow)
  slow_note="$slow_ok of $slow_runs"
else
  slow_note="not run (no network namespaces: root, iproute2 and tc needed)"
fi

# SIGKILL ends them: bash can lose a SIGTERM sent to a child it has just forked (seen 1 in 300
# here), and the wait below would then wait for a burner that never ends.
for ((b = 0; clean_runs && b < burners; b++)); do
  yes >/dev/null &
  burner_pids+=($!)
done
false_out=0
for ((r = 0; r < clean_runs; r++)); do
  run_job "clean$r" 1 0 "$stagger_ms"
  out=$(left_out "clean$r")
  if [[ -n $out ]]; then
    false_out=$((false_out + 1))
    echo "clean run $r: left out: $out" >&2
    grep -h "preflight\|pre-flight" "$tmp/clean$r".*.err >&2 || true
  fi
done
if ((${#burner_pids[@]})); then
  kill -KILL "${burner_pids[@]}" 2>/dev/null
  wait "${burner_pids[@]}" 2>/dev/null || true  # reaped: no later subshell looks for them
fi
burner_pids=()

with=() without=()
for ((r = 0; r < timing_runs; r++)); do
  if ((r % 2)); then order=(0 1); else order=(1 0); fi  # alternate which goes first
  for p in "${order[@]}"; do
    run_job "time$r.$p" "$p" 0 0
    if ((p)); then with+=("$(cat "$tmp/time$r.$p.seconds")"); else without+=("$(cat "$tmp/time$r.$p.seconds")"); fi
  done
done
m_with=$(median "${with[@]}")
m_without=$(median "${without[@]}")

printf '# %s, %s CPUs, load %s, %s nodes x 1 worker on %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(nproc)" \
  "$(cut -d' ' -f1-3 /proc/loadavg)" "$nodes" "$where"
echo '| figure | result |'
echo '|---|---|'
echo "| a node capped at $cap% of one CPU left out (and nobody else) | $capped_note |"
echo "| a node whose link is shaped to $rate Mbit/s left out (and nobody else) | $slow_note |"
echo "| clean runs with $burners CPU burners beside them that left a node out | $false_out of $clean_runs |"
printf '| job start to end, %s nodes, median of %s: with --preflight / without | %.2f s / %.2f s (+%.2f s) |\n' \
  "$nodes" "$timing_runs" "$m_with" "$m_without" "$(awk -v a="$m_with" -v b="$m_without" 'BEGIN { print a - b }')"
if [[ -n $cgroup ]] && ((capped_ok < capped_runs)); then exit 1; fi
if ((${#netns_addrs[@]})) && ((slow_ok < slow_runs)); then exit 1; fi
if ((false_out > 0)); then exit 1; fi
