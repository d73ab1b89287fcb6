"""Launcher benchmark: ddp-launch vs torchrun side by side (alternating runs, medians).

Cases: (a) 4 workers of /bin/true; (b) 4 workers where rank 1 exits 3 after 0.2 s and
the others sleep. Reports wall time (median), peak RSS of the largest process in the
launcher's tree (GNU time's %M), and the ratios. In case (a) two floors alternate with the
launchers in the same runs: the 4 programs started by sh alone (no launcher), and
`python -c "import torch.distributed.run"` (what torchrun's interpreter costs before it starts
anything).
The torchrun is --torchrun CMD, default that of the Python running this driver
(bench_records.torchrun_argv: `-m torch.distributed.run` for torch >= 2,
bench/peers/torchrun_fixed.py for 1.x); scripts/bench-launcher.sh picks the Python.
Usage: bench_launcher.py DDP_LAUNCH [--torchrun CMD] [--runs N]
"""
import argparse
import os
import statistics
import subprocess
import tempfile
import time

from bench_records import peers_line, torchrun_command  # next to this file

FAIL_SCRIPT = 'if [ "$RANK" = 1 ]; then sleep 0.2; exit 3; fi; exec sleep 100'


def measure(argv):
    """Wall seconds, peak RSS (MiB) of the largest process in the launcher's tree, exit code.

    GNU time reports the child's ru_maxrss from wait4, which covers the child and the
    descendants it reaped. (Measuring from Python would count the forked interpreter
    before exec, about 10 MiB, against the launcher.)"""
    env = dict(os.environ, OMP_NUM_THREADS="1", LOGLEVEL="ERROR")
    with tempfile.NamedTemporaryFile("r") as report:
        t = time.perf_counter()
        rc = subprocess.run(["/usr/bin/time", "-q", "-f", "%M", "-o", report.name] + argv, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        wall = time.perf_counter() - t
        rss_kib = int(report.read().split()[-1])
    return wall, rss_kib / 1024, rc


def main():
    p = argparse.ArgumentParser()
    p.add_argument("ddp_launch")
    p.add_argument("--torchrun", default="", help="the torchrun command (default: this Python's)")
    p.add_argument("--runs", type=int, default=10)
    a = p.parse_args()
    torchrun_cmd = torchrun_command(a.torchrun)
    torchrun = torchrun_cmd + ["--standalone", "--nproc_per_node=4", "--monitor_interval=0.1", "--no_python"]
    print(peers_line(torchrun_cmd))
    ours = [a.ddp_launch, "--nproc-per-node=4"]
    floors = {  # case (a) only: full commands, not prefixes
        "floor: sh": ["sh", "-c", "/bin/true & /bin/true & /bin/true & /bin/true & wait"],
        "floor: import": [torchrun_cmd[0], "-c", "import torch.distributed.run"],
    }
    cases = {
        "a: 4 x /bin/true": (["/bin/true"], 0, floors),
        "b: rank 1 exits 3 after 0.2 s": (["sh", "-c", FAIL_SCRIPT], 3, {}),
    }
    print(f"{'case':34} {'launcher':13} {'median s':>9} {'min s':>7} {'peak RSS MiB':>13} {'exit':>5}")
    for name, (prog, want_rc, case_floors) in cases.items():
        results = {"ddp-launch": [], "torchrun": [], **{label: [] for label in case_floors}}
        for _ in range(a.runs):  # alternate A B A B
            for label, prefix in (("ddp-launch", ours), ("torchrun", torchrun)):
                results[label].append(measure(prefix + prog))
            for label, argv in case_floors.items():
                results[label].append(measure(argv))
        med = {}
        for label, runs in results.items():
            walls = [r[0] for r in runs]
            rss = max(r[1] for r in runs)
            rcs = sorted({r[2] for r in runs})
            med[label] = (statistics.median(walls), rss)
            print(f"{name:34} {label:13} {statistics.median(walls):9.4f} {min(walls):7.4f} {rss:13.1f} "
                  f"{','.join(map(str, rcs)):>5}")
        ratio_t = med["torchrun"][0] / med["ddp-launch"][0]
        ratio_m = med["torchrun"][1] / med["ddp-launch"][1]
        print(f"{name:34} ratio torchrun/ddp-launch: wall {ratio_t:.1f}x, peak RSS {ratio_m:.1f}x"
              f" (expected exit {want_rc})")


if __name__ == "__main__":
    main()
