"""What the recovery and goodput benchmarks share (scripts/bench_recovery.py,
scripts/bench_goodput.py): the workers' step records, stopping a job, the launcher's flags.

A record: each worker appends "<attempt> <event> <value> <unix time, CLOCK_REALTIME>" lines
to DIR/rank<R>.log: bench/peers/python_ddp_recovery.py (env BENCH_RECOVERY_DIR) and the C++
trainer (train --step-times DIR, trainers/train/step_times.hpp). Events: start (value: the
pid), init_start, init_end, resumed (the step loaded), step (the global step just completed).
Standard library only.
"""
import os
import re
import signal
import subprocess

PYTHON = "/usr/bin/python3"  # Debian's, with torch


class Record:
    """One rank's record file, read incrementally (new complete lines only):
    attempts = {attempt: {"pid", "start", "init_start", "init_end", "resumed": time,
                          "resumed_step", "first_step", "last_step": (step, time),
                          "steps": [(step, time), ...]}}."""

    def __init__(self, path):
        self.path, self.pos, self.partial, self.attempts = path, 0, "", {}

    def poll(self):
        try:
            with open(self.path) as f:
                f.seek(self.pos)
                data = f.read()
                self.pos = f.tell()
        except FileNotFoundError:
            return self.attempts
        *lines, self.partial = (self.partial + data).split("\n")
        for line in lines:
            attempt, event, value, t = line.split()
            r = self.attempts.setdefault(int(attempt), {})
            if event == "step":
                r.setdefault("first_step", (int(value), float(t)))
                r["last_step"] = (int(value), float(t))
                r.setdefault("steps", []).append((int(value), float(t)))
            else:
                r[event] = float(t)
                if event == "start":
                    r["pid"] = int(value)
                elif event == "resumed":
                    r["resumed_step"] = int(value)
        return self.attempts


def first_step_time(recs, attempt):
    """The earliest first step of `attempt` over the ranks' records (polled dicts), or None."""
    times = [r[attempt]["first_step"][1] for r in recs if "first_step" in r.get(attempt, {})]
    return min(times) if times else None


def stop(proc):
    """SIGTERM the launcher's process group (the launcher stops its workers), SIGKILL after 10 s."""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue
        except ProcessLookupError:
            proc.wait()
            return


def known_flags(ddp_launch):
    """The long options ddp-launch --help names (e.g. --worker-store, --no-warm-restarts), as a set."""
    out = subprocess.run([ddp_launch, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
    return set(re.findall(r"--[a-z][a-z0-9_-]*[a-z0-9]", out))


def load_average():
    """The 1, 5 and 15 minute load averages, as /proc/loadavg writes them."""
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])
