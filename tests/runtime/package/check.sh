#!/usr/bin/env bash
# Installs libddp (component "ddp") from BUILD (the build under test) into a temp prefix,
# then configures, builds and runs tests/runtime/package as a separate project using
# find_package(ddp). Usage: check.sh BUILD
set -euo pipefail
# shellcheck source=SCRIPTDIR/../../../scripts/lib.sh
source "$(dirname "$0")/../../../scripts/lib.sh"
build=$1
source_dir=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/ddp-package-XXXXXX)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" --component ddp >/dev/null
# The LibTorch the build under test used (a user points find_package at theirs the same way).
torch_dir=$(sed -n 's/^Torch_DIR:PATH=//p' "$build/CMakeCache.txt")
cuda_root=$(sed -n 's/^CUDAToolkit_ROOT:[A-Z]*=//p' "$build/CMakeCache.txt")
# The torch folder too (Torch_DIR is its share/cmake/Torch), so that TorchConfig's libraries
# come from it and not from a system LibTorch in /usr/lib (docs/torch-versions.md).
prefix=$work/prefix
[[ -n $torch_dir ]] && prefix+=";$(cd "$torch_dir/../../.." && pwd)"
cmake -S "$source_dir" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  ${torch_dir:+-DTorch_DIR="$torch_dir"} ${cuda_root:+-DCUDAToolkit_ROOT="$cuda_root"} >/dev/null
cmake --build "$work/build" >"$work/build.log" 2>&1 || fail "the consumer project does not build: $(cat "$work/build.log")"
cd "$work" && ./build/consumer
