"""The workers' store hosted by ddp-launch, end to end with real workers.

Usage: check_launch.py --launcher PATH [--python PATH] [--bin-dir DIR] CASE
CASE:
  python_workers   --nproc (4) Python workers (--backend: gloo, or nccl; env://) see TORCHELASTIC_USE_AGENT_STORE=True, each
                   reaching the store on its first connection, and all-reduce correctly
  rank0            --worker-store=rank0: the old way (False; worker rank 0 hosts it) still works
  distributed_sum  two launchers (--rdzv-backend=c10d, --nnodes=2) x 4 workers doing one
                   all_reduce and returning, 5 times, with 2 CPU burners started here: every
                   launcher exits 0 every time
  libddp           the `train` trainer (libddp) from --bin-dir trains under it
Prints what it checked; exits 1 on the first mismatch.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from checks import fail  # noqa: E402
from hung_jobs import hung_job_report, stop_hung  # noqa: E402
from ports import free_port  # noqa: E402

WORKER = os.path.join(HERE, "store_worker.py")


def env_for(args):
    return dict(os.environ, PYTHON_EXEC=args.python, OMP_NUM_THREADS="1")


def run(args, cmd, timeout=240):
    print("running:", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=env_for(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout


def check_workers(out, ranks, world, agent_store):
    for r in ranks:
        for line in (f"rank {r}: first connection to", f"rank {r}: TORCHELASTIC_USE_AGENT_STORE={agent_store}",
                     f"rank {r}/{world}: sum={world * (world + 1) // 2} expected"):
            if line not in out:
                fail(f"rank {r} did not print {line!r}", out)


def case_python_workers(args):
    n = args.nproc
    os.environ["STORE_WORKER_BACKEND"] = args.backend
    rc, out = run(args, [args.launcher, f"--nproc-per-node={n}", WORKER])
    if rc != 0:
        fail(f"exit code {rc}, expected 0", out)
    check_workers(out, range(n), n, "True")
    print(f"ok: {n} workers ({args.backend}) reached the launcher's store on their first try, saw TORCHELASTIC_USE_AGENT_STORE=True, "
          "and all-reduced correctly")


def case_rank0(args):
    rc, out = run(args, [args.launcher, "--nproc-per-node=2", "--worker-store=rank0", "--dry-run", WORKER])
    if rc != 0 or "TORCHELASTIC_USE_AGENT_STORE=False" not in out or "hosted by worker rank 0" not in out:
        fail("--dry-run with --worker-store=rank0 does not show the rank-0 store", out)
    # No first-try check here: rank 0 binds the port itself, possibly after the others.
    env = env_for(args)
    code = ("import os,torch,torch.distributed as d; d.init_process_group('gloo'); t=torch.ones(1); d.all_reduce(t); "
            "print('rank', os.environ['RANK'], 'agent', os.environ['TORCHELASTIC_USE_AGENT_STORE'], 'sum', t.item())")
    cmd = [args.launcher, "--nproc-per-node=2", "--worker-store=rank0", "--no-python", args.python, "-c", code]
    print("running:", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
    if p.returncode != 0 or p.stdout.count("agent False sum 2.0") != 2:
        fail(f"--worker-store=rank0 run failed (exit {p.returncode})", p.stdout)
    print("ok: --worker-store=rank0 exports TORCHELASTIC_USE_AGENT_STORE=False and rank 0 hosts the store")


def case_distributed_sum(args):
    burners = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(2)]
    try:
        for attempt in range(5):
            port = free_port()
            common = ["--nnodes=2", "--nproc-per-node=4", "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}",
                      f"--rdzv-id=sum{attempt}", "--max-restarts=0"]
            env = env_for(args)
            procs = [subprocess.Popen([args.launcher, *common, WORKER], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True) for _ in range(2)]
            try:
                outs = [p.communicate(timeout=300)[0] for p in procs]
            except subprocess.TimeoutExpired:  # a hang: show where each process stood, then stop both
                report = hung_job_report([p.pid for p in procs])
                outs = stop_hung(procs)
                fail(f"run {attempt + 1}: the job did not end within 300 s",
                     "\n".join([report, *(f"---- launcher {k} ----\n{o}" for k, o in enumerate(outs))]))
            codes = [p.returncode for p in procs]
            if codes != [0, 0]:
                fail(f"run {attempt + 1}: launchers exited {codes}, expected [0, 0]", "\n".join(outs))
            both = "\n".join(outs)
            check_workers(both, range(8), 8, "True")
            print(f"ok: run {attempt + 1}/5: both launchers exited 0, 8 workers summed correctly", flush=True)
    finally:
        for b in burners:
            b.kill()
            b.wait()
    print("ok: the distributed sum never aborted on a loaded machine (2 burners), 5 runs")


def case_libddp(args):
    with tempfile.TemporaryDirectory() as tmp:
        rc, out = run(args, [args.launcher, "--nproc-per-node=2", os.path.join(args.bin_dir, "train"), "--epochs", "1",
                             "--train-samples", "2048", "--val-samples", "512", "--progress", "plain",
                             "--checkpoint-dir", tmp])
    if rc != 0 or not re.search(r"train: done: val_accuracy [0-9.]+% after 1 epochs", out):
        fail(f"train under the launcher's store failed (exit {rc})", out)
    print("ok: libddp's train ran on the launcher's store (every rank a client)")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--launcher", required=True)
    p.add_argument("--python", default="/usr/bin/python3")
    p.add_argument("--bin-dir")
    p.add_argument("--nproc", type=int, default=4)
    p.add_argument("--backend", default="gloo")
    p.add_argument("case", choices=["python_workers", "rank0", "distributed_sum", "libddp"])
    args = p.parse_args()
    globals()["case_" + args.case](args)


if __name__ == "__main__":
    main()
