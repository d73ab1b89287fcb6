#!/usr/bin/env bash
# A many-host launch over real ssh: three "hosts" as network namespaces on one bridge, two
# running Debian's sshd with keys made here (the third has none: unreachable). The same
# filesystem is seen from each, so the build's binaries are at the same path everywhere.
# Each host's name resolves to loopback there (hosts_lib.sh), so gloo works across hosts only
# over the interface the launcher sets. Cases: every hostfile format and a bad line; IPv6
# addresses (every spelling, --exclude, torch workers over IPv6, bad spellings); a 2 x 2 `train`
# run that ends with the same weights as a single-node run of 4; the workers' socket interface
# (set to the listed address's, said once per host, warned about; the user's kept);
# environment forwarding (forwarded, not forwarded, the env file); --exclude of a host and of a slot; a failing worker's exit code; Ctrl-C, and the
# launching process SIGKILLed, leave no process on any host (workers whose helpers escape every
# way included), and the agents tell why they stop; a
# killed ssh session (the client here, or the host's sshd process) is that host lost, and the
# surviving agent says so; elastic --nnodes 1:2 going on without a lost or an unreachable
# host; an unreachable host and a host without ddp-launch; the launching machine in the list;
# `ddp-launch exec`. Needs root, iproute2, openssh-server; exits 77 (skip) otherwise.
# Usage: hosts_test.sh DDP_LAUNCH [TRAIN]
# shellcheck disable=SC2016,SC2317  # the workers' lines expand on the hosts; helpers run indirectly
set -uo pipefail
set -m  # background jobs keep SIGINT (a non-interactive shell would ignore it in them)
launch=$(realpath "$1")
train=${2:+$(realpath "$2")}
python=${DDP_TEST_PYTHON:-/usr/bin/python3}  # CTest passes the build's (cmake/torch.cmake)
tag="ddph$$"
work=$(mktemp -d)
namespaces=()
# shellcheck source=SCRIPTDIR/../../scripts/lib.sh
source "$(dirname "$0")/../../scripts/lib.sh"
# shellcheck source=SCRIPTDIR/../multinode/netns_lib.sh
source "$(dirname "$0")/../multinode/netns_lib.sh"
# shellcheck source=SCRIPTDIR/hosts_lib.sh
source "$(dirname "$0")/hosts_lib.sh"
trap hosts_cleanup EXIT

hosts_up 3 2
a=$(host_ip 0) b=$(host_ip 1) c=$(host_ip 2)
cd "$work" || exit 1
export OMP_NUM_THREADS=1
unset GLOO_SOCKET_IFNAME NCCL_SOCKET_IFNAME  # the launcher chooses them (case 2b), unless a case sets them

run() {  # run LOG ARGS...: ddp-launch ARGS (ssh options added) in the foreground; sets rc
  local log=$1; shift
  timeout 120 "$launch" "$@" >"$log" 2>&1; rc=$?
}
has() { grep -q -- "$2" "$1"; }
tail_unless_ok() { (( rc == 0 )) || tail -5 "$1" | sed "s/^/  $1 | /"; }  # tail_unless_ok LOG: after run
count() { grep -c -- "$2" "$1"; }
worker='echo "rank=$RANK world=$WORLD_SIZE local=$LOCAL_RANK host=$(hostname -I | tr " " "\n" | grep -v : | tr -d "\n") cvd=${CUDA_VISIBLE_DEVICES:-none}"'
# Nothing of the job left in the namespaces: only each sshd's listener (within 10 s).
only_sshd_left() {
  local i pids main
  for _ in $(seq 100); do
    pids=""
    for i in 0 1; do
      main=$(cat "$work/sshd_$i.pid" 2>/dev/null)
      pids+=$(ip netns pids "${tag}h$i" | grep -vx "${main:-none}" | tr '\n' ' ')
    done
    [[ -z ${pids// /} ]] && return 0
    sleep 0.1
  done
  echo "left: $(for p in $pids; do tr '\0' ' ' </proc/"$p"/cmdline; echo; done)"
  return 1
}
wait_lines() {  # wait_lines FILE PATTERN N: N lines within 60 s
  for _ in $(seq 600); do (( $(grep -c -- "$2" "$1" 2>/dev/null) >= $3 )) && return 0; sleep 0.1; done
  return 1
}

# 1. The three hostfile formats (a comment, a blank line each), and --hosts.
printf '# DeepSpeed\n%s slots=2\n\n%s slots=2\n' "$a" "$b" >ds.hosts
printf '%s slots=2 max_slots=8\n%s slots=2 max_slots=4  # MPI\n' "$a" "$b" >mpi.hosts
printf '%s:2\n\n%s:2\n' "$a" "$b" >horovod.hosts
for f in ds mpi horovod; do
  run "$f.log" --hostfile "$f.hosts" "${ssh_opts[@]}" --no-python sh -c "$worker"
  check "hostfile ($f): exit 0, four ranks, two on each host (rc $rc)" \
    test "$rc" = 0 -a "$(count "$f.log" 'world=4')" = 4 -a "$(count "$f.log" "^\[$b\] .*host=$b")" = 2
done
run hosts.log --hosts "$a:1,$b:3" "${ssh_opts[@]}" --no-python sh -c "$worker"
check "--hosts $a:1,$b:3: ranks 1-3 on the second host" test "$rc" = 0 -a "$(count hosts.log "host=$b")" = 3
check "the prefix names the host, then the rank" has hosts.log "^\[$b\] *\[rank3\]: rank=3 world=4"
printf '%s slots=2\n%s gpus=2\n' "$a" "$b" >bad.hosts
run bad.log --hostfile bad.hosts "${ssh_opts[@]}" --no-python true
check "a bad hostfile line: exit 121, file and line, what to write (rc $rc)" \
  test "$rc" = 121 -a -n "$(grep "hostfile bad.hosts:2: '$b gpus=2': unknown key 'gpus'.*'host slots=N' (DeepSpeed)" bad.log)"

# 1b. IPv6: the hosts by their ULA addresses, in every spelling; the first hosts the store.
# They run where this machine reaches both hosts' sshd over IPv6 (the root namespace may have
# IPv6 off, or the bridge no IPv6 address): the launcher's own view, not the namespaces'.
a6=$(host_ip6 0) b6=$(host_ip6 1)
v6_reachable() {
  ip -n "${tag}h1" -6 addr show dev ddpv | grep -q "$b6/" && grep -q "ListenAddress $b6" "$work/sshd_1.conf" &&
    wait_for 10 ssh "${ssh_plain[@]}" "$a6" true && wait_for 10 ssh "${ssh_plain[@]}" "$b6" true
}
if v6_reachable; then
  worker6='echo "v6 rank=$RANK world=$WORLD_SIZE master=$MASTER_ADDR cvd=${CUDA_VISIBLE_DEVICES:-none} on=$(hostname -I | tr " " "\n" | grep : | tr -d "\n")"'
  printf '%s slots=1\n[%s]:1\n' "$a6" "$b6" >v6.hosts
  run v6.log --hostfile v6.hosts "${ssh_opts[@]}" --no-python sh -c "$worker6"
  tail_unless_ok v6.log
  check "IPv6 hostfile ('ADDR slots=1', '[ADDR]:1'): exit 0, a rank on each host, the first hosts the store (rc $rc)" \
    test "$rc" = 0 -a "$(count v6.log "v6 rank=.* world=2 master=$a6 ")" = 2 -a -n "$(grep "^\[$b6\] .*v6 rank=1 .*on=$b6" v6.log)"
  printf '[%s] slots=2\n[%s] slots=2\n' "$a6" "$b6" >v6b.hosts
  run v6b.log --hostfile v6b.hosts --exclude "[$b6]:0" "${ssh_opts[@]}" --no-python sh -c "$worker6"
  tail_unless_ok v6b.log
  check "IPv6 '[ADDR] slots=2' with --exclude '[ADDR]:0': world 3, that host's worker on slot 1 (rc $rc)" \
    test "$rc" = 0 -a "$(count v6b.log 'world=3')" = 3 -a -n "$(grep "^\[$b6\] .*rank=2 .*cvd=1 on=$b6" v6b.log)"
  if "$python" -c 'import torch.distributed' 2>/dev/null; then  # torch's own store client and gloo over IPv6
    cat >v6_allreduce.py <<'PY'
import os, torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print(f"allreduce rank={dist.get_rank()} sum={t.item():g} master={os.environ['MASTER_ADDR']}", flush=True)
dist.destroy_process_group()
PY
    run v6py.log --hosts "[$a6]:1,[$b6]:1" "${ssh_opts[@]}" "$python" "$work/v6_allreduce.py"
  tail_unless_ok v6py.log
    check "IPv6 --hosts '[ADDR]:1,[ADDR]:1': torch workers reach the store at MASTER_ADDR=$a6 and all-reduce (rc $rc)" \
      test "$rc" = 0 -a "$(count v6py.log "allreduce rank=. sum=3 master=$a6")" = 2
    check "IPv6 torch workers: each host says its workers use ddpv, which holds its listed address" \
      test "$(count v6py.log "ddp-launch: workers use interface ddpv ($a6, this node's address in the rendezvous)")" = 1 \
      -a "$(count v6py.log "ddp-launch: workers use interface ddpv ($b6, this node's address in the rendezvous)")" = 1
  else
    echo "SKIP: torch workers over IPv6 (no torch in $python)"
  fi
else
  echo "SKIP: IPv6 hosts: ssh over IPv6 to $a6 and $b6 does not answer from here" \
    "(disable_ipv6=$(sysctl -n net.ipv6.conf.all.disable_ipv6 2>/dev/null);" \
    "bridge: $(ip -6 addr show dev "${tag}br" 2>&1 | grep -o 'inet6 [^ ]*' | tr '\n' ' ');" \
    "ssh: $(ssh "${ssh_plain[@]}" -o ConnectTimeout=3 "$b6" true 2>&1 | tail -1))"
fi
run v6bad.log --hosts "$a:1,::1:4" "${ssh_opts[@]}" --no-python true
check "an unbracketed IPv6 address with slots: exit 121, says to write [ADDR]:SLOTS (rc $rc)" \
  test "$rc" = 121 -a -n "$(grep "'::1:4' has more than one ':'.*\[ADDR\]:SLOTS" v6bad.log)"
printf '%s slots=1\n[%s slots=1\n' "$a" "$b6" >v6bad.hosts
run v6bad2.log --hostfile v6bad.hosts "${ssh_opts[@]}" --no-python true
check "an unclosed '[' in a hostfile: exit 121, file and line (rc $rc)" \
  test "$rc" = 121 -a -n "$(grep "hostfile v6bad.hosts:2: .*has no closing ']'" v6bad2.log)"

# 2. train, 2 hosts x 2 workers over gloo, against a single node of 4: the same weights.
if [[ -n $train ]]; then
  targs=(--epochs 2 --train-samples 4096 --val-samples 1024 --progress plain --log-every 1000)
  timeout 120 "$launch" --nproc-per-node 4 "$train" "${targs[@]}" --checkpoint-dir "$work/ck1" >single.log 2>&1
  rc_single=$?
  printf '%s slots=2\n%s slots=2\n' "$a" "$b" >train.hosts
  run train.log --hostfile train.hosts "${ssh_opts[@]}" "$train" "${targs[@]}" --checkpoint-dir "$work/ck2"
  digest() { sed -n 's/.*train: final weights digest \([0-9a-f]*\).*/\1/p' "$1"; }
  check "train across 2 hosts x 2 workers: exit 0 (rc $rc, single node $rc_single)" test "$rc" = 0 -a "$rc_single" = 0
  check "train across hosts: 4 workers, its final line" has train.log "train: done: val_accuracy .* on 4 worker"
  check "train across hosts: each host's start line names the interface it set" \
    test "$(count train.log "workers use interface ddpv (.*); GLOO_SOCKET_IFNAME/NCCL_SOCKET_IFNAME set")" = 2
  check "train across hosts ends with the single node's weights ($(digest single.log) vs $(digest train.log))" \
    test -n "$(digest train.log)" -a "$(digest single.log)" = "$(digest train.log)"
else
  echo "SKIP: train across hosts (no train binary: a launcher-only build)"
fi

# 2b. The workers' socket interface: the one holding the host's listed address, GLOO_SOCKET_IFNAME
# and NCCL_SOCKET_IFNAME (=IF, an exact name) set, one line per host, a warning where the host's
# name is loopback; what the user set (forwarded: GLOO_ and NCCL_ are default prefixes) is kept;
# a single node gets neither line nor variable.
ifworker='echo "ifname gloo=${GLOO_SOCKET_IFNAME:-unset} nccl=${NCCL_SOCKET_IFNAME:-unset}"'
run if1.log --hosts "$a:1,$b:1" "${ssh_opts[@]}" --no-python sh -c "$ifworker"
check "socket interface: every worker gets GLOO_SOCKET_IFNAME=ddpv NCCL_SOCKET_IFNAME==ddpv (rc $rc)" \
  test "$rc" = 0 -a "$(count if1.log "ifname gloo=ddpv nccl==ddpv$")" = 2
check "socket interface: each host's start line names the interface and its address" \
  test -n "$(grep "^\[$b\] *ddp-launch: workers use interface ddpv ($b, this node's address in the rendezvous); GLOO_SOCKET_IFNAME/NCCL_SOCKET_IFNAME set$" if1.log)" \
  -a "$(count if1.log "ddp-launch: workers use interface ddpv ($a, this node's address")" = 1
if (( own_names )); then
  check "socket interface: a host whose name resolves to loopback is warned, once" \
    test "$(count if1.log "^\[$b\] *ddp-launch: warning: this host's name ${tag}h1 resolves to 127.0.0.1 (loopback) while the job reaches this node at $b: .*GLOO_SOCKET_IFNAME=ddpv; if that is the wrong interface")" = 1
fi
GLOO_SOCKET_IFNAME=mine NCCL_SOCKET_IFNAME="=mine2" run if2.log --hosts "$a:1,$b:1" "${ssh_opts[@]}" --no-python sh -c "$ifworker"
check "socket interface: both set by the user: kept on every host, no start line, no warning (rc $rc)" \
  test "$rc" = 0 -a "$(count if2.log "ifname gloo=mine nccl==mine2$")" = 2 \
  -a "$(count if2.log 'workers use interface')" = 0 -a "$(count if2.log "host's name")" = 0
GLOO_SOCKET_IFNAME=mine run if3.log --hosts "$a:1,$b:1" "${ssh_opts[@]}" --no-python sh -c "$ifworker"
check "socket interface: GLOO_SOCKET_IFNAME by the user kept, NCCL_SOCKET_IFNAME set, said so (rc $rc)" \
  test "$rc" = 0 -a "$(count if3.log "ifname gloo=mine nccl==ddpv$")" = 2 \
  -a "$(count if3.log "workers use interface ddpv (.*); NCCL_SOCKET_IFNAME set (your GLOO_SOCKET_IFNAME kept)")" = 2 \
  -a "$(count if3.log "host's name")" = 0
run if4.log --hosts "$a:2" "${ssh_opts[@]}" --no-python sh -c "$ifworker"
check "socket interface: one host (a single node): nothing set, nothing said (rc $rc)" \
  test "$rc" = 0 -a "$(count if4.log "ifname gloo=unset nccl=unset$")" = 2 -a "$(count if4.log 'workers use interface')" = 0

# 3. Environment forwarding: a default prefix, an added one, the env file; not the rest.
printf '# for every host\nFROM_FILE="from file"\nNCCL_TEST_FWD=file-wins\n' >job.env
NCCL_TEST_FWD=yes NCCL_OTHER=1 MY_APP_X=1 UNFORWARDED_X=1 MASTER_TEST_X=1 \
  run env.log --hosts "$a:1,$b:1" --env-forward MY_APP_ --env-file job.env "${ssh_opts[@]}" --no-python sh -c \
  'echo "env nccl=${NCCL_TEST_FWD:-unset} my=${MY_APP_X:-unset} file=${FROM_FILE:-unset} unf=${UNFORWARDED_X:-unset} master=${MASTER_TEST_X:-unset}"'
check "env: forwarded, env file wins, others not (rc $rc)" \
  has env.log "^\[$b\] .*env nccl=file-wins my=1 file=from file unf=unset master=unset"
check "env: one start line names what is forwarded, without values" \
  has env.log "ddp-launch: forwarding .*FROM_FILE MY_APP_X NCCL_OTHER NCCL_TEST_FWD "
check "env: no value on the start line" test -z "$(grep 'ddp-launch: forwarding' env.log | grep 'file-wins')"
# The launching machine's PET_* are its flag defaults on every host (a host's own are not read).
PET_MAX_RESTARTS=2 run pet.log --hosts "$a:1,$b:1" "${ssh_opts[@]}" --no-python sh -c \
  'echo "pet max=$TORCHELASTIC_MAX_RESTARTS"'
check "env: this machine's PET_MAX_RESTARTS applies on every host (rc $rc)" \
  has pet.log "^\[$b\] .*pet max=2"
check "env: one line names the PET_ settings sent" has pet.log "every host parses the arguments with this machine's PET_MAX_RESTARTS"

# 4. --exclude: a whole host; one slot (its workers get the other slots as GPUs).
run ex1.log --hosts "$a:2,$b:2" --exclude "$b" "${ssh_opts[@]}" --no-python sh -c "$worker"
check "--exclude HOST: only the first host runs, world 2 (rc $rc)" \
  test "$rc" = 0 -a "$(count ex1.log 'world=2')" = 2 -a "$(count ex1.log "host=$b")" = 0
run ex2.log --hosts "$a:2,$b:2" --exclude "$a:0" "${ssh_opts[@]}" --no-python sh -c "$worker"
check "--exclude HOST:SLOT: that host runs one worker on slot 1 (rc $rc)" \
  test "$rc" = 0 -a "$(count ex2.log 'world=3')" = 3 -a -n "$(grep "rank=0 .*host=$a cvd=1" ex2.log)"

# 5. A failing worker on the second host: its exit code, the report names host and rank.
run fail.log --hosts "$a:1,$b:1" "${ssh_opts[@]}" --no-python sh -c '[ "$RANK" = 1 ] && exit 3; sleep 30'
check "a worker failing on the second host: exit 3 (rc $rc)" test "$rc" = 3
check "the failure report comes with the host's prefix and names the rank" has fail.log "^\[$b\] .*rank 1"
check "the launcher's last line names the host" has fail.log "ddp-launch: the job failed (exit code 3).*$b (node rank 1)"
check "after a failure: no agent says it was stopped by a SIGTERM" test "$(count fail.log 'stopped by SIGTERM')" = 0
check "after a failure: no process left on any host" only_sshd_left

# 6. Ctrl-C on the launching side stops every host.
"$launch" --hosts "$a:2,$b:2" "${ssh_opts[@]}" --no-python sh -c 'echo started; exec sleep 300' >int.log 2>&1 &
pid=$!
wait_lines int.log started 4
kill -INT "$pid"; wait_rc "$pid" 60
check "Ctrl-C: exit 130 (rc $rc)" test "$rc" = 130
check "Ctrl-C: each agent says it was stopped because the launch got SIGINT, not by a SIGTERM of its own" \
  test "$(count int.log 'ddp-launch: stopped: the launch was stopped by SIGINT on the launching machine')" = 2 \
  -a "$(count int.log 'stopped by SIGTERM')" = 0
check "Ctrl-C: no process left on any host" only_sshd_left

# 7. The launching process SIGKILLed: its ssh sessions end, every agent stops.
"$launch" --hosts "$a:1,$b:1" "${ssh_opts[@]}" --no-python sh -c 'echo started; exec sleep 300' >kill.log 2>&1 &
pid=$!
wait_lines kill.log started 2
kill -KILL "$pid"; wait "$pid" 2>/dev/null
check "launcher SIGKILLed: no process left on any host" only_sshd_left

# 7b. Workers whose helpers escape every way (tests/support/escaping_worker.sh: own session,
# double fork, own group, nohup, SIGTERM ignored, stopped), stopped by Ctrl-C, then by SIGKILL
# of the launching process: nothing of them left on any host.
escapes=$work/escape
for how in INT KILL; do
  rm -rf "$escapes"; mkdir -p "$escapes"
  "$launch" --hosts "$a:1,$b:1" --shutdown-timeout=1 "${ssh_opts[@]}" --no-python \
    "$repo_root/tests/support/escaping_worker.sh" "$escapes" wait >escape.log 2>&1 &
  pid=$!
  for _ in $(seq 600); do [[ -e $escapes/up.0.0 && -e $escapes/up.1.0 ]] && break; sleep 0.1; done
  kill "-$how" "$pid"; wait "$pid" 2>/dev/null
  check "escaping helpers, SIG$how on the launching machine: no process left on any host" only_sshd_left
done

# 8. One host's ssh session killed: that host is lost, named; the job stops (exit 124).
"$launch" --hosts "$a:1,$b:1" "${ssh_opts[@]}" --no-python sh -c 'echo started; exec sleep 300' >lost.log 2>&1 &
pid=$!
wait_lines lost.log started 2
session=$(pgrep -f -- "-T -- $b if \\[ -x" | head -1)
if [[ -n $session ]]; then kill -KILL "$session"; fi
wait_rc "$pid" 60
if [[ $rc == timeout ]]; then kill -KILL "$pid"; fi
check "a killed ssh session: exit 124 (rc $rc)" test "$rc" = 124
check "a killed ssh session: that host is reported lost" has lost.log "ddp-launch: host $b (node rank 1) lost: its ssh session ended"
# The first host's agent tells the lost host as its stop's reason: the launching machine's word
# (`was lost`), or, if the lost host's agent published its own stop first, that one's.
survivor_says_lost() {  # survivor_says_lost LOG
  grep -Eq "^\[$a\] .*stopped: host $b \(node rank 1\) (was lost: its ssh session ended|lost its session with)" "$1" &&
    ! grep -q "^\[$a\] .*stopped by SIGTERM" "$1"
}
check "a killed ssh session: the surviving agent says it stopped because that host was lost" survivor_says_lost lost.log
check "a killed ssh session: no process left on any host" only_sshd_left

# 8b. The same from the host's side: its sshd's process for the connection killed.
"$launch" --hosts "$a:1,$b:1" "${ssh_opts[@]}" --no-python sh -c 'echo started; exec sleep 300' >lost2.log 2>&1 &
pid=$!
wait_lines lost2.log started 2
conn=$(pgrep -P "$(cat "$work/sshd_1.pid")" sshd | head -1)
if [[ -n $conn ]]; then kill -KILL "$conn"; fi
wait_rc "$pid" 60
if [[ $rc == timeout ]]; then kill -KILL "$pid"; fi
check "the host's sshd connection killed: exit 124, that host reported lost (rc $rc)" \
  test "$rc" = 124 -a -n "$(grep "ddp-launch: host $b (node rank 1) lost: its ssh session ended" lost2.log)"
check "the host's sshd connection killed: the surviving agent says it stopped because that host was lost" \
  survivor_says_lost lost2.log
check "the host's sshd connection killed: no process left on any host" only_sshd_left

# 8c. Elastic (--nnodes 1:2 --max-restarts 1): the second host's ssh session killed, the
# first host's agent restarts alone and the job succeeds; an unreachable host at the start is
# left out while MIN hosts are left; a MAX above the host count is refused.
elastic_worker='if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then echo "started world=$WORLD_SIZE"; exec sleep 300; fi; echo "again world=$WORLD_SIZE"'
"$launch" --hosts "$a:1,$b:1" --nnodes 1:2 --max-restarts 1 "${ssh_opts[@]}" --no-python sh -c "$elastic_worker" \
  >elastic.log 2>&1 &
pid=$!
wait_lines elastic.log 'started world=2' 2
session=$(pgrep -f -- "-T -- $b if \\[ -x" | head -1)
if [[ -n $session ]]; then kill -KILL "$session"; fi
wait_rc "$pid" 90
if [[ $rc == timeout ]]; then kill -KILL "$pid"; fi
check "elastic: a lost host, the other restarts alone in a round of 1 and the job succeeds (rc $rc)" \
  test "$rc" = 0 -a -n "$(grep "^\[$a\] .*again world=1" elastic.log)" \
  -a -n "$(grep 'the elastic job goes on with 1 host(s) (--nnodes 1:2)' elastic.log)"
check "elastic: the last line counts the lost host" has elastic.log "the elastic job finished on 1 host(s); 1 host(s) lost"
check "elastic: no process left on any host" only_sshd_left
run elastic2.log --hosts "$a:1,$c:1" --nnodes 1:2 "${ssh_opts[@]}" --no-python sh -c "$worker"
check "elastic: an unreachable host at the start is left out, the job runs on the other (rc $rc)" \
  test "$rc" = 0 -a -n "$(grep "cannot reach 1 host(s) over ssh ($c: .*); the elastic job goes on with 1 host(s)" elastic2.log)" \
  -a "$(count elastic2.log 'world=1 ')" = 1
run elastic3.log --hosts "$a:1,$c:1" --nnodes 2:2 "${ssh_opts[@]}" --no-python true
check "a fixed --nnodes with a host list: exit 121, says to drop it or give MIN:MAX (rc $rc)" \
  test "$rc" = 121 -a -n "$(grep 'drop --nnodes, or give --nnodes MIN:MAX' elastic3.log)"
run elastic4.log --hosts "$a:1,$b:1" --nnodes 1:3 "${ssh_opts[@]}" --no-python true
check "elastic: MAX above the host count: exit 121 naming both (rc $rc)" \
  test "$rc" = 121 -a -n "$(grep 'asks for up to 3 node(s), and the host list has 2' elastic4.log)"

# 9. An unreachable host, and a host without ddp-launch: clear errors naming it; nothing starts.
run unreach.log --hosts "$a:1,$c:1" "${ssh_opts[@]}" --no-python true
check "an unreachable host: exit 124 naming it (rc $rc)" \
  test "$rc" = 124 -a -n "$(grep "cannot reach 1 of 2 host(s) over ssh: $c: .*refused" unreach.log)"
run nolaunch.log --hosts "$a:1,$b:1" --remote-launcher /nonexistent/ddp-launch "${ssh_opts[@]}" --no-python true
check "no ddp-launch on the host: exit 127, the host's line says so (rc $rc)" \
  test "$rc" = 127 -a -n "$(grep "^\[$b\] *ddp-launch: no ddp-launch at /nonexistent/ddp-launch on this host" nolaunch.log)"
check "after those errors: no process left on any host" only_sshd_left

# 10. The launching machine in the list: its agent starts without ssh.
ip netns exec "${tag}h0" timeout 120 "$launch" --hosts "$a:1,$b:1" "${ssh_opts[@]}" --no-python sh -c "$worker" \
  >local.log 2>&1; rc=$?
check "the launching machine in the list: exit 0, one ssh connection (rc $rc)" \
  test "$rc" = 0 -a -n "$(grep "$a (node 0, 1 worker(s), this machine)" local.log)" -a -n "$(grep 'connected to 1 host(s)' local.log)"

# 11. exec: every host, prefixed; the first non-zero exit code in host order; unreachable named.
timeout 60 "$launch" exec --hosts "$a,$b" "${ssh_opts[@]}" -- 'echo "on $(hostname -I)"' >exec1.log 2>&1; rc=$?
check "exec: exit 0, each host's line with its prefix (rc $rc)" \
  test "$rc" = 0 -a -n "$(grep "^\[$a\] *on $a" exec1.log)" -a -n "$(grep "^\[$b\] *on $b" exec1.log)"
timeout 60 "$launch" exec --hosts "$a,$b" "${ssh_opts[@]}" -- 'hostname -I | grep -q' "$b" '&& exit 5; exit 4' \
  >exec2.log 2>&1; rc=$?
check "exec: the first non-zero code in host order (rc $rc)" test "$rc" = 4
timeout 60 "$launch" exec --hosts "$a,$c" "${ssh_opts[@]}" -- true >exec3.log 2>&1; rc=$?
check "exec: an unreachable host named (rc $rc)" test "$rc" = 124 -a -n "$(grep "over ssh: $c:" exec3.log)"

netns_report
