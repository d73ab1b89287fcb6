#!/usr/bin/env bash
# The layer check must fail on a violation: copy launcher/ to a scratch tree, add an upward
# include (cli -> supervise), an include of a folder whose name has digits (base -> c10d), a
# store -> launcher include and a namespace that is not its folder's, and expect each to be named.
set -euo pipefail
# shellcheck source=SCRIPTDIR/../../scripts/lib.sh
source "$(dirname "$0")/../../scripts/lib.sh"
src=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/scripts"
cp -r "$src/launcher" "$scratch/launcher"
cp "$src/scripts/check-layers.sh" "$src/scripts/lib.sh" "$scratch/scripts/"
"$scratch/scripts/check-layers.sh" "$scratch" >/dev/null   # the copy itself is clean
echo '#include "launcher/supervise/supervisor.hpp"' >> "$scratch/launcher/cli/options.cpp"
echo '#include "launcher/c10d/server.hpp"' >> "$scratch/launcher/base/text.hpp"
echo '#include "launcher/base/exit_status.hpp"' >> "$scratch/launcher/store/server.cpp"
printf 'namespace ddp::launch::cli {\n}\n' >> "$scratch/launcher/os/ports.cpp"
if out=$("$scratch/scripts/check-layers.sh" "$scratch" 2>&1); then
  fail "the check passed a tree with upward includes"
fi
grep -q 'cli/options.cpp includes launcher/supervise/' <<<"$out" || fail "cli violation not named: $out"
grep -q 'base/text.hpp includes launcher/c10d/' <<<"$out" || fail "c10d include not named: $out"
grep -q 'store/server.cpp includes launcher/base/' <<<"$out" || fail "store violation not named: $out"
grep -q 'os/ports.cpp opens namespace ddp::launch::cli' <<<"$out" || fail "namespace violation not named: $out"
echo "check-layers names every violation"
