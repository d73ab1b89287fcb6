#!/usr/bin/env bash
# libddp as a CMake package, used from outside this tree (docs/install.md): `cmake --install`
# of this build into an empty prefix (libddp's headers, archive and package files, and
# ddp-launch), then tests/package/consumer copied out of the tree, configured with
# find_package(ddp) against the same LibTorch (Torch_DIR), built, and run as 2 ranks under the
# installed ddp-launch: each prints the gloo all-reduce of rank + 1 (3).
# Usage: consumer_test.sh BUILD_DIR TORCH_DIR
set -euo pipefail
# shellcheck source=SCRIPTDIR/../../scripts/lib.sh
source "$(dirname "$0")/../../scripts/lib.sh"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:?usage: consumer_test.sh BUILD_DIR TORCH_DIR}
torch_dir=${2:?usage: consumer_test.sh BUILD_DIR TORCH_DIR}
[[ -f $build/runtime/libddp.a ]] || skip "no libddp in $build (built without the runtime)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" || fail "cmake --install failed: $(cat "$tmp/install.log")"
[[ -f $tmp/prefix/lib/cmake/ddp/ddpConfig.cmake && -x $tmp/prefix/bin/ddp-launch ]] ||
  fail "the prefix lacks ddpConfig.cmake or bin/ddp-launch: $(cd "$tmp/prefix" && find . -maxdepth 4)"
cp -r "$here/consumer" "$tmp/consumer"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
torch_root=$(cd "$torch_dir/../../.." && pwd)  # .../torch from .../torch/share/cmake/Torch: its lib/ first
cmake -S "$tmp/consumer" -B "$tmp/app" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$tmp/prefix;$torch_root" -DTorch_DIR="$torch_dir" >"$tmp/configure.log" 2>&1 ||
  fail "the consumer does not configure: $(tail -30 "$tmp/configure.log")"
cmake --build "$tmp/app" >"$tmp/build.log" 2>&1 || fail "the consumer does not build: $(tail -30 "$tmp/build.log")"
out=$(cd "$tmp" && "$tmp/prefix/bin/ddp-launch" --nproc-per-node 2 "$tmp/app/allreduce_app" 2>&1) ||
  fail "the consumer's job failed: $out"
sums=$(grep -c 'of 2: sum 3$' <<<"$out" || true)
[[ $sums == 2 ]] || fail "both ranks should print 'sum 3': $out"
echo "ok: an outside project built against the installed libddp ($(head -1 "$here/../../VERSION")) and ran 2 ranks"
