#!/usr/bin/env bash
# Hang detection time (docs/hangs.md "Detection and the limit"): how long from a rank's stop to ddp-launch's verdict
# line, and to its exit, with torch-free Python workers (python/ddp_progress.py) and with
# workers that feed nothing. Each case runs RUNS times (default 5); medians and maxima.
# Cases: fed (2 workers, rank 1 SIGSTOPs itself after 3 heartbeats, --hang-timeout 3),
#        unfed (2 workers `sleep`ing, no record, no output, no CPU, --hang-timeout 3).
# Env: BUILD_DIR (scripts/lib.sh: needs ddp-launch), RUNS, LIMIT (default 3).
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$repo_root"
launcher=$build_dir/launcher/ddp-launch
[[ -x $launcher ]] || die 1 "no $launcher: build ddp-launch first"
echo "# $(nproc --all) cores, load average $(cut -d" " -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
exec /usr/bin/python3 - "$launcher" "${RUNS:-5}" "${LIMIT:-3}" "$PWD/python" <<'PY'
import os, statistics, subprocess, sys, tempfile, time
launcher, runs, limit, pydir = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
FED = """
import os, signal, sys, time
sys.path.insert(0, %r)
import ddp_progress as p
for step in range(1, 4):
    p.heartbeat(step); time.sleep(0.1)
if os.environ["RANK"] == "1":
    open(os.environ["STOP_FILE"], "w").write(repr(time.time()))
    os.kill(os.getpid(), signal.SIGSTOP)
while True:
    time.sleep(1)
""" % pydir
UNFED = """
import os, time
if os.environ["RANK"] == "1":
    open(os.environ["STOP_FILE"], "w").write(repr(time.time()))
time.sleep(1000)
"""

def one(script):
    with tempfile.TemporaryDirectory() as d:
        path, stop = os.path.join(d, "w.py"), os.path.join(d, "stop")
        open(path, "w").write(script)
        env = dict(os.environ, STOP_FILE=stop)
        proc = subprocess.Popen([launcher, "--nproc-per-node=2", f"--hang-timeout={limit}", "--log-dir", d, path],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        verdict = None
        for line in proc.stderr:
            if verdict is None and "hang:" in line:
                verdict = time.time()
        proc.wait()
        end = time.time()
        t0 = float(open(stop).read())
        if proc.returncode != 119 or verdict is None:
            raise SystemExit(f"unexpected: exit {proc.returncode}, verdict {verdict}")
        return verdict - t0, end - t0

for name, script in (("fed", FED), ("unfed", UNFED)):
    rows = [one(script) for _ in range(runs)]
    det, ext = [r[0] for r in rows], [r[1] for r in rows]
    print(f"{name:6} --hang-timeout {limit}: stop -> verdict median {statistics.median(det):.2f} s, "
          f"max {max(det):.2f} s; stop -> exit 119 median {statistics.median(ext):.2f} s, max {max(ext):.2f} s "
          f"({runs} runs)")
PY
