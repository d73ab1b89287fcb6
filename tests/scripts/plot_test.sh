#!/usr/bin/env bash
# scripts/plot.sh end to end: metrics.csv files made here (train's format) -> a valid PNG of
# plausible size, legends from directory names and LABEL= arguments; bad input -> exit 2 and
# one 'plot.sh: error:' line naming the file and the problem. Skipped (77) without gnuplot.
# Usage: plot_test.sh REPO_ROOT
set -euo pipefail
# shellcheck source=SCRIPTDIR/../../scripts/lib.sh
source "$(dirname "$0")/../../scripts/lib.sh"
need 77 gnuplot
plot="$1/scripts/plot.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

header="epoch,step,loss,accuracy,samples_per_s"
mkdir -p "$tmp/np1" "$tmp/np2"
printf '%s\n1,32,0.91,0.71,2400.5\n2,64,0.52,0.85,2450\n3,96,0.31,0.9,2380\n' "$header" > "$tmp/np1/metrics.csv"
printf '%s\n1,16,1.02,0.62,4100\n2,32,0.61,0.8,4150.25\n3,48,3.5e-1,0.88,4120\n' "$header" > "$tmp/np2/metrics.csv"

# Two runs on one chart.
out=$("$plot" -o "$tmp/curves.png" "$tmp/np1/metrics.csv" "two workers=$tmp/np2/metrics.csv") || fail "plot.sh failed: $out"
[[ $out == "plot.sh: wrote $tmp/curves.png (2 run(s): np1 two workers)" ]] || fail "unexpected output: $out"
[[ $(head -c 8 "$tmp/curves.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || fail "not a PNG signature"
# IHDR: width and height, big-endian, at bytes 16..23.
size=$(od -An -tu1 -j16 -N8 "$tmp/curves.png" | tr -s ' ' | sed 's/^ //')
read -r w1 w2 w3 w4 h1 h2 h3 h4 <<< "$size"
width=$(((w1 << 24) | (w2 << 16) | (w3 << 8) | w4))
height=$(((h1 << 24) | (h2 << 16) | (h3 << 8) | h4))
[[ $width == 1500 && $height == 460 ]] || fail "PNG is ${width}x${height}, expected 1500x460"
bytes=$(stat -c %s "$tmp/curves.png")
((bytes > 20000 && bytes < 2000000)) || fail "PNG of $bytes bytes is implausible for three panels with two curves"
# A single run: the PNG lands next to its CSV by default.
"$plot" "$tmp/np1/metrics.csv" > /dev/null || fail "single CSV"
[[ -s $tmp/np1/curves.png ]] || fail "default output np1/curves.png missing"
# The legend labels reach gnuplot (quotes escaped).
script=$("$plot" --print-script "it's=$tmp/np1/metrics.csv" "$tmp/np2/metrics.csv")
grep -q "title 'it''s'" <<< "$script" || fail "LABEL= with a quote not in the script: $script"
grep -q "title 'np2'" <<< "$script" || fail "directory name not used as the label: $script"

# Bad input: exit 2 and one clear line.
expect_error() {
  local expected=$1 rc=0 err
  shift
  err=$("$plot" "$@" 2>&1 > /dev/null) || rc=$?
  [[ $rc == 2 ]] || fail "plot.sh $*: exit $rc, expected 2 ($err)"
  [[ $(wc -l <<< "$err") == 1 && $err == "plot.sh: error: "*"$expected"* ]] || fail "plot.sh $*: got '$err', expected '$expected'"
}
printf 'epoch,step\n1,2\n' > "$tmp/header.csv"
printf '%s\n1,2,x,0.5,10\n' "$header" > "$tmp/nan.csv"
printf '%s\n1,2,3\n' "$header" > "$tmp/short.csv"
printf '%s\n' "$header" > "$tmp/norows.csv"
: > "$tmp/empty.csv"
expect_error "$tmp/missing.csv: no such file" "$tmp/missing.csv"
expect_error "$tmp/header.csv: line 1 is \"epoch,step\", expected the header" "$tmp/header.csv"
expect_error "$tmp/nan.csv: line 2: field 3 is \"x\", not a number" "$tmp/nan.csv"
expect_error "$tmp/short.csv: line 2 has 3 fields, expected 5" "$tmp/short.csv"
expect_error "$tmp/norows.csv: no data rows" "$tmp/norows.csv"
expect_error "$tmp/empty.csv: the file is empty" "$tmp/empty.csv"
expect_error "no metrics.csv given"
expect_error "the output must be a .png file" -o "$tmp/x.jpg" "$tmp/np1/metrics.csv"
expect_error "unknown option '--bogus'" --bogus
# A bad file among good ones fails before anything is drawn.
rm -f "$tmp/mixed.png"
expect_error "$tmp/nan.csv: line 2" -o "$tmp/mixed.png" "$tmp/np1/metrics.csv" "$tmp/nan.csv"
[[ ! -e $tmp/mixed.png ]] || fail "a PNG was written despite a bad CSV"

# scripts/plot-bench.sh: bench-ddp.sh result lines -> a bar chart; other lines ignored.
bench="$1/scripts/plot-bench.sh"
{
  echo "# 2 cores, load average 1.0"
  for w in 1 2; do
    echo "case=mlp peer=cpp-ddp world=$w steps=100 batch=32 params=2913290 samples_per_s=$((1900 + w)).5 step_ms=16.1"
    echo "case=mlp peer=python-ddp world=$w steps=100 batch=32 params=2913290 samples_per_s=1800 step_ms=17.0"
    echo "case=mlp peer=cpp-ddp hook=fp16 world=$w steps=100 batch=32 params=2913290 samples_per_s=900 step_ms=35"
  done
  echo "mlp       1         1901.5 ..."
} > "$tmp/bench.txt"
"$bench" -o "$tmp/bench.png" "$tmp/bench.txt" > /dev/null || fail "plot-bench.sh failed"
[[ $(head -c 8 "$tmp/bench.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || fail "bench chart is not a PNG"
(($(stat -c %s "$tmp/bench.png") > 10000)) || fail "bench chart implausibly small"
echo "# no results" > "$tmp/nobench.txt"
rc=0
err=$("$bench" "$tmp/nobench.txt" 2>&1 > /dev/null) || rc=$?
[[ $rc == 2 && $err == "plot-bench.sh: error: $tmp/nobench.txt: no 'case=... peer=... samples_per_s=...' lines"* ]] ||
  fail "plot-bench.sh on a file without results: exit $rc, '$err'"

# scripts/bench-compress.sh's lines: grouped by link (its label), one column per peer, hook and
# PowerSGD rank, medians; '# failed:' lines and the summary ignored.
{
  echo "# link 1gbit: gbit_per_s=0.94 rtt_ms=0.097"
  echo "case=compress link=no-comm peer=cpp-ddp hook=none world=2 steps=182 batch=32 params=2913290 samples_per_s=1253.6 step_ms=51.05 accuracy=0.9180"
  for s in 400 430 380; do
    echo "case=compress link=1gbit peer=cpp-ddp hook=allreduce world=2 steps=182 batch=32 params=2913290 samples_per_s=$s step_ms=150 accuracy=0.9404"
    echo "case=compress link=1gbit peer=cpp-ddp hook=powersgd rank=2 world=2 steps=182 batch=32 params=2913290 samples_per_s=$((s * 2)) step_ms=75 accuracy=0.9233"
  done
  echo "case=compress link=10gbit peer=python-ddp hook=allreduce world=2 steps=182 batch=32 params=2913290 samples_per_s=900.5 step_ms=70 accuracy=0.9404"
  echo "# failed: link=1gbit peer=python-ddp hook=bf16 exit=1/1 reason=RuntimeError: unsupported"
  echo "1gbit      cpp-ddp     allreduce         430.8    94.04%     1.00"
} > "$tmp/compress.txt"
table=$("$bench" --print-data "$tmp/compress.txt")
expected='group "cpp-ddp+none" "cpp-ddp+allreduce" "cpp-ddp+powersgd r2" "python-ddp+allreduce"
"no communication (floor)" 1253.6 NaN NaN NaN
"1 Gbit/s" NaN 400.0 800.0 NaN
"10 Gbit/s" NaN NaN NaN 900.5'
[[ $table == "$expected" ]] || fail "compress medians table: got
$table
expected
$expected"
"$bench" -o "$tmp/compress.png" "$tmp/compress.txt" > /dev/null || fail "plot-bench.sh failed on compress lines"
(($(stat -c %s "$tmp/compress.png") > 10000)) || fail "compress chart implausibly small"
echo "ok: PNG ${width}x${height}, $bytes bytes; 10 bad inputs rejected with exit 2; bench and compress charts drawn"
