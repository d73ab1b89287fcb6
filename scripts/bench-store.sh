#!/usr/bin/env bash
# bench-store.sh: the agent store vs c10d's TCPStore (Debian's LibTorch) vs etcd (the
# launcher's EtcdStore against a single-member etcd this script starts on a free loopback
# port in a temp dir, killed after) — rendezvous rounds for K agents (default K = 8, 64,
# 256, 1024, 4096; TCPStore up to --c10d-max-agents, 1024; etcd up to --etcd-max-agents,
# 256: every agent reads all K keys one request each, O(K^2), ~65 s at K = 256 on 2 cores)
# and single-client SET/GET throughput, medians and ratios as one Markdown table (see
# docs/store.md, docs/etcd.md). store_bench alternates the agent store and TCPStore;
# etcd_store_bench (torch-free) runs after it. Without the etcd binary, or with --no-etcd,
# the etcd column is left out. A benchmark, not a test.
#
#   scripts/bench-store.sh [options]   e.g. --agents 8,64,256 --repeats 5 --ops 20000
#
# Options: --agents, --repeats, --ops go to both programs; --etcd-max-agents N, --etcd-threads
# N and --no-etcd are this script's; anything else goes to store_bench (--threads,
# --c10d-max-agents). Env: BUILD_DIR (scripts/lib.sh: configured there with -DDDP_BUILD_BENCH=ON
# added, which stays; it needs DDP_BUILD_RUNTIME=ON, the default), JOBS (default 2).
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
jobs="${JOBS:-2}"

common=() store_only=() etcd_only=() with_etcd=1 etcd_max=256 repeats=5
while (($#)); do
  case $1 in
    --agents|--repeats|--ops) [[ $1 == --repeats ]] && repeats=$2; common+=("$1" "$2"); shift 2 ;;
    --agents=*|--repeats=*|--ops=*) [[ $1 == --repeats=* ]] && repeats=${1#*=}; common+=("$1"); shift ;;
    --etcd-max-agents) etcd_max=$2; shift 2 ;;
    --etcd-max-agents=*) etcd_max=${1#*=}; shift ;;
    --etcd-threads) etcd_only+=(--threads "$2"); shift 2 ;;
    --etcd-threads=*) etcd_only+=(--threads "${1#*=}"); shift ;;
    --no-etcd) with_etcd=0; shift ;;
    *) store_only+=("$1"); shift ;;
  esac
done
if ((with_etcd)) && ! command -v etcd >/dev/null; then
  echo "bench-store.sh: no etcd binary (scripts/install-deps.sh installs etcd-server): etcd column left out" >&2
  with_etcd=0
fi

cmake -S "$repo_root" -B "$build_dir" -G Ninja -DDDP_BUILD_BENCH=ON >/dev/null
if ! cmake --build "$build_dir" --target store_bench etcd_store_bench -j "$jobs"; then
  die 1 "cannot build store_bench (is LibTorch installed, and $build_dir configured with DDP_BUILD_RUNTIME=ON? see scripts/install-deps.sh)"
fi

tmp=$(mktemp -d)
etcd_pid=
cleanup() {
  if [[ -n $etcd_pid ]]; then kill -9 "$etcd_pid" 2>/dev/null || true; wait "$etcd_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# torch 2.x's TCPStore server looks up the name of every peer it accepts, on its one thread:
# where DNS does not answer, each connect waits for the resolver (docs/store.md "Jobs of many
# ranks"). As root, store_bench runs in a mount namespace whose resolv.conf fails lookups at once.
store_bench=("$build_dir/bench/store_bench")
if ((EUID == 0)) && command -v unshare >/dev/null; then
  echo "nameserver 127.0.0.1" >"$tmp/resolv.conf"
  # shellcheck disable=SC2016 # $0 and $@ are the inner shell's
  store_bench=(unshare -m sh -c 'mount --bind "$0" /etc/resolv.conf && exec "$@"' "$tmp/resolv.conf" "${store_bench[@]}")
fi
echo "# $(date -u +%FT%TZ) $(nproc) CPUs, $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg)"
"${store_bench[@]}" "${common[@]}" "${store_only[@]}" >"$tmp/stores.md"

if ((with_etcd)); then
  read -r cport pport <<<"$(free_port 2)"
  etcd --name bench --data-dir "$tmp/etcd" --listen-client-urls "http://127.0.0.1:$cport" \
    --advertise-client-urls "http://127.0.0.1:$cport" --listen-peer-urls "http://127.0.0.1:$pport" \
    --initial-advertise-peer-urls "http://127.0.0.1:$pport" --initial-cluster "bench=http://127.0.0.1:$pport" \
    --initial-cluster-state new --log-level=error >"$tmp/etcd.log" 2>&1 &
  etcd_pid=$!
  "$build_dir/bench/etcd_store_bench" --endpoint "127.0.0.1:$cport" --etcd-pid "$etcd_pid" --max-agents "$etcd_max" \
    "${common[@]}" "${etcd_only[@]}" >"$tmp/etcd.tsv" || { cat "$tmp/etcd.log" >&2; exit 1; }
  echo "# etcd $(etcd --version | head -1 | awk '{print $3}'), one member, data dir in $(df --output=fstype "$tmp" | tail -1 | tr -d ' ')"
else
  : >"$tmp/etcd.tsv"
fi

# One table: store_bench's rows, the etcd column and its ratio added.
awk -F'|' -v etcd="$with_etcd" -v cap="$etcd_max" -v repeats="$repeats" '
  function trim(s) { gsub(/^ +| +$/, "", s); return s }
  FILENAME == ARGV[1] { split($0, kv, "\t"); e[kv[1]] = kv[2]; next }
  !etcd { print; next }
  FNR == 1 { printf "| figure (median of %s) | ddp-launch store | c10d TCPStore | etcd (EtcdStore) | ours vs c10d | ours vs etcd |\n", repeats; next }
  FNR == 2 { print "|---|---:|---:|---:|---:|---:|"; next }
  {
    fig = trim($2); ours = trim($3); v = "";  ratio = ""
    if (fig ~ /^connect/) v = "—"
    else if (fig in e) {
      v = e[fig]
      if (ours + 0 > 0 && v + 0 > 0) {
        r = fig ~ /ops\/s/ ? ours / v : v / ours
        ratio = r >= 1 ? sprintf("%.2fx faster", r) : sprintf("%.2fx slower", 1 / r)
      }
    } else v = sprintf("not run (capped, K > --etcd-max-agents %s)", cap)
    printf "| %s | %s | %s | %s | %s | %s |\n", fig, ours, trim($4), v, trim($5), ratio
  }' "$tmp/etcd.tsv" "$tmp/stores.md"
