# The GPU path of scripts/gpu-check.sh (sourced by it, never run alone): check runner, build,
# checks and summary. Expects repo, python, build (absolute), jobs, deps_dir, gpu_tests, out,
# gpu_count, and scripts/lib.sh sourced (this file's skip, a SKIP record, replaces lib.sh's).
# Every check runs under `timeout`; its output goes to $out/checks.log, its verdict to the
# summary (PASS / FAIL / SKIP with one line of detail). main_gpu returns the script's exit code.
# shellcheck shell=bash disable=SC2154  # repo, out, jobs, ... come from scripts/gpu-check.sh

work=$build/gpu-check-work  # per-check logs and checkpoints (not sent back: $out holds few files)
names=() statuses=() seconds=() details=()
launcher=$build/launcher/ddp-launch
cxx=${CXX:-$(command -v c++ || command -v g++ || echo c++)}
check_bin=$build/tests/gpu/ddp_gpu_check
train_bin=$build/trainers/train
build_mode=none  # full | standalone | none
deadline=${GPU_CHECK_DEADLINE:-480}  # seconds since the start: later checks are skipped, not started
runtime_tests=${GPU_CHECK_RUNTIME_TESTS:-1}  # 0: ddp_runtime_tests neither built nor run (a shorter build)
openssl_root=()

record() {  # name status seconds detail
  names+=("$1") statuses+=("$2") seconds+=("$3") details+=("$4")
  printf 'gpu-check: %-28s %-4s %4ss  %s\n' "$1" "$2" "$3" "$4"
}

# launch NPROC PROGRAM ARGS...: ddp-launch when it was built, else PyTorch's torchrun.
launch() {
  local n=$1
  shift
  if [[ -x $launcher ]]; then
    PYTHON_EXEC=$python "$launcher" --standalone --nproc-per-node="$n" "$@"
  else
    local no_python=()
    [[ $1 == *.py ]] || no_python=(--no_python)
    "$python" -m torch.distributed.run --standalone --nproc_per_node="$n" "${no_python[@]}" "$@"
  fi
}
export -f launch
export launcher python train_bin work

# run_check NAME TIMEOUT EXPECT_REGEX CMD...: PASS when CMD exits 0 and prints a line matching
# EXPECT_REGEX (that line is the detail); CMD may be `launch` or another exported function.
run_check() {
  local name=$1 limit=$2 expect=$3
  shift 3
  local log=$work/$name.log start=$SECONDS rc detail
  if ((deadline - SECONDS < 10)); then
    record "$name" SKIP 0 "not started: the script's ${deadline}s budget (GPU_CHECK_DEADLINE) is spent"
    return 1
  fi
  ((limit > deadline - SECONDS)) && limit=$((deadline - SECONDS))
  timeout -k 10 "$limit" bash -c '"$@"' _ "$@" >"$log" 2>&1
  rc=$?
  { echo "=== $name (exit $rc): $*"; cat "$log"; } >>"$out/checks.log"
  detail=$(sed -E 's/^\[rank[0-9]+\]: //' "$log" | grep -E -- "$expect" | tail -1)  # workers' lines: prefix off
  if ((rc == 124 || rc == 137)); then
    record "$name" FAIL $((SECONDS - start)) "timed out after ${limit}s"
  elif ((rc == 0)) && [[ -n $detail ]]; then
    record "$name" PASS $((SECONDS - start)) "$detail"
    return 0
  else
    record "$name" FAIL $((SECONDS - start)) "exit $rc: $(grep -v '^\s*$' "$log" | tail -2 | tr '\n' ' ' | cut -c1-300)"
  fi
  return 1
}

skip() { record "$1" SKIP 0 "$2"; }

# --- versions and dependencies --------------------------------------------------------------
collect_versions() {
  local smi
  smi=$(nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,uuid,memory.total --format=csv,noheader 2>&1)
  versions_torch=$("$python" -c 'import torch; print("torch", torch.__version__, "| CUDA", torch.version.cuda,
"| NCCL", ".".join(map(str, torch.cuda.nccl.version())), "| cuDNN", torch.backends.cudnn.version(),
"| device", torch.cuda.get_device_name(0), "| cmake_prefix_path", torch.utils.cmake_prefix_path)' 2>&1 | tail -1)
  versions_tools="$(cmake --version | head -1) | ninja $(ninja --version 2>/dev/null || echo missing) | $("$cxx" --version 2>/dev/null | head -1) | nvcc $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo missing)"
  versions_gpus=$smi
  record versions PASS 0 "$versions_torch"
  local tool missing=()
  for tool in cmake ctest ninja "$cxx" timeout "$python"; do command -v "$tool" >/dev/null || missing+=("$tool"); done
  if ((${#missing[@]} > 0)); then record tools FAIL 0 "not found: ${missing[*]}"; else record tools PASS 0 "cmake ctest ninja $cxx timeout $python"; fi
}

# Which of the launcher's/tests' header-only dependencies the compiler finds.
missing_deps=()
probe_deps() {
  local inc=() header
  [[ -d $deps_dir/include ]] && inc=(-isystem "$deps_dir/include")
  missing_deps=()
  # OpenSSL from DIR only where this machine has no headers of its own (FindOpenSSL's hint).
  if [[ -f $deps_dir/lib/libssl.so ]] && ! echo '#include <openssl/ssl.h>' | "$cxx" -E -x c++ - -o /dev/null 2>/dev/null; then
    openssl_root=("-DOPENSSL_ROOT_DIR=$deps_dir")
  fi
  for header in boost/asio.hpp CLI/CLI.hpp fmt/format.h nlohmann/json.hpp catch2/catch.hpp openssl/ssl.h; do
    echo "#include <$header>" | "$cxx" -std=c++17 -E -x c++ - "${inc[@]}" -o /dev/null 2>/dev/null ||
      missing_deps+=("$header")
  done
  if ((${#missing_deps[@]} == 0)); then
    record deps PASS 0 "all found${inc[*]:+ (with $deps_dir)}${openssl_root[*]:+; OpenSSL from $deps_dir}"
  else
    record deps SKIP 0 "missing ${missing_deps[*]}: no ddp-launch/runtime tests; libddp + ddp_gpu_check built standalone. Fix: run 'scripts/gpu-check.sh --pack-deps build-gpu-deps' on a Debian dev machine and carry build-gpu-deps/"
  fi
}

# --- build --------------------------------------------------------------------------------
torch_prefix() {
  if [[ -n ${Torch_DIR:-} ]]; then echo "$Torch_DIR"; return; fi
  if [[ -n ${CMAKE_PREFIX_PATH:-} ]]; then echo "$CMAKE_PREFIX_PATH"; return; fi
  "$python" -c 'import torch; print(torch.utils.cmake_prefix_path)'
}

configure_and_build() {
  local prefix source=. targets=(ddp-launch ddp_gpu_check c10d_store_helper train) extra=("${openssl_root[@]}")
  ((runtime_tests)) && targets+=(ddp_runtime_tests)
  prefix=$(torch_prefix)
  [[ -d $deps_dir ]] && prefix="$deps_dir;$prefix"
  [[ -d /usr/local/cuda ]] && extra+=(-DCUDAToolkit_ROOT=/usr/local/cuda)
  # The LibTorch of $python's torch (cmake/torch.cmake), unless Torch_DIR/CMAKE_PREFIX_PATH name one.
  if [[ -z ${Torch_DIR:-}${CMAKE_PREFIX_PATH:-} ]]; then
    extra+=("-DDDP_TORCH_PYTHON=$(command -v "$python")")
  else
    extra+=(-DDDP_TORCH_PYTHON=)
  fi
  if ((${#missing_deps[@]} > 0)); then  # libddp + ddp_gpu_check alone, in a build dir of their own
    source=tests/gpu targets=(ddp_gpu_check) build=$build-standalone
    build_mode=standalone launcher="" check_bin=$build/ddp_gpu_check
  else
    build_mode=full
  fi
  echo "gpu-check: building ${targets[*]} ($build_mode) against $prefix with $jobs jobs; log: $out/build.log"
  local start=$SECONDS
  {
    echo "=== cmake -S $source -B $build (CMAKE_PREFIX_PATH=$prefix)"
    timeout 120 cmake -S "$source" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDDP_BUILD_TESTS=ON \
      -DDDP_BUILD_GPU_CHECK=ON "-DCMAKE_PREFIX_PATH=$prefix" "-DDDP_TEST_PYTHON=$(command -v "$python")" "${extra[@]}" &&
      echo "=== ninja ${targets[*]}" &&
      timeout 330 cmake --build "$build" -j "$jobs" --target "${targets[@]}"
  } >"$out/build.log" 2>&1
  local rc=$?
  if ((rc == 0)); then
    record build PASS $((SECONDS - start)) "$build_mode: ${targets[*]}"
    return 0
  fi
  build_mode=none
  record build FAIL $((SECONDS - start)) "exit $rc; first errors: $(grep -m3 -E 'error|Error' "$out/build.log" | tr '\n' ' ' | cut -c1-400)"
  return 1
}

# --- checks -------------------------------------------------------------------------------
check_runtime_tests() {
  if ((!runtime_tests)); then skip runtime-tests "GPU_CHECK_RUNTIME_TESTS=0: not built (none of them uses CUDA)"; return; fi
  if [[ $build_mode != full ]]; then skip runtime-tests "needs the full build (Catch2)"; return; fi
  run_check runtime-tests 180 '(tests passed|tests failed)' \
    ctest --test-dir "$build" -R '^runtime: ' -j "$jobs" --timeout 60 --output-on-failure
}

check_libddp() {
  local dir=$work
  run_check collectives-nccl-w1 90 '^ok collectives' launch 1 "$check_bin" collectives --backend nccl
  run_check collectives-gloo-cuda-w2 90 '^ok collectives' launch 2 "$check_bin" collectives --backend gloo
  run_check ddp-nccl-w1 90 '^ok ddp-matches-single' launch 1 "$check_bin" ddp-matches-single --backend nccl
  run_check ddp-gloo-cuda-w2 90 '^ok ddp-matches-single' launch 2 "$check_bin" ddp-matches-single --backend gloo
  run_check checkpoint-cuda-cpu 90 '^ok checkpoint' launch 1 "$check_bin" checkpoint --backend nccl --dir "$dir"
  run_check snapshot-staging-cuda 90 '^ok snapshot-staging' staged_snapshots
}

# The snapshot-staging check, failed where libddp fell back to serialising on the training
# thread (it says so once, and the state would still round-trip).
staged_snapshots() {
  local output rc
  output=$(launch 1 "$check_bin" snapshot-staging --backend nccl 2>&1)
  rc=$?
  echo "$output"
  ((rc == 0)) && ! grep -q "staging the snapshot's tensors failed" <<<"$output"
}
export -f staged_snapshots
export check_bin

# probe NAME EXPECTATIONS -- LAUNCHER-ARGS...: the device probe under ddp-launch, judged by check_probe.py.
probe() {
  local name=$1 expectations=()
  shift
  while [[ $1 != -- ]]; do expectations+=("$1"); shift; done
  shift
  run_check "$name" 60 '^ok ' probe_and_judge "${expectations[*]}" "$@"
}
probe_and_judge() {  # "expectations" then env assignments / launcher args
  local judge=$1
  shift
  local envs=() args=()
  for a in "$@"; do if [[ $a == *=* && $a != -* ]]; then envs+=("$a"); else args+=("$a"); fi; done
  # shellcheck disable=SC2086
  env -u CUDA_VISIBLE_DEVICES "${envs[@]}" PYTHON_EXEC="$python" "$launcher" --standalone "${args[@]}" \
    "$gpu_tests/device_probe.py" | "$python" "$gpu_tests/check_probe.py" $judge
}
export -f probe_and_judge
export gpu_tests

check_launcher_devices() {
  if [[ ! -x $launcher ]]; then
    for n in nproc-gpu visible-index visible-uuid visible-empty devices devices-out-of-range virtual-local-rank; do
      skip "launcher-$n" "ddp-launch was not built (missing ${missing_deps[*]:-build})"
    done
    return
  fi
  local bus0 uuid0
  bus0=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader -i 0 | tr -d ' ')
  uuid0=$(nvidia-smi --query-gpu=uuid --format=csv,noheader -i 0 | tr -d ' ')
  probe launcher-nproc-gpu --workers "$gpu_count" --visible unset --count "$gpu_count" --bus0 "$bus0" \
    -- --nproc-per-node=gpu
  probe launcher-visible-index --workers 1 --visible 0 --count 1 --bus0 "$bus0" \
    -- CUDA_VISIBLE_DEVICES=0 --nproc-per-node=gpu
  probe launcher-visible-uuid --workers 1 --visible "$uuid0" --count 1 --uuid0 "$uuid0" \
    -- "CUDA_VISIBLE_DEVICES=$uuid0" --nproc-per-node=gpu
  run_check launcher-visible-empty 30 'no CUDA device' expect_exit 122 \
    env CUDA_VISIBLE_DEVICES= "$launcher" --standalone --nproc-per-node=gpu "$gpu_tests/device_probe.py"
  probe launcher-devices --workers 1 --visible 0 --count 1 --bus0 "$bus0" \
    -- --nproc-per-node=1 --devices=0
  run_check launcher-devices-out-of-range 30 'names GPU' expect_exit 122 \
    env -u CUDA_VISIBLE_DEVICES "$launcher" --standalone --nproc-per-node=1 "--devices=$gpu_count" "$gpu_tests/device_probe.py"
  probe launcher-virtual-local-rank --workers "$gpu_count" --visible per-rank --local-ranks-zero --count 1 --bus0 "$bus0" \
    -- --nproc-per-node=gpu --virtual-local-rank
}

expect_exit() {  # CODE CMD...: succeeds when CMD exits with CODE (and shows its output)
  local want=$1
  shift
  "$@" 2>&1
  local rc=$?
  echo "exit status $rc (expected $want)"
  ((rc == want))
}
export -f expect_exit

check_python_nccl() {
  run_check python-nccl-w1 90 '^ok nccl_allreduce' launch 1 "$gpu_tests/nccl_allreduce.py"
}

# A plain NCCL script killed once under --max-restarts 1: the restart runs in a standby
# (docs/warm-restarts.md) and uses its GPU. `scripts/gpu-check.sh --warm-restart-cpu` is the
# same case on gloo/CPU, for machines without a GPU.
check_warm_restart() {
  run_check warm-restart-nccl-w1 120 '^ok warm_restart' launch 1 --max-restarts=1 "$gpu_tests/warm_restart.py" \
    --backend nccl --device cuda
}

# train --snapshot-every 1 on cuda:0 (NCCL, world 1) killed by SIGKILL after step 150 under
# --max-restarts 1: the restart resumes from the in-memory snapshot (serialised from the GPU,
# written by the background thread) and its final weights equal an uninterrupted run's.
snapshot_resume_cuda() {
  local common=(--epochs 2 --batch-size 64 --snapshot-every 1 --train-samples 8192 --val-samples 2048
    --progress plain --log-every 50) ref run a b resumed
  ref=$(launch 1 "$train_bin" "${common[@]}" --checkpoint-dir "$work/snapshot-ref" 2>&1) || { echo "$ref"; return 1; }
  run=$(launch 1 --max-restarts=1 "$train_bin" "${common[@]}" --checkpoint-dir "$work/snapshot-run" \
    --fail-at-step 150 --fail-rank 0 2>&1) || { echo "$run"; return 1; }
  printf '%s\n=== killed and resumed\n%s\n' "$ref" "$run"
  a=$(grep -o 'final weights digest [0-9a-f]*' <<<"$ref")
  b=$(grep -o 'final weights digest [0-9a-f]*' <<<"$run")
  resumed=$(grep -o 'resumed from the in-memory snapshot of step [0-9]*' <<<"$run" | head -1)
  if [[ -n $resumed && -n $a && $a == "$b" ]]; then
    echo "ok snapshot-resume: $resumed, $a equals the uninterrupted run's"
  else
    echo "FAILED: resumed '${resumed:-nothing}', digests '$a' vs '$b'"
    return 1
  fi
}
export -f snapshot_resume_cuda

check_snapshot_resume() {
  if [[ $build_mode != full ]]; then skip snapshot-resume-cuda "needs the full build (train)"; return; fi
  run_check snapshot-resume-cuda 150 '^ok snapshot-resume' snapshot_resume_cuda
}

# The launcher's workers' store (launcher/c10d) with this Python's torch as the client: its
# TCPStore (is_master=False) on every request type it has, every request of its enum
# (LIST_KEYS, BARRIER, ...) against torch's own server's answers, then Python workers under
# ddp-launch (TORCHELASTIC_USE_AGENT_STORE=True): gloo, and NCCL when a GPU is here.
check_worker_store() {
  local helper=$build/tests/c10d/c10d_store_helper
  if [[ ! -x $helper || ! -x $launcher ]]; then
    skip worker-store "needs ddp-launch and c10d_store_helper (the full build)"
    return
  fi
  run_check worker-store-client 90 '^ok: torch.distributed.TCPStore' \
    "$python" "$repo/tests/c10d/check_store.py" --helper "$helper" --python "$python" python
  # Every request of this torch's enum (its header), and the same calls on torch's own server.
  run_check worker-store-requests 60 '^ok: ' "$python" "$repo/tests/c10d/check_requests.py" --helper "$helper"
  run_check worker-store-differential 150 '^ok: ' "$python" "$repo/tests/c10d/check_differential.py" --helper "$helper"
  run_check worker-store-gloo 150 '^ok: .* workers \(gloo\)' \
    "$python" "$repo/tests/c10d/check_launch.py" --launcher "$launcher" --python "$python" --nproc 2 python_workers
  if ((${gpu_count:-0} > 0)); then
    run_check worker-store-nccl 150 '^ok: .* workers \(nccl\)' "$python" "$repo/tests/c10d/check_launch.py" \
      --launcher "$launcher" --python "$python" --nproc 1 --backend nccl python_workers
  fi
}

# scripts/gpu-check.sh --worker-store: the CPU mode, on any machine: only check_worker_store,
# with the CPU build in BUILD_DIR (ddp-launch and c10d_store_helper built there).
main_worker_store() {
  mkdir -p "$work" || return 1
  : >"$out/checks.log"
  build_mode=cpu
  versions_gpus="none (CPU mode)"
  versions_torch=$("$python" -c 'import torch; print("torch", torch.__version__)' 2>&1 | tail -1)
  versions_tools="$(cmake --version 2>/dev/null | head -1)"
  check_worker_store
  write_summary
}

bench_lines=()
check_bench() {
  local model args
  for model in mlp conv; do
    args=(--model "$model" --steps 200 --warmup 20)
    [[ $model == conv ]] && args+=(--batch 64)
    run_check "bench-$model-cpp" 120 '^peer=cpp-ddp' launch 1 "$check_bin" bench "${args[@]}" &&
      bench_lines+=("${details[-1]}")
    run_check "bench-$model-python" 120 '^peer=python-ddp' launch 1 "$gpu_tests/python_gpu_bench.py" "${args[@]}" &&
      bench_lines+=("${details[-1]}")
  done
}

# --- summary ------------------------------------------------------------------------------
write_summary() {
  local md=$out/gpu-check-summary.md i pass=0 fail=0 skipped=0
  for i in "${!names[@]}"; do
    case ${statuses[$i]} in PASS) ((pass++)) ;; FAIL) ((fail++)) ;; *) ((skipped++)) ;; esac
  done
  {
    echo "# GPU check — $(date -u +%FT%TZ), commit $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo
    echo "**$pass passed, $fail failed, $skipped skipped** (build: $build_mode; ${SECONDS}s in all)."
    ((${#missing_deps[@]} > 0)) && echo && echo "Missing build dependencies: ${missing_deps[*]} — launcher checks and runtime tests were skipped."
    echo
    echo "- GPUs: $versions_gpus"
    echo "- $versions_torch"
    echo "- tools: $versions_tools"
    echo
    echo "| check | result | s | detail |"
    echo "|---|---|---|---|"
    for i in "${!names[@]}"; do
      echo "| ${names[$i]} | ${statuses[$i]} | ${seconds[$i]} | ${details[$i]//|/\\|} |"
    done
    echo
    echo "## Bench (world 1, NCCL, cuda:0; plain = the model without DDP)"
    echo
    echo '```'
    printf '%s\n' "${bench_lines[@]}"
    echo '```'
    echo
    echo "Logs: build.log (configure + build), checks.log (every check's output)."
  } >"$md"
  "$python" "$gpu_tests/summary_json.py" "$md" >"$out/gpu-check-summary.json" 2>/dev/null || true
  echo "gpu-check: $pass passed, $fail failed, $skipped skipped; summary: $md"
  if ((fail > 0)); then return 1; fi
  if ((skipped > 0)); then return 3; fi
  return 0
}

# The pre-flight GPU check against the driver's real NVML: every GPU's ECC errors, retired pages
# and clock reasons read (a pass or a warning: this machine's GPUs are not ours to fail), and
# --preflight in front of a real job.
check_preflight_gpu() {
  if [[ ! -x $launcher ]]; then
    skip preflight-gpu "ddp-launch was not built (missing ${missing_deps[*]:-build})"
    return
  fi
  run_check preflight-gpu 60 'preflight: (pass|warn) gpu: [0-9]+ GPU' \
    "$launcher" preflight --gpus --nproc-per-node "$gpu_count" --preflight-conf cpu_warn=0,cpu_fail=0,mem_gib=0,disk_gib=0,shm_gib_per_worker=0
  # The NCCL all-reduce of every GPU here, with the NCCL of this torch (its pip wheel's).
  local nccl
  nccl=$("$python" -c 'import os, nvidia.nccl; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
  run_check preflight-nccl 90 'preflight: pass nccl: NCCL [0-9.]+, [0-9]+ GPUs? all-reduce' \
    env ${nccl:+DDP_LAUNCH_NCCL_LIBRARY=$nccl} "$launcher" preflight --gpus --nproc-per-node "$gpu_count" \
    --preflight-conf cpu_warn=0,cpu_fail=0,mem_gib=0,disk_gib=0,shm_gib_per_worker=0
  run_check preflight-gpu-job 120 '^ok nccl_allreduce' launch 1 --preflight \
    --preflight-conf cpu_warn=0,cpu_fail=0,mem_gib=0,disk_gib=0,shm_gib_per_worker=0 "$gpu_tests/nccl_allreduce.py"
}

main_gpu() {
  mkdir -p "$build" && rm -rf "$work" && mkdir -p "$work" || return 1
  : >"$out/checks.log"
  collect_versions
  probe_deps
  if configure_and_build && [[ -x $check_bin ]]; then
    check_runtime_tests
    check_libddp
    check_launcher_devices
    check_preflight_gpu
    check_python_nccl
    check_warm_restart
    check_snapshot_resume
    check_bench
    check_worker_store  # last: its CPU mode runs in every CI build; only its NCCL case is new here
  else
    [[ $build_mode != none ]] && record build FAIL 0 "ddp_gpu_check was not built: does the LibTorch found have CUDA?"
    check_python_nccl
  fi
  write_summary
}
