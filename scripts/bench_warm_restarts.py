"""Warm vs cold restarts: SIGKILL of one worker -> the first training step of the new attempt.

Run through scripts/bench-warm-restarts.sh. For each program (the plain Python DDP script
bench/peers/warm_ddp_worker.py, and libddp's `train`) and each mode (warm: the default
with --max-restarts 1; cold: --no-warm-restarts), RUNS runs, alternating modes: start the
launcher with 2 workers, wait until attempt 0 trains (and, warm, both standbys are ready),
settle 1 s, SIGKILL rank 1's worker (t0, CLOCK_MONOTONIC), and wait for attempt 1's first
optimizer step on rank 0 (the Python script writes its time; `train`'s progress record
carries step_time_ns, CLOCK_MONOTONIC). Prints each run, the medians, and a ready
standby's cost (RSS, CPU seconds). A benchmark, not a test: no pass/fail.
"""
import argparse
import json
import os
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY_WORKER = os.path.join(REPO, "bench", "peers", "warm_ddp_worker.py")


def events(logs):
    out = []
    for root, _dirs, files in os.walk(logs):
        if "events.jsonl" in files:
            with open(os.path.join(root, "events.jsonl")) as f:
                out += [json.loads(line) for line in f if line.strip()]
    return out


def standbys(logs, state):
    return [e for e in events(logs) if e["event"] == "standby" and e["state"] == state]


def run_dir(logs):
    dirs = [os.path.join(logs, d) for d in os.listdir(logs)] if os.path.isdir(logs) else []
    return dirs[0] if dirs else None


def progress_step(path):
    """(step, step_time_s) from a progress record, or (0, 0)."""
    try:
        with open(path, "rb") as f:
            data = f.read(128)
    except OSError:
        return 0, 0.0
    if len(data) < 80:
        return 0, 0.0
    step = struct.unpack_from("<Q", data, 16)[0]
    return step, struct.unpack_from("<Q", data, 72)[0] / 1e9


def first_step(kind, out, logs, attempt, rank):
    """CLOCK_MONOTONIC seconds of the attempt's first step on rank (None: not yet)."""
    if kind == "python":
        try:
            with open(os.path.join(out, f"a{attempt}.r{rank}")) as f:
                return float(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            return None
    d = run_dir(logs)
    if not d:
        return None
    step, t = progress_step(os.path.join(d, f"attempt_{attempt}", str(rank), "progress"))
    return t if step >= 1 else None


def worker_pid(launcher_pid, rank, exclude):
    """The launcher's child that is worker RANK (not a standby)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) in exclude:
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != launcher_pid:
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if f"RANK={rank}".encode() in env and not any(e.startswith(b"DDP_LAUNCH_STANDBY_FD=") for e in env):
            return int(pid)
    return None


def cost(pid):
    """(RSS MiB, CPU seconds) of a process."""
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return rss, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait(what, cond, launcher, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        if launcher.poll() is not None:
            raise RuntimeError(f"launcher exited ({launcher.returncode}) waiting for {what}")
        time.sleep(0.001)
    raise RuntimeError(f"timed out waiting for {what}")


def one(args, kind, warm, costs):
    tmp = tempfile.mkdtemp(prefix="bench-warm-")
    out, logs, ck = os.path.join(tmp, "out"), os.path.join(tmp, "logs"), os.path.join(tmp, "ck")
    os.makedirs(out)
    flags = ["--nproc-per-node=2", "--max-restarts=1", f"--log-dir={logs}"] + ([] if warm else ["--no-warm-restarts"])
    if kind == "python":
        program = [PY_WORKER, out, "20"]
    else:
        program = [args.train, "--epochs=1000", "--train-samples=4096", "--hidden=256,256", "--batch=256",
                   f"--checkpoint-dir={ck}", "--checkpoint-interval=0", "--progress=none"]
    env = dict(os.environ, PYTHON_EXEC=args.python, OMP_NUM_THREADS="1")
    launcher = subprocess.Popen([args.launcher] + flags + program, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=env)
    try:
        wait("attempt 0's first step", lambda: first_step(kind, out, logs, 0, 0), launcher)
        if warm:
            wait("two ready standbys", lambda: len(standbys(logs, "ready")) >= 2, launcher)
        time.sleep(1.0)
        started = [e["pid"] for e in standbys(logs, "started")]
        if warm and not costs:
            for pid in started:
                costs.append(cost(pid))
        victim = wait("rank 1's pid", lambda: worker_pid(launcher.pid, 1, set(started)), launcher)
        t0 = time.monotonic()
        os.kill(victim, signal.SIGKILL)
        t1 = wait("attempt 1's first step", lambda: first_step(kind, out, logs, 1, 0), launcher)
        adopted = len(standbys(logs, "adopted"))
        return t1 - t0, adopted
    finally:
        launcher.send_signal(signal.SIGTERM)
        try:
            launcher.wait(timeout=30)
        except subprocess.TimeoutExpired:
            launcher.kill()
            launcher.wait()
        subprocess.run(["rm", "-rf", tmp])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--launcher", required=True)
    p.add_argument("--python", required=True)
    p.add_argument("--train")
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()
    kinds = ["python"] + (["train"] if args.train else [])
    for kind in kinds:
        results = {True: [], False: []}
        costs = []
        for i in range(args.runs):
            for warm in (True, False):
                seconds, adopted = one(args, kind, warm, costs)
                results[warm].append(seconds)
                print(f"{kind} {'warm' if warm else 'cold'} run {i + 1}: {seconds:.3f} s (workers adopted: {adopted})",
                      flush=True)
        for warm in (True, False):
            print(f"{kind} {'warm' if warm else 'cold'}: median {statistics.median(results[warm]):.3f} s over "
                  f"{args.runs} runs (min {min(results[warm]):.3f}, max {max(results[warm]):.3f})")
        for rss, cpu in costs:
            print(f"{kind} standby cost (ready): RSS {rss:.0f} MiB, CPU {cpu:.2f} s")


if __name__ == "__main__":
    sys.exit(main())
