#!/usr/bin/env bash
# The layer check must fail on a violation: copy launcher/ to a scratch tree, add an upward
# include (cli -> supervise) and a store -> launcher include, and expect both to be named.
set -euo pipefail
src=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/scripts"
cp -r "$src/launcher" "$scratch/launcher"
cp "$src/scripts/check-layers.sh" "$scratch/scripts/"
"$scratch/scripts/check-layers.sh" "$scratch" >/dev/null   # the copy itself is clean
echo '#include "launcher/supervise/supervisor.hpp"' >> "$scratch/launcher/cli/options.cpp"
echo '#include "launcher/base/exit_status.hpp"' >> "$scratch/launcher/store/server.cpp"
if out=$("$scratch/scripts/check-layers.sh" "$scratch" 2>&1); then
  echo "FAIL: the check passed a tree with upward includes"; exit 1
fi
grep -q 'cli/options.cpp includes launcher/supervise/' <<<"$out" || { echo "FAIL: cli violation not named: $out"; exit 1; }
grep -q 'store/server.cpp includes launcher/base/' <<<"$out" || { echo "FAIL: store violation not named: $out"; exit 1; }
echo "check-layers names both violations"
