"""A worker for tests/warm: records what it saw, then follows the driver's script.

Usage: warm_worker.py OUTDIR MODE [ARGS...]. Its first line notes whether torch was already
imported (it was, in a Python standby). Each worker writes OUTDIR/a<restart>.r<rank>.json.
Attempt 0 waits for OUTDIR/go, then rank 1 raises (the failure that restarts the group).
Attempt 1: MODE ok exits 0; raise raises RuntimeError("warm boom"); exitN exits N.
MODE escape: as ok, and each attempt first starts a helper for every way of escaping
(tests/support/escaping_helpers.sh, pids in OUTDIR/<kind>.r<rank>.a<restart>); attempt 1's record
lists the pids of attempt 0's helpers still alive (previous_alive).
"""
import sys
warm = "torch" in sys.modules  # before anything else: a cold worker has not imported it
preloaded = "wave" in sys.modules  # --preload=wave (nothing else imports it)
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

HELPERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support", "escaping_helpers.sh")
KINDS = ("setsid", "doublefork", "pgroup", "nohup", "session", "stopped")


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def escape(out, rank, restart):
    """Starts the escaping helpers; returns the pids of the previous attempt's that still run."""
    subprocess.run(["sh", "-c", f'. "{HELPERS}"; start_escaping_helpers "$0" "$1"', out, f"r{rank}.a{restart}"],
                   check=True)
    if restart == "0":
        return []
    pids = [int(open(os.path.join(out, f"{kind}.r{rank}.a{int(restart) - 1}")).read()) for kind in KINDS]
    return [pid for pid in pids if alive(pid)]


def first_attempt(out, rank):
    """Attempt 0: waits for OUTDIR/go, then rank 1 raises (the failure that restarts the group)
    and the others wait to be stopped by the launcher."""
    while not os.path.exists(os.path.join(out, "go")):
        time.sleep(0.05)
    if rank == "1":
        raise RuntimeError("first attempt fails")
    time.sleep(120)


def main():
    out, mode = sys.argv[1], sys.argv[2]
    restart, rank = os.environ["TORCHELASTIC_RESTART_COUNT"], os.environ["RANK"]
    previous_alive = escape(out, rank, restart) if mode == "escape" else []
    record = {"warm": warm, "name": __name__, "pid": os.getpid(), "rank": rank, "restart": restart,
              "port": os.environ["MASTER_PORT"], "argv": sys.argv, "file": __file__, "cwd": os.getcwd(),
              "path0": sys.path[0], "main_module": sys.modules["__main__"].__dict__.get("main") is main, "preloaded": preloaded,
              "previous_alive": previous_alive}
    with open(os.path.join(out, f"a{restart}.r{rank}.json"), "w") as f:
        json.dump(record, f)
    print(f"worker rank {rank} restart {restart} warm {warm}", flush=True)
    if restart == "0":
        return first_attempt(out, rank)
    if rank != "1":
        return
    if mode == "raise":
        raise RuntimeError("warm boom")
    if mode.startswith("exit"):
        sys.exit(int(mode[4:]))


if __name__ == "__main__":
    main()
