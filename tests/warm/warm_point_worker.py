"""A Python script with a standby point, for tests/warm (cases python_point_*).

Usage: warm_point_worker.py OUTDIR MODE. Above ddp_standby.point() it writes
OUTDIR/above.<pid>.json (RANK as it sees it, whether torch is imported); MODE unreached calls
the point only where RANK is set (never in a standby), and the script ends there; MODE late makes
attempt 0 wait for OUTDIR/step before its point. Below the point: OUTDIR/a<restart>.r<rank>.json
(pid, identity, whether its progress record is fed, where ddp_standby came from), one step fed;
attempt 0 waits for OUTDIR/go, then rank 1 raises.
"""
import json
import os
import sys
import time

import ddp_standby  # the launcher's copy (its hooks folder on PYTHONPATH)

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import ddp_progress  # noqa: E402  (above the point: the worker's record is opened below it)
from warm_worker import first_attempt  # noqa: E402  (next to this file)

out, mode = sys.argv[1], sys.argv[2]
with open(os.path.join(out, f"above.{os.getpid()}.json"), "w") as f:
    json.dump({"rank": os.environ.get("RANK"), "torch": "torch" in sys.modules}, f)
while mode == "late" and os.environ.get("TORCHELASTIC_RESTART_COUNT") == "0" and not os.path.exists(
        os.path.join(out, "step")):
    time.sleep(0.05)  # attempt 0 passes the point only when the driver says (its standbys are ready)
if mode != "unreached" or os.environ.get("RANK"):
    ddp_standby.point()


def below():
    restart, rank = os.environ["TORCHELASTIC_RESTART_COUNT"], os.environ["RANK"]
    ddp_progress.heartbeat(1)
    with open(os.path.join(out, f"a{restart}.r{rank}.json"), "w") as f:
        json.dump({"pid": os.getpid(), "rank": rank, "restart": restart, "fed": ddp_progress.enabled(),
                   "standby_module": ddp_standby.__file__, "argv": sys.argv}, f)
    print(f"point worker rank {rank} restart {restart}", flush=True)
    if restart == "0":
        first_attempt(out, rank)


if os.environ.get("RANK"):  # not in a standby that skipped the point (MODE unreached)
    below()
