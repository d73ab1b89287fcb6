"""The file timers' cost and accuracy, ddp-launch beside torchrun (scripts/bench-file-timers.sh).

(a) Deadline accuracy: a worker guards a 30 s sleep with torch's FileTimerClient, a 1.5 s
    timer; this script watches the worker's pid every 2 ms from outside and reports when it
    died, less the deadline (both launchers' workers, measured the same way).
(b) Cost: 8 workers hold 125 timers each (1000 live) for HOLD_S seconds, then release them;
    the launcher process's own CPU time (/proc/PID/stat utime + stime, read until it exits)
    over the run, as a share of one core; the floor is the same run with no timers (no
    TORCHELASTIC_ENABLE_FILE_TIMER, the workers only sleep). torchrun's agent is its one
    process (its FileTimerServer is a thread of it).
Runs alternate ddp-launch and torchrun; medians. Prints one Markdown table.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "..", "tests", "compat", "bin", "health_worker.py")
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime: this process only


def launch(cmd, env, tmp):
    environ = dict(os.environ, HEALTH_OUT=tmp, **env)
    with open(os.path.join(tmp, "out.txt"), "w") as sink:
        return subprocess.Popen(cmd, env=environ, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)


def command(args, which, nproc, mode, tmp):
    if which == "ddp-launch":
        return [args.launcher, f"--nproc-per-node={nproc}", "--log-dir", os.path.join(tmp, "logs"), args.python,
                WORKER, mode]
    return [args.python, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}", WORKER, mode]


def gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def deadline_late(args, which):
    with tempfile.TemporaryDirectory() as tmp:
        proc = launch(command(args, which, 2, "hang", tmp), {"TORCHELASTIC_ENABLE_FILE_TIMER": "1"}, tmp)
        path = os.path.join(tmp, "deadline")
        while not (os.path.exists(path) and len(open(path).read().split()) == 2):
            time.sleep(0.002)
        deadline, pid = open(path).read().split()
        while not gone(int(pid)):
            time.sleep(0.002)
        died = time.time()
        proc.wait(timeout=120)
        return died - float(deadline), proc.returncode


def launcher_cpu(args, which, timers):
    env = {"HOLD_S": str(args.hold)}
    env.update({"TORCHELASTIC_ENABLE_FILE_TIMER": "1"} if timers else {"NO_TIMERS": "1"})
    with tempfile.TemporaryDirectory() as tmp:
        start = time.monotonic()
        proc = launch(command(args, which, 8, "hold", tmp), env, tmp)
        used = 0.0
        while proc.poll() is None:
            try:
                used = cpu_seconds(proc.pid)
            except OSError:
                break
            time.sleep(0.05)
        proc.wait()
        return 100 * used / (time.monotonic() - start), proc.returncode


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--launcher", required=True)
    parser.add_argument("--python", required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--hold", type=float, default=10)
    args = parser.parse_args()
    late = {"ddp-launch": [], "torchrun": []}
    cpu = {(w, t): [] for w in late for t in (True, False)}
    codes = {}
    for run in range(args.runs):
        for which in late:
            d, rc = deadline_late(args, which)
            late[which].append(d)
            codes[which] = rc
            for timers in (True, False):
                share, _ = launcher_cpu(args, which, timers)
                cpu[(which, timers)].append(share)
        print(f"run {run + 1}/{args.runs} done", file=sys.stderr, flush=True)
    print(f"| launcher | killed after the deadline, median (max) of {args.runs} | exit code | launcher CPU, 1000 timers "
          f"from 8 workers, {args.hold:g} s | same, no timers (floor) |")
    print("|---|---|---|---|---|")
    for which in late:
        print(f"| {which} | {statistics.median(late[which]) * 1000:+.0f} ms ({max(late[which]) * 1000:+.0f} ms) | "
              f"{codes[which]} | {statistics.median(cpu[(which, True)]):.2f}% of a core | "
              f"{statistics.median(cpu[(which, False)]):.2f}% |")


if __name__ == "__main__":
    main()
