"""End-to-end checks of the trainers under the real ddp-launch.

Usage: check_trainers.py --launcher PATH --bin-dir DIR CASE [--nproc N]
Each CASE runs trainer binaries from DIR (under the launcher unless noted), checks exit code
and output, prints what it verified and exits 1 with the full output on the first mismatch.
"""
import argparse
import csv
import glob
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import fail  # noqa: E402

ARGS = None


def run(cmd, timeout=150):
    print("running:", " ".join(cmd), flush=True)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)
    return proc.returncode, proc.stdout


def launch(nproc, program, *args, launcher_args=()):
    return run([ARGS.launcher, f"--nproc_per_node={nproc}", *launcher_args,
                os.path.join(ARGS.bin_dir, program), *args])


def rank_lines(output, rank):
    prefix = f"[rank{rank}]: "
    return [line[len(prefix):] for line in output.splitlines() if line.startswith(prefix)]


def expect_rc(rc, out, expected=0):
    if rc != expected:
        fail(f"exit code {rc}, expected {expected}", out)


# ---- the tutorial's examples -------------------------------------------------------------

def python_sampler_indices(samples, n, epoch):
    """Each rank's indices from torch's own DistributedSampler (None when this Python lacks torch)."""
    try:
        from torch.utils.data.distributed import DistributedSampler
    except ImportError:
        return None
    order = []
    for rank in range(n):
        sampler = DistributedSampler(range(samples), num_replicas=n, rank=rank, shuffle=True, seed=0)
        sampler.set_epoch(epoch)
        order.append(list(sampler))
    return order


def check_random_dataset():
    n, samples = ARGS.nproc, 90
    rc, out = launch(n, "random_dataset")
    expect_rc(rc, out)
    share = -(-samples // n)  # DistributedSampler pads to a multiple of the world size
    for epoch in (0, 1):
        drawn = {}
        for rank in range(n):
            found = [l for l in rank_lines(out, rank) if l.startswith(f"rank {rank} epoch {epoch} indices:")]
            if len(found) != 1:
                fail(f"rank {rank} did not report its epoch {epoch} indices", out)
            drawn[rank] = [int(x) for x in found[0].split(":", 1)[1].split()]
            if len(drawn[rank]) != share:
                fail(f"rank {rank} drew {len(drawn[rank])} samples in epoch {epoch}, expected {share}", out)
        everything = [i for r in range(n) for i in drawn[r]]
        if set(everything) != set(range(samples)):
            fail(f"epoch {epoch}: the ranks' shares do not cover the {samples} samples", out)
        if len(everything) - len(set(everything)) != share * n - samples:
            fail(f"epoch {epoch}: shares overlap beyond the {share * n - samples} padding samples", out)
        for rank in range(n):
            first_batch = min(share, 30)
            if f"\tIn Model: input size [{first_batch}, 5] output size [{first_batch}, 2]" not in rank_lines(out, rank):
                fail(f"rank {rank} did not print the model's input/output sizes", out)
        python_order = python_sampler_indices(samples, n, epoch)
        if python_order is not None and any(drawn[r] != python_order[r] for r in range(n)):
            fail(f"epoch {epoch}: indices differ from torch's DistributedSampler (seed 0): "
                 f"{[drawn[r][:8] for r in range(n)]} vs {[python_order[r][:8] for r in range(n)]}", out)
        if epoch == 0:
            first = drawn
    if all(first[r] == drawn[r] for r in range(n)):
        fail("epoch 1 drew the same order as epoch 0: set_epoch did not reshuffle", out)
    print(f"ok: {n} ranks x {share} samples cover all {samples} (padding {share * n - samples}), "
          "disjoint otherwise, reshuffled per epoch, in the order of torch's DistributedSampler")


def checksums_of(out, n, pattern):
    values = []
    for rank in range(n):
        m = [re.search(pattern, l) for l in rank_lines(out, rank)]
        m = [x for x in m if x]
        if len(m) != 1:
            fail(f"rank {rank}: expected one line matching {pattern!r}", out)
        values.append(m[0].group(1))
    return values


def check_basic():
    n = ARGS.nproc
    rc, out = launch(n, "basic")
    expect_rc(rc, out)
    sums = checksums_of(out, n, rf"basic: rank \d+/{n} stepped, params checksum=(\S+) identical_across_ranks=yes")
    if len(set(sums)) != 1:
        fail(f"parameter checksums differ across ranks: {sums}", out)
    print(f"ok: one DDP step on {n} ranks left identical parameters (checksum {sums[0]})")


def check_port():
    """trainers/port.cpp: SyncBatchNorm + DDP + ZeroRedundancyOptimizer + DistributedSampler +
    async all_reduce + reduce_scatter, a typical torch.distributed script in C++."""
    n = ARGS.nproc
    rc, out = launch(n, "port", "--epochs", "3")
    expect_rc(rc, out)
    pattern = (rf"port: rank (\d+)/{n} loss (\S+) -> (\S+), class counts (\d+)\+(\d+), all (\d+) of (\d+), "
               r"params checksum=(\S+) identical_across_ranks=yes")
    rows = {}
    for line in out.splitlines():
        m = re.search(pattern, line)
        if m:
            rows[int(m.group(1))] = m.groups()
    if sorted(rows) != list(range(n)):
        fail(f"expected a final line from each of ranks 0..{n - 1}, got {sorted(rows)}", out)
    first, last = float(rows[0][1]), float(rows[0][2])
    if not last < 0.8 * first:
        fail(f"the group's mean loss did not fall: {first} -> {last}", out)
    counts = sum(int(r[3]) + int(r[4]) for r in rows.values())
    expected = int(rows[0][6])
    if counts != expected or any(int(r[5]) != expected for r in rows.values()):
        fail(f"reduce_scatter'ed class counts sum to {counts}, expected {expected}", out)
    if len({r[7] for r in rows.values()}) != 1 or len({(r[1], r[2]) for r in rows.values()}) != 1:
        fail("ranks disagree on the parameters or the averaged loss", out)
    print(f"ok: the port trains on {n} ranks (loss {first} -> {last}), identical parameters, "
          f"class counts {counts} of {expected}")


def check_checkpoint():
    n = ARGS.nproc
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.checkpoint")
        rc, out = launch(n, "checkpoint", "--path", path)
        expect_rc(rc, out)
        checksums_of(out, n, r"checkpoint: rank \d+ loaded \S+ checksum=(\S+) saved=\S+ round_trip=ok")
        after = checksums_of(out, n, r"stepped after load, checksum=(\S+) identical_across_ranks=yes")
        if len(set(after)) != 1:
            fail(f"parameters differ across ranks after the step: {after}", out)
        if os.path.exists(path):
            fail(f"rank 0 did not remove {path}", out)
        if "checkpoint: rank 0 removed " + path not in rank_lines(out, 0):
            fail("rank 0 did not report removing the checkpoint", out)
    print(f"ok: saved by rank 0, loaded by {n} ranks with rank 0's parameters, stepped identically, removed")


def check_spawn():
    n = ARGS.nproc
    rc, out = run([os.path.join(ARGS.bin_dir, "spawn"), "--nprocs", str(n)])
    expect_rc(rc, out)
    sums = re.findall(rf"basic: rank \d+/{n} stepped, params checksum=(\S+) identical_across_ranks=yes", out)
    if len(sums) != n or len(set(sums)) != 1:
        fail(f"expected {n} workers with identical parameters, got {sums}", out)
    if f"spawn: all {n} workers finished" not in out:
        fail("parent did not report that all workers finished", out)
    rc, out = run([os.path.join(ARGS.bin_dir, "spawn"), "--nprocs", "0"])
    if rc != 2 or "spawn: error:" not in out:
        fail(f"--nprocs 0 should be a one-line error with exit 2, got {rc}", out)
    print(f"ok: ddp::spawn ran {n} workers without a launcher; identical parameters")


# ---- train ------------------------------------------------------------------------------

def final_accuracy(out):
    m = re.findall(r"train: done: val_accuracy ([0-9.]+)% after (\d+) epochs \((\d+) steps\) on (\d+) worker", out)
    if len(m) != 1:
        fail("train did not print exactly one final 'train: done: val_accuracy' line", out)
    return float(m[0][0]), int(m[0][2])


def metrics_rows(path, out):
    if not os.path.exists(path):
        fail(f"no metrics file at {path}", out)
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return rows


SMALL = ["--train-samples", "8192", "--val-samples", "2048", "--progress", "plain", "--log-every", "20"]


def check_train_converges():
    n = ARGS.nproc
    with tempfile.TemporaryDirectory() as tmp:
        rc, out = launch(n, "train", "--epochs", "5", "--batch-size", str(256 // n), "--checkpoint-dir", tmp, *SMALL)
        expect_rc(rc, out)
        acc, steps = final_accuracy(out)
        if acc < 88.0:
            fail(f"final accuracy {acc}% is below 88%", out)
        rows = metrics_rows(os.path.join(tmp, "metrics.csv"), out)
        if [int(r["epoch"]) for r in rows] != [1, 2, 3, 4, 5]:
            fail(f"metrics.csv should have epochs 1..5, has {[r['epoch'] for r in rows]}", out)
        if float(rows[-1]["loss"]) >= float(rows[0]["loss"]) or float(rows[-1]["samples_per_s"]) <= 0:
            fail("metrics.csv: loss did not decrease or samples/s missing", out)
        if abs(float(rows[-1]["accuracy"]) * 100 - acc) > 0.01 or int(rows[-1]["step"]) != steps:
            fail("metrics.csv's last row disagrees with the final line", out)
        if not any(re.match(r"epoch 1/5 step 20/32 \(global 20\) loss [0-9.]+ samples/s \d+", l)
                   for l in rank_lines(out, 0)):
            fail("rank 0 printed no plain progress lines (not a TTY)", out)
        if any("epoch" in l for r in range(1, n) for l in rank_lines(out, r)):
            fail("ranks other than 0 printed progress", out)
        if not os.path.exists(os.path.join(tmp, "ckpt_000000160.pt")):
            fail(f"no final checkpoint ckpt_000000160.pt in {os.listdir(tmp)}", out)
        # Started again on the same directory it resumes from the final checkpoint: no training.
        rc, again = launch(n, "train", "--epochs", "5", "--batch-size", str(256 // n), "--checkpoint-dir", tmp, *SMALL)
        expect_rc(rc, again)
        if f"train: resumed from {tmp}/ckpt_000000160.pt (epoch 6, step 160, restart 0)" not in rank_lines(again, 0):
            fail("a second run on the same --checkpoint-dir did not resume from the final checkpoint", again)
        if final_accuracy(again) != (acc, steps) or "done: loss" in again:
            fail("the resumed finished run trained again or reports another accuracy", again)
        if len(metrics_rows(os.path.join(tmp, "metrics.csv"), again)) != 5:
            fail("resuming a finished run changed metrics.csv", again)
        # A checkpoint of another model is a clear error naming the way out.
        rc, other = launch(n, "train", "--hidden", "32", "--checkpoint-dir", tmp, *SMALL)
        if rc == 0 or "pass --no-resume or another --checkpoint-dir" not in other:
            fail(f"resuming into another model should fail with a hint, got exit {rc}", other)
    print(f"ok: {n} workers reached {acc}% in 5 epochs; metrics.csv and the final checkpoint written")


def check_train_resume(hook_args=(), exact=False):
    n = ARGS.nproc
    # --snapshot-every 0: this case is about disk checkpoints (train_snapshot_resume: snapshots).
    common = ["--epochs", "4", "--batch-size", str(128 // n), "--checkpoint-interval", "30", "--snapshot-every", "0",
              *hook_args, *SMALL]
    with tempfile.TemporaryDirectory() as ref_dir, tempfile.TemporaryDirectory() as dir_:
        rc, ref = launch(n, "train", "--checkpoint-dir", ref_dir, *common)
        expect_rc(rc, ref)
        ref_acc, ref_steps = final_accuracy(ref)
        # Rank n-1 SIGKILLs itself after 100 steps (epoch 2); the checkpoint of step 90 is the latest.
        rc, out = launch(n, "train", "--checkpoint-dir", dir_, "--fail-at-step", "100", "--fail-rank", str(n - 1),
                         *common, launcher_args=["--max-restarts", "1"])
        expect_rc(rc, out)
        if f"train: rank {n - 1} killing itself (SIGKILL) after 100 steps" not in out:
            fail("the worker was not killed", out)
        if not re.search(r"signal 9|SIGKILL", out):
            fail("the launcher did not report the SIGKILL", out)
        if "train: resumed from " + os.path.join(dir_, "ckpt_000000090.pt") + " (epoch 2, step 90, restart 1)" \
                not in rank_lines(out, 0):
            fail("the restarted run did not resume from the step-90 checkpoint", out)
        acc, steps = final_accuracy(out)
        if steps != ref_steps or abs(acc - ref_acc) > (0 if exact else 0.5):
            fail(f"resumed run ended at {acc}% / {steps} steps, uninterrupted run at {ref_acc}% / {ref_steps}", out)
        rows = metrics_rows(os.path.join(dir_, "metrics.csv"), out)
        if [int(r["epoch"]) for r in rows] != [1, 2, 3, 4]:
            fail(f"metrics.csv should list epochs 1..4 once each, has {[r['epoch'] for r in rows]}", out)
        kept = sorted(f for f in os.listdir(dir_) if f.startswith("ckpt_"))
        if len(kept) != 2:
            fail(f"expected the 2 newest checkpoints to be kept, found {kept}", out)
    print(f"ok: worker killed at step 100, group restarted, resumed from step 90; "
          f"final {acc}% vs {ref_acc}% uninterrupted ({steps} steps)")


def check_train_powersgd_resume():
    # PowerSGD compresses from step 20; its error buffers, Q's and iteration travel in the
    # checkpoints, so the run killed at step 100 and resumed from step 90 ends exactly like the
    # uninterrupted one.
    check_train_resume(["--comm-hook", "powersgd", "--powersgd-rank", "1", "--powersgd-start-iter", "20"], exact=True)


def check_train_snapshot_resume(heal=False):
    # Snapshots every step: rank n-1 SIGKILLed after 100 steps; the restart resumes from the
    # in-memory snapshot of step 100 or 99 (not the step-90 checkpoint on disk) and ends with final
    # weights and momentum bit-identical to an uninterrupted run's (train's printed digest). With
    # heal, the killed rank empties its snapshot region first (as a replacement node has none):
    # the restart sends it rank 0's snapshot, with the same result.
    n = ARGS.nproc
    common = ["--epochs", "2", "--batch-size", str(128 // n), "--checkpoint-interval", "30", "--snapshot-every", "1",
              *SMALL]
    fault = ["--fail-at-step", "100", "--fail-rank", str(n - 1)] + (["--fail-empty-snapshot"] if heal else [])
    with tempfile.TemporaryDirectory() as ref_dir, tempfile.TemporaryDirectory() as dir_:
        rc, ref = launch(n, "train", "--checkpoint-dir", ref_dir, *common)
        expect_rc(rc, ref)
        rc, out = launch(n, "train", "--checkpoint-dir", dir_, *fault, *common, launcher_args=["--max-restarts", "1"])
        expect_rc(rc, out)
        if f"train: rank {n - 1} killing itself (SIGKILL) after 100 steps" not in out:
            fail("the worker was not killed", out)
        if heal and f"train: rank {n - 1} emptied its in-memory snapshot region" not in out:
            fail("the killed worker did not empty its snapshot region", out)
        # Step 100, or 99 when the launcher's SIGTERM caught rank 0 copying its snapshot of step
        # 100 (that slot is torn: the older one is used).
        how = f"rank {n - 1} healed from rank 0" if heal else "every rank had its own"
        pattern = rf"^train: resumed from the in-memory snapshot of step (\d+) \(epoch 2, restart 1; {how}\)$"
        resumed = [m for line in rank_lines(out, 0) for m in re.findall(pattern, line)]
        if resumed not in (["100"], ["99"]):
            fail(f"the restarted run did not resume from the in-memory snapshot of step 100 (or 99) ({how}), "
                 f"got {resumed}", out)
        if heal and f"ddp::Snapshot: rank {n - 1} received the snapshot of step {resumed[0]} from rank 0" not in out:
            fail(f"rank {n - 1} did not say it received the snapshot", out)
        if "no rank holds an in-memory snapshot" in out:
            fail("the restart fell back to the checkpoint directory", out)
    digests = [re.findall(r"train: final weights digest ([0-9a-f]{16})", o) for o in (ref, out)]
    if len(digests[0]) != 1 or digests[0] != digests[1]:
        fail(f"final weights digests differ: uninterrupted {digests[0]}, resumed {digests[1]}", ref + out)
    print(f"ok: killed after step 100, resumed from the in-memory snapshot of step {resumed[0]} ({how}); final "
          f"weights digest {digests[0][0]} equals the uninterrupted run's")


def check_train_snapshot_newer_checkpoint():
    # Snapshots every 50 steps, checkpoints every 10, rank n-1 SIGKILLed after 75 steps: memory
    # holds step 50, the disk step 70. The restart resumes from the newer, the checkpoint, says
    # why, and ends with the final weights of an uninterrupted run.
    n = ARGS.nproc
    common = ["--epochs", "2", "--batch-size", str(128 // n), "--checkpoint-interval", "10", "--snapshot-every", "50",
              *SMALL]
    with tempfile.TemporaryDirectory() as ref_dir, tempfile.TemporaryDirectory() as dir_:
        rc, ref = launch(n, "train", "--checkpoint-dir", ref_dir, *common)
        expect_rc(rc, ref)
        rc, out = launch(n, "train", "--checkpoint-dir", dir_, "--fail-at-step", "75", "--fail-rank", str(n - 1),
                         *common, launcher_args=["--max-restarts", "1"])
        expect_rc(rc, out)
        ckpt = os.path.join(dir_, "ckpt_000000070.pt")
        why = f"ddp::Snapshot: resuming from {ckpt} (step 70): it is newer than the in-memory snapshot of step 50"
        if why not in rank_lines(out, 0):
            fail(f"rank 0 did not say '{why}'", out)
        resumed = [line for line in rank_lines(out, 0) if line.startswith("train: resumed from ")]
        if len(resumed) != 1 or not resumed[0].startswith(f"train: resumed from {ckpt} (epoch ") or \
                ", step 70, restart 1)" not in resumed[0]:
            fail(f"the restart did not resume from {ckpt} (step 70): {resumed}", out)
    digests = [re.findall(r"train: final weights digest ([0-9a-f]{16})", o) for o in (ref, out)]
    if len(digests[0]) != 1 or digests[0] != digests[1]:
        fail(f"final weights digests differ: uninterrupted {digests[0]}, resumed {digests[1]}", ref + out)
    print(f"ok: killed after step 75 between the snapshot of step 50 and the checkpoint of step 70: resumed from the "
          f"checkpoint, said why; final weights digest {digests[0][0]} equals the uninterrupted run's")


def check_train_snapshot_heal():
    check_train_snapshot_resume(heal=True)


def check_train_snapshot_persist():
    # The launcher writes rank 0's in-memory snapshot to --snapshot-persist-dir when the job
    # ends (here: rank n-1 SIGKILLed after 100 steps, no restart left); a new launcher and a
    # cold `train --checkpoint-dir` on that folder resume from it (ddp::load_checkpoint reads
    # the ddp::Snapshot payload as is) and end bit-identical to an uninterrupted run.
    n = ARGS.nproc
    common = ["--epochs", "2", "--batch-size", str(128 // n), "--checkpoint-interval", "0", "--snapshot-every", "1",
              *SMALL]
    with tempfile.TemporaryDirectory() as ref_dir, tempfile.TemporaryDirectory() as tmp:
        rc, ref = launch(n, "train", "--checkpoint-dir", ref_dir, *common)
        expect_rc(rc, ref)
        persist = os.path.join(tmp, "persist")  # created by the launcher
        rc, out = launch(n, "train", "--checkpoint-dir", os.path.join(tmp, "unused"), "--fail-at-step", "100",
                         "--fail-rank", str(n - 1), *common,
                         launcher_args=["--snapshot-persist-dir", persist, "--snapshot-persist-interval", "0"])
        if rc == 0:
            fail("the run with a worker killed should fail", out)
        files = sorted(f for f in os.listdir(persist))
        if len(files) != 1 or not re.fullmatch(r"ckpt_000000(099|100)\.pt", files[0]):
            fail(f"expected the launcher's ckpt_000000100.pt (or 99) in {persist}, found {files}", out)
        path = os.path.join(persist, files[0])
        step = int(files[0][5:-3])
        if f"ddp-launch: wrote the in-memory snapshot of step {step} to {path} (" not in out:
            fail("the launcher did not say it wrote the snapshot", out)
        rc, cold = launch(n, "train", "--checkpoint-dir", persist, *common)
        expect_rc(rc, cold)
        if f"train: resumed from {path} (epoch 2, step {step}, restart 0)" not in rank_lines(cold, 0):
            fail(f"the cold start did not resume from {path}", cold)
    digests = [re.findall(r"train: final weights digest ([0-9a-f]{16})", o) for o in (ref, cold)]
    if len(digests[0]) != 1 or digests[0] != digests[1]:
        fail(f"final weights digests differ: uninterrupted {digests[0]}, cold start {digests[1]}", ref + cold)
    print(f"ok: the launcher persisted the snapshot of step {step}; a cold start resumed from it and ended "
          f"bit-identical ({digests[0][0]})")


# ---- chaos: faults while snapshots are being written ---------------------------------------

def step_records(steps_dir):
    """{rank: [(attempt, event, value), ...]} from train's --step-times files, in order."""
    out = {}
    for name in os.listdir(steps_dir):
        m = re.fullmatch(r"rank(\d+)\.log", name)
        if m:
            with open(os.path.join(steps_dir, name)) as f:
                out[int(m.group(1))] = [(int(a), e, int(v)) for a, e, v, _t in
                                        (line.split() for line in f if line.endswith("\n"))]
    return out


def check_train_snapshot_chaos():
    # One job through a seeded series of faults while every step is snapshotted (in the
    # background) and the launcher persists to the checkpoint folder every 0.5 s: a worker
    # SIGKILLed (restart from memory), the launcher SIGTERMed (it persists at the stop; a new
    # launcher starts cold from the folder), the launcher SIGKILLed (nothing persisted then:
    # the last interval's file). Each fault may cost at most what docs/snapshots.md promises
    # (a worker or a stop: one step; a SIGKILLed launcher: back to its last persisted step),
    # no worker outlives a killed launcher, no region is left behind, and the job ends with
    # the final weights of an uninterrupted run, bit for bit.
    n = ARGS.nproc
    seed = int(os.environ.get("DDP_CHAOS_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    faults = ["worker", "stop", "launcher", "worker"]
    rng.shuffle(faults)
    print(f"chaos seed {seed} (DDP_CHAOS_SEED): faults {faults}", flush=True)
    common = ["--epochs", "16", "--batch-size", str(128 // n), "--checkpoint-interval", "0", "--snapshot-every", "1",
              *SMALL]
    with tempfile.TemporaryDirectory() as tmp:
        rc, ref = launch(n, "train", "--checkpoint-dir", os.path.join(tmp, "ref"), *common)
        expect_rc(rc, ref)
        ckpt, steps, shm, logs = (os.path.join(tmp, d) for d in ("ckpt", "steps", "shm", "logs"))
        for d in (steps, shm):
            os.makedirs(d)
        env = dict(os.environ, OMP_NUM_THREADS="1", DDP_LAUNCH_SNAPSHOT_DIR=shm)
        cmd = [ARGS.launcher, f"--nproc_per_node={n}", "--max-restarts", "9", "--log-dir", logs,
               "--snapshot-persist-dir", ckpt, "--snapshot-persist-interval", "0.5",
               os.path.join(ARGS.bin_dir, "train"), "--checkpoint-dir", ckpt, "--step-times", steps, *common]
        redone = []

        outputs = []  # each launcher's console, in a file (a pipe nobody reads could fill)

        def start():
            print("running:", " ".join(cmd), flush=True)
            outputs.append(os.path.join(tmp, f"console.{len(outputs)}"))
            with open(outputs[-1], "w") as f:
                return subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.STDOUT, text=True)

        def console():
            return "".join(open(f).read() for f in outputs)

        def newest_steps():
            return [r for r in step_records(steps).get(0, []) if r[1] == "step"]

        def persisted_steps():
            found = []
            for f in glob.glob(os.path.join(logs, "*", "events.jsonl")):
                found += [json.loads(line) for line in open(f) if '"snapshot_persisted"' in line]
            return [e["step"] for e in found]

        proc = start()
        done_before = 0  # step records of rank 0 before this fault
        for fault in faults:
            target = (newest_steps()[-1][2] if newest_steps() else 0) + rng.randrange(40, 120)
            deadline = time.time() + 120
            # A launcher is SIGKILLed only once it has persisted a file (else its successor
            # starts from scratch, which is the promise too, but proves nothing).
            while not newest_steps() or newest_steps()[-1][2] < target or (fault == "launcher" and
                                                                            not persisted_steps()):
                if proc.poll() is not None or time.time() > deadline:
                    fail(f"the job ended or stalled before step {target} (fault {fault})", console())
                time.sleep(0.01)
            records = step_records(steps)
            if fault == "worker":
                rank = rng.randrange(n)
                pid = [v for _a, e, v in records[rank] if e == "start"][-1]
                os.kill(pid, signal.SIGKILL)
            else:
                workers = [[v for _a, e, v in records[r] if e == "start"][-1] for r in range(n)]
                proc.send_signal(signal.SIGTERM if fault == "stop" else signal.SIGKILL)
                rc = proc.wait(timeout=60)
                expected = 128 + signal.SIGTERM if fault == "stop" else -signal.SIGKILL
                if rc != expected:
                    fail(f"the launcher exited {rc} after the {fault} fault, expected {expected}", console())
                deadline = time.time() + 30
                while any(os.path.exists(f"/proc/{w}") and open(f"/proc/{w}/stat").read().split()[2] != "Z"
                          for w in workers):
                    if time.time() > deadline:
                        fail(f"a worker outlived its launcher ({fault})", console())
                    time.sleep(0.05)
                last_persisted = max(persisted_steps(), default=0)
                proc = start()
            # The step every rank resumed from, after the fault; the last step done before it.
            deadline = time.time() + 120
            while True:
                rank0 = step_records(steps)[0]
                resumed = [r for r in rank0[done_before:] if r[1] == "resumed"]
                if resumed:
                    break
                if proc.poll() is not None or time.time() > deadline:
                    fail(f"no resume after the {fault} fault", console())
                time.sleep(0.01)
            cut = rank0.index(resumed[0], done_before)
            before = max((v for recs in step_records(steps).values() for _a, e, v in recs[:cut] if e == "step"),
                         default=0)
            at = resumed[0][2]
            floor = last_persisted if fault == "launcher" else before - 1
            redone.append((fault, before, at))
            print(f"{fault}: last step {before}, resumed at {at}", flush=True)
            if at < floor or at > before:
                fail(f"after the {fault} fault at step {before} the job resumed at step {at}; at least {floor} "
                     "was promised", console())
            done_before = cut + 1
        rc = proc.wait(timeout=300)
        output = console()
        expect_rc(rc, output)
        left = os.listdir(shm)
        if left:
            fail(f"snapshot regions left behind in {shm}: {left}", output)
    digests = [re.findall(r"train: final weights digest ([0-9a-f]{16})", o) for o in (ref, output)]
    if len(digests[0]) != 1 or digests[1][-1:] != digests[0]:
        fail(f"final weights differ: uninterrupted {digests[0]}, after the faults {digests[1]}", ref + output)
    print(f"ok: {len(faults)} faults (last step, resumed at): {redone}; final weights digest {digests[0][0]} "
          "equals the uninterrupted run's")


def check_train_snapshot_shm_full():
    # The launcher's snapshot folder is a real 1 MiB tmpfs (root: mounted here; else skipped,
    # 77) and the model's snapshot needs ~4 MB: each worker warns once, naming the bytes the
    # region needs and the folder, and trains on; a worker killed at step 100 restarts from
    # the disk checkpoint of step 90, as without snapshots, and the job ends 0.
    n = ARGS.nproc
    if os.geteuid() != 0:
        print("skipped: mounting a small tmpfs needs root")
        sys.exit(77)
    with tempfile.TemporaryDirectory() as tmp:
        shm = os.path.join(tmp, "shm")
        os.makedirs(shm)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=1777", "tmpfs", shm]).returncode != 0:
            print("skipped: cannot mount a tmpfs here")
            sys.exit(77)
        try:
            os.environ["DDP_LAUNCH_SNAPSHOT_DIR"] = shm
            rc, out = launch(n, "train", "--checkpoint-dir", os.path.join(tmp, "ckpt"), "--epochs", "2",
                             "--batch-size", str(128 // n), "--hidden", "512,512", "--checkpoint-interval", "30",
                             "--snapshot-every", "1", "--fail-at-step", "100", "--fail-rank", str(n - 1), *SMALL,
                             launcher_args=["--max-restarts", "1"])
        finally:
            del os.environ["DDP_LAUNCH_SNAPSHOT_DIR"]
            subprocess.run(["umount", shm])
    expect_rc(rc, out)
    warnings = re.findall(r"ddp::Snapshot: cannot hold a snapshot of (\d+) bytes in " + re.escape(shm) +
                          r" \(it needs (\d+) bytes for the region\): No space left on device; snapshots are off "
                          r"for this worker, disk checkpoints go on as before", out)
    if len(warnings) < n or any(int(need) <= 1 << 20 for _bytes, need in warnings):
        fail(f"expected one 'cannot hold a snapshot' warning per worker naming more than 1 MiB, got {warnings}", out)
    if not any(l.startswith("ddp::Snapshot: resuming from ") and "ckpt_000000090.pt (step 90): no rank holds an "
               "in-memory snapshot" in l for l in rank_lines(out, 0)):
        fail("the restart did not fall back to the step-90 checkpoint on disk", out)
    print(f"ok: {len(warnings)} warnings naming {warnings[0][1]} bytes needed; the restart resumed from the "
          "step-90 checkpoint; exit 0")


def write_blobs_csv(path, rows=600, seed=7):
    rng = random.Random(seed)
    centers = [(-2.0, 0.0, 1.0), (2.0, 1.0, -1.0), (0.0, -2.5, 0.5)]
    with open(path, "w") as f:
        f.write("x1,x2,x3,label\n")
        for _ in range(rows):
            label = rng.randrange(3)
            c = centers[label]
            f.write(",".join(f"{v + rng.gauss(0, 0.6):.4f}" for v in c) + f",{label}\n")


def check_train_csv():
    n = ARGS.nproc
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "blobs.csv")
        write_blobs_csv(data)
        rc, out = launch(n, "train", "--data", data, "--epochs", "10", "--batch-size", "16", "--accum-steps", "2",
                         "--comm-hook", "bf16", "--hidden", "16", "--checkpoint-dir", os.path.join(tmp, "ck"),
                         "--progress", "none")
        expect_rc(rc, out)
        if "480 train / 120 val samples (" + data + ", 3 features, 3 classes)" not in out:
            fail("train did not describe the CSV data (480/120 split, 3 features, 3 classes)", out)
        acc, _ = final_accuracy(out)
        if acc < 90.0:
            fail(f"accuracy {acc}% on well separated blobs is below 90%", out)
    print(f"ok: CSV data with accumulation 2 and the bf16 hook reached {acc}%")


def check_train_bench():
    n = ARGS.nproc
    rc, out = launch(n, "train", "--bench", "--in-dim", "10", "--hidden", "10", "--classes", "5", "--batch-size", "20",
                     "--steps", "200", "--warmup", "20")
    expect_rc(rc, out)
    lines = rank_lines(out, 0)
    pattern = rf"peer=cpp-ddp world={n} steps=200 batch=20 params=\d+ samples_per_s=[0-9.]+ step_ms=[0-9.]+$"
    if not any(re.match(pattern, l) for l in lines):
        fail("no benchmark line in python_ddp_bench.py's format", out)
    if any("peer=" in l for r in range(1, n) for l in rank_lines(out, r)):
        fail("only rank 0 should print the benchmark line", out)
    print("ok: " + next(l for l in lines if l.startswith("peer=")))


def check_train_uneven():
    n = ARGS.nproc
    if n != 3:
        fail("train_uneven expects --nproc 3 (its shard sizes are computed for 3 workers)")
    with tempfile.TemporaryDirectory() as tmp:
        rc, out = launch(n, "train", "--uneven", "--epochs", "4", "--batch-size", "32", "--accum-steps", "2",
                         "--train-samples", "6144", "--val-samples", "2048", "--checkpoint-dir", tmp,
                         "--progress", "none")
        expect_rc(rc, out)
        lines = rank_lines(out, 0)
        # Shares 3:4:5 of 6144: 48, 64 and 80 micro-batches of 32; 24, 32 and 40 steps of 2.
        if not any("train: uneven shards (--uneven): 1536/2048/2560 samples per rank, no padding, trained under join()"
                   in l for l in lines):
            fail("train did not announce the uneven shards 1536/2048/2560", out)
        if "train: uneven: rank 0 shadowed 32 forwards of the others in join() in the last epoch" not in lines:
            fail("rank 0 (48 micro-batches) should have shadowed 80 - 48 = 32 forwards of rank 2", out)
        acc, steps = final_accuracy(out)
        if steps != 4 * 40:
            fail(f"{steps} steps; expected 4 epochs x 40 steps (the longest shard)", out)
        if acc < 85.0:
            fail(f"accuracy {acc}% below 85% after 4 epochs on uneven shards", out)
        rows = metrics_rows(os.path.join(tmp, "metrics.csv"), out)
        if [int(r["step"]) for r in rows] != [40, 80, 120, 160]:
            fail(f"metrics.csv steps should be 40, 80, 120, 160, are {[r['step'] for r in rows]}", out)
        if not os.path.exists(os.path.join(tmp, "ckpt_000000160.pt")):
            fail(f"no epoch-end checkpoint ckpt_000000160.pt in {os.listdir(tmp)}", out)
    print(f"ok: 3 workers on 1536/2048/2560-sample shards under join() reached {acc}% in {steps} steps")


def check_train_bad_input():
    train = os.path.join(ARGS.bin_dir, "train")
    cases = [
        (["--epochs", "0"], "train: error: --epochs must be at least 1"),
        (["--comm-hook", "int8"], "train: error: --comm-hook must be allreduce, fp16, bf16 or powersgd, got 'int8'"),
        (["--powersgd-rank", "0"], "train: error: --powersgd-rank must be at least 1, got 0"),
        (["--bogus"], "train: error: "),
        (["--data", "/nonexistent/data.csv"], "train: error: cannot read data file '/nonexistent/data.csv'"),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        bad = os.path.join(tmp, "bad.csv")
        with open(bad, "w") as f:
            f.write("a,b,label\n1,2,0\n3,x,1\n")
        cases.append((["--data", bad], f"train: error: {bad}:3: column 2 is 'x', not a finite number"))
        for args, expected in cases:
            rc, out = run([train, *args, "--checkpoint-dir", os.path.join(tmp, "ck")])
            lines = [l for l in out.splitlines() if l.strip()]
            if rc != 2 or len(lines) != 1 or not lines[0].startswith(expected):
                fail(f"train {' '.join(args)}: expected exit 2 and one line starting '{expected}', got {rc}", out)
        # Under the launcher the report carries the message from the error file.
        rc, out = launch(2, "train", "--data", bad, "--checkpoint-dir", os.path.join(tmp, "ck"))
        if rc != 2 or f"{bad}:3: column 2 is 'x'" not in "\n".join(
                l for l in out.splitlines() if not l.startswith("[rank")):
            fail("under ddp-launch: expected exit 2 and the CSV error in the failure report", out)
    print(f"ok: {len(cases)} bad inputs each gave one 'train: error:' line and exit 2")


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--launcher", required=True)
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("case")
    ARGS = parser.parse_args()
    check = globals().get(f"check_{ARGS.case}")
    if check is None:
        fail(f"unknown case {ARGS.case}")
    check()


if __name__ == "__main__":
    main()
