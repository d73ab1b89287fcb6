#!/usr/bin/env bash
# scripts/bench-store-scale.sh: --help, bad arguments (exit 2, one line saying what is wrong),
# then one small run (256 ranks, both shapes, ddp-launch's store and the floor, one round, a
# plot): a table row per shape and server with every rank released and nothing refused or
# reset, and a PNG. No timing is checked. Skipped (77) without gnuplot or the built tools.
# Usage: bench_store_scale_test.sh REPO_ROOT   (env BUILD_DIR: the build holding the c10d tools)
set -euo pipefail
# shellcheck source=SCRIPTDIR/../../scripts/lib.sh
source "$(dirname "$0")/../../scripts/lib.sh"
bench="$1/scripts/bench-store-scale.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

help=$("$bench" --help) || fail "--help exited $?"
grep -q 'scripts/bench-store-scale.sh \[--sizes LIST\]' <<<"$help" || fail "--help has no usage line: $help"

expect_usage_error "$bench" "$tmp" "an unknown flag" "unknown argument '--bogus'" --bogus
expect_usage_error "$bench" "$tmp" "a flag without its value" "--rounds needs a value" --rounds

command -v gnuplot >/dev/null || skip "no gnuplot (scripts/install-deps.sh installs gnuplot-nox)"
[[ -x $build_dir/tests/c10d/c10d_store_helper && -x $build_dir/tests/c10d/c10d_store_crowd ]] ||
  skip "build c10d_store_helper and c10d_store_crowd into $build_dir first"
expect_usage_error "$bench" "$tmp" "sizes that are no counts" "--sizes must be rank counts" --sizes 0,x
expect_usage_error "$bench" "$tmp" "an unknown server" "--servers from" --servers nginx

rc=0
"$bench" --sizes 256 --rounds 1 --servers ddp-launch,floor --plot "$tmp/plot.png" >"$tmp/out" 2>"$tmp/err" || rc=$?
((rc == 0)) || fail "the small run exited $rc: $(cat "$tmp/out" "$tmp/err")"
grep -qE '^# [0-9T:-]+Z, [0-9]+ CPUs, load ' "$tmp/out" || fail "no header line: $(cat "$tmp/out")"
for shape in barrier init; do
  for server in ddp-launch floor; do
    grep -qE "^\| $shape \| 256 \| $server \| [0-9.]+ s \([0-9.]+-[0-9.]+\) \|.*\| 0 / 0 \|" "$tmp/out" ||
      fail "$shape, $server: no row with every rank released and nothing refused or reset: $(cat "$tmp/out")"
  done
done
if [[ ! -s $tmp/plot.png || $(head -c 4 "$tmp/plot.png" | tail -c 3) != PNG ]]; then fail "no PNG at $tmp/plot.png"; fi
echo "PASS: bench-store-scale.sh"
