#!/usr/bin/env bash
# shellcheck disable=SC2016  # the backquotes in this file are Markdown, not commands
# scripts/check-paths.sh must name a doc or comment that names a file the repository does not
# have: a scratch tree with a real file, a doc and a header that name it, then a doc and a
# comment that name files that are gone (a path without its extension and a relative link too).
set -euo pipefail
# shellcheck source=SCRIPTDIR/../../scripts/lib.sh
source "$(dirname "$0")/../../scripts/lib.sh"
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tool=$tmp/tool      # the check, outside the tree it reads
scratch=$tmp/tree
mkdir -p "$tool" "$scratch"
cp "$src/scripts/check-paths.sh" "$src/scripts/lib.sh" "$tool/"
mkdir -p "$scratch/launcher/os" "$scratch/docs"
printf '// reads launcher/os/process.hpp\n#pragma once\n' >"$scratch/launcher/os/ports.hpp"
printf '#pragma once\n' >"$scratch/launcher/os/process.hpp"
printf 'See `launcher/os/process` and [the ports](../launcher/os/ports.hpp); build/launcher/ddp-launch.\n' \
  >"$scratch/docs/a.md"
"$tool/check-paths.sh" "$scratch" >/dev/null || fail "a clean tree was rejected"
printf 'The verdict (`launcher/supervise/hang_watch`), [events](events.md).\n' >>"$scratch/docs/a.md"
printf '// see launcher/os/gone.hpp\n' >>"$scratch/launcher/os/ports.hpp"
if out=$("$tool/check-paths.sh" "$scratch" 2>&1); then
  fail "the check passed names of missing files"
fi
for want in 'docs/a.md:2 names launcher/supervise/hang_watch' 'docs/a.md:2 names docs/events.md' \
  'launcher/os/ports.hpp:3 names launcher/os/gone.hpp'; do
  grep -qF "$want" <<<"$out" || fail "not named: $want in: $out"
done
echo "check-paths names every missing file"
