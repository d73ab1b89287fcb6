#!/usr/bin/env bash
# Gradient compression on a shaped link: two "nodes" as network namespaces joined by a veth
# pair shaped with tc (tbf rate on both ends; netem delay too where the kernel has it), one
# ddp-launch per node (--nnodes 2, one worker each, the store on node 0), the MLP
# 784-1024-1024-1024-10 trained for EPOCHS epochs on one data set file (Gaussian classes,
# scripts/bench_compress.py data) by libddp (tests/runtime/bench.cpp = ddp_bench --data) with
# each of HOOKS_CPP and by PyTorch's Python DDP (bench/peers/python_ddp_bench.py --data) with
# each of HOOKS_PY, alternating; per LINKS entry, REPEATS times; samples/s and final accuracy,
# medians. Also the floors: the compute floor (ddp_bench --comm-hook none: two workers, no
# communication) and the unshaped link. Needs root and iproute2 (tc).
# Env: PYTHON (the Python DDP peer's and the helper's; scripts/lib.sh use_bench_python: default
#      the torch venv's; PYTHON=/usr/bin/python3 for Debian's 1.13),
#      BUILD_DIR (scripts/lib.sh; ddp_bench and ddp-launch are built there if missing),
#      REPEATS (3), LINKS ("1gbit 10gbit unshaped"), DELAY (0.25ms: netem, when available),
#      HOOKS_CPP ("allreduce fp16 bf16 powersgd:1 powersgd:2 powersgd:4"),
#      HOOKS_PY ("allreduce fp16 powersgd:2"), on the unshaped link UNSHAPED_CPP ("allreduce
#      powersgd:2") and UNSHAPED_PY ("allreduce"), FLOOR (1: the no-communication run),
#      TRAIN/VAL (4096/2048 samples), EPOCHS (3), BATCH (32 per worker), WARMUP (10 steps),
#      LR (0.01), PSGD_START (2: plain steps before PowerSGD compresses), HIDDEN (1024),
#      LAYERS (4), IN_DIM (784), CLASSES (10), RUN_TIMEOUT (180 s: a job
#      still running then is stopped and reported; PyTorch 1.13's PowerSGD on gloo sometimes hangs),
#      NS_PREFIX (ddpc<pid>: the namespaces' names), RESULTS (a file to keep the result lines),
#      ACC_EPOCHS (0: off; N: afterwards, once, ACC_HOOKS ("allreduce powersgd:1 powersgd:2
#      powersgd:4") by libddp for N epochs on the unshaped link, as link=unshaped-Nep: the
#      accuracy of a longer schedule, which does not depend on the link).
# Usage: [ENV=...] scripts/bench-compress.sh   (as root; settings are the env variables above)
# Output: result lines `case=compress link=L peer=P hook=H [rank=R] world=2 ... samples_per_s=X
#   step_ms=Y accuracy=A` (scripts/plot-bench.sh charts them), `# failed: ...` lines, then the
#   medians table and the targets (scripts/bench_compress.py summary).
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$repo_root"
die_prefix="bench-compress.sh: error: "
if [[ ${1-} == -h || ${1-} == --help ]]; then
  sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
  exit 0
fi
(($# == 0)) || die "unexpected argument '$1': settings are env variables (REPEATS=1 LINKS=1gbit ...); see --help"
[[ $(id -u) -eq 0 ]] || die "needs root (network namespaces and tc); run it with sudo"
need ip tc ping

repeats=${REPEATS:-3}
links=${LINKS-1gbit 10gbit unshaped}
delay=${DELAY-0.25ms}
hooks_cpp=${HOOKS_CPP-allreduce fp16 bf16 powersgd:1 powersgd:2 powersgd:4}
hooks_py=${HOOKS_PY-allreduce fp16 powersgd:2}
[[ $repeats =~ ^[1-9][0-9]*$ ]] || die "REPEATS=$repeats: expected a count of 1 or more"
for link in $links; do
  [[ $link == unshaped || $link =~ ^[0-9]+(\.[0-9]+)?[kmg]bit$ ]] ||
    die "LINKS: '$link' is not a rate tc knows (e.g. 100mbit, 1gbit, 10gbit) or 'unshaped'"
done
for n in "${TRAIN:-4096}" "${VAL:-2048}" "${EPOCHS:-3}" "${BATCH:-32}" "${HIDDEN:-1024}" "${ACC_EPOCHS:-0}"; do
  [[ $n =~ ^[0-9]+$ ]] || die "'$n' in TRAIN/VAL/EPOCHS/BATCH/HIDDEN/ACC_EPOCHS is not a whole number"
done
helper=$repo_root/scripts/bench_compress.py
peer_py=$repo_root/bench/peers/python_ddp_bench.py
bench=$build_dir/tests/runtime/ddp_bench
launcher=$build_dir/launcher/ddp-launch
for t in ddp_bench:"$bench" ddp-launch:"$launcher"; do
  if [[ ! -x ${t#*:} ]]; then
    [[ -f $build_dir/build.ninja ]] || cmake -S . -B "$build_dir" -G Ninja >/dev/null
    cmake --build "$build_dir" --target "${t%%:*}" >/dev/null
  fi
done
use_bench_python  # python: PYTHON or the torch venv's; dies without torch

tag=${NS_PREFIX:-ddpc$$}
a="${tag}a" b="${tag}b" va="${tag}va" vb="${tag}vb"
net=10.232.$(($$ % 200))
ip_a=$net.1 ip_b=$net.2
work=$(mktemp -d)
cleanup() {  # the nodes' processes, the namespaces (the veth pair goes with them), the files
  local ns pid
  for pid in $(jobs -p); do kill -9 "$pid" 2>/dev/null || true; done
  for ns in "$a" "$b"; do ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true; done
  for ns in "$a" "$b"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

{ ip netns add "$a" && ip netns add "$b"; } ||
  die "cannot create network namespaces '$a', '$b' (a container without CAP_SYS_ADMIN?)"
ip link add "$va" type veth peer name "$vb" || die "cannot create a veth pair"
ip link set "$va" netns "$a" && ip link set "$vb" netns "$b"
ip -n "$a" addr add "$ip_a/24" dev "$va" && ip -n "$b" addr add "$ip_b/24" dev "$vb"
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
ip -n "$a" link set "$va" up && ip -n "$b" link set "$vb" up

# netem (delay) is a kernel module some kernels lack; tbf (rate) is nearly always there.
has_netem=0
ip netns exec "$a" tc qdisc add dev "$va" root netem delay 1ms 2>/dev/null && has_netem=1
ip netns exec "$a" tc qdisc del dev "$va" root 2>/dev/null || true
shape() {  # shape RATE|unshaped: the same qdisc on both ends (each shapes what it sends)
  local ns dev
  for ns in "$a" "$b"; do
    dev=$([[ $ns == "$a" ]] && echo "$va" || echo "$vb")
    ip netns exec "$ns" tc qdisc del dev "$dev" root 2>/dev/null || true
    [[ $1 == unshaped ]] && continue
    if ((has_netem)) && [[ -n $delay ]]; then
      ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: netem delay "$delay"
      ip netns exec "$ns" tc qdisc add dev "$dev" parent 1: handle 2: tbf rate "$1" burst 512kb latency 20ms
    else
      ip netns exec "$ns" tc qdisc add dev "$dev" root tbf rate "$1" burst 512kb latency 20ms
    fi
  done
}
probe_link() {  # what the link carries now, one direction, and its round trip
  local mib=$1 rate rtt
  ip netns exec "$b" "$python" "$helper" probe-server "$ip_b" 5999 &
  rate=$(ip netns exec "$a" "$python" "$helper" probe "$ip_b" 5999 "$mib")
  wait $!
  rtt=$(ip netns exec "$a" ping -c 5 -i 0.2 -q "$ip_b" | sed -n 's|.*= [0-9.]*/\([0-9.]*\)/.*|\1|p')
  echo "$rate rtt_ms=${rtt:-?}"
}

dataset=$work/data.bin
"$python" "$helper" data "$dataset" --train "${TRAIN:-4096}" --val "${VAL:-2048}" --dim "${IN_DIM:-784}" \
  --classes "${CLASSES:-10}"
model=(--batch "${BATCH:-32}" --hidden "${HIDDEN:-1024}" --layers "${LAYERS:-4}" --in-dim "${IN_DIM:-784}"
  --classes "${CLASSES:-10}")
train=(--data "$dataset" --epochs "${EPOCHS:-3}" --warmup "${WARMUP:-10}" --lr "${LR:-0.01}")

port=29800
# run_pair LINK PEER HOOK: one world-2 job, a launcher per namespace; appends its result line
# (or a '# failed:' line) to $results and prints it.
run_pair() {
  local link=$1 peer=$2 hook=${3%%:*} rank="" prog log_a=$work/a.log log_b=$work/b.log pa pb rc_a=0 rc_b=0 line
  [[ $3 == *:* ]] && rank=${3#*:}
  local args=("${model[@]}" "${train[@]}" --comm-hook "$hook")
  [[ -n $rank ]] && args+=(--powersgd-rank "$rank" --powersgd-start "${PSGD_START:-2}")
  if [[ $peer == cpp-ddp ]]; then prog=$bench; else prog=$peer_py; fi
  port=$((port + 1))
  for node in 0 1; do
    local ns=$a dev=$va ip=$ip_a
    ((node == 1)) && ns=$b dev=$vb ip=$ip_b
    ip netns exec "$ns" env OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME="$dev" PYTHON_EXEC="$python" \
      timeout -k 5 "${RUN_TIMEOUT:-180}" "$launcher" --nnodes=2 --node-rank="$node" --nproc-per-node=1 \
      --master-addr="$ip_a" --master-port="$port" --local-addr="$ip" --rdzv-conf=join_timeout=60 \
      "$prog" "${args[@]}" >"$([[ $node == 0 ]] && echo "$log_a" || echo "$log_b")" 2>&1 &
    ((node == 0)) && pa=$! || pb=$!
  done
  wait "$pa" || rc_a=$?
  wait "$pb" || rc_b=$?
  line=$(grep -ho 'peer=[a-z-]* world=.*' "$log_a" "$log_b" | head -1 || true)
  local head="case=compress link=$link peer=$peer hook=$hook${rank:+ rank=$rank}"
  if [[ $rc_a == 0 && $rc_b == 0 && $line == *accuracy=* ]]; then
    line="$head world=${line#*world=}"
  else
    local why
    # the innermost cause: gloo's enforce message where there is one, else the first error
    why=$({ grep -ho 'enforce fail[^"]*' "$log_a" "$log_b" || grep -hoE '([A-Za-z]+Error: [^"]*|error: .*)' "$log_a" "$log_b"; } |
      head -1 | sed 's/^\(RuntimeError: Got the following error when running the callback: \)*//' | cut -c1-140 || true)
    [[ $rc_a == 124 || $rc_b == 124 ]] && why="timed out after RUN_TIMEOUT=${RUN_TIMEOUT:-180} s${why:+: $why}"
    line="# failed: ${head#case=compress } exit=$rc_a/$rc_b reason=${why:-no result line}"
  fi
  echo "$line" | tee -a "$results"
}

results=${RESULTS:-$work/results.txt}
: >"$results"
echo "# $(nproc --all) cores, load average $(cut -d" " -f1-3 /proc/loadavg), $(date -u +%FT%TZ), repeats=$repeats," \
  "train=${TRAIN:-4096} val=${VAL:-2048} epochs=${EPOCHS:-3} batch=${BATCH:-32}/worker lr=${LR:-0.01}" \
  "powersgd_start=${PSGD_START:-2}" | tee -a "$results"
if ((has_netem)); then
  echo "# shaping: tbf rate on both veth ends under netem delay ${delay:-0} each way" | tee -a "$results"
else
  echo "# shaping: tbf rate on both veth ends; this kernel has no netem, so no added delay (the veth's own round trip below)" |
    tee -a "$results"
fi
for link in $links; do
  shape "$link"
  echo "# link $link: $(probe_link "$([[ $link == 1gbit ]] && echo 48 || echo 256)")" | tee -a "$results"
done
for ((i = 0; i < repeats; i++)); do
  if [[ ${FLOOR:-1} == 1 ]]; then
    shape unshaped
    run_pair no-comm cpp-ddp none
  fi
  for link in $links; do
    shape "$link"
    if [[ $link == unshaped ]]; then
      read -ra cpp <<<"${UNSHAPED_CPP-allreduce powersgd:2}"
      read -ra py <<<"${UNSHAPED_PY-allreduce}"
    else
      read -ra cpp <<<"$hooks_cpp"
      read -ra py <<<"$hooks_py"
    fi
    for ((j = 0; j < ${#cpp[@]} || j < ${#py[@]}; j++)); do
      ((j < ${#cpp[@]})) && run_pair "$link" cpp-ddp "${cpp[j]}"
      ((j < ${#py[@]})) && run_pair "$link" python-ddp "${py[j]}"
    done
  done
done
if ((${ACC_EPOCHS:-0} > 0)); then
  shape unshaped
  train=(--data "$dataset" --epochs "$ACC_EPOCHS" --warmup "${WARMUP:-10}" --lr "${LR:-0.01}")
  for hook in ${ACC_HOOKS-allreduce powersgd:1 powersgd:2 powersgd:4}; do
    run_pair "unshaped-${ACC_EPOCHS}ep" cpp-ddp "$hook"
  done
fi
"$python" "$helper" summary "$results"
