#!/usr/bin/env bash
# scripts/bench-preflight.sh: --help, bad arguments (exit 2, one line saying what is wrong),
# then one small run (3 nodes, in network namespaces where this machine allows: one capped run
# where it can cap a cgroup's CPU, one slow-link run, one timing pair): a table with every row
# and every job ended, and nobody but the capped or slow node ever left out. Whether that node
# was left out is the benchmark's figure, not asserted here: the three "nodes" share this
# machine's two cores with the suite's other tests, and nodes squeezed by them below the cap's
# share hide it (0.61 of the median at a 5% cap beside four burners), which separate machines
# would not; the leader's screen and the link verdict are unit-tested and the left-out path is
# tested in multinode:. No timing is checked. Skipped (77) without the built ddp-launch.
# Usage: bench_preflight_test.sh REPO_ROOT   (env BUILD_DIR: the build holding ddp-launch)
set -euo pipefail
# shellcheck source=SCRIPTDIR/../../scripts/lib.sh
source "$(dirname "$0")/../../scripts/lib.sh"
bench="$1/scripts/bench-preflight.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

help=$("$bench" --help) || fail "--help exited $?"
grep -q 'scripts/bench-preflight.sh \[--nodes K\]' <<<"$help" || fail "--help has no usage line: $help"
expect_usage_error "$bench" "$tmp" "an unknown flag" "unknown argument '--bogus'" --bogus
expect_usage_error "$bench" "$tmp" "a flag without its value" "--nodes needs a value" --nodes
expect_usage_error "$bench" "$tmp" "a value that is no number" "--cap takes a whole number" --cap half
expect_usage_error "$bench" "$tmp" "too few nodes" "--nodes must be at least 3" --nodes 2

[[ -x $build_dir/launcher/ddp-launch ]] || skip "build ddp-launch into $build_dir first"
rc=0
"$bench" --nodes 3 --cap 5 --capped-runs 1 --slow-runs 1 --clean-runs 0 --timing-runs 1 >"$tmp/out" 2>"$tmp/err" ||
  rc=$?
# 1 only for a capped or slow node that was not left out, with the other nodes' jobs ended 0 (said
# on stderr; the capped node itself, at 5% of a CPU beside the suite's load, may be too slow to end
# its job before the others close the store: its own code is not the figure here).
if ((rc == 1)) && ! grep "left out: '" "$tmp/err" | grep -qvE "left out: '' \(expected node 2 only\); codes: 0 0 1 0 2 [0-9]+ $"; then
  rc=0
fi
((rc == 0)) || fail "the small run exited $rc: $(cat "$tmp/out" "$tmp/err")"
grep -qE '^# [0-9T:-]+Z, [0-9]+ CPUs, load .*, 3 nodes x 1 worker on (loopback|network namespaces on a bridge)$' "$tmp/out" ||
  fail "no header line: $(cat "$tmp/out")"
grep -qE '^\| a node capped at 5% of one CPU left out \(and nobody else\) \| ([01] of 1|not run .*) \|$' "$tmp/out" ||
  fail "no capped row: $(cat "$tmp/out")"
grep -qE '^\| a node whose link is shaped to 100 Mbit/s left out \(and nobody else\) \| ([01] of 1|not run .*) \|$' "$tmp/out" ||
  fail "no slow-link row: $(cat "$tmp/out")"
grep -qE '^\| job start to end, 3 nodes, median of 1: with --preflight / without \| [0-9.]+ s / [0-9.]+ s \(\+-?[0-9.]+ s\) \|$' \
  "$tmp/out" || fail "no timing row: $(cat "$tmp/out")"
echo "PASS: bench-preflight.sh"
