"""The workers' store with thousands of emulated torch 2.x ranks (tests/c10d/store_crowd.cpp).

Usage: check_crowd.py --helper BIN --crowd BIN --launcher BIN CASE
  barrier / init: c10d_store_helper sized for N = 5000 ranks (above the old fixed cap of 4096
    connections), two crowd processes of 2500 ranks each: every rank released, none refused or
    reset. No timing is asserted (scripts/bench-store-scale.sh measures).
  too_many: ddp-launch under an open-file limit of 300 asked for 64 ranks: it exits 121 before
    any worker starts, naming the need, the limit and what to do.
"""
import argparse
import os
import resource
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import fail  # noqa: E402

RANKS = 5000


def crowd_case(a, shape):
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < RANKS + 300:
        print(f"SKIP: the hard open-file limit is {hard}: one process cannot hold {RANKS} connections")
        sys.exit(77)
    helper = subprocess.Popen([a.helper, "--host", "127.0.0.1", "--ranks", str(RANKS)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = helper.stdout.readline().split()[1]
        half = RANKS // 2
        crowds = [subprocess.Popen([a.crowd, "--port", port, "--ranks", str(RANKS), "--first", str(first), "--count",
                                    str(half), "--shape", shape, "--timeout", "120"], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True) for first in (0, half)]
        outs = [c.communicate(timeout=180) for c in crowds]
    finally:
        helper.stdin.close()
        helper.wait(timeout=30)
    log = helper.stderr.read()
    for c, (out, err) in zip(crowds, outs):
        words = out.split()
        if c.returncode != 0 or words[:4] != ["done", str(half), "of", str(half)] or words[5] != "0" or \
                words[7] != "0":
            fail(f"{shape}: a crowd of {half} ranks said {out.strip()!r} (exit {c.returncode}); expected every rank "
                 f"released, none refused or reset", err + log)
    if "refused" in log or "closed the connection" in log:
        fail(f"{shape}: the store refused or dropped clients", log)


def too_many(a):
    r = subprocess.run(["prlimit", "--nofile=300:300", a.launcher, "--nproc-per-node=64", "--no-warm-restarts",
                        "true"], capture_output=True, text=True, timeout=60)
    text = r.stdout + r.stderr
    if r.returncode != 121:
        fail(f"exit code {r.returncode}, expected 121 (a job larger than the open-file limit allows)", text)
    for words in ("needs a connection per rank, 64 for this job", "only 300 files", "ulimit -Hn", "at least 320"):
        if words not in text:
            fail(f"the message does not say '{words}'", text)
    if "local_rank" in text:
        fail("a worker started although the store could not hold the job", text)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--helper", required=True)
    p.add_argument("--crowd", required=True)
    p.add_argument("--launcher", required=True)
    p.add_argument("case", choices=["barrier", "init", "too_many"])
    a = p.parse_args()
    if a.case == "too_many":
        too_many(a)
    else:
        crowd_case(a, a.case)
    print(f"PASS: {a.case}")


if __name__ == "__main__":
    main()
