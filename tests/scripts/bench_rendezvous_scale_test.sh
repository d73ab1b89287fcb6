#!/usr/bin/env bash
# scripts/bench-rendezvous-scale.sh: --help, bad arguments (exit 2, one line saying what is
# wrong), then one small run (200 nodes, both shapes, one round): a table row per shape. No
# timing is checked. Skipped (77) without the built rendezvous_crowd.
# Usage: bench_rendezvous_scale_test.sh REPO_ROOT   (env BUILD_DIR: the build holding it)
set -euo pipefail
# shellcheck source=SCRIPTDIR/../../scripts/lib.sh
source "$(dirname "$0")/../../scripts/lib.sh"
bench="$1/scripts/bench-rendezvous-scale.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

help=$("$bench" --help) || fail "--help exited $?"
grep -q 'scripts/bench-rendezvous-scale.sh \[--nodes LIST\]' <<<"$help" || fail "--help has no usage line: $help"

expect_usage_error "$bench" "$tmp" "an unknown flag" "unknown argument '--bogus'" --bogus
expect_usage_error "$bench" "$tmp" "a flag without its value" "--rounds needs a value" --rounds
expect_usage_error "$bench" "$tmp" "sizes that are no counts" "--nodes must be node counts" --nodes 1,x
expect_usage_error "$bench" "$tmp" "no rounds" "--rounds must be at least 1" --rounds 0

[[ -x $build_dir/tests/multinode/rendezvous_crowd ]] || skip "build rendezvous_crowd into $build_dir first"
rc=0
"$bench" --nodes 200 --rounds 1 --procs 2 --timeout 60 >"$tmp/out" 2>"$tmp/err" || rc=$?
((rc == 0)) || fail "the small run exited $rc: $(cat "$tmp/out" "$tmp/err")"
grep -qE '^# [0-9T:-]+Z, [0-9]+ CPUs, load .*, 1 rounds, followers in 2 processes$' "$tmp/out" ||
  fail "no header line: $(cat "$tmp/out")"
for shape in seat whole; do
  grep -qE "^\| 200 \| $shape \| [0-9.]+ s \([0-9.]+-[0-9.]+\) \| [0-9.]+ s \| [0-9.]+ s \| [0-9]+ MiB \|$" "$tmp/out" ||
    fail "no row for 200 nodes, $shape: $(cat "$tmp/out")"
done
echo "PASS: bench-rendezvous-scale.sh"
