"""End-to-end checks: plain PyTorch scripts run unchanged under ddp-launch.

Usage: check_interop.py --launcher PATH --python PATH CASE [--nproc N]
CASE is env_allreduce, record_traceback, legacy_local_rank, tutorial_local_rank or
hang_all_reduce. Runs the launcher on the
script next to this file with PYTHON_EXEC=--python (an interpreter that has torch), checks
its exit code and output, prints what it checked, and exits 1 on the first mismatch.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from checks import fail  # noqa: E402


def launch(args, launcher_args, script, script_args=(), timeout=120):
    env = dict(os.environ, PYTHON_EXEC=args.python, OMP_NUM_THREADS="1")
    cmd = [args.launcher, *launcher_args, os.path.join(HERE, script), *script_args]
    print("running:", " ".join(cmd))
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    return proc.returncode, proc.stdout


def rank_lines(output, rank):
    prefix = f"[rank{rank}]: "
    return [line[len(prefix):] for line in output.splitlines() if line.startswith(prefix)]


def check_env_allreduce(args, script_args=()):
    n = args.nproc
    rc, out = launch(args, [f"--nproc_per_node={n}"], "env_allreduce.py", list(script_args))
    if rc != 0:
        fail(f"exit code {rc}, expected 0", out)
    checksums = set()
    for rank in range(n):
        lines = "\n".join(rank_lines(out, rank))
        if f"rank {rank}/{n}: local_rank={rank} local_world_size={n}" not in lines:
            fail(f"rank {rank} did not report its env (LOCAL_RANK/LOCAL_WORLD_SIZE)", out)
        expected = n * (n + 1) // 2
        if f"rank {rank}/{n}: allreduce sum={expected} expected={expected} ok" not in lines:
            fail(f"rank {rank}: allreduce result missing or wrong", out)
        m = re.search(rf"rank {rank}/{n}: ddp step params_identical=ok checksum=(\S+)", lines)
        if not m:
            fail(f"rank {rank}: DDP step did not leave identical parameters", out)
        checksums.add(m.group(1))
    if len(checksums) != 1:
        fail(f"ranks report different parameter checksums {checksums}", out)
    print(f"ok: {n} workers joined via env://, allreduce sum correct, DDP parameters identical")


def check_init_barrier_device_id(args):
    """torch 2.x's init_process_group as its scripts call it, on the launcher's store: bound to a
    device (device_id) and with the store-based barrier after init (TORCH_DIST_INIT_BARRIER=1,
    off by default since 2.1): the ranks count themselves in through the workers' store."""
    import torch  # noqa: F401 - the driver runs with DDP_TEST_PYTHON
    if int(torch.__version__.split(".")[0]) < 2:
        print("SKIP: device_id and TORCH_DIST_INIT_BARRIER are torch 2.x's")
        sys.exit(77)
    os.environ["TORCH_DIST_INIT_BARRIER"] = "1"
    check_env_allreduce(args, ["--device-id"])


def check_record_traceback(args):
    with tempfile.TemporaryDirectory() as log_dir:
        rc, out = launch(args, ["--nproc_per_node=2", f"--log-dir={log_dir}"], "record_raises.py")
        if rc != 1:
            fail(f"exit code {rc}, expected 1 (the failed worker's code)", out)
        files = glob.glob(os.path.join(log_dir, "**", "error.json"), recursive=True)
        if len(files) != 1:
            fail(f"expected exactly one error.json under --log-dir, found {files}", out)
        with open(files[0]) as f:
            record = json.load(f)
        message = record["message"]
        if "corrupt shard for rank 1" not in json.dumps(message):
            fail(f"error file {files[0]} lacks the exception message: {record}", out)
        if os.path.basename(os.path.dirname(files[0])) != "1":
            fail(f"error file written for the wrong local rank: {files[0]}", out)
    # The report (launcher lines, not prefixed by [rankN]:) must carry the worker's traceback.
    report = [line for line in out.splitlines() if not line.startswith("[rank")]
    report_text = "\n".join(report)
    for needle in ("Traceback (most recent call last)", "in load_shard",
                   "ValueError: corrupt shard for rank 1: checksum mismatch"):
        if needle not in report_text:
            fail(f"launcher's failure report does not show '{needle}' from the error file", out)
    if not re.search(r"rank\s*:\s*1\b", report_text):
        fail("report does not name rank 1 as the root cause", out)
    print("ok: @record wrote the error file; ddp-launch's report shows the Python traceback; exit code 1")


def check_legacy_local_rank(args):
    n = args.nproc
    rc, out = launch(args, [f"--nproc_per_node={n}", "--use-env=false"], "legacy_local_rank.py", ["--tag", "legacy"])
    if rc != 0:
        fail(f"exit code {rc}, expected 0", out)
    for rank in range(n):
        if f"local_rank={rank} argv_ok tag=legacy" not in "\n".join(rank_lines(out, rank)):
            fail(f"rank {rank} did not get --local_rank={rank} before its own arguments", out)
    # The pre-2.0 spelling, as torch.distributed.launch in 1.x passed it.
    env = dict(os.environ, LOCAL_RANK="3")
    proc = subprocess.run([args.python, os.path.join(HERE, "legacy_local_rank.py"), "--local_rank=3"], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    if proc.returncode != 0 or "local_rank=3 argv_ok" not in proc.stdout:
        fail("script does not accept the --local_rank=N spelling", proc.stdout)
    # By default the script gets the spelling it declares first (--local_rank), with a notice.
    rc, out = launch(args, ["--nproc_per_node=1"], "legacy_local_rank.py")
    if rc != 0 or "local_rank=0 argv_ok" not in out or "passing --local_rank=<local rank>" not in out:
        fail(f"without flags expected --local_rank=0 passed (the script declares it) and a notice, got {rc}", out)
    # With --use-env nothing is injected: the script must say so and fail.
    rc, out = launch(args, ["--nproc_per_node=1", "--use-env"], "legacy_local_rank.py")
    if rc != 2 or "no --local_rank/--local-rank argument" not in out:
        fail(f"with --use-env expected exit 2 and the script's message, got {rc}", out)
    print(f"ok: --use-env=false passed --local_rank=N to {n} workers; --local_rank=N accepted too; passed by default "
          "to a script that declares it, not with --use-env")


def check_tutorial_local_rank(args):
    """A script that declares only --local_rank (required) runs under --use-env=false."""
    n = args.nproc
    rc, out = launch(args, [f"--nproc_per_node={n}", "--use_env=False"], "tutorial_local_rank.py")
    if rc != 0:
        fail(f"exit code {rc}, expected 0", out)
    for rank in range(n):
        if f"tutorial rank {rank} local_rank {rank} ok" not in "\n".join(rank_lines(out, rank)):
            fail(f"rank {rank} of the tutorial-style script did not report", out)
    # The 2.x spelling on request: this script rejects it, as argparse does for such scripts.
    rc, out = launch(args, ["--nproc_per_node=1", "--local-rank-arg=local-rank"], "tutorial_local_rank.py")
    if rc != 2 or "--local_rank" not in out:
        fail(f"--local-rank-arg=local-rank should pass --local-rank=0, which this script rejects; got {rc}", out)
    # Unchanged, as the tutorial tells torch.distributed.launch users to run it: it declares
    # --local_rank, so ddp-launch passes it without any flag.
    rc, out = launch(args, [f"--nproc_per_node={n}"], "tutorial_local_rank.py")
    if rc != 0 or f"tutorial rank {n - 1} local_rank {n - 1} ok" not in out:
        fail(f"without flags the tutorial-style script should get --local_rank; got {rc}", out)
    print(f"ok: the tutorial-style script (only --local_rank) ran on {n} workers with --use_env=False and with no flag")


def line_of(script, marker):
    with open(os.path.join(HERE, script)) as f:
        return next(i for i, line in enumerate(f, 1) if marker in line)


def check_hang_all_reduce(args):
    """Rank 1 stops (SIGSTOP); rank 0 waits in dist.all_reduce: a hang verdict naming rank 1
    and rank 0's all_reduce, every worker's stacks with its Python traceback, exit 119."""
    script = "hang_all_reduce.py"
    stop_line, wait_line = line_of(script, "STOP-LINE"), line_of(script, "WAIT-LINE")
    python_dir = os.path.join(os.path.dirname(os.path.dirname(HERE)), "python")
    os.environ["DDP_PROGRESS_DIR"] = python_dir
    with tempfile.TemporaryDirectory() as log_dir:
        rc, out = launch(args, ["--nproc_per_node=2", "--hang-timeout=5", f"--log-dir={log_dir}"], script)
        if rc != 119:
            fail(f"exit code {rc}, expected 119 (a hang)", out)
        if not re.search(r"hang: no progress for \d+ s; rank 1 \(pid \d+\) at step 3, last completed "
                         r"all_reduce #\d+, in no collective; rank 0 waits in all_reduce #\d+ \(4996 float32\)", out):
            fail("the verdict does not name rank 1 and rank 0's all_reduce", out)
        # The report's top frames of the culprit: its Python traceback (faulthandler), at the stop.
        report = "\n".join(line for line in out.splitlines() if not line.startswith("[rank"))
        if not re.search(rf'File ".*{script}", line {stop_line} in <module>', report):
            fail(f"the report lacks rank 1's Python traceback at {script}:{stop_line}", out)
        # Rank 0's traceback in its stacks file: the dist.all_reduce line.
        stacks = glob.glob(os.path.join(log_dir, "*", "attempt_0", "0", "stacks.txt"))
        if len(stacks) != 1:
            fail(f"expected rank 0's stacks file, found {stacks}", out)
        with open(stacks[0]) as f:
            text = f.read()
        where = rf'File ".*{script}", line {wait_line} in <module>'
        if "== native stacks of rank 0" not in text or not re.search(where, text):
            fail(f"rank 0's stacks file lacks native stacks or its traceback at {script}:{wait_line}", text)
    print(f"ok: hang verdict names rank 1 and rank 0's all_reduce; tracebacks at lines {stop_line} and {wait_line}")


PYTHON_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "python"))


def check_snapshot_resume(args, heal=False, script_args=()):
    """Snapshots every step; rank 1 SIGKILLed at step 6 once: the restart resumes from the
    snapshot of step 5 on both ranks (4 when the launcher's SIGTERM caught rank 0 copying step
    5's, or rank 1's background write of step 5 had not landed), runs the remaining steps, and
    ends with the weights of an uninterrupted run, bit for bit. With heal, the restart's rank 1
    empties its region first and receives rank 0's snapshot."""
    script_args = list(script_args) + (["--heal"] if heal else [])
    os.environ["DDP_TEST_PYTHON_DIR"] = PYTHON_DIR
    with tempfile.TemporaryDirectory() as shm:
        os.environ["DDP_LAUNCH_SNAPSHOT_DIR"] = shm
        rc, out = launch(args, ["--nproc_per_node=2", "--max-restarts=1"], "snapshot_resume.py",
                         ["--kill-at", "6", *script_args])
        if rc != 0:
            fail(f"exit code {rc}, expected 0", out)
        if os.listdir(shm):
            fail(f"snapshot regions left behind: {os.listdir(shm)}", out)
        rc, clean = launch(args, ["--nproc_per_node=2"], "snapshot_resume.py", script_args)
        if rc != 0:
            fail(f"uninterrupted run: exit code {rc}, expected 0", clean)
    digests = set()
    resumed = {rank: [line for line in rank_lines(out, rank) if "resumed from snapshot" in line] for rank in range(2)}
    starts = {int(lines[0].split(",")[0].rsplit(" ", 1)[1]) for lines in resumed.values() if len(lines) == 1}
    if len(starts) != 1 or not starts <= {4, 5}:
        fail(f"the ranks did not both resume from the snapshot of step 5 (or 4): {resumed}", out)
    start = starts.pop()
    expected = {0: f"attempt 1: resumed from snapshot step {start}",
                1: f"attempt 1: resumed from snapshot step {start}" + (", healed from rank 0" if heal else "")}
    for rank in range(2):
        if resumed[rank] != [expected[rank]]:
            fail(f"rank {rank}: expected '{expected[rank]}', got {resumed[rank]}", out)
    if heal and f"ddp_snapshot: rank 1 received the snapshot of step {start} from rank 0" not in out:
        fail("rank 1 did not say it received the snapshot", out)
    for rank in range(2):
        lines = rank_lines(out, rank)
        if "attempt 0: fresh start" not in lines:
            fail(f"rank {rank} did not start fresh", out)
        resumed_steps = [line for line in lines if line.startswith("attempt 1: step ")]
        if resumed_steps != [f"attempt 1: step {s}" for s in range(start + 1, 11)]:
            fail(f"rank {rank}: the restart ran {resumed_steps}, expected steps {start + 1}..10", out)
        digests.update(line for line in lines if line.startswith("final weights "))
        digests.update(line for line in rank_lines(clean, rank) if line.startswith("final weights "))
    if len(digests) != 1:
        fail(f"final weights differ from the uninterrupted run's: {digests}", out + clean)
    how = ", rank 1 healed from rank 0" if heal else ""
    print(f"ok: killed at step 6, resumed from the snapshot of step {start}{how}, final weights bit-identical")


def check_snapshot_newer_checkpoint(args):
    """Snapshots every 5 steps, checkpoints every 2, rank 1 SIGKILLed at step 8: the snapshot
    holds step 5, the disk step 6; restore(checkpoint_dir=) takes the checkpoint on both ranks,
    says why, and the run ends with the weights of an uninterrupted run, bit for bit."""
    os.environ["DDP_TEST_PYTHON_DIR"] = PYTHON_DIR
    with tempfile.TemporaryDirectory() as ckpt:
        every = ["--snapshot-every", "5", "--checkpoint-every", "2", "--checkpoint-dir", ckpt]
        rc, out = launch(args, ["--nproc_per_node=2", "--max-restarts=1"], "snapshot_resume.py",
                         ["--kill-at", "8", *every])
        if rc != 0:
            fail(f"exit code {rc}, expected 0", out)
        rc, clean = launch(args, ["--nproc_per_node=2"], "snapshot_resume.py", [])
        if rc != 0:
            fail(f"uninterrupted run: exit code {rc}, expected 0", clean)
    for rank in range(2):
        resumed = [line for line in rank_lines(out, rank) if "resumed from" in line]
        if resumed != ["attempt 1: resumed from checkpoint step 6"]:
            fail(f"rank {rank}: expected 'attempt 1: resumed from checkpoint step 6', got {resumed}", out)
    why = f"ddp_snapshot: resuming from {ckpt}/ckpt_6.pt (step 6): it is newer than the in-memory snapshot of step 5"
    if why not in out:
        fail(f"expected the line '{why}'", out)
    digests = {line for o in (out, clean) for r in range(2) for line in rank_lines(o, r) if line.startswith("final weights ")}
    if len(digests) != 1:
        fail(f"final weights differ from the uninterrupted run's: {digests}", out + clean)
    print("ok: killed at step 8 between the snapshot of step 5 and the checkpoint of step 6: resumed from the "
          "checkpoint, said why, final weights bit-identical")


def check_snapshot_heal(args):
    check_snapshot_resume(args, heal=True)


def check_snapshot_persist(args):
    """The launcher persists rank 0's snapshot (a torch.save of the script's state) when rank 1
    is SIGKILLed at step 6 (the failure: step 5, or 4) and at the end (step 10), keeping only
    the newest; ddp_snapshot.load_persisted reads it back: the final weights, bit for bit."""
    os.environ["DDP_TEST_PYTHON_DIR"] = PYTHON_DIR
    with tempfile.TemporaryDirectory() as tmp:
        persist, logs = os.path.join(tmp, "persist"), os.path.join(tmp, "logs")
        rc, out = launch(args, ["--nproc_per_node=2", "--max-restarts=1", "--log-dir", logs,
                                "--snapshot-persist-dir", persist, "--snapshot-persist-interval", "0"],
                         "snapshot_resume.py", ["--kill-at", "6"])
        if rc != 0:
            fail(f"exit code {rc}, expected 0", out)
        events = [json.loads(line) for f in glob.glob(os.path.join(logs, "*", "events.jsonl")) for line in open(f)]
        persisted = [(e["why"], e["step"]) for e in events if e["event"] == "snapshot_persisted"]
        # The failure's persist reads the region as the restart begins: step 5 (4 when the
        # launcher's SIGTERM caught rank 0 copying step 5), later only if the thread lagged the restart.
        if len(persisted) != 2 or persisted[0][0] != "failure" or not 4 <= persisted[0][1] < 10 or \
                persisted[1] != ("end", 10):
            fail(f"expected persists at the failure (step 5 or 4) and at the end (step 10), got {persisted}", out)
        if os.listdir(persist) != ["ckpt_000000010.pt"]:
            fail(f"expected only the newest file, ckpt_000000010.pt, in {persist}: {os.listdir(persist)}", out)
        code = ("import hashlib, sys; sys.path.insert(0, sys.argv[1]); import ddp_snapshot; "
                "step, state = ddp_snapshot.load_persisted(sys.argv[2], map_location='cpu'); "
                "d = hashlib.sha256(b''.join(t.numpy().tobytes() for t in state['model'].values())).hexdigest(); "
                "print(step, d, ddp_snapshot.load_persisted(sys.argv[3]))")
        proc = subprocess.run([args.python, "-c", code, PYTHON_DIR, persist, tmp], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=120)
    final = {line.split()[-1] for line in rank_lines(out, 0) if line.startswith("final weights ")}
    if proc.returncode != 0 or proc.stdout.split() != ["10", *final, "None"]:
        fail(f"load_persisted should give step 10 with the final weights {final} (and None for a folder "
             f"without checkpoints), got: {proc.stdout}", out)
    print("ok: persisted at the failure and at the end; load_persisted gives the final weights")


def check_snapshot_resume_background(args):
    """The same with save(..., background=True) and ddp_snapshot.allreduce_hook on the model."""
    check_snapshot_resume(args, ["--background"])


def check_snapshot_torn(args):
    env = dict(os.environ, DDP_TEST_PYTHON_DIR=PYTHON_DIR)
    proc = subprocess.run([args.python, os.path.join(HERE, "snapshot_torn.py")], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=120)
    print(proc.stdout)
    if proc.returncode != 0:
        fail(f"snapshot_torn.py exited {proc.returncode}", proc.stdout)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--launcher", required=True)
    parser.add_argument("--python", default="/usr/bin/python3")
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("case", choices=["env_allreduce", "init_barrier_device_id", "record_traceback", "legacy_local_rank",
                                           "tutorial_local_rank", "hang_all_reduce", "snapshot_resume", "snapshot_newer_checkpoint",
                                           "snapshot_heal", "snapshot_resume_background", "snapshot_torn",
                                           "snapshot_persist"])
    args = parser.parse_args()
    globals()[f"check_{args.case}"](args)


if __name__ == "__main__":
    main()
