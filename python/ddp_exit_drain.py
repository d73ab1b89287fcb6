"""Exit drain for Python workers: lets torch's own threads finish before the interpreter ends.

A torch thread that drops a tensor Python can see must take the GIL (torch 2.x does so on
every drop: a gloo worker thread freeing a finished collective, NCCL's watchdog freeing a
work). If the main thread has already begun finalizing, CPython ends that thread with
pthread_exit, whose unwind meets a noexcept C++ frame: std::terminate, "terminate called
without an active exception", exit 134 for a job whose work was done (docs/store.md).

At exit, before finalization, this waits with the GIL released until no native thread
(one the threading module did not start) is runnable, up to DDP_LAUNCH_EXIT_DRAIN seconds
(default 2; 0 turns it off). It does nothing in a process that never imported torch.

ddp-launch puts a copy of this file, named sitecustomize.py, at the end of every worker's
PYTHONPATH; as sitecustomize it then runs the next sitecustomize on sys.path (Debian's, a
venv's), as Python would have. Elsewhere (torchrun) `import ddp_exit_drain` installs it.
Standard library only; Linux (/proc).
"""
import atexit
import os
import sys
import time

ENV = "DDP_LAUNCH_EXIT_DRAIN"
DEFAULT_SECONDS = 2.0
SAMPLE_SECONDS = 0.005
_BUSY_STATES = (b"R", b"D")  # runnable or in an uninterruptible wait: it still has work to do


def budget():
    """Seconds the drain may wait, from DDP_LAUNCH_EXIT_DRAIN (0: off)."""
    text = os.environ.get(ENV, "")
    try:
        seconds = float(text) if text else DEFAULT_SECONDS
    except ValueError:
        seconds = DEFAULT_SECONDS
    return max(seconds, 0.0)


def native_thread_states():
    """{tid: state letter} of this process's threads but the main one and threading's."""
    import threading
    skip = {threading.main_thread().native_id} | {t.native_id for t in threading.enumerate()}
    states = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return states
    for name in tids:
        tid = int(name)
        if tid in skip:
            continue
        try:
            with open(f"/proc/self/task/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # it ended meanwhile
            continue
        end = stat.rfind(b")")  # the name in parentheses may hold anything
        states[tid] = stat[end + 2:end + 3]
    return states


def drain(seconds, sample=native_thread_states, sleep=time.sleep, clock=time.monotonic):
    """Waits until no native thread is busy in two samples in a row, with a GIL-free sleep
    between them (a thread waiting for the GIL gets it then, and is busy until it is done).
    Returns True when drained, False when `seconds` ran out first."""
    deadline = clock() + seconds
    quiet = 0
    while True:
        states = sample()
        if not states:
            return True
        quiet = 0 if any(s in _BUSY_STATES for s in states.values()) else quiet + 1
        if quiet >= 2:
            return True
        if clock() >= deadline:
            return False
        sleep(SAMPLE_SECONDS)


def _at_exit():
    seconds = budget()
    if seconds > 0 and "torch" in sys.modules:
        drain(seconds)


def install():
    """Registers the drain at exit. Handlers run last-registered first, so installing it
    early (sitecustomize) makes it run after the script's own."""
    atexit.register(_at_exit)


def _run_next_sitecustomize():
    """As sitecustomize: the one this copy shadows runs too."""
    import importlib.machinery
    import importlib.util
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


install()
if __name__ == "sitecustomize":
    _run_next_sitecustomize()
