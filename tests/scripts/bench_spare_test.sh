#!/usr/bin/env bash
# scripts/bench-spare.sh: --help, bad arguments (exit 2, one line saying what is wrong), then one
# small run of each configuration (2 active launchers with `train`, in network namespaces where
# this machine allows, and a spare: a SIGKILLed launcher; the round that shrinks; a node failing
# every attempt struck out): a table with every row, the spare's rank healed from memory, the
# flaky node struck out. No timing is checked. Skipped (77) without the built ddp-launch and train.
# Usage: bench_spare_test.sh REPO_ROOT   (env BUILD_DIR: the build holding ddp-launch and train)
set -euo pipefail
# shellcheck source=SCRIPTDIR/../../scripts/lib.sh
source "$(dirname "$0")/../../scripts/lib.sh"
bench="$1/scripts/bench-spare.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

help=$("$bench" --help) || fail "--help exited $?"
grep -q 'scripts/bench-spare.sh \[--nodes K\]' <<<"$help" || fail "--help has no usage line: $help"
expect_usage_error "$bench" "$tmp" "an unknown flag" "unknown argument '--bogus'" --bogus
expect_usage_error "$bench" "$tmp" "a flag without its value" "--runs needs a value" --runs
expect_usage_error "$bench" "$tmp" "a value that is no number" "--heartbeat takes seconds" --heartbeat soon
expect_usage_error "$bench" "$tmp" "a count that is no number" "--struck-runs takes a whole number" --struck-runs x
expect_usage_error "$bench" "$tmp" "too few nodes" "--nodes must be at least 2" --nodes 1

[[ -x $build_dir/launcher/ddp-launch && -x $build_dir/trainers/train ]] || skip "build ddp-launch and train into $build_dir first"
"$bench" --nodes 2 --runs 1 --struck-runs 1 --kill-step 10 >"$tmp/out" 2>"$tmp/err" ||
  fail "the small run failed: $(cat "$tmp/out" "$tmp/err")"
grep -qE '^# [0-9T:-]+Z, [0-9]+ CPUs, load .*, 2 active nodes x 1 train worker on (loopback|network namespaces on a bridge), heartbeat 1 s, 1 runs$' \
  "$tmp/out" || fail "no header line: $(cat "$tmp/out")"
grep -qE "^\| SIGKILL of a node's launcher -> first step on the spare's rank \(s\) \| [0-9.]+ \([0-9.]+-[0-9.]+\) \| - \|$" \
  "$tmp/out" || fail "no spare row: $(cat "$tmp/out")"
grep -qE '^\| SIGKILL -> first step of the new round, any rank \(s\) \| [0-9.]+ .* \| [0-9.]+ .* \|$' "$tmp/out" ||
  fail "no round row: $(cat "$tmp/out")"
grep -qE '^\| steps redone \| -?[0-9]+ .* \| -?[0-9]+ .* \|$' "$tmp/out" || fail "no redone row: $(cat "$tmp/out")"
grep -qE "^\| the spare's rank healed from memory, no checkpoint read \| 1 of 1 \| - \|$" "$tmp/out" ||
  fail "the spare's rank was not healed from memory: $(cat "$tmp/out")"
grep -qE "^\| a node whose worker fails every attempt struck out at its 3rd strike, the spare in its seat \| 1 of 1 \| - \|$" \
  "$tmp/out" || fail "the flaky node was not struck out: $(cat "$tmp/out")"
grep -qE "^\| its 3rd failure -> first step on the spare's rank \(s\) \| [0-9.]+ .* \| - \|$" "$tmp/out" ||
  fail "no struck row: $(cat "$tmp/out")"
echo "PASS: bench-spare.sh"
