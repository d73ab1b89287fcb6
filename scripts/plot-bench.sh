#!/usr/bin/env bash
# Benchmark chart: turns the result lines of scripts/bench-ddp.sh (`case=mlp peer=cpp-ddp
# world=2 ... samples_per_s=2061.3 step_ms=31.1`, an optional hook=NAME joins the peer's name)
# into a bar chart of median samples/s per case and world size, one bar per peer, as a PNG
# (gnuplot, pngcairo). Other lines (comments, the medians table) are ignored. Lines with a
# link=L (scripts/bench-compress.sh: `case=compress link=1gbit peer=cpp-ddp hook=powersgd
# rank=2 ...`) are grouped by link instead, one bar per peer, hook and PowerSGD rank.
#
# Usage: scripts/bench-ddp.sh | tee bench.txt; scripts/plot-bench.sh [-o OUT.png] [--title TEXT] bench.txt
#        (--print-data: print the medians table gnuplot would draw, and draw nothing)
# Exit status: 0 drawn, 2 bad usage or input (one 'plot-bench.sh: error:' line), 1 gnuplot failed.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
die_prefix="plot-bench.sh: error: "  # die exits 2

out=""
title="libddp vs PyTorch DDP (gloo, CPU): median samples/s"
input=""
print_data=0
while (($#)); do
  case $1 in
    -h|--help) sed -n '9,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -o|--output) (($# >= 2)) || die "$1 needs a file name"; out=$2; shift 2 ;;
    --print-data) print_data=1; shift ;;
    --title) (($# >= 2)) || die "--title needs a text"; title=$2; shift 2 ;;
    -*) die "unknown option '$1'; run scripts/plot-bench.sh --help" ;;
    *) [[ -z $input ]] || die "one input file only, got '$input' and '$1'"; input=$1; shift ;;
  esac
done
[[ -n $input ]] || die "no input; usage: scripts/plot-bench.sh [-o OUT.png] bench.txt (saved output of scripts/bench-ddp.sh)"
[[ -f $input ]] || die "$input: no such file"
[[ -n $out ]] || out="${input%.*}.png"
[[ $out == *.png ]] || die "-o $out: the output must be a .png file"
need gnuplot

data=$(mktemp)
trap 'rm -f "$data"' EXIT
# Medians per (case world) row and peer column; a gnuplot data file with a header row.
/usr/bin/python3 - "$input" > "$data" <<'PY' || exit 2
import statistics, sys
rows, peers, groups = {}, [], []
LINKS = {"no-comm": "no communication (floor)", "unshaped": "unshaped veth", "1gbit": "1 Gbit/s", "10gbit": "10 Gbit/s"}
for number, line in enumerate(open(sys.argv[1]), 1):
    if not line.startswith("case="):
        continue
    try:
        kv = dict(tok.split("=", 1) for tok in line.split())
        peer = kv["peer"] + (f"+{kv['hook']}" if kv.get("hook") else "") + (f" r{int(kv['rank'])}" if "rank" in kv else "")
        group = f"{kv['case']} world {int(kv['world'])}"
        if "link" in kv:
            group = LINKS.get(kv["link"], kv["link"] + " link")
        value = float(kv["samples_per_s"])
    except (KeyError, ValueError) as e:
        sys.exit(f"plot-bench.sh: error: {sys.argv[1]}:{number}: not a bench-ddp.sh result line ({e}): {line.strip()}")
    if peer not in peers:
        peers.append(peer)
    if group not in groups:
        groups.append(group)
    rows.setdefault((group, peer), []).append(value)
if not rows:
    sys.exit(f"plot-bench.sh: error: {sys.argv[1]}: no 'case=... peer=... samples_per_s=...' lines; "
             "save the output of scripts/bench-ddp.sh (e.g. | tee bench.txt)")
print("group " + " ".join(f'"{p}"' for p in peers))
for g in groups:
    cells = [f"{statistics.median(rows[(g, p)]):.1f}" if (g, p) in rows else "NaN" for p in peers]
    print(f'"{g}" ' + " ".join(cells))
PY
if ((print_data)); then
  cat "$data"
  exit 0
fi
columns=$(head -1 "$data" | wc -w)
# Many bars (bench-compress.sh's hooks): a wider chart, the legend beside it, more colours.
size="1000,480" key="top left"
((columns - 1 > 4)) && size="1250,480" key="outside right top"

gnuplot <<EOF || { echo "plot-bench.sh: gnuplot failed" >&2; exit 1; }
set terminal pngcairo size $size font 'DejaVu Sans,10'
set output '${out//\'/\'\'}'
set title '${title//\'/\'\'}' noenhanced
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key noenhanced $key
set linetype 9 lc rgb '#8c564b'
set linetype 10 lc rgb '#7f7f7f'
set linetype 11 lc rgb '#bcbd22'
set linetype 12 lc rgb '#17becf'
set grid ytics
set yrange [0:*]
set ylabel 'samples/s (median)'
peers = $((columns - 1))
plot for [c=2:$columns] '$data' using c:xticlabels(1) title columnheader(c), \
     for [c=2:$columns] '$data' using (\$0 - 1 + (c - 2 - (peers - 1) / 2.0) / (peers + 1.0)):c:(sprintf('%.0f', column(c))) \\
       with labels offset 0,0.7 font ',8' notitle
EOF
[[ -s $out ]] || { echo "plot-bench.sh: gnuplot wrote no $out" >&2; exit 1; }
echo "plot-bench.sh: wrote $out"
