"""torchrun 2.15's worker health variables under ddp-launch, with torch's own client.

TORCHELASTIC_ENABLE_FILE_TIMER / TORCHELASTIC_TIMER_FILE (torch.distributed.elastic.timer's
FileTimerClient in the workers), TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT (a worker in D:
a real one, a vfork parent whose child blocks; and a frozen cgroup v1 one that even SIGKILL
cannot end) and TORCHELASTIC_HEALTH_CHECK_PORT, each case a real launch of
bin/health_worker.py. With --torchrun the same cases run under torchrun and print what
happened instead of checking it (the side-by-side in docs/torchrun-compat.md).

Usage: worker_health_cases.py --launcher PATH --python PY [--torchrun] [-k SUBSTRING]
Exits 1 when a case fails, 77 when the workers' interpreter has no torch 2.x.
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "bin", "health_worker.py")
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from ports import free_port  # noqa: E402
TIMEOUT = 120
FREEZER = "/sys/fs/cgroup/freezer"


class Failure(Exception):
    pass


class Skip(Exception):
    pass


class Run:
    """One launch: its exit code, output, wall time and the events of its log folder."""

    def __init__(self, ctx, tmp, nproc, mode, flags=(), env=None, during=None):
        self.tmp = tmp
        self.logs = os.path.join(tmp, "logs")
        environ = dict(os.environ, HEALTH_OUT=tmp, PYTHONUNBUFFERED="1", **(env or {}))
        launcher = ctx.torchrun or [ctx.launcher]
        program = [WORKER, mode] if ctx.torchrun else ["--log-dir", self.logs, ctx.python, WORKER, mode]
        cmd = [*launcher, f"--nproc-per-node={nproc}", *flags, *program]
        # The output goes to a file, not a pipe: a worker the launcher could not end (frozen) would
        # hold a pipe open; the launcher's own exit is what is waited for.
        output = os.path.join(tmp, "output.txt")
        start = time.monotonic()
        with open(output, "w") as sink:
            proc = subprocess.Popen(cmd, env=environ, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = proc.pid
        try:
            if during:
                during(self)
            proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise Failure(f"did not finish within {TIMEOUT} s:\n{open(output).read()[-3000:]}")
        self.seconds = time.monotonic() - start
        self.rc = proc.returncode
        self.out = open(output).read()

    def events(self, name=None):
        found = [json.loads(line) for f in glob.glob(os.path.join(self.logs, "*", "events.jsonl")) for line in open(f)]
        return [e for e in found if name is None or e["event"] == name]

    def fail(self, why):
        raise Failure(f"{why}\n---- output (exit {self.rc}, {self.seconds:.1f} s) ----\n{self.out[-4000:]}")

    def expect(self, cond, why):
        if not cond:
            self.fail(why)


def unix_time(iso):
    """The event log's "2026-11-30T11:20:01.017Z" as unix seconds."""
    import calendar
    main, frac = iso.rstrip("Z").split(".")
    return calendar.timegm(time.strptime(main, "%Y-%m-%dT%H:%M:%S")) + float("0." + frac)


TIMER = {"TORCHELASTIC_ENABLE_FILE_TIMER": "1"}
CASES = []


def case(fn):
    CASES.append(fn)
    return fn


@case
def timer_kills_at_deadline(ctx, tmp):
    """A guarded section that hangs: killed by its own timer's signal at the deadline; the
    failure is a `watchdog` one that names the scope; the pipe is gone afterwards."""
    r = Run(ctx, tmp, 2, "hang", ["--max-restarts=0"], TIMER)
    if ctx.torchrun:
        return f"exit {r.rc} in {r.seconds:.1f} s"
    r.expect(r.rc == 128 + signal.SIGKILL, f"exit {r.rc}, expected {128 + signal.SIGKILL} (the timer's SIGKILL)")
    failures = r.events("failure")
    r.expect(len(failures) == 1 and failures[0]["kind"] == "watchdog", f"expected one watchdog failure: {failures}")
    r.expect("timer 'load_batch' expired after 1.5 s: SIGKILL" in failures[0].get("verdict", ""),
             f"the verdict should name the scope and the signal: {failures[0]}")
    r.expect("verdict   : rank 1: timer 'load_batch' expired after 1.5 s: SIGKILL" in r.out,
             "the failure report should carry the verdict")
    deadline = float(open(os.path.join(tmp, "deadline")).read().split()[0])
    died = [unix_time(e["time"]) for e in r.events("worker_exit") if e["rank"] == 1]
    late = died[0] - deadline
    r.expect(-0.05 <= late <= 0.5, f"rank 1 ended {late:+.3f} s from its deadline, expected within 0.5 s after it")
    pipe = re.search(r"file timers \(TORCHELASTIC_ENABLE_FILE_TIMER\) served on (\S+)", r.out)
    r.expect(pipe and not os.path.exists(pipe.group(1)), "the pipe should be named, and removed at the end")
    return f"killed {late:+.3f} s from the deadline"


@case
def timer_kill_restarts(ctx, tmp):
    """The same with --max-restarts=1: the job restarts and succeeds."""
    r = Run(ctx, tmp, 2, "hang", ["--max-restarts=1"], TIMER)
    if ctx.torchrun:
        return f"exit {r.rc} in {r.seconds:.1f} s"
    r.expect(r.rc == 0, f"exit {r.rc}, expected 0 after one restart")
    r.expect(len(r.events("restart")) == 1, "expected one restart")
    r.expect("refused" not in r.out, "the first attempt's requests must not be refused in the second")
    return "restarted, exit 0"


@case
def timer_of_a_workers_process(ctx, tmp):
    """A process the worker started sets the timer: it is killed at the deadline, and the
    worker's failure that follows is the `watchdog` one, naming that process."""
    r = Run(ctx, tmp, 2, "child_hang", ["--max-restarts=0"], TIMER)
    if ctx.torchrun:
        return f"exit {r.rc} in {r.seconds:.1f} s"
    r.expect(r.rc == 5, f"exit {r.rc}, expected 5 (the worker saw its process SIGKILLed)")
    failures = r.events("failure")
    r.expect(failures and failures[0]["kind"] == "watchdog" and "(its process" in failures[0].get("verdict", "") and
             "timer 'child_load' expired" in failures[0]["verdict"], f"a watchdog failure naming the process: {failures}")
    return "the worker's process killed, a watchdog failure"


@case
def timer_two_nodes(ctx, tmp):
    """Two launchers (c10d rendezvous on loopback), one worker each: node 1's worker is killed
    by its timer; node 0 reports the other node's root cause with the same verdict."""
    if ctx.torchrun:
        return "skipped under torchrun"
    port = free_port()
    procs = []
    for node in (0, 1):
        folder = os.path.join(tmp, f"node{node}")
        os.makedirs(folder)
        cmd = [ctx.launcher, "--nnodes=2", "--nproc-per-node=1", "--rdzv-backend=c10d",
               f"--rdzv-endpoint=127.0.0.1:{port}", "--rdzv-id=health", "--max-restarts=0",
               "--log-dir", os.path.join(folder, "logs"), ctx.python, WORKER, "hang"]
        sink = open(os.path.join(folder, "output.txt"), "w")
        procs.append(subprocess.Popen(cmd, env=dict(os.environ, HEALTH_OUT=folder, **TIMER), stdout=sink,
                                      stderr=subprocess.STDOUT, start_new_session=True))
        sink.close()
    try:
        codes = [p.wait(timeout=TIMEOUT) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
    outs = [open(os.path.join(tmp, f"node{n}", "output.txt")).read() for n in (0, 1)]
    verdict = "rank 1: timer 'load_batch' expired after 1.5 s: SIGKILL"
    # The rendezvous numbers the nodes in the order they join: the one whose worker is rank 1 is node 1.
    killer = 0 if "SIGKILL sent to pid" in outs[0] else 1
    other = 1 - killer
    if codes[killer] != 137 or f"verdict   : {verdict}" not in outs[killer]:
        raise Failure(f"node 1: exit {codes[killer]}, expected 137 and the verdict:\n{outs[killer][-3000:]}")
    if codes[other] != 137 or "FAILED on node 1" not in outs[other] or f"verdict   : {verdict}" not in outs[other]:
        raise Failure(f"node 0: exit {codes[other]}, expected 137 and node 1's verdict:\n{outs[other][-3000:]}")
    return "both nodes report node 1's watchdog verdict, exit 137"


@case
def timer_released(ctx, tmp):
    """Sections that finish release their timers: nothing is killed, nothing refused."""
    r = Run(ctx, tmp, 2, "release", [], TIMER)
    if ctx.torchrun:
        return f"exit {r.rc} in {r.seconds:.1f} s"
    r.expect(r.rc == 0, f"exit {r.rc}, expected 0")
    r.expect(not r.events("timer_expired") and "refused" not in r.out, "a released timer fired, or was refused")
    return "exit 0, no timer fired"


@case
def timer_foreign_pid_refused(ctx, tmp):
    """A request that names a process no worker owns is refused: that process lives."""
    victim = subprocess.Popen(["sleep", "60"])
    try:
        r = Run(ctx, tmp, 2, "foreign", [], dict(TIMER, VICTIM_PID=str(victim.pid)))
        time.sleep(0.5)
        alive = victim.poll() is None
    finally:
        victim.kill()
        victim.wait()
    if ctx.torchrun:
        return f"exit {r.rc}; the other process {'lived' if alive else 'was KILLED'}"
    r.expect(alive, "the process the request named was killed")
    r.expect(r.rc == 0, f"exit {r.rc}, expected 0")
    r.expect("refused a file timer request" in r.out and "neither a worker of this node" in r.out,
             "the refusal should be named once")
    r.expect(len(r.events("timer_refused")) == 1, "one timer_refused event per attempt")
    return "refused, the other process lived"


@case
def timer_malformed_refused(ctx, tmp):
    """A line that is not JSON, and one over PIPE_BUF (a writer's lines are atomic only up to
    it) that names its writer with SIGKILL: both refused, counted, nobody killed."""
    r = Run(ctx, tmp, 2, "garbage", [], TIMER)
    if ctx.torchrun:
        return f"exit {r.rc} in {r.seconds:.1f} s"
    r.expect(r.rc == 0, f"exit {r.rc}, expected 0")
    r.expect("refused a file timer request" in r.out and "not a JSON object" in r.out, "the first refusal is named")
    r.expect("refused 2 of the attempt's 2 file timer requests" in r.out, "the count is told at the attempt's end")
    r.expect(not r.events("timer_expired"), "nothing may fire")
    return "refused, exit 0"


@case
def timer_thousand(ctx, tmp):
    """1000 timers live at once from 8 workers, then released: every request served."""
    r = Run(ctx, tmp, 8, "many", [], TIMER)
    if ctx.torchrun:
        return f"exit {r.rc} in {r.seconds:.1f} s"
    r.expect(r.rc == 0, f"exit {r.rc}, expected 0")
    r.expect(not r.events("timer_expired") and "refused" not in r.out, "a timer fired or was refused")
    return "exit 0"


@case
def timer_file_given(ctx, tmp):
    """TORCHELASTIC_TIMER_FILE names the pipe; a regular file there is refused, kept whole."""
    if ctx.torchrun:
        return "skipped under torchrun"
    path = os.path.join(tmp, "given.pipe")
    r = Run(ctx, tmp, 1, "release", [], dict(TIMER, TORCHELASTIC_TIMER_FILE=path))
    r.expect(r.rc == 0 and f"served on {path}" in r.out, "the given path should be served")
    r.expect(not os.path.exists(path), "the pipe should be removed at the end")
    with open(path, "w") as f:
        f.write("precious\n")
    r = Run(ctx, tmp, 1, "release", [], dict(TIMER, TORCHELASTIC_TIMER_FILE=path))
    r.expect(r.rc == 125 and "exists and is not a named pipe" in r.out, "a regular file must be refused (125)")
    r.expect(open(path).read() == "precious\n", "the file there must be left as it was")
    return "served, then refused a regular file"


@case
def d_state_restarts(ctx, tmp):
    """A worker in D (a vfork parent whose child blocks) past the timeout: `d_state` verdict
    with its kernel stack, SIGKILL after the shutdown timeout ends it, the job restarts."""
    os.mkfifo(os.path.join(tmp, "block.fifo"))
    r = Run(ctx, tmp, 2, "d_state", ["--max-restarts=1", "--shutdown-timeout=1"],
            {"TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT": "1"})
    if ctx.torchrun:
        return f"exit {r.rc} in {r.seconds:.1f} s"
    r.expect(r.rc == 0, f"exit {r.rc}, expected 0 after one restart")
    failures = r.events("failure")
    r.expect(failures and failures[0]["kind"] == "d_state", f"expected a d_state failure first: {failures}")
    r.expect("state D" in failures[0]["verdict"] and "clone" in failures[0]["verdict"],
             f"the verdict should say D and where in the kernel: {failures[0]['verdict']}")
    return f"D verdict, restarted, exit 0 in {r.seconds:.1f} s"


def frozen_cgroup():
    if os.geteuid() != 0 or not os.path.exists(os.path.join(FREEZER, "freezer.state")) and \
            not os.path.isdir(FREEZER):
        raise Skip("needs root and the cgroup v1 freezer (a frozen process ignores SIGKILL)")
    path = os.path.join(FREEZER, f"ddp-health-test-{os.getpid()}")
    os.makedirs(path, exist_ok=True)
    return path


@case
def d_state_unkillable(ctx, tmp):
    """A worker frozen in D that SIGKILL cannot end: the launcher stops waiting for it
    kUnkillableGiveUp (5 s) after SIGKILL, names it, does not restart, exits 119 in bounded time."""
    cgroup = frozen_cgroup()
    try:
        r = Run(ctx, tmp, 2, "freeze", ["--max-restarts=2", "--shutdown-timeout=1"],
                {"TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT": "1", "FREEZER_CGROUP": cgroup})
    finally:
        with open(os.path.join(cgroup, "freezer.state"), "w") as f:
            f.write("THAWED\n")
        pid_file = os.path.join(tmp, "frozen_pid")
        frozen = int(open(pid_file).read()) if os.path.exists(pid_file) else None
        if frozen:
            try:
                os.kill(frozen, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for _ in range(100):
            try:
                os.rmdir(cgroup)
                break
            except OSError:
                time.sleep(0.1)
    if ctx.torchrun:
        return f"exit {r.rc} in {r.seconds:.1f} s"
    r.expect(r.rc == 119, f"exit {r.rc}, expected 119 (stopped: asleep in the kernel)")
    r.expect("is still there 5 s after SIGKILL" in r.out, "the unkillable worker should be named")
    r.expect(not r.events("restart"), "no restart may follow a worker that could not be killed")
    r.expect(r.seconds < 1 + 1 + 1 + 5 + 6, f"took {r.seconds:.1f} s: the wait should end 5 s after SIGKILL")
    leftovers = [e for e in r.events("leftover") if e.get("ended_by") == "none"]
    r.expect(leftovers and leftovers[0]["pid"] == frozen, f"a leftover event should name pid {frozen}: {leftovers}")
    return f"exit 119 in {r.seconds:.1f} s, no restart"


@case
def health_check_port(ctx, tmp):
    """TORCHELASTIC_HEALTH_CHECK_PORT answers with the agent's liveness while workers run."""
    port = free_port()
    answers = []

    def poll(run):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not answers:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as reply:
                    answers.append((reply.status, json.loads(reply.read())))
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.1)

    r = Run(ctx, tmp, 2, "release", [], dict(TIMER, TORCHELASTIC_HEALTH_CHECK_PORT=str(port)), during=poll)
    if ctx.torchrun:
        return f"exit {r.rc}; the port {'answered' if answers else 'did not answer'}"
    r.expect(r.rc == 0, f"exit {r.rc}, expected 0")
    r.expect(answers, "the health check port never answered")
    status, body = answers[0]
    r.expect(status == 200 and abs(body["alive_time"] - time.time()) < 30 and body["timeout_s"] == 60,
             f"a live agent's answer: 200 and a recent alive_time, got {status} {body}")
    return f"{status} {body['state']}"


@case
def bad_values(ctx, tmp):
    """Unreadable values are usage errors that say what to set."""
    if ctx.torchrun:
        return "skipped under torchrun"
    for env, words in (({"TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT": "soon"}, "not a number of seconds"),
                       ({"TORCHELASTIC_HEALTH_CHECK_PORT": "http"}, "is not a port")):
        r = Run(ctx, tmp, 1, "release", [], env)
        r.expect(r.rc == 121 and words in r.out, f"{env}: expected exit 121 saying '{words}'")
    return "exit 121, named"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--launcher", required=True)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--torchrun", action="store_true", help="run under the workers' torchrun, print outcomes")
    parser.add_argument("-k", default="")
    args = parser.parse_args()
    check = subprocess.run([args.python, "-c", "import torch.distributed.elastic.timer as t; t.FileTimerClient"],
                           capture_output=True)
    if check.returncode != 0:
        print("skipped: the workers' Python has no torch with torch.distributed.elastic.timer")
        return 77
    ctx = argparse.Namespace(launcher=args.launcher, python=args.python,
                             torchrun=[args.python, "-m", "torch.distributed.run"] if args.torchrun else None)
    failed = 0
    for fn in CASES:
        if args.k not in fn.__name__:
            continue
        tmp = tempfile.mkdtemp(prefix=f"health-{fn.__name__}-")
        try:
            print(f"ok   {fn.__name__}: {fn(ctx, tmp)}", flush=True)
        except Skip as e:
            print(f"skip {fn.__name__}: {e}", flush=True)
        except Failure as e:
            failed += 1
            print(f"FAIL {fn.__name__}: {e}", flush=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
