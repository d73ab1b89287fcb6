"""A worker for tests/warm: records what it saw, then follows the driver's script.

Usage: warm_worker.py OUTDIR MODE [ARGS...]. Its first line notes whether torch was already
imported (it was, in a Python standby). Each worker writes OUTDIR/a<restart>.r<rank>.json.
Attempt 0 waits for OUTDIR/go, then rank 1 raises (the failure that restarts the group).
Attempt 1: MODE ok exits 0; raise raises RuntimeError("warm boom"); exitN exits N.
"""
import sys
warm = "torch" in sys.modules  # before anything else: a cold worker has not imported it
preloaded = "wave" in sys.modules  # --preload=wave (nothing else imports it)
import json  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402


def main():
    out, mode = sys.argv[1], sys.argv[2]
    restart, rank = os.environ["TORCHELASTIC_RESTART_COUNT"], os.environ["RANK"]
    record = {"warm": warm, "name": __name__, "pid": os.getpid(), "rank": rank, "restart": restart,
              "port": os.environ["MASTER_PORT"], "argv": sys.argv, "file": __file__, "cwd": os.getcwd(),
              "path0": sys.path[0], "main_module": sys.modules["__main__"].__dict__.get("main") is main, "preloaded": preloaded}
    with open(os.path.join(out, f"a{restart}.r{rank}.json"), "w") as f:
        json.dump(record, f)
    print(f"worker rank {rank} restart {restart} warm {warm}", flush=True)
    if restart == "0":
        while not os.path.exists(os.path.join(out, "go")):
            time.sleep(0.05)
        if rank == "1":
            raise RuntimeError("first attempt fails")
        time.sleep(120)  # stopped by the launcher
        return
    if rank != "1":
        return
    if mode == "raise":
        raise RuntimeError("warm boom")
    if mode.startswith("exit"):
        sys.exit(int(mode[4:]))


if __name__ == "__main__":
    main()
