#!/usr/bin/env bash
# GPU check: builds the project against a CUDA LibTorch and verifies the CUDA/NCCL path on a
# real GPU (libddp's collectives, DDP vs single-process training, checkpoints, the launcher's
# device flags, a plain Python NCCL script, libddp vs Python DDP step times). Writes
# OUTDIR/gpu-check-summary.md (+ .json), build.log and checks.log; each check has its own timeout.
# Usage: scripts/gpu-check.sh [OUTDIR]      (default $OUT, else out/gpu-check); run from anywhere
#        scripts/gpu-check.sh --plan        print the checks and exit 0
#        scripts/gpu-check.sh --warm-restart-cpu   the warm-restart check on gloo/CPU (2 workers), no GPU
#                                           needed: BUILD_DIR's ddp-launch, PYTHON's torch
#        scripts/gpu-check.sh --worker-store [OUTDIR]   CPU mode, any machine: only the worker-store
#                                           checks, with $PYTHON's torch and the CPU build in BUILD_DIR
#        scripts/gpu-check.sh --pack-deps DIR   copy the launcher's header-only build deps from
#                                           this machine into DIR, for a GPU machine without them
# Exit: 0 all passed, 1 a check failed, 3 nothing failed but checks were skipped (missing build
#       dependencies), 77 no GPU here (CTest's skip code; the plan is printed).
# Env: PYTHON (python3 with CUDA torch), Torch_DIR / CMAKE_PREFIX_PATH (a CUDA LibTorch; default
#      torch.utils.cmake_prefix_path), BUILD_DIR (scripts/lib.sh; this build goes to BUILD_DIR/gpu),
#      GPU_CHECK_DEPS (a --pack-deps DIR; default build-gpu-deps if present), JOBS (all cores),
#      GPU_CHECK_DEADLINE (480: checks that would start later are skipped), GPU_CHECK_RUNTIME_TESTS
#      (1; 0 neither builds nor runs the runtime tests, which use no CUDA: a shorter build).
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$repo_root" || exit 1
repo=$repo_root
python=${PYTHON:-python3}
build=$build_dir/gpu  # against a CUDA LibTorch: not the CPU build in build_dir
jobs=${JOBS:-$(nproc)}
deps_dir=${GPU_CHECK_DEPS:-$repo/build-gpu-deps}
gpu_tests=$repo/tests/gpu

plan() {
  cat <<'EOF'
gpu-check plan (each line is one check with its own timeout; results in OUTDIR/gpu-check-summary.md):
  versions        nvidia-smi (driver, GPUs, PCI bus ids), torch, CUDA, NCCL, cmake, c++
  deps            Boost/CLI11/fmt/nlohmann-json/Catch2 headers; without them: standalone libddp build
  build           configure + build ddp-launch, ddp_runtime_tests, ddp_gpu_check, train in BUILD_DIR/gpu/ (all cores)
  runtime-tests   ctest -R '^runtime: ' (libddp over gloo, built against this LibTorch 2.x)
  collectives     NCCL world 1 and gloo world 2 on CUDA tensors (ddp_gpu_check collectives)
  ddp             DDP on cuda == single process on the combined batch: NCCL world 1, gloo world 2
  checkpoint      saved from cuda:0, loaded mapped to CPU, saved, loaded back on cuda:0
  snapshot-staging ddp::Snapshot on cuda:0 (NCCL world 1), with and without DDP: the copies into
                  pinned memory on a side stream hold the state of save() time while the next step
                  changes every tensor (BatchNorm buffers, parameters, Adam state); save()'s
                  blocked time; `ddp-launch ... ddp_gpu_check snapshot-staging --device cpu
                  --backend gloo` is the same on CPU (a DDP_BUILD_GPU_CHECK=ON build)
  launcher        --nproc-per-node=gpu, CUDA_VISIBLE_DEVICES pass-through (index, UUID, empty),
                  --devices, --virtual-local-rank: what each worker sees (count, PCI bus id, UUID)
  preflight-gpu   ddp-launch preflight --gpus against the driver's NVML (ECC errors, retired pages,
                  clock reasons of every GPU), and --preflight in front of the NCCL script below
  preflight-nccl  ddp-launch preflight --gpus: its NCCL all-reduce of every GPU here (the CUDA driver
                  and this torch's NCCL, loaded at run time in a child process), its bus bandwidth
  python-nccl     tests/gpu/nccl_allreduce.py (plain PyTorch NCCL) under ddp-launch, world 1
  warm-restart    tests/gpu/warm_restart.py (plain PyTorch NCCL) killed once under --max-restarts 1:
                  the restart runs in a pre-warmed standby and all-reduces on its GPU
  snapshot-resume train --snapshot-every 1 on cuda:0 (NCCL world 1) SIGKILLed after step 150 under
                  --max-restarts 1: resumes from the in-memory snapshot, final weights equal an
                  uninterrupted run's (the background snapshot write on a GPU)
  bench           libddp vs Python DDP, MLP and conv net on cuda:0, NCCL world 1: step time
                  without and with DDP (DDP's overhead), side by side
  worker-store    the launcher's c10d-compatible workers' store with this torch (2.x) as the client:
                  TCPStore(is_master=False) on every request type, then Python workers under
                  ddp-launch (gloo world 2, NCCL world 1); --worker-store runs only these, on CPU
EOF
}

case ${1:-} in
  --plan) plan; exit 0 ;;
  --pack-deps) exec "$gpu_tests/pack_deps.sh" "${2:?--pack-deps needs a directory}" ;;
  --warm-restart-cpu)
    PYTHON_EXEC=$python exec "$build_dir/launcher/ddp-launch" --standalone --nproc-per-node=2 --max-restarts=1 \
      "$gpu_tests/warm_restart.py" --backend gloo --device cpu ;;
  -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
  --worker-store)
    out=${2:-${OUT:-$repo/out/gpu-check}}
    mkdir -p "$out" || exit 1
    out=$(cd "$out" && pwd)
    build=$build_dir  # the CPU build: ddp-launch and c10d_store_helper
    # shellcheck source=tests/gpu/gpu_check_lib.sh
    source "$gpu_tests/gpu_check_lib.sh"
    main_worker_store
    exit $?
    ;;
esac
out=${1:-${OUT:-$repo/out/gpu-check}}
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)

# --- no GPU: say what would run and skip ---------------------------------------------------
gpu_count=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | grep -c . || true)
torch_cuda=$("$python" -c 'import torch; print(int(torch.cuda.is_available()))' 2>/dev/null || echo 0)
if [[ ${gpu_count:-0} -eq 0 || $torch_cuda != 1 ]]; then
  smi=$(command -v nvidia-smi >/dev/null && echo "${gpu_count:-0} GPU(s)" || echo "not found")
  echo "gpu-check: no usable GPU here (nvidia-smi: $smi; $python torch.cuda.is_available(): $torch_cuda); skipping."
  plan
  exit 77
fi

# shellcheck source=tests/gpu/gpu_check_lib.sh
source "$gpu_tests/gpu_check_lib.sh"
main_gpu
