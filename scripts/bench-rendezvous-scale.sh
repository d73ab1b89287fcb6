#!/usr/bin/env bash
# bench-rendezvous-scale.sh: one rendezvous round of 1k-20k nodes against the agent store (a
# benchmark, not a test). tests/multinode/rendezvous_crowd.cpp hosts the store and runs the
# real leader; the other nodes are emulated followers (one connection each, spread over
# processes) that send what a launcher sends and read their plan. Two shapes, alternating in
# each round: seat (each follower reads the plan's summary and its own seat: the protocol) and
# whole (each also reads every node's record, as when the plan was one record: O(K^2) bytes;
# only up to --whole-max). Per size and shape: seconds from the leader's start to the last
# follower's plan (median of the rounds, min-max), the CPU seconds of the store's process (store
# thread and leader) and of the followers, and the store process's RSS growth (medians), as one
# Markdown table (docs/store.md "Rendezvous rounds of many nodes"). Builds rendezvous_crowd into
# BUILD_DIR if missing.
#
#   scripts/bench-rendezvous-scale.sh [--nodes LIST] [--rounds N] [--whole-max K] [--procs P]
#                                     [--timeout S]
#
# Defaults: --nodes 1024,4096,16384,max (max: the largest round this process's hard open-file
# limit allows, the limit minus 256), --rounds 3, --whole-max 4096, --procs 8, --timeout 300.
# Env: BUILD_DIR (scripts/lib.sh).
# Exit: 0; 1 when a round failed; 2 on bad usage or a missing tool.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
nodes_list=1024,4096,16384,max rounds=3 whole_max=4096 procs=8 timeout=300
while (($#)); do
  case $1 in
    -h | --help)
      usage
      exit 0
      ;;
    --nodes | --rounds | --whole-max | --procs | --timeout)
      (($# >= 2)) || die "$1 needs a value; see scripts/bench-rendezvous-scale.sh --help"
      case $1 in
        --nodes) nodes_list=$2 ;;
        --rounds) rounds=$2 ;;
        --whole-max) whole_max=$2 ;;
        --procs) procs=$2 ;;
        --timeout) timeout=$2 ;;
      esac
      shift 2
      ;;
    *) die "unknown argument '$1'; see scripts/bench-rendezvous-scale.sh --help" ;;
  esac
done
for n in "$rounds" "$whole_max" "$procs" "$timeout"; do
  [[ $n =~ ^[0-9]+$ ]] || die "--rounds, --whole-max, --procs and --timeout take whole numbers, not '$n'"
done
((rounds > 0)) || die "--rounds must be at least 1"
hard=$(ulimit -Hn)
[[ $hard == unlimited ]] && hard=1048576
sizes=()
IFS=, read -ra wanted <<<"$nodes_list"
for k in "${wanted[@]}"; do
  [[ $k == max ]] && k=$((hard - 256))
  if [[ ! $k =~ ^[0-9]+$ ]] || ((k < 2)); then die "--nodes must be node counts of at least 2 (or max), not '$k'"; fi
  sizes+=("$k")
done

cd "$repo_root" || die "cannot cd to $repo_root"
crowd=$build_dir/tests/multinode/rendezvous_crowd
if [[ ! -x $crowd ]]; then
  [[ -f $build_dir/CMakeCache.txt ]] || cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build_dir" --target rendezvous_crowd >/dev/null || die 1 "cannot build rendezvous_crowd in $build_dir"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One round of K nodes in SHAPE: its figures appended to $tmp/K.SHAPE ("round cpu followers rss").
run_round() {
  local k=$1 shape=$2 line
  if ! line=$("$crowd" --nodes "$k" --procs "$procs" --shape "$shape" --timeout "$timeout" 2>"$tmp/err"); then
    die 1 "a round of $k nodes ($shape) failed: $(cat "$tmp/err")"
  fi
  awk '{ for (i = 1; i < NF; i++) v[$i] = $(i + 1)
         print v["round_s"], v["leader_cpu_s"], v["followers_cpu_s"], v["leader_rss_mib"] }' <<<"$line" \
    >>"$tmp/$k.$shape"
}

for ((r = 0; r < rounds; r++)); do
  for k in "${sizes[@]}"; do
    shapes=(seat)
    ((k <= whole_max)) && shapes=(seat whole)
    ((r % 2)) && ((${#shapes[@]} == 2)) && shapes=(whole seat)  # alternate which goes first
    for shape in "${shapes[@]}"; do run_round "$k" "$shape"; done
  done
  echo "round $((r + 1))/$rounds done" >&2
done

column_median() {
  local values
  mapfile -t values < <(awk -v c="$2" '{ print $c }' "$1")
  median "${values[@]}"
}
printf '# %s, %s CPUs, load %s, %s rounds, followers in %s processes\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$rounds" "$procs"
echo '| nodes | shape | round (median, min-max) | store process CPU | followers CPU | store process RSS growth |'
echo '|---:|---|---:|---:|---:|---:|'
for k in "${sizes[@]}"; do
  for shape in seat whole; do
    f=$tmp/$k.$shape
    [[ -s $f ]] || continue
    read -r lo hi < <(awk '{ print $1 }' "$f" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo, hi }')
    printf '| %s | %s | %.3f s (%s-%s) | %.2f s | %.2f s | %.0f MiB |\n' "$k" "$shape" "$(column_median "$f" 1)" \
      "$lo" "$hi" "$(column_median "$f" 2)" "$(column_median "$f" 3)" "$(column_median "$f" 4)"
  done
done
