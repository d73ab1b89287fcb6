#!/usr/bin/env bash
# scripts/bench-compress.sh: --help, a stray argument and bad settings, then one smoke run with tiny sizes
# (real namespaces, a veth shaped to 1 Gbit/s by tc, two ddp-launch nodes, libddp and Python
# DDP): a result line with steps, samples/s and accuracy per configuration, the probe under the
# shaped rate, the summary's targets line, and the namespaces and their processes gone. Then
# failures: a hook libddp rejects gives a '# failed:' line naming the reason, and a run stopped
# by SIGTERM mid-job leaves no namespace or worker behind. No timing is checked (the probe's
# bound is the shaping's cap, which load only lowers). Skipped (77) without root, namespaces,
# tc, torch in the benchmark's Python (PYTHON, default the torch venv's) or the built binaries.
# Usage: bench_compress_test.sh REPO_ROOT   (env BUILD_DIR: the build holding ddp-launch and ddp_bench)
set -euo pipefail
# shellcheck source=SCRIPTDIR/../../scripts/lib.sh
source "$(dirname "$0")/../../scripts/lib.sh"
bench="$1/scripts/bench-compress.sh"
prefix="bct$$"
tmp=$(mktemp -d)
leftovers() {  # namespaces or processes of this test's runs still there (prints them)
  ip netns list 2>/dev/null | grep "^$prefix" || true
  grep -l "GLOO_SOCKET_IFNAME=$prefix" /proc/[0-9]*/environ 2>/dev/null || true
}
cleanup() {
  local ns
  for ns in $(ip netns list 2>/dev/null | grep -o "^${prefix}[a-z0-9]*"); do
    ip netns pids "$ns" | xargs -r kill -9 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

help=$("$bench" --help) || fail "--help exited $?"
grep -q 'Usage: \[ENV=...\] scripts/bench-compress.sh' <<<"$help" || fail "--help has no usage line: $help"
rc=0
err=$("$bench" --bogus 2>&1 >/dev/null) || rc=$?
[[ $rc == 2 && $(wc -l <<<"$err") == 1 && $err == "bench-compress.sh: error: "*"--bogus"* ]] ||
  fail "a stray argument: exit $rc, '$err'"

[[ $(id -u) == 0 ]] || skip "needs root (network namespaces, tc)"
need 77 ip tc
bad_env() {  # bad_env EXPECTED VAR=VALUE: exit 2, one error line naming the setting
  local expected=$1 rc=0 err
  err=$(env "$2" "$bench" 2>&1 >/dev/null) || rc=$?
  [[ $rc == 2 && $(wc -l <<<"$err") == 1 && $err == "bench-compress.sh: error: "*"$expected"* ]] ||
    fail "$2: exit $rc, '$err'"
}
bad_env "LINKS: '1gbps' is not a rate tc knows" LINKS=1gbps
bad_env "REPEATS=0: expected a count of 1 or more" REPEATS=0
bad_env "'many' in TRAIN/VAL/EPOCHS" EPOCHS=many
python=$(bench_python)  # the one the benchmark runs its peers with (PYTHON, default the torch venv's)
"$python" -c 'import torch.distributed' 2>/dev/null || skip "$python has no torch (scripts/install-deps.sh makes the venv; or set PYTHON)"
[[ -x $build_dir/launcher/ddp-launch && -x $build_dir/tests/runtime/ddp_bench ]] ||
  skip "build ddp-launch and ddp_bench into $build_dir first (cmake --build $build_dir --target ddp-launch ddp_bench)"
ip netns add "${prefix}probe" 2>/dev/null || skip "cannot create network namespaces here"
ip netns del "${prefix}probe"

tiny=(TRAIN=256 VAL=64 EPOCHS=2 WARMUP=2 HIDDEN=32 REPEATS=1 RUN_TIMEOUT=120)

# 1. The smoke run: floor, 1 Gbit/s (libddp plain and PowerSGD rank 2, Python plain), unshaped,
# and the longer-schedule accuracy run (ACC_EPOCHS).
rc=0
env "${tiny[@]}" NS_PREFIX="${prefix}s" RESULTS="$tmp/results.txt" LINKS="1gbit unshaped" \
  HOOKS_CPP="allreduce powersgd:2" HOOKS_PY="allreduce" UNSHAPED_CPP="allreduce" UNSHAPED_PY="" \
  ACC_EPOCHS=3 ACC_HOOKS="allreduce" \
  "$bench" >"$tmp/out" 2>&1 || rc=$?
((rc == 0)) || fail "the smoke run exited $rc: $(cat "$tmp/out")"
number='[0-9]+(\.[0-9]+)?'
# 256 samples / 2 workers / batch 32 = 4 steps an epoch, 2 epochs, 2 of warm-up: 6 timed.
for head in "link=no-comm peer=cpp-ddp hook=none" "link=1gbit peer=cpp-ddp hook=allreduce" \
  "link=1gbit peer=cpp-ddp hook=powersgd rank=2" "link=1gbit peer=python-ddp hook=allreduce" \
  "link=unshaped peer=cpp-ddp hook=allreduce"; do
  grep -qE "^case=compress $head world=2 steps=6 batch=32 params=[0-9]+ samples_per_s=$number step_ms=$number( optimizer=sgd zero=0 state_bytes=[0-9]+ state_bytes_max=[0-9]+)? accuracy=0\.[0-9]{4}$" \
    "$tmp/results.txt" || fail "no result line for '$head': $(cat "$tmp/out")"
done
# ACC_EPOCHS=3: 4 steps an epoch, 3 epochs, 2 of warm-up: 10 timed.
grep -qE "^case=compress link=unshaped-3ep peer=cpp-ddp hook=allreduce world=2 steps=10 .* accuracy=0\.[0-9]{4}$" \
  "$tmp/results.txt" || fail "no ACC_EPOCHS result line: $(cat "$tmp/out")"
(($(grep -c '^case=compress ' "$tmp/results.txt") == 6)) || fail "expected 6 result lines: $(cat "$tmp/results.txt")"
! grep -q '^# failed:' "$tmp/out" || fail "a configuration failed: $(cat "$tmp/out")"
rate=$(sed -n 's/^# link 1gbit: gbit_per_s=\([0-9.]*\) rtt_ms=[0-9.]*$/\1/p' "$tmp/out")
[[ -n $rate ]] || fail "no probe line for the 1gbit link: $(cat "$tmp/out")"
awk "BEGIN{exit !($rate > 0 && $rate <= 1.1)}" || fail "the 1gbit link carried $rate Gbit/s: not shaped"
grep -q '^# shaping: tbf rate on both veth ends' "$tmp/out" || fail "no shaping line: $(cat "$tmp/out")"
grep -qE "^1gbit +cpp-ddp +powersgd-r2 +$number +$number% +$number +$number +1$" "$tmp/out" ||
  fail "no medians row for PowerSGD rank 2: $(cat "$tmp/out")"
grep -qE "^# 1gbit: PowerSGD rank 2 = ${number}x plain all-reduce \(target >= 3\), accuracy [+-]$number points" "$tmp/out" ||
  fail "no targets line: $(cat "$tmp/out")"
[[ -z $(leftovers) ]] || fail "left behind after the smoke run: $(leftovers)"

# 2. A hook libddp rejects: a '# failed:' line with ddp_bench's reason; the summary has no results.
rc=0
env "${tiny[@]}" NS_PREFIX="${prefix}f" LINKS="1gbit" FLOOR=0 HOOKS_CPP="bogus" HOOKS_PY="" \
  "$bench" >"$tmp/out" 2>&1 || rc=$?
((rc != 0)) || fail "a run without any result exited 0: $(cat "$tmp/out")"
grep -q "^# failed: link=1gbit peer=cpp-ddp hook=bogus exit=[0-9]*/[0-9]* reason=.*--comm-hook must be allreduce, none" \
  "$tmp/out" || fail "no '# failed:' line naming the bad hook: $(cat "$tmp/out")"
grep -q "bench-compress.sh: error: .*no 'case=compress ...' result lines" "$tmp/out" ||
  fail "the summary did not say that nothing ran: $(cat "$tmp/out")"
[[ -z $(leftovers) ]] || fail "left behind after a failed configuration: $(leftovers)"

# 3. SIGTERM while a job trains: the namespaces and every worker go with the script.
env "${tiny[@]}" NS_PREFIX="${prefix}k" LINKS="1gbit" FLOOR=0 HOOKS_CPP="allreduce" HOOKS_PY="" EPOCHS=2000 \
  "$bench" >"$tmp/out" 2>&1 &
pid=$!
for _ in $(seq 600); do
  grep -lq "GLOO_SOCKET_IFNAME=${prefix}k" /proc/[0-9]*/environ 2>/dev/null && break
  sleep 0.1
done
grep -lq "GLOO_SOCKET_IFNAME=${prefix}k" /proc/[0-9]*/environ 2>/dev/null || fail "no job started: $(cat "$tmp/out")"
sleep 1
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
((rc == 143)) || fail "the stopped run exited $rc, expected 143: $(cat "$tmp/out")"
for _ in $(seq 50); do [[ -z $(leftovers) ]] && break; sleep 0.1; done
[[ -z $(leftovers) ]] || fail "left behind after SIGTERM: $(leftovers)"
echo "ok: 6 configurations ran over a $rate Gbit/s link; a bad hook reported; SIGTERM cleaned up"
