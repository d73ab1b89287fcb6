#!/usr/bin/env bash
# bench-spare.sh: a hot spare taking a lost node's seat (a benchmark, not a test). K active
# launchers and one spare on loopback (c10d, --nnodes K:K, --max-restarts 1, one `train` worker
# each, --snapshot-every 1, every node its own snapshot folder); once every rank passed
# KILL_STEP, node 1's launcher is SIGKILLed; the spare takes its seat and its worker is healed
# from a survivor's in-memory snapshot. Beside it, alternating, the same job without a spare
# on --nnodes (K-1):K, which goes on with K-1 nodes: the floor of a re-formed round (nobody new
# to heal). Per run: the SIGKILL to the first step of the new round (the spare's rank, and any
# rank), the steps redone (the last step done before the kill minus the step resumed from), and
# whether the spare's rank was healed from memory with no checkpoint read. Medians (min-max).
#
#   scripts/bench-spare.sh [--nodes K] [--runs N] [--kill-step S] [--heartbeat S]
#
# Defaults: --nodes 3, --runs 5, --kill-step 30, --heartbeat 1 (--rdzv-conf heartbeat_interval;
# how soon the store's host looks for lost nodes).
# Env: BUILD_DIR (scripts/lib.sh: its ddp-launch and trainers/train); KEEP=1 keeps the runs'
# folders (consoles, step-times logs) and says where.
# Exit: 0; 1 when a run did not go as expected (said on stderr); 2 on bad usage.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
nodes=3 runs=5 kill_step=30 heartbeat=1
while (($#)); do
  case $1 in
    -h | --help)
      usage
      exit 0
      ;;
    --nodes | --runs | --kill-step | --heartbeat)
      (($# >= 2)) || die "$1 needs a value; see scripts/bench-spare.sh --help"
      case $1 in
        --heartbeat) [[ $2 =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--heartbeat takes seconds, not '$2'" ;;
        *) [[ $2 =~ ^[0-9]+$ ]] || die "$1 takes a whole number, not '$2'" ;;
      esac
      case $1 in
        --nodes) nodes=$2 ;;
        --runs) runs=$2 ;;
        --kill-step) kill_step=$2 ;;
        --heartbeat) heartbeat=$2 ;;
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
  if [[ -n ${KEEP:-} ]]; then echo "kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

# The newest step of attempt A in rank R's step-times log ("A step N T"), or -1.
last_step() { awk -v a="$2" '$1 == a && $2 == "step" { s = $3 } END { print (s == "" ? -1 : s) }' "$1/rank$3.log" 2>/dev/null || echo -1; }
# The first step's time of attempt 1 in a rank's log, or "".
first_step_time() { awk '$1 == 1 && $2 == "step" { print $4; exit }' "$1" 2>/dev/null || true; }

# One run: run_job NAME SPARE(0|1): prints "seconds_spare seconds_any redone healed" or fails.
run_job() {
  local name=$1 spare=$2 dir=$tmp/$1 port i killed_at=-1 t_kill min
  mkdir -p "$dir/times" "$dir/ckpt"
  port=$(free_port)
  min=$((spare ? nodes : nodes - 1))
  local common=("$launcher" "--nnodes=$min:$nodes" --rdzv-backend c10d --rdzv-endpoint "127.0.0.1:$port"
    --rdzv-id "$name" --nproc-per-node 1 --max-restarts 1
    --rdzv-conf "join_timeout=60,last_call_timeout=30,heartbeat_interval=$heartbeat"
    "$train" --epochs 100 --train-samples 2048 --val-samples 64 --batch-size 16 --snapshot-every 1
    --checkpoint-dir "$dir/ckpt" --checkpoint-interval 1000000 --progress plain --log-every 1000000
    --step-times "$dir/times")
  pids=()
  for ((i = 0; i < nodes; i++)); do
    mkdir -p "$dir/shm$i"
    DDP_LAUNCH_SNAPSHOT_DIR=$dir/shm$i OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=lo "${common[@]}" \
      >"$dir/node$i.out" 2>"$dir/node$i.err" &
    pids+=($!)
    ((i == 0)) && sleep 0.3  # node 0 hosts the store
  done
  if ((spare)); then
    for _ in $(seq 600); do [[ -f $dir/times/rank$((nodes - 1)).log ]] && break; sleep 0.1; done
    mkdir -p "$dir/shm$nodes"
    DDP_LAUNCH_SNAPSHOT_DIR=$dir/shm$nodes OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=lo "${common[@]}" \
      >"$dir/spare.out" 2>"$dir/spare.err" &
    pids+=($!)
    for _ in $(seq 600); do grep -q "waits as a hot spare" "$dir/spare.err" 2>/dev/null && break; sleep 0.1; done
    grep -q "waits as a hot spare" "$dir/spare.err" || { echo "$name: the spare never waited" >&2; return 1; }
  fi
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
  t_kill=$(date +%s.%N)
  kill -KILL "${pids[1]}"
  # Wait for the new round's first steps, then stop the job.
  local seat_log="" any="" f t
  for _ in $(seq 1200); do
    any=""
    for f in "$dir"/times/rank*.log; do
      t=$(first_step_time "$f")
      [[ -n $t ]] && { [[ -z $any ]] || awk -v a="$t" -v b="$any" 'BEGIN { exit !(a < b) }'; } && any=$t
    done
    [[ -n $any ]] && { ((!spare)) || grep -q "round 1: node [0-9]* of" "$dir/spare.err"; } && break
    sleep 0.05
  done
  sleep 1
  kill -TERM "${pids[0]}" 2>/dev/null || true
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
  [[ -n $any ]] || { echo "$name: no step after the kill" >&2; return 1; }
  for ((r = 0; r < nodes; r++)); do  # the newest step done before the kill, on any rank
    s=$(last_step "$dir/times" 0 "$r")
    ((s > killed_at)) && killed_at=$s
  done
  local spare_s=- healed=- resumed
  resumed=$(awk '$1 == 1 && $2 == "resumed" { print $3; exit }' "$dir/times/rank0.log")
  [[ -n $resumed ]] || { echo "$name: rank 0 did not resume: $(tail -3 "$dir/node0.out")" >&2; return 1; }
  if ((spare)); then
    # The spare's rank: "round 1: node G of K, ranks R-R of W" on its console.
    seat_log=$dir/times/rank$(sed -n 's/.*round 1: node [0-9]* of [0-9]*, ranks \([0-9]*\)-.*/\1/p' "$dir/spare.err").log
    t=$(first_step_time "$seat_log")
    [[ -n $t ]] && spare_s=$(awk -v a="$t" -v b="$t_kill" 'BEGIN { printf "%.3f", a - b }')
    healed=no
    grep -q "received the snapshot of step" "$dir/spare.out" "$dir/spare.err" 2>/dev/null &&
      ! grep -q "resuming from $dir/ckpt" "$dir/spare.out" "$dir/node0.out" && healed=yes
  fi
  echo "$spare_s $(awk -v a="$any" -v b="$t_kill" 'BEGIN { printf "%.3f", a - b }') $((killed_at - resumed)) $healed"
}

with_spare=() with_any=() without_any=() redone_spare=() redone_shrink=() healed=0 failed=0
for ((run = 0; run < runs; run++)); do
  if ((run % 2)); then order=(0 1); else order=(1 0); fi
  for s in "${order[@]}"; do
    if ! out=$(run_job "r$run.$s" "$s"); then
      failed=$((failed + 1))
      continue
    fi
    read -r sp an rd he <<<"$out"
    if ((s)); then
      with_spare+=("$sp") with_any+=("$an") redone_spare+=("$rd")
      [[ $he == yes ]] && healed=$((healed + 1))
    else
      without_any+=("$an") redone_shrink+=("$rd")
    fi
  done
done
range() { printf '%s (%s-%s)' "$(median "$@")" "$(printf '%s\n' "$@" | sort -g | head -1)" "$(printf '%s\n' "$@" | sort -g | tail -1)"; }
printf '# %s, %s CPUs, load %s, %s active nodes x 1 train worker on loopback, heartbeat %s s, %s runs each\n' \
  "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$nodes" "$heartbeat" "$runs"
echo '| figure | with a spare | without (the round shrinks) |'
echo '|---|---|---|'
if ((${#with_spare[@]} == 0 || ${#without_any[@]} == 0)); then
  echo "no run finished in a configuration ($failed failed)" >&2
  exit 1
fi
echo "| SIGKILL of a node's launcher -> first step on the spare's rank (s) | $(range "${with_spare[@]}") | - |"
echo "| SIGKILL -> first step of the new round, any rank (s) | $(range "${with_any[@]}") | $(range "${without_any[@]}") |"
echo "| steps redone | $(range "${redone_spare[@]}") | $(range "${redone_shrink[@]}") |"
echo "| the spare's rank healed from memory, no checkpoint read | $healed of ${#with_spare[@]} | - |"
((failed == 0))
