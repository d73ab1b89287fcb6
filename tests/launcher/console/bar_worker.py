"""A worker that writes its output the way tqdm and pdb do (run by console_test.py).

bar GATE STEPS: draws a tqdm-style bar on stderr ('\\r' + frame, no newline) for STEPS
steps, then keeps the last frame up until the file GATE exists, then draws 100% and ends
the line. Prints "done" on stdout.
longline BYTES: writes one line of BYTES bytes (digits) to stdout with no newline until the end.
pdb RANK: on that rank, stops in breakpoint(); every rank then prints "after-breakpoint".
"""
import os
import sys
import time


def bar(gate, steps):
    rank = os.environ["RANK"]
    for i in range(steps + 1):
        pct = 100 * i // (steps + 1)
        sys.stderr.write(f"\rtrain r{rank}: {pct:3d}%|{'#' * i}{' ' * (steps - i)}| {i}/{steps + 1}")
        sys.stderr.flush()
        time.sleep(0.02)
    while not os.path.exists(gate):
        time.sleep(0.05)
    sys.stderr.write(f"\rtrain r{rank}: 100%|{'#' * steps}| {steps + 1}/{steps + 1}\n")
    print("done", flush=True)


def longline(n):
    chunk = "0123456789" * 6553
    left = n
    while left > 0:
        piece = chunk[: min(left, len(chunk))]
        sys.stdout.write(piece)
        left -= len(piece)
    sys.stdout.write("\n")
    sys.stdout.flush()


def pdb_on(rank):
    RANK = int(os.environ["RANK"])  # noqa: F841 (inspected from pdb: `p RANK`)
    if RANK == rank:
        breakpoint()
    else:
        time.sleep(1)
    print(f"after-breakpoint rank={RANK}", flush=True)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "bar":
        bar(sys.argv[2], int(sys.argv[3]))
    elif mode == "longline":
        longline(int(sys.argv[2]))
    elif mode == "pdb":
        pdb_on(int(sys.argv[2]))
    elif mode == "sleep":
        time.sleep(float(sys.argv[2]))
