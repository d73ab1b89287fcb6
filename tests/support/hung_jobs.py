"""What a test shows of a job that did not end in time: where each of its processes stood.

hung_job_report(pids) is called while the job still hangs. For each given process (a launcher)
and its descendants it lists state and kernel wait channel (ps), the launcher's thread stacks
(gdb, when installed) and, for Python workers that registered faulthandler on SIGUSR1 (as
tests/c10d/store_worker.py does), asks for their Python stacks, which they print to their
stderr: the launcher's output. stop_hung(procs) then stops the job: SIGTERM, and SIGKILL to
every process of it that is left after `grace` seconds, so that the caller can read and print
what the launchers wrote. Plain Python 3, no torch.
"""
import os
import shutil
import signal
import subprocess
import time


def _children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def descendants(pid):
    """pid's descendants, depth first."""
    out = []
    for c in _children(pid):
        out.append(c)
        out.extend(descendants(c))
    return out


def _run(cmd, timeout=30):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
        return p.stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"({' '.join(cmd[:2])}: {e})\n"


def _is_python(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"python" in f.read().split(b"\0")[0]
    except OSError:
        return False


def hung_job_report(pids):
    """Text: every process of the job with its state, the launchers' stacks; SIGUSR1 sent to
    the Python workers among them (their stacks come in the launchers' output)."""
    lines = []
    for pid in pids:
        tree = [pid, *descendants(pid)]
        lines.append(f"== process {pid} and its descendants")
        lines.append(_run(["ps", "-o", "pid,ppid,stat,wchan:24,etime,args", "-p", ",".join(map(str, tree))]))
        for w in tree[1:]:
            if _is_python(w):
                try:
                    os.kill(w, signal.SIGUSR1)
                except OSError:
                    pass
        if shutil.which("gdb"):
            bt = _run(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt 12"], timeout=60)
            lines.append("\n".join(line for line in bt.splitlines() if line.startswith(("#", "Thread"))))
    time.sleep(1)  # the workers print their stacks
    return "\n".join(lines)


def stop_hung(procs, grace=60):
    """SIGTERM to each Popen in procs; after `grace` s, SIGKILL to whatever of them and their
    descendants is left. Returns each one's output (stdout, text) as far as it was written."""
    tree = {p.pid: descendants(p.pid) for p in procs}
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    outs = []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=max(1, deadline - time.monotonic()))[0])
        except subprocess.TimeoutExpired:
            for pid in [p.pid, *tree[p.pid], *descendants(p.pid)]:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            out = p.communicate()[0]
            outs.append(f"{out}\n(still running {grace} s after SIGTERM: SIGKILLed)")
    return outs
