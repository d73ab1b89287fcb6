#!/usr/bin/env bash
# Jobs through a real local Slurm cluster (tests/slurm/cluster.sh, brought up once by the
# CTest fixture): scripts/slurm.sbatch running `train` on two nodes x two workers; scancel
# mid-run leaves no process behind; sbatch --signal=USR1@N and scancel --signal=USR1 reach
# every worker without stopping the job; srun of the c10d rendezvous form; a step on part of
# the allocation places its launchers by the step's nodes.
# Usage: slurm_test.sh CASE CLUSTER_DIR DDP_LAUNCH TRAIN|none REPO_ROOT
#   CASE: sbatch_train | scancel | usr1 | srun_c10d | srun_step. Exit 77: Slurm cannot run here (the
#   cluster's skip reason), or sbatch_train without a built trainer (DDP_BUILD_RUNTIME=OFF).
set -euo pipefail
# shellcheck source=SCRIPTDIR/../../scripts/lib.sh
source "$(dirname "$0")/../../scripts/lib.sh"
[[ $# -eq 5 ]] || die "usage: slurm_test.sh CASE CLUSTER_DIR DDP_LAUNCH TRAIN|none REPO_ROOT"
case_name=$1 cluster=$2 launcher=$3 train=$4 repo=$5
if [[ -s $cluster/skip ]]; then cat "$cluster/skip"; exit 77; fi
[[ -f $cluster/slurm.conf ]] || fail "no cluster at $cluster (the 'slurm: cluster up' fixture did not run)"
export SLURM_CONF=$cluster/slurm.conf

kJobTimeout=240  # seconds for any one job, generous for a loaded 2-core machine
tmp=$(mktemp -d /tmp/ddp-slurm-test.XXXXXX)
marker=ddpslurm$$x$RANDOM  # in every path a job's processes run from, for pgrep -f
cleanup() {  # the jobs this test submitted (their ids are in $tmp/jobs) never outlive it
  local j
  while read -r j; do scancel --signal=KILL --full "$j" 2>/dev/null || true; done < <(cat "$tmp/jobs" 2>/dev/null)
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() {  # lib.sh's fail (to stderr: it is also called inside $(...)), plus the jobs' logs
  exec >&2
  echo "FAIL: $*"
  for f in "$tmp"/job-*.out; do [[ -f $f ]] && { echo "--- $f"; tail -n 60 "$f"; }; done
  echo "--- slurmctld/slurmd logs"; tail -n 8 "$cluster"/log/*.log
  exit 1
}

job_field() {  # job_field ID FIELD: a field of `scontrol show job -o`
  scontrol show job -o "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}

wait_job() {  # until job ID has ended (SIGNALING, STAGE_OUT: not yet); prints "STATE EXITCODE"
  local id=$1 state
  for _ in $(seq 1 $((kJobTimeout * 4))); do
    state=$(job_field "$id" JobState)
    case $state in
      PENDING | CONFIGURING | RUNNING | COMPLETING | SIGNALING | STAGE_OUT | SUSPENDED | "") sleep 0.25 ;;
      *) echo "$state $(job_field "$id" ExitCode)"; return 0 ;;
    esac
  done
  fail "job $id still $state after ${kJobTimeout} s"
}

wait_files() {  # wait_files COUNT GLOB-PREFIX WHAT: until COUNT files match PREFIX*
  local n=$1 prefix=$2 what=$3
  for _ in $(seq 1 $((kJobTimeout * 4))); do
    local found=("$prefix"*)
    [[ -e ${found[0]} && ${#found[@]} -ge $n ]] && return 0
    sleep 0.25
  done
  fail "$what: fewer than $n files $prefix* after ${kJobTimeout} s"
}

submit() {  # submit SBATCH-ARGS... (scripts/slurm.sbatch and its program among them): prints the job id
  local id
  id=$(DDP_LAUNCH="$launcher" NPROC_PER_NODE=2 MASTER_PORT="$(free_port)" \
    sbatch --parsable --gpus-per-node=0 --chdir="$tmp" --output="$tmp/job-%j.out" "$@") ||
    fail "sbatch refused the job"
  echo "$id" >>"$tmp/jobs"
  echo "$id"
}

# --- the cases -------------------------------------------------------------------------

case_sbatch_train() {
  [[ $train != none && -x $train ]] || skip "the train trainer is not built (DDP_BUILD_RUNTIME=OFF)"
  local id result out
  id=$(submit "$repo/scripts/slurm.sbatch" "$train" --epochs 4 --checkpoint-dir "$tmp/ckpt" \
    --train-samples 8192 --val-samples 2048 --progress plain --log-every 20)
  result=$(wait_job "$id")
  out=$tmp/job-$id.out
  [[ $result == "COMPLETED 0:0" ]] || fail "job $id ended '$result', expected 'COMPLETED 0:0'"
  grep -Eq "train: done: val_accuracy [0-9.]+% after 4 epochs \([0-9]+ steps\) on 4 worker" "$out" ||
    fail "no 'train: done: ... on 4 worker(s)' line in the job output"
  local acc
  acc=$(sed -n 's/.*train: done: val_accuracy \([0-9.]*\)%.*/\1/p' "$out" | head -n 1)
  python3 -c "import sys; sys.exit(0 if float('$acc') >= 80 else 1)" || fail "final accuracy $acc% is below 80%"
  [[ $(grep -c "train: done: val_accuracy" "$out") -eq 1 ]] || fail "more than one final line (only rank 0 prints it)"
  [[ $(tail -n +2 "$tmp/ckpt/metrics.csv" | cut -d, -f1 | tr '\n' ' ') == "1 2 3 4 " ]] ||
    fail "metrics.csv should have rows for epochs 1 to 4: $(cat "$tmp/ckpt/metrics.csv")"
  # Both nodes' launchers wrote their workers' logs (one run directory each, two local ranks;
  # only rank 0 prints, so the others' logs may be empty).
  local runs=("$tmp/logs-$id"/*/)
  [[ ${#runs[@]} -eq 2 ]] || fail "expected two run directories (one per node) in logs-$id, found ${#runs[@]}"
  for run in "${runs[@]}"; do
    for lr in 0 1; do
      [[ -f $run/attempt_0/$lr/stdout.log && -f $run/attempt_0/$lr/stderr.log ]] ||
        fail "no stdout.log/stderr.log of local rank $lr in $run"
    done
  done
  { grep -q "node 0 of 2, ranks 0-1 of 4" "$out" && grep -q "node 1 of 2, ranks 2-3 of 4" "$out"; } ||
    fail "the two launchers did not report node 0 (ranks 0-1) and node 1 (ranks 2-3)"
  grep -rqs "train: done: val_accuracy" "$tmp/logs-$id" || fail "rank 0's final line is in no worker log"
  echo "ok: job $id: two nodes x two train workers, $acc% accuracy, logs from both nodes"
}

write_worker() {  # a shell worker in a path containing the marker; $1: extra lines
  local path=$tmp/worker-$marker.sh
  cat >"$path" <<W
#!/bin/bash
dir=$tmp
$1
W
  chmod +x "$path"
  echo "$path"
}

case_scancel() {
  local worker id
  # shellcheck disable=SC2016  # the worker's variables: expanded by the worker
  worker=$(write_worker '
bash -c "while :; do sleep 1; done" '"$marker"'-child &
touch "$dir/ready.$SLURM_NODEID.$LOCAL_RANK"
while :; do sleep 0.2; done')
  id=$(submit "$repo/scripts/slurm.sbatch" "$worker")
  wait_files 4 "$tmp/ready." "workers of job $id"
  local before
  before=$(pgrep -f -c "$marker" || true)
  ((before >= 10)) || fail "expected >= 10 processes (2 launchers, 4 workers, 4 children), pgrep found $before"
  local t0; t0=$(date +%s.%N)
  scancel "$id"
  local result
  result=$(wait_job "$id")
  [[ $result == CANCELLED* ]] || fail "job $id ended '$result' after scancel, expected CANCELLED"
  for _ in $(seq 1 120); do
    if ! pgrep -f "$marker" >/dev/null; then
      grep -q "ddp-launch: received SIGTERM" "$tmp/job-$id.out" || fail "no launcher reported the SIGTERM of scancel"
      echo "ok: job $id: scancel stopped $before processes, none left ($(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s; informational)"
      return 0
    fi
    sleep 0.5
  done
  fail "processes left 60 s after scancel: $(pgrep -a -f "$marker")"
}

case_usr1() {
  # Each worker records the USR1 it receives, then finishes normally a second later: the
  # job must complete with exit 0 (USR1 is forwarded, never a stop).
  local worker timed by_scancel
  # shellcheck disable=SC2016  # the worker's variables: expanded by the worker
  worker=$(write_worker '
trap "touch \"\$dir/usr1.\$SLURM_JOB_ID.\$SLURM_NODEID.\$LOCAL_RANK\"; got=1" USR1
touch "$dir/ready.$SLURM_JOB_ID.$SLURM_NODEID.$LOCAL_RANK"
for _ in $(seq 1 600); do sleep 0.2; [[ -z ${got:-} ]] || { sleep 1; exit 0; }; done
exit 3')
  # Slurm's own timer: 100 s before the 2-minute limit, i.e. at least 20 s after the start
  # (Slurm checks its timers every few seconds to ~30 s), when the workers are long up: a
  # signal sent while the launchers are still in rendezvous would have no worker to reach.
  timed=$(submit --time=2 --signal=USR1@100 --cpus-per-task=1 "$repo/scripts/slurm.sbatch" "$worker")
  # By hand, as an operator would: scancel --signal=USR1 signals the job's steps.
  by_scancel=$(submit --cpus-per-task=1 "$repo/scripts/slurm.sbatch" "$worker")
  wait_files 4 "$tmp/ready.$by_scancel." "workers of job $by_scancel"
  scancel --signal=USR1 "$by_scancel"
  for id in "$by_scancel" "$timed"; do
    local result
    result=$(wait_job "$id")
    [[ $result == "COMPLETED 0:0" ]] || fail "job $id ended '$result', expected 'COMPLETED 0:0'"
    local got=("$tmp/usr1.$id."*)
    [[ ${#got[@]} -eq 4 && -e ${got[0]} ]] || fail "job $id: USR1 reached ${#got[@]} of 4 workers"
  done
  echo "ok: USR1 reached all 4 workers of job $timed (--signal=USR1@100) and job $by_scancel (scancel --signal=USR1); both completed"
}

case_srun_c10d() {
  local worker port out
  # shellcheck disable=SC2016  # the worker's variables: expanded by the worker
  worker=$(write_worker '
echo "worker rank=$RANK local=$LOCAL_RANK group=$GROUP_RANK world=$WORLD_SIZE node=$SLURM_NODEID master=$MASTER_ADDR:$MASTER_PORT"')
  port=$(free_port)
  out=$tmp/job-srun.out
  timeout $kJobTimeout srun -N2 --ntasks-per-node=1 --cpus-per-task=1 --chdir="$tmp" \
    "$launcher" --nnodes=2 --nproc-per-node=2 --rdzv-backend=c10d --rdzv-endpoint="127.0.0.1:$port" \
    --rdzv-id="$marker" "$worker" >"$out" 2>&1 || fail "srun ddp-launch exited $?"
  local lines
  lines=$(grep -o "worker rank=.*" "$out" | sort)
  [[ $(grep -c . <<<"$lines") -eq 4 ]] || fail "expected 4 worker lines, got: $lines"
  [[ $(grep -o "rank=[0-9]" <<<"$lines" | sort | tr '\n' ' ') == "rank=0 rank=1 rank=2 rank=3 " ]] ||
    fail "global ranks are not 0..3: $lines"
  [[ $(grep -c "world=4 " <<<"$lines") -eq 4 ]] || fail "not every worker sees WORLD_SIZE=4: $lines"
  [[ $(grep -o "group=[0-9]" <<<"$lines" | sort | uniq -c | awk '{print $1}' | tr '\n' ' ') == "2 2 " ]] ||
    fail "expected two workers in each of two groups: $lines"
  [[ $(grep -o "master=.*" <<<"$lines" | sort -u | wc -l) -eq 1 ]] || fail "workers disagree on MASTER_ADDR:PORT: $lines"
  if [[ $train != none && -x $train ]]; then  # and a real gloo job in the same form
    port=$(free_port)
    timeout $kJobTimeout srun -N2 --ntasks-per-node=1 --cpus-per-task=1 --chdir="$tmp" \
      "$launcher" --nnodes=2 --nproc-per-node=2 --rdzv-backend=c10d --rdzv-endpoint="127.0.0.1:$port" \
      --rdzv-id="$marker-train" "$train" --epochs 1 --checkpoint-dir "$tmp/ckpt" --train-samples 2048 \
      --val-samples 512 --progress none >"$out" 2>&1 || fail "srun ddp-launch train exited $?"
    grep -q "on 4 worker" "$out" || fail "train under srun (c10d) did not finish on 4 workers"
  fi
  echo "ok: srun -N2 ddp-launch --rdzv-backend=c10d: ranks 0..3 in two groups of two"
}

case_srun_step() {
  # A step on part of a three-node allocation (srun -N2 -w n2,n3): the launchers must place
  # themselves by the step (node 0 and 1 of 2, master n2), not by the job's node list (n1).
  # --dry-run prints the placement and starts nothing, so node names need not resolve.
  local batch=$tmp/step-$marker.sbatch id result out
  cat >"$batch" <<B
#!/bin/bash
srun -N2 -w n2,n3 --ntasks-per-node=1 "$launcher" --dry-run --nproc-per-node=2 /bin/true
B
  id=$(sbatch --parsable -N3 --cpus-per-task=1 --chdir="$tmp" --output="$tmp/job-%j.out" "$batch") ||
    fail "sbatch refused the job"
  echo "$id" >>"$tmp/jobs"
  result=$(wait_job "$id")
  out=$tmp/job-$id.out
  [[ $result == "COMPLETED 0:0" ]] || fail "job $id ended '$result', expected 'COMPLETED 0:0'"
  { grep -q "on node 0 of 2 (world size 4)" "$out" && grep -q "on node 1 of 2 (world size 4)" "$out"; } ||
    fail "the two launchers are not node 0 and node 1 of 2"
  [[ $(grep -c "MASTER_ADDR=n2$" "$out") -eq 4 ]] || fail "not all 4 workers get MASTER_ADDR=n2 (the step's first node)"
  echo "ok: job $id: srun -N2 -w n2,n3 in a three-node job: nodes 0 and 1 of 2, master n2"
}

"case_$case_name"
