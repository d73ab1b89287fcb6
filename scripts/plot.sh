#!/usr/bin/env bash
# Training curves: draws loss, validation accuracy and samples/s per epoch from one or several
# metrics.csv files written by `train` (epoch,step,loss,accuracy,samples_per_s) onto one PNG
# with gnuplot (Debian's gnuplot-nox, pngcairo terminal).
#
# Usage: scripts/plot.sh [-o OUT.png] [--title TEXT] [--print-script] [LABEL=]metrics.csv...
#   LABEL defaults to the CSV's directory name when the file is called metrics.csv, else to the
#   file name without .csv. OUT defaults to curves.png next to the first CSV.
#   --print-script prints the gnuplot script instead of running it.
# Exit status: 0 drawn, 2 bad usage or input (one 'plot.sh: error:' line says what), 1 gnuplot failed.
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
die_prefix="plot.sh: error: "  # die exits 2
readonly kHeader="epoch,step,loss,accuracy,samples_per_s"

usage() {
  sed -n '7,12p' "$0" | sed 's/^# \{0,1\}//'
}

# Checks one CSV: train's header, then at least one row of 5 finite numbers. Dies naming the
# file and line of the first problem.
check_csv() {
  local path=$1
  [[ -e $path ]] || die "$path: no such file (pass a metrics.csv written by train, e.g. checkpoints/metrics.csv)"
  [[ -f $path && -r $path ]] || die "$path: not a readable file"
  local problem
  problem=$(awk -v header="$kHeader" '
    NR == 1 {
      sub(/\r$/, "")
      if ($0 != header) { printf "line 1 is \"%s\", expected the header \"%s\" (a metrics.csv written by train)", $0, header; bad = 1; exit }
      next
    }
    {
      sub(/\r$/, "")
      if ($0 == "") next
      n = split($0, f, ",")
      if (n != 5) { printf "line %d has %d fields, expected 5 (%s): \"%s\"", NR, n, header, $0; bad = 1; exit }
      for (i = 1; i <= 5; i++) {
        if (f[i] !~ /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/) {
          printf "line %d: field %d is \"%s\", not a number", NR, i, f[i]; bad = 1; exit
        }
      }
      rows++
    }
    END {
      if (bad) exit
      if (NR == 0) { printf "the file is empty, expected the header \"%s\" and one row per epoch", header; exit }
      if (rows == 0 && NR >= 1) printf "no data rows after the header (did the run finish an epoch?)"
    }' "$path")
  [[ -z $problem ]] || die "$path: $problem"
}

default_label() {
  local path=$1 base
  base=$(basename "$path")
  if [[ $base == metrics.csv ]]; then
    basename "$(cd "$(dirname "$path")" && pwd)"
  else
    echo "${base%.csv}"
  fi
}

# gnuplot string literal: single quotes, doubled inside.
quoted() { printf "'%s'" "${1//\'/\'\'}"; }

out=""
title="Training curves"
print_script=0
labels=()
paths=()
while (($#)); do
  case $1 in
    -h|--help) usage; exit 0 ;;
    -o|--output) (($# >= 2)) || die "$1 needs a file name, e.g. -o curves.png"; out=$2; shift 2 ;;
    --title) (($# >= 2)) || die "--title needs a text"; title=$2; shift 2 ;;
    --print-script) print_script=1; shift ;;
    -*) die "unknown option '$1'; run scripts/plot.sh --help" ;;
    *)
      arg=$1
      shift
      if [[ $arg == *=* && ! -e $arg && -n ${arg%%=*} ]]; then
        labels+=("${arg%%=*}")
        paths+=("${arg#*=}")
      else
        labels+=("$(default_label "$arg")")
        paths+=("$arg")
      fi
      ;;
  esac
done
((${#paths[@]} > 0)) || die "no metrics.csv given; usage: scripts/plot.sh [-o OUT.png] [LABEL=]metrics.csv..."
for p in "${paths[@]}"; do check_csv "$p"; done
[[ -n $out ]] || out="$(dirname "${paths[0]}")/curves.png"
[[ $out == *.png ]] || die "-o $out: the output must be a .png file"
[[ -d $(dirname "$out") ]] || die "-o $out: directory $(dirname "$out") does not exist"

# One plot command per panel: every CSV as a line with points, its label in the key.
series() {
  local column=$1 sep="" i
  for i in "${!paths[@]}"; do
    printf '%s%s using 1:(%s) with linespoints lw 2 pt 7 ps 0.6 title %s' "$sep" "$(quoted "${paths[$i]}")" \
      "$column" "$(quoted "${labels[$i]}")"
    sep=", "
  done
}

# shellcheck disable=SC2016  # '$3', '$4*100', '$5': gnuplot's columns, not the shell's
script=$(cat <<EOF
set terminal pngcairo size 1500,460 enhanced font 'DejaVu Sans,10'
set output $(quoted "$out")
set datafile separator ','
set key noenhanced
set grid
set xlabel 'epoch'
set xtics 1
set multiplot layout 1,3 title $(quoted "$title") noenhanced
set title 'training loss (mean over ranks)'
set key top right
plot $(series '$3')
set title 'validation accuracy (%)'
set key bottom right
plot $(series '$4*100')
set title 'throughput (samples/s, all ranks)'
set key top right
set yrange [0:*]
set offsets 0, 0, graph 0.35, 0
plot $(series '$5')
unset multiplot
EOF
)
if ((print_script)); then
  echo "$script"
  exit 0
fi
need gnuplot
# gnuplot skips the header line: it is not numeric.
if ! errors=$(gnuplot <<< "$script" 2>&1); then
  echo "plot.sh: gnuplot failed:" >&2
  echo "$errors" >&2
  exit 1
fi
[[ -s $out ]] || { echo "plot.sh: gnuplot wrote no $out" >&2; exit 1; }
echo "plot.sh: wrote $out (${#paths[@]} run(s): ${labels[*]})"
