"""A worker for worker_health_cases.py: torch's own file timer client, and the D state.

Usage: health_worker.py MODE (the launcher's variables in the environment; HEALTH_OUT a
folder for what the driver reads back). Modes:
  hang       rank 1 of the first attempt guards a sleep of 30 s with a 1.5 s timer
             ('load_batch'); it writes the timer's deadline to HEALTH_OUT/deadline first
  child_hang rank 1 of the first attempt starts a process of its own that guards a 30 s sleep
             with a 1 s timer; the worker waits for it and exits 5 when it was killed
  release    every rank guards 20 short sections with 2 s timers; nothing may be killed
  foreign    rank 0 asks for a timer on VICTIM_PID (not a worker); the victim must live
  garbage    rank 0 writes a malformed line and an overlong one (over PIPE_BUF, naming
             itself with SIGKILL) to the pipe; it must not be killed
  many       every rank holds 125 timers (30 s) at once, then releases them
  d_state    rank 1 of the first attempt sleeps in the kernel (D) until SIGKILL: a
             posix_spawn (vfork) whose child blocks opening a FIFO no one writes
  hold       every rank holds 125 timers (HOLD_S seconds, then released; NO_TIMERS=1: it
             only sleeps, the benchmark's floor)
  freeze     rank 1 moves itself into FREEZER_CGROUP (cgroup v1) and freezes it: D, and
             SIGKILL does nothing until the driver thaws it; rank 0 sleeps
"""
import json
import os
import signal
import sys
import time

mode = sys.argv[1]
rank = int(os.environ["RANK"])
first = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"
out = os.environ.get("HEALTH_OUT", ".")


def timers():
    from torch.distributed.elastic import timer
    timer.configure(timer.FileTimerClient(os.environ["TORCHELASTIC_TIMER_FILE"]))
    return timer


if mode == "hang":
    timer = timers()
    if rank == 1 and first:
        deadline = time.time() + 1.5
        with open(os.path.join(out, "deadline"), "w") as f:
            f.write(f"{deadline:.6f} {os.getpid()}\n")
        with timer.expires(after=1.5, scope="load_batch"):
            time.sleep(30)
        sys.exit(3)  # not reached: the launcher kills it at the deadline
    with timer.expires(after=10, scope="step"):
        time.sleep(0.2)
elif mode == "child_hang":
    if rank == 1 and first:
        import subprocess
        code = ("import os, time; from torch.distributed.elastic import timer; "
                "timer.configure(timer.FileTimerClient(os.environ['TORCHELASTIC_TIMER_FILE'])); "
                "ctx = timer.expires(after=1, scope='child_load'); ctx.__enter__(); time.sleep(30)")
        child = subprocess.run([sys.executable, "-c", code])
        sys.exit(5 if child.returncode == -signal.SIGKILL else 6)
    time.sleep(0.2)
elif mode == "release":
    timer = timers()
    for n in range(20):
        with timer.expires(after=2, scope=f"section{n % 3}"):
            time.sleep(0.02)
    time.sleep(2.5)  # past every deadline: a timer left behind would fire now
elif mode == "foreign":
    from torch.distributed.elastic.timer import FileTimerClient
    from torch.distributed.elastic.timer.file_based_local_timer import FileTimerRequest
    if rank == 0:
        client = FileTimerClient(os.environ["TORCHELASTIC_TIMER_FILE"])
        victim = int(os.environ["VICTIM_PID"])
        client._send_request(FileTimerRequest(victim, "not_mine", time.time() + 0.3, signal.SIGKILL))
    time.sleep(1.5)
elif mode == "garbage":
    if rank == 0:
        fd = os.open(os.environ["TORCHELASTIC_TIMER_FILE"], os.O_WRONLY | os.O_NONBLOCK)
        os.write(fd, b"not json\n")
        os.write(fd, json.dumps({"version": 1, "pid": os.getpid(), "scope_id": "x" * 5000,
                                 "expiration_time": time.time() + 0.3, "signal": 9}).encode() + b"\n")
        os.close(fd)
    time.sleep(1.5)
elif mode == "many":
    from torch.distributed.elastic.timer import FileTimerClient
    client = FileTimerClient(os.environ["TORCHELASTIC_TIMER_FILE"])
    for n in range(125):
        client.acquire(f"scope{n}", time.time() + 30)
    time.sleep(0.5)
    for n in range(125):
        client.release(f"scope{n}")
    time.sleep(0.5)
elif mode == "hold":
    hold_s = float(os.environ.get("HOLD_S", "10"))
    if os.environ.get("NO_TIMERS") == "1":
        time.sleep(hold_s)
    else:
        from torch.distributed.elastic.timer import FileTimerClient
        client = FileTimerClient(os.environ["TORCHELASTIC_TIMER_FILE"])
        for n in range(125):
            client.acquire(f"scope{n}", time.time() + hold_s + 60)
        time.sleep(hold_s)
        for n in range(125):
            client.release(f"scope{n}")
elif mode == "d_state":
    if rank == 1 and first:
        fifo = os.path.join(out, "block.fifo")
        open(os.path.join(out, "entering_d"), "w").close()
        os.posix_spawn("/bin/true", ["true"], os.environ,
                       file_actions=[(os.POSIX_SPAWN_OPEN, 0, fifo, os.O_RDONLY, 0)])
        sys.exit(4)  # not reached before SIGKILL
    time.sleep(0.5 if not first else 30)
elif mode == "freeze":
    if rank == 1:
        cgroup = os.environ["FREEZER_CGROUP"]
        with open(os.path.join(out, "frozen_pid"), "w") as f:
            f.write(f"{os.getpid()}\n")
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
            f.write(f"{os.getpid()}\n")
        with open(os.path.join(cgroup, "freezer.state"), "w") as f:
            f.write("FROZEN\n")
    time.sleep(60)
else:
    sys.exit(f"unknown mode {mode}")
print(f"rank {rank}: {mode} done", flush=True)
