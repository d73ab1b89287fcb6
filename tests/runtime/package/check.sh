#!/usr/bin/env bash
# Installs libddp (component "ddp") from BUILD_DIR into a temp prefix, then configures, builds
# and runs tests/runtime/package as a separate project using find_package(ddp).
set -euo pipefail
build_dir=$1
source_dir=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/ddp-package-XXXXXX)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" --component ddp >/dev/null
cmake -S "$source_dir" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
cd "$work" && ./build/consumer
