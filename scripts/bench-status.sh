#!/usr/bin/env bash
# bench-status.sh: what a Prometheus scrape costs training (a benchmark, not a test). One
# 2-worker ddp-launch job with --metrics-port; each worker runs a fixed CPU step (pure
# Python) and feeds its progress record, logging each step's end time. Windows of WINDOW s
# alternate, in the same run: a 1 Hz scrape of /metrics (and /status.json), then none. Prints
# the median step time with and without the scrape (every rank's steps pooled), the
# difference, and the launcher's own CPU time in each kind of window, as markdown. Builds
# ddp-launch into BUILD_DIR if missing.
#
#   scripts/bench-status.sh [PAIRS]     PAIRS of windows (scrape, none), default 6
#
# Env: BUILD_DIR (scripts/lib.sh), WINDOW (5 s), WORK (step size, default 200000 additions).
# Exit: 0; 2 on bad usage or a missing tool.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
case ${1:-} in
  -h | --help)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
esac
(($# <= 1)) || die "one argument at most, PAIRS; see scripts/bench-status.sh --help"
pairs=${1:-6}
[[ $pairs =~ ^[1-9][0-9]*$ ]] || die "PAIRS '$pairs': a positive number"
need python3 curl
launcher=$BUILD_DIR/launcher/ddp-launch
if [[ ! -x $launcher ]]; then
  cmake -S "$repo_root" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD_DIR" --target ddp-launch >/dev/null
fi
tmp=$(mktemp -d)
trap 'kill "$job" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
cat >"$tmp/worker.py" <<PY
import os, sys, time
import ddp_progress
work = int(os.environ.get("WORK", "200000"))
out = open(os.path.join("$tmp", "steps.%s" % os.environ["RANK"]), "w", buffering=1)
step = 0
while True:
    s = 0
    for i in range(work):
        s += i
    step += 1
    ddp_progress.heartbeat(step)
    out.write("%.6f\n" % time.monotonic())
PY
PYTHONPATH=$repo_root/python OMP_NUM_THREADS=1 WORK=${WORK:-200000} \
  "$launcher" --nproc-per-node 2 --metrics-port 0 python3 "$tmp/worker.py" 2>"$tmp/launcher.err" &
job=$!
for _ in $(seq 100); do
  url=$(grep -o 'status at http://[^/ ]*' "$tmp/launcher.err" | sed 's/status at //' || true)
  [[ -n $url ]] && break
  sleep 0.1
done
[[ -n $url ]] || die 1 "the launcher printed no status address: $(cat "$tmp/launcher.err")"
window=${WINDOW:-5}
sleep 3  # the workers' start
# The windows, from one process that sleeps between requests (no process start per scrape).
python3 - "$url" "$window" "$pairs" "$tmp/windows" "$job" <<'PY'
import os, sys, time, urllib.request
url, window, pairs, out = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), open(sys.argv[4], "w")
def cpu():  # the launcher's own CPU seconds (utime + stime)
    f = open(f"/proc/{sys.argv[5]}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
for _ in range(pairs):
    start, c = time.monotonic(), cpu()
    while time.monotonic() < start + window:
        for path in ("/metrics", "/status.json"):
            urllib.request.urlopen(url + path, timeout=5).read()
        time.sleep(1)
    out.write(f"scrape {start:.6f} {time.monotonic():.6f} {cpu() - c:.3f}\n")
    start, c = time.monotonic(), cpu()
    time.sleep(window)
    out.write(f"none {start:.6f} {time.monotonic():.6f} {cpu() - c:.3f}\n")
PY
python3 - "$tmp" <<'PY'
import glob, statistics, sys
tmp = sys.argv[1]
windows = [l.split() for l in open(tmp + "/windows")]
steps = {"scrape": [], "none": []}
cpu = {"scrape": 0.0, "none": 0.0}
span = {"scrape": 0.0, "none": 0.0}
for kind, start, end, c in windows:
    cpu[kind] += float(c)
    span[kind] += float(end) - float(start)
for f in glob.glob(tmp + "/steps.*"):
    t = [float(x) for x in open(f) if x.strip()]
    for a, b in zip(t, t[1:]):
        for kind, start, end, _ in windows:
            if float(start) <= a and b <= float(end):
                steps[kind].append(b - a)
med = {k: statistics.median(v) * 1000 for k, v in steps.items()}
print("| 1 Hz scrape of /metrics + /status.json | median step (ms) | steps | launcher CPU (% of a core) |")
print("|---|---|---|---|")
for k in ("none", "scrape"):
    print(f"| {'none' if k == 'none' else 'scraped'} | {med[k]:.2f} | {len(steps[k])} | {100 * cpu[k] / span[k]:.2f} |")
print(f"\ndifference: {med['scrape'] - med['none']:+.2f} ms ({(med['scrape'] / med['none'] - 1) * 100:+.1f} %)")
PY
