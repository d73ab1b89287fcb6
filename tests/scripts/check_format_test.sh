#!/usr/bin/env bash
# scripts/check-format.sh must fail on an unformatted file and name it: a scratch tree with the
# project's .clang-format, one formatted file and one that is not; --fix then formats it.
set -euo pipefail
# shellcheck source=SCRIPTDIR/../../scripts/lib.sh
source "$(dirname "$0")/../../scripts/lib.sh"
src=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/scripts" "$scratch/src"
cp "$src/scripts/check-format.sh" "$src/scripts/lib.sh" "$scratch/scripts/"
cp "$src/.clang-format" "$scratch/"
printf 'int good() { return 1; }\n' >"$scratch/src/good.cpp"
"$scratch/scripts/check-format.sh" "$scratch" >/dev/null || fail "a formatted tree was rejected"
printf 'int  bad( ){return 2;}\n' >"$scratch/src/bad.hpp"
if out=$("$scratch/scripts/check-format.sh" "$scratch" 2>&1); then
  fail "the check passed an unformatted file"
fi
grep -q '1 of 2 C++ files are not formatted' <<<"$out" || fail "no count of unformatted files: $out"
grep -q -- '--- src/bad.hpp' <<<"$out" || fail "the unformatted file is not named: $out"
"$scratch/scripts/check-format.sh" --fix "$scratch" >/dev/null
[[ $(cat "$scratch/src/bad.hpp") == 'int bad() { return 2; }' ]] || fail "--fix did not format: $(cat "$scratch/src/bad.hpp")"
"$scratch/scripts/check-format.sh" "$scratch" >/dev/null || fail "still unformatted after --fix"
echo "check-format names an unformatted file, and --fix formats it"
