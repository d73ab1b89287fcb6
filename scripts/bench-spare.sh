#!/usr/bin/env bash
# bench-spare.sh: a hot spare taking a seat (a benchmark, not a test). K active launchers and one
# spare, each in its own network namespace on a bridge where this machine allows (root, iproute2,
# tc), else on loopback (c10d, --nnodes K:K, one `train` worker each, --snapshot-every 1, every
# node its own snapshot folder):
#   spare: once every rank passed KILL_STEP, node 1's launcher is SIGKILLed; the spare takes its
#     seat and its worker is healed from a survivor's in-memory snapshot.
#   shrink: beside it, alternating, the same job without a spare on --nnodes (K-1):K, which goes
#     on with K-1 nodes: the floor of a re-formed round (nobody new to start or heal).
#   struck (the first --struck-runs runs): the last active node's worker is SIGKILLed --flaky s
#     into every attempt (--max-restarts 5): at its third strike (--strikes 3/3600) the leader
#     leaves it out (exit 117) and the spare takes its seat.
# Per run: the failure to the first step of the new round (the spare's rank, and any rank), the
# steps redone (the newest step before the failure minus the step resumed from), and whether the
# spare's rank was healed from memory with no checkpoint read. Medians (min-max).
#
#   scripts/bench-spare.sh [--nodes K] [--runs N] [--kill-step S] [--heartbeat S] [--struck-runs M]
#                          [--flaky S] [--loopback]
#
# Defaults: --nodes 3, --runs 5, --kill-step 30, --heartbeat 1 (--rdzv-conf heartbeat_interval;
# how soon the store's host looks for lost nodes), --struck-runs 3, --flaky 1.5; --loopback: no
# namespaces even where they could be made.
# Env: BUILD_DIR (scripts/lib.sh: its ddp-launch and trainers/train); KEEP=1 keeps the runs'
# folders (consoles, step-times logs) and says where.
# Exit: 0; 1 when a run did not go as expected (said on stderr); 2 on bad usage.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=SCRIPTDIR/netns_nodes.sh
source "$(dirname "$0")/netns_nodes.sh"
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
nodes=3 runs=5 kill_step=30 heartbeat=1 struck_runs=3 flaky=1.5 loopback=0
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
    --nodes | --runs | --kill-step | --heartbeat | --struck-runs | --flaky)
      (($# >= 2)) || die "$1 needs a value; see scripts/bench-spare.sh --help"
      case $1 in
        --heartbeat | --flaky) [[ $2 =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "$1 takes seconds, not '$2'" ;;
        *) [[ $2 =~ ^[0-9]+$ ]] || die "$1 takes a whole number, not '$2'" ;;
      esac
      case $1 in
        --nodes) nodes=$2 ;;
        --runs) runs=$2 ;;
        --kill-step) kill_step=$2 ;;
        --heartbeat) heartbeat=$2 ;;
        --struck-runs) struck_runs=$2 ;;
        --flaky) flaky=$2 ;;
      esac
      shift 2
      ;;
    *) die "unknown argument '$1'; see scripts/bench-spare.sh --help" ;;
  esac
done
((nodes >= 2)) || die "--nodes must be at least 2 (a survivor to heal from)"
((runs >= 1)) || die "--runs must be at least 1"
launcher=$build_dir/launcher/ddp-launch train=$build_dir/trainers/train
[[ -x $launcher && -x $train ]] || die "no ddp-launch or train in $build_dir (build them, or set BUILD_DIR)"
tmp=$(mktemp -d)
pids=()
cleanup() {
  [[ $BASHPID == "$$" ]] || return 0
  ((${#pids[@]})) && kill -KILL "${pids[@]}" 2>/dev/null
  netns_nodes_cleanup
  if [[ -n ${KEEP:-} ]]; then echo "kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

# The newest step of attempt A in rank R's step-times log ("A step N T"), or -1.
last_step() { awk -v a="$2" '$1 == a && $2 == "step" { s = $3 } END { print (s == "" ? -1 : s) }' "$1/rank$3.log" 2>/dev/null || echo -1; }
# The first step's time of attempt A in a rank's log, or "".
first_step_time() { awk -v a="$2" '$1 == a && $2 == "step" { print $4; exit }' "$1" 2>/dev/null || true; }
# The newest step of attempt A on any of the first N ranks.
newest_step() {
  local dir=$1 a=$2 n=$3 r s best=-1
  for ((r = 0; r < n; r++)); do
    s=$(last_step "$dir" "$a" "$r")
    ((s > best)) && best=$s
  done
  echo "$best"
}

# start_node DIR I NAME LAUNCHER ARGS...: launcher I (its own snapshot folder; in namespace I where
# there are namespaces), its console in DIR/NAME.out/.err; its pid appended to pids.
start_node() {
  local dir=$1 i=$2 name=$3 ifname=lo
  shift 3
  mkdir -p "$dir/shm$i"
  local prefix=()
  if ((${#netns_addrs[@]})); then
    prefix=(ip netns exec "${netns_names[$i]}")
    ifname=${netns_tag}v$i
    set -- "$1" --local-addr "${netns_addrs[$i]}" "${@:2}"  # the launcher's flag, before the program
  fi
  "${prefix[@]}" env DDP_LAUNCH_SNAPSHOT_DIR="$dir/shm$i" OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME="$ifname" "$@" \
    >"$dir/$name.out" 2>"$dir/$name.err" &
  pids+=($!)
}

# One run: run_job NAME MODE, MODE spare (K active + a spare, node 1's launcher SIGKILLed),
# shrink (K active, no spare, the same kill) or struck (K active + a spare, the last node's worker
# SIGKILLed FLAKY s into every attempt: struck out at its third strike). Prints "seconds_spare
# seconds_any redone healed" (struck: seconds from the third failure) or fails.
run_job() {
  local name=$1 mode=$2 dir=$tmp/$1 port i t_fail min host=127.0.0.1 attempt=1
  mkdir -p "$dir/times" "$dir/ckpt"
  port=$(free_port)
  min=$([[ $mode == shrink ]] && echo $((nodes - 1)) || echo "$nodes")
  ((${#netns_addrs[@]})) && host=${netns_addrs[0]}
  local flags=("--nnodes=$min:$nodes" --rdzv-backend c10d --rdzv-endpoint "$host:$port" --rdzv-id "$name"
    --nproc-per-node 1 --max-restarts "$([[ $mode == struck ]] && echo 5 || echo 1)"
    --rdzv-conf "join_timeout=60,last_call_timeout=30,heartbeat_interval=$heartbeat,is_host=0")
  local job=(--epochs 100 --train-samples 2048 --val-samples 64 --batch-size 16 --snapshot-every 1
    --checkpoint-dir "$dir/ckpt" --checkpoint-interval 1000000 --progress plain --log-every 1000000
    --step-times "$dir/times")
  # The flaky node's program: train, SIGKILLed FLAKY s into each attempt (each time noted).
  # shellcheck disable=SC2016  # $@ and $p are the flaky script's
  printf '#!/bin/sh\n"%s" "$@" &\np=$!\nsleep %s\ndate +%%s.%%N >>"%s"\nkill -9 $p\nwait $p\n' \
    "$train" "$flaky" "$dir/flaky.times" >"$dir/flaky.sh"
  chmod +x "$dir/flaky.sh"
  pids=()
  for ((i = 0; i < nodes; i++)); do
    ((i == 0)) && flags[-1]=${flags[-1]/is_host=0/is_host=1}  # node 0 hosts the store (the others never race it)
    ((i == 1)) && flags[-1]=${flags[-1]/is_host=1/is_host=0}
    if [[ $mode == struck ]] && ((i == nodes - 1)); then
      start_node "$dir" "$i" "node$i" "$launcher" "${flags[@]}" --no-python "$dir/flaky.sh" "${job[@]}"
    else
      start_node "$dir" "$i" "node$i" "$launcher" "${flags[@]}" "$train" "${job[@]}"
    fi
    ((i == 0)) && sleep 0.3  # node 0 hosts the store
  done
  if [[ $mode != shrink ]]; then
    for _ in $(seq 600); do [[ -f $dir/times/rank$((nodes - 1)).log ]] && break; sleep 0.1; done
    start_node "$dir" "$nodes" spare "$launcher" "${flags[@]}" "$train" "${job[@]}"
    for _ in $(seq 600); do grep -q "waits as a hot spare" "$dir/spare.err" 2>/dev/null && break; sleep 0.1; done
    grep -q "waits as a hot spare" "$dir/spare.err" || { echo "$name: the spare never waited" >&2; return 1; }
  fi
  if [[ $mode == struck ]]; then
    attempt=3  # three failed attempts, then the round without the struck node
    for _ in $(seq 1200); do grep -q "round 3: node [0-9]* of" "$dir/spare.err" && break; sleep 0.05; done
    t_fail=$(sed -n 3p "$dir/flaky.times" 2>/dev/null)
    [[ -n $t_fail ]] || { echo "$name: the flaky node did not fail three times" >&2; return 1; }
  else
    # Every rank past KILL_STEP (the spare's standbys had time to warm: it waited since round 0).
    for _ in $(seq 1200); do
      local low=1000000000 r s
      for ((r = 0; r < nodes; r++)); do
        s=$(last_step "$dir/times" 0 "$r")
        ((s < low)) && low=$s
      done
      ((low >= kill_step)) && break
      sleep 0.05
    done
    t_fail=$(date +%s.%N)
    kill -KILL "${pids[1]}"
  fi
  # Wait for the new round's first steps, then stop the job.
  local seat_log="" any="" f t
  for _ in $(seq 1200); do
    any=""
    for f in "$dir"/times/rank*.log; do
      t=$(first_step_time "$f" "$attempt")
      [[ -n $t ]] && { [[ -z $any ]] || awk -v a="$t" -v b="$any" 'BEGIN { exit !(a < b) }'; } && any=$t
    done
    [[ -n $any ]] && { [[ $mode == shrink ]] || grep -q "round $attempt: node [0-9]* of" "$dir/spare.err"; } && break
    sleep 0.05
  done
  sleep 1
  kill -TERM "${pids[0]}" 2>/dev/null || true
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
  [[ -n $any ]] || { echo "$name: no step after the failure" >&2; return 1; }
  if [[ $mode == struck ]] && ! grep -q "this node was left out of the job: .*struck out" "$dir/node$((nodes - 1)).err"; then
    echo "$name: the flaky node was not struck out: $(tail -2 "$dir/node$((nodes - 1)).err")" >&2
    return 1
  fi
  local spare_s=- healed=- resumed killed_at
  killed_at=$(newest_step "$dir/times" $((attempt - 1)) "$nodes")  # the newest step before the failure
  resumed=$(awk -v a="$attempt" '$1 == a && $2 == "resumed" { print $3; exit }' "$dir/times/rank0.log")
  [[ -n $resumed ]] || { echo "$name: rank 0 did not resume: $(tail -3 "$dir/node0.out")" >&2; return 1; }
  if [[ $mode != shrink ]]; then
    # The spare's rank: "round N: node G of K, ranks R-R of W" on its console.
    seat_log=$dir/times/rank$(sed -n "s/.*round $attempt: node [0-9]* of [0-9]*, ranks \([0-9]*\)-.*/\1/p" "$dir/spare.err").log
    t=$(first_step_time "$seat_log" "$attempt")
    [[ -n $t ]] && spare_s=$(awk -v a="$t" -v b="$t_fail" 'BEGIN { printf "%.3f", a - b }')
    healed=no
    grep -q "received the snapshot of step" "$dir/spare.out" "$dir/spare.err" 2>/dev/null &&
      ! grep -q "resuming from $dir/ckpt" "$dir/spare.out" "$dir/node0.out" && healed=yes
  fi
  echo "$spare_s $(awk -v a="$any" -v b="$t_fail" 'BEGIN { printf "%.3f", a - b }') $((killed_at - resumed)) $healed"
}

where="loopback"
((loopback == 0)) && netns_nodes_make $((nodes + 1)) && where="network namespaces on a bridge"
declare -A spare_s any_s redone
healed=0 struck=0 failed=0
modes=(spare shrink)
((struck_runs > 0)) && modes+=(struck)
for ((run = 0; run < runs; run++)); do
  order=("${modes[@]}")
  ((run % 2)) && order=(shrink spare "${modes[@]:2}")  # alternate which of the two goes first
  for mode in "${order[@]}"; do
    [[ $mode == struck ]] && ((run >= struck_runs)) && continue
    if ! out=$(run_job "r$run.$mode" "$mode"); then
      failed=$((failed + 1))
      continue
    fi
    read -r sp an rd he <<<"$out"
    spare_s[$mode]+="$sp " any_s[$mode]+="$an " redone[$mode]+="$rd "
    [[ $mode == spare && $he == yes ]] && healed=$((healed + 1))
    [[ $mode == struck ]] && struck=$((struck + 1))
  done
done
range() {
  (($#)) || { echo "-"; return; }
  printf '%s (%s-%s)' "$(median "$@")" "$(printf '%s\n' "$@" | sort -g | head -1)" "$(printf '%s\n' "$@" | sort -g | tail -1)"
}
# shellcheck disable=SC2086  # the lists split on spaces
{
  printf '# %s, %s CPUs, load %s, %s active nodes x 1 train worker on %s, heartbeat %s s, %s runs\n' \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$nodes" "$where" "$heartbeat" "$runs"
  echo '| figure | with a spare | without (the round shrinks) |'
  echo '|---|---|---|'
  echo "| SIGKILL of a node's launcher -> first step on the spare's rank (s) | $(range ${spare_s[spare]:-}) | - |"
  echo "| SIGKILL -> first step of the new round, any rank (s) | $(range ${any_s[spare]:-}) | $(range ${any_s[shrink]:-}) |"
  echo "| steps redone | $(range ${redone[spare]:-}) | $(range ${redone[shrink]:-}) |"
  echo "| the spare's rank healed from memory, no checkpoint read | $healed of $(wc -w <<<"${spare_s[spare]:-}") | - |"
  if ((struck_runs > 0)); then
    echo "| a node whose worker fails every attempt struck out at its 3rd strike, the spare in its seat | $struck of $struck_runs | - |"
    echo "| its 3rd failure -> first step on the spare's rank (s) | $(range ${spare_s[struck]:-}) | - |"
    echo "| steps redone at the 3rd failure | $(range ${redone[struck]:-}) | - |"
  fi
}
((failed == 0))
