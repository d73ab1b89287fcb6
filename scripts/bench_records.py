"""What the benchmark drivers share (scripts/bench_recovery.py, scripts/bench_goodput.py,
scripts/bench_launcher.py): the workers' step records, stopping a
job, the launcher's flags, and which Python and torchrun the peers run with.

A record: each worker appends "<attempt> <event> <value> <unix time, CLOCK_REALTIME>" lines
to DIR/rank<R>.log: bench/peers/python_ddp_recovery.py (env BENCH_RECOVERY_DIR) and the C++
trainer (train --step-times DIR, trainers/train/step_times.hpp). Events: start (value: the
pid), init_start, init_end, resumed (the step loaded), step (the global step just completed).
Standard library only.
"""
import functools
import os
import re
import shlex
import signal
import subprocess
import sys

# The Python the peers run with: the one running this driver, which the scripts pick
# (scripts/lib.sh bench_python: PYTHON, default the torch venv's interpreter).
PYTHON = sys.executable
PEERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench", "peers")


@functools.lru_cache(maxsize=None)
def torch_version(python=PYTHON):
    """The version of the torch `python` imports (e.g. "2.15.0+cu132"). A Python without torch
    ends the driver: one line on stderr, exit 2."""
    got = subprocess.run([python, "-c", "import torch; print(torch.__version__)"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    if got.returncode != 0:
        print(f"{os.path.basename(sys.argv[0])}: {python} cannot import torch; run the driver with a Python "
              "that has it (the scripts: PYTHON, default the venv scripts/install-deps.sh makes)", file=sys.stderr)
        sys.exit(2)
    return got.stdout.strip()


def torchrun_argv(python=PYTHON, version=None):
    """The command that runs `python`'s torchrun (scripts/lib.sh use_bench_python, the same rule):
    torch >= 2: [python, "-m", "torch.distributed.run"]; torch 1.x: bench/peers/torchrun_fixed.py
    (1.13's torchrun with its Python 3.11 --redirects/--tee bug worked around)."""
    major = (version or torch_version(python)).split(".", 1)[0]
    if major.isdigit() and int(major) >= 2:
        return [python, "-m", "torch.distributed.run"]
    return [python, os.path.normpath(os.path.join(PEERS, "torchrun_fixed.py"))]


def torchrun_command(value):
    """A driver's --torchrun: a command line (split as the shell would), a lone .py file run by
    PYTHON (bench/peers/torchrun_fixed.py), or None/"" for torchrun_argv()'s choice."""
    if not value:
        return torchrun_argv()
    argv = shlex.split(value)
    return [PYTHON] + argv if len(argv) == 1 and argv[0].endswith(".py") else argv


def peers_line(torchrun):
    """A header line naming the peers: "# peers: torch 2.15.0 (PYTHON), torchrun: CMD"."""
    return f"# peers: torch {torch_version(PYTHON)} ({PYTHON}), torchrun: {shlex.join(torchrun)}"


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
