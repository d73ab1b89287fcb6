#!/usr/bin/env bash
# The README's main command: real distributed training in one go. Installs missing packages,
# builds ddp-launch and the `train` trainer (Release, Ninja) into BUILD_DIR, then trains an MLP
# with 4 workers on the synthetic teacher task and ends with the validation accuracy, the
# paths of the checkpoint and metrics, and a PNG of the training curves (scripts/plot.sh). Env: BUILD_DIR (scripts/lib.sh, default build), DEMO_WORKERS (4),
# DEMO_EPOCHS (5). Extra arguments go to `train` (e.g. --epochs 8 --progress bar).
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$repo_root"
scripts/install-deps.sh
build=${build_dir#"$repo_root/"}
workers=${DEMO_WORKERS:-4}
epochs=${DEMO_EPOCHS:-5}

cmake -S . -B "$build" -G Ninja > /dev/null
cmake --build "$build" --target ddp-launch train -j "$(nproc)"

out="$build/demo"
rm -rf "$out"  # a fresh run; `train` would otherwise resume from the last checkpoint here
echo
echo "demo: ddp-launch --nproc_per_node=$workers $build/trainers/train --epochs $epochs --checkpoint-dir $out"
start=$(date +%s)
"$build/launcher/ddp-launch" --nproc_per_node="$workers" \
  "$build/trainers/train" --epochs "$epochs" --batch-size $((256 / workers)) --checkpoint-dir "$out" "$@"
echo "demo: kill a worker and watch the run resume: add --max-restarts 1 to ddp-launch and --fail-at-step 300 to train."
echo "demo: trained with $workers workers in $(($(date +%s) - start)) s (global batch 256); accuracy above,"
echo "demo: checkpoints and metrics.csv in $out/"
scripts/plot.sh -o "$out/curves.png" --title "train: $workers workers, global batch 256" \
  "$workers workers=$out/metrics.csv" > /dev/null
echo "demo: training curves (loss, validation accuracy, samples/s per epoch): $out/curves.png"
