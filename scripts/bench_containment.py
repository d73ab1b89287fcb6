"""Containment benchmark: what ending a job's leftovers costs, ddp-launch beside torchrun.

Cases, each launcher alternating run by run, medians: (a) 4 workers of /bin/true: the start
and end of a job that leaves nothing (ddp-launch with a cgroup, with the subreaper alone, the
build BEFORE if given; torchrun; the floor: sh starting the 4 programs); (b) 4 workers that each
leave 5 helpers in sessions of their own (which SIGTERM ends) and exit 0: wall time until the
launcher is gone, and how many helpers it left (then killed by this driver); (c) ddp-launch
only: a restart's own part, from the event log's `recovery` summary: stop (failure seen ->
workers stopped, the sweep included) and start (-> workers started), of a 4-worker shell job
whose rank 1 exits 3 (--no-warm-restarts).
Usage: bench_containment.py DDP_LAUNCH [--before DDP_LAUNCH] [--torchrun CMD] [--runs N]
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import tempfile
import time

from bench_records import peers_line, torchrun_command  # next to this file

MARK = f"ddp-bench-containment-{os.getpid()}"
LEAVER = f'for i in 1 2 3 4 5; do setsid bash -c "exec -a {MARK} sleep 100" </dev/null >/dev/null 2>&1 & done; exit 0'


def left_behind():
    found = subprocess.run(["pgrep", "-f", MARK], capture_output=True, text=True).stdout.split()
    if found:
        subprocess.run(["pkill", "-9", "-f", MARK])
    return len(found)


def measure(argv):
    env = dict(os.environ, OMP_NUM_THREADS="1", LOGLEVEL="ERROR")
    t = time.perf_counter()
    rc = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    wall = time.perf_counter() - t
    time.sleep(0.2)  # what a launcher left is found after it, not while it exits
    return wall, rc, left_behind()


RESTART = 'if [ "$RANK" = 1 ] && [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then exit 3; fi; exit 0'


def restart_phases(prefix):
    """(stop ms, start ms) of the one restart, from the recovery summary event."""
    with tempfile.TemporaryDirectory() as logs:
        subprocess.run(prefix + ["--max-restarts=1", "--no-warm-restarts", f"--log-dir={logs}", "sh", "-c", RESTART],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ, OMP_NUM_THREADS="1"))
        for f in glob.glob(os.path.join(logs, "*", "events.jsonl")):
            for line in open(f):
                e = json.loads(line)
                if e["event"] == "recovery" and e.get("phase") == "summary":
                    return e["stop_s"] * 1000, e["start_s"] * 1000
    return float("nan"), float("nan")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("ddp_launch")
    p.add_argument("--before", default="", help="another ddp-launch build to compare (no --containment)")
    p.add_argument("--torchrun", default="")
    p.add_argument("--runs", type=int, default=10)
    a = p.parse_args()
    torchrun_cmd = torchrun_command(a.torchrun)
    print(peers_line(torchrun_cmd))
    launchers = {
        "cgroup": [a.ddp_launch, "--nproc-per-node=4", "--containment=cgroup"],
        "subreaper": [a.ddp_launch, "--nproc-per-node=4", "--containment=subreaper"],
        "torchrun": torchrun_cmd + ["--standalone", "--nproc_per_node=4", "--monitor_interval=0.1", "--no_python"],
    }
    if a.before:
        launchers["before"] = [a.before, "--nproc-per-node=4"]
    cases = {
        "a: 4 x /bin/true": (["/bin/true"], {"floor: sh": ["sh", "-c", "/bin/true & /bin/true & /bin/true & "
                                                                       "/bin/true & wait"]}),
        "b: 4 workers leave 5 each": (["sh", "-c", LEAVER], {}),
    }
    print(f"{'case':28} {'launcher':11} {'median ms':>10} {'min ms':>8} {'left (median)':>14} {'exit':>5}")
    for name, (prog, floors) in cases.items():
        results = {label: [] for label in [*launchers, *floors]}
        for _ in range(a.runs):  # alternate A B C ...
            for label, prefix in launchers.items():
                results[label].append(measure(prefix + prog))
            for label, argv in floors.items():
                results[label].append(measure(argv))
        for label, runs in results.items():
            walls = [r[0] * 1000 for r in runs]
            print(f"{name:28} {label:11} {statistics.median(walls):10.1f} {min(walls):8.1f} "
                  f"{statistics.median(r[2] for r in runs):14g} {','.join(map(str, sorted({r[1] for r in runs}))):>5}")
        base = statistics.median(r[0] for r in results["cgroup"])
        print(f"{name:28} ratios to cgroup: " + ", ".join(
            f"{label} {statistics.median(r[0] for r in runs) / base:.2f}x" for label, runs in results.items()
            if label != "cgroup"))
    ours = {label: argv for label, argv in launchers.items() if label != "torchrun"}
    phases = {label: [] for label in ours}
    for _ in range(a.runs):
        for label, prefix in ours.items():
            phases[label].append(restart_phases(prefix))
    for label, runs in phases.items():
        print(f"{'c: restart, own part':28} {label:11} stop {statistics.median(r[0] for r in runs):6.1f} ms, "
              f"start {statistics.median(r[1] for r in runs):6.1f} ms (medians)")


if __name__ == "__main__":
    main()
