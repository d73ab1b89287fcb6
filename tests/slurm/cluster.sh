#!/usr/bin/env bash
# A real local Slurm cluster on this one host, for the tests: munged with its own key and
# socket, slurmctld and three slurmd (n1..n3, all NodeHostName=localhost, own ports), every
# file under DIR, SLURM_CONF=DIR/slurm.conf so nothing in /etc is read or written.
# Usage: cluster.sh up DIR     (prints `export SLURM_CONF=...`; exits 77 where Slurm cannot run)
#        cluster.sh down DIR   (stops every daemon it started; safe to run twice)
set -euo pipefail
# shellcheck source=SCRIPTDIR/../../scripts/lib.sh
source "$(dirname "$0")/../../scripts/lib.sh"

kNodes=3
kCpusPerNode=16        # declared, not real (SlurmdParameters=config_overrides), so
                       # scripts/slurm.sbatch's --cpus-per-task=16 fits on a small machine

skip_file=/dev/null   # up writes the reason to DIR/skip too, for the test cases to repeat
# lib.sh's skip (exit 77), which need calls too, plus that reason file.
skip() { echo "cluster.sh: SKIP: $*" | tee "$skip_file" >&2; exit 77; }

write_conf() {
  local dir=$1 ctld_port=$2; shift 2
  local host; host=$(hostname -s)
  cat >"$dir/slurm.conf" <<CONF
ClusterName=ddptest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
SlurmdParameters=config_overrides
SlurmctldTimeout=30
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
MinJobAge=300
MessageTimeout=20
CONF
  local i=1
  for port in "$@"; do
    echo "NodeName=n$i NodeHostName=localhost NodeAddr=127.0.0.1 Port=$port CPUs=$kCpusPerNode RealMemory=1000 State=UNKNOWN" >>"$dir/slurm.conf"
    i=$((i + 1))
  done
  echo "PartitionName=test Nodes=n[1-$kNodes] Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES" >>"$dir/slurm.conf"
}

start_munge() {
  local dir=$1
  mkdir -p "$dir/munge" && chmod 700 "$dir/munge"
  head -c 1024 /dev/urandom >"$dir/munge/munge.key" && chmod 400 "$dir/munge/munge.key"
  munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
    --seed-file="$dir/munge/munged.seed" 2>"$dir/log/munged.err" ||
    die 1 "munged did not start: $(cat "$dir/log/munged.err" "$dir/munge/munged.log" 2>/dev/null | tail -3)"
}

wait_idle() {  # until all nodes are idle (slurmd registered), or fail with the logs
  local dir=$1
  for _ in $(seq 1 120); do
    local idle
    idle=$(sinfo -h -N -t idle -o '%N' 2>/dev/null | sort -u | wc -l)
    ((idle >= kNodes)) && return 0
    sleep 0.5
  done
  sinfo -N -l >&2 || true
  tail -n 5 "$dir"/log/*.log >&2 || true
  die 1 "the nodes did not become idle within 60 s (logs above)"
}

up() {
  local dir=$1
  down "$dir"  # a cluster left by an interrupted run
  rm -rf "$dir" && mkdir -p "$dir" && skip_file=$dir/skip
  [[ $(id -u) -eq 0 ]] || skip "needs root (slurmd runs jobs as the submitting user and must be root; CI runs the tests as root)"
  need 77 munged slurmctld slurmd sbatch srun scancel sinfo
  mkdir -p "$dir"/{state,spool,run,log}
  local ports; read -r -a ports <<<"$(free_port $((kNodes + 1)))"
  write_conf "$dir" "${ports[@]}"
  export SLURM_CONF=$dir/slurm.conf
  start_munge "$dir"
  slurmctld -c -f "$SLURM_CONF" || die 1 "slurmctld did not start: $(tail -n 5 "$dir/log/slurmctld.log")"
  for i in $(seq 1 "$kNodes"); do
    mkdir -p "$dir/spool/n$i"
    slurmd -N "n$i" -f "$SLURM_CONF" || die 1 "slurmd n$i did not start: $(tail -n 5 "$dir/log/slurmd.n$i.log")"
  done
  wait_idle "$dir"
  echo "export SLURM_CONF=$SLURM_CONF"
}

daemon_pid() {  # the live pid in pid file $2 if it is still our $1 (its command line names $3)
  local name=$1 file=$2 dir=$3 pid
  [[ -s $file ]] || return 0
  pid=$(cat "$file")
  [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$name" ]] || return 0
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$dir/" && echo "$pid"
  return 0
}

down() {  # cancels the jobs, then SIGTERMs the daemons (SIGKILL after 15 s); only ours
  local dir=$1 pids=() pid
  [[ -f $dir/slurm.conf ]] || return 0
  local ctld; ctld=$(daemon_pid slurmctld "$dir/run/slurmctld.pid" "$dir")
  if [[ -n $ctld ]]; then
    SLURM_CONF=$dir/slurm.conf timeout 20 scancel --full --signal=KILL --partition=test 2>/dev/null || true
    pids+=("$ctld")
  fi
  for f in "$dir"/run/slurmd.*.pid; do
    pid=$(daemon_pid slurmd "$f" "$dir")
    [[ -z $pid ]] || pids+=("$pid")
  done
  pid=$(daemon_pid munged "$dir/munge/munged.pid" "$dir")
  [[ -z $pid ]] || pids+=("$pid")
  ((${#pids[@]} > 0)) || return 0
  kill "${pids[@]}" 2>/dev/null || true
  local alive=("${pids[@]}")
  for _ in $(seq 1 75); do
    pids=("${alive[@]}") alive=()
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive+=("$pid"); done
    ((${#alive[@]} > 0)) || break
    sleep 0.2
  done
  ((${#alive[@]} == 0)) || kill -9 "${alive[@]}" 2>/dev/null || true
  rm -f "$dir"/run/*.pid "$dir/munge/munged.pid"
}

case "${1:-}" in
  up) [[ $# -eq 2 ]] || die 1 "usage: cluster.sh up DIR"; up "$2" ;;
  down) [[ $# -eq 2 ]] || die 1 "usage: cluster.sh down DIR"; down "$2" ;;
  *) die 1 "usage: cluster.sh up|down DIR" ;;
esac
