"""ddp-launch started the way clusters start it, with real launchers on loopback.

Usage: cluster_cases.py --launcher PATH CASE
CASE:
  pytorchjob_static   Kubeflow PyTorchJob v1: PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK,
                      PET_MASTER_ADDR/PORT (plus the operator's RANK/WORLD_SIZE/MASTER_*), two launchers
  pytorchjob_elastic  PyTorchJob with an elastic policy: PET_NNODES=MIN:MAX, PET_RDZV_*, and a
                      --rdzv-conf with its quotes as a container args list passes it
  trainjob            TrainJob / JobSet: JOB_COMPLETION_INDEX as the node rank, PET_STANDALONE=""
  late_dns            the rendezvous host name resolves only after ~3 s (root: a private mount
                      namespace with its own /etc/hosts, edited by the test)
  late_dns_etcd       the same for an etcd endpoint's name (a real etcd on loopback; the backend
                      spelled etcd and etcd-v2)
  mpirun              mpirun --allow-run-as-root -np 2 --oversubscribe ddp-launch ... (Open MPI)
  local_rank          a script that declares --local_rank gets it; --use-env turns that off
Prints what it checked; exits 1 on the first mismatch, 77 when the case cannot run here.
"""
import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from checks import fail  # noqa: E402
from ports import free_port  # noqa: E402

WORKER = ["sh", "-c", 'echo "env rank=$RANK world=$WORLD_SIZE group=$GROUP_RANK local=$LOCAL_RANK"']
TIMEOUT = 120


def skip(message):
    print(f"SKIP: {message}")
    sys.exit(77)


def base_env(extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PET_", "SLURM_", "OMPI_", "PMI", "TORCHELASTIC_")) and k != "JOB_COMPLETION_INDEX"}
    env["OMP_NUM_THREADS"] = "1"
    env.update(extra)
    return env


def start(cmd, env):
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(procs):
    outs = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
            fail("a launcher did not finish in time", out)
        outs.append((p.returncode, out))
    return outs


class Reader:
    """Collects a process's output on a thread, so that a test can look at it while it runs."""

    def __init__(self, proc):
        self._chunks = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, args=(proc.stdout,), daemon=True)
        self._thread.start()

    def _read(self, stream):
        for line in stream:
            with self._lock:
                self._chunks.append(line)

    def text(self):
        with self._lock:
            return "".join(self._chunks)

    def join(self):
        self._thread.join(timeout=TIMEOUT)
        return self.text()


def check_world(outs, world, what):
    """Every rank 0..world-1 reported once with WORLD_SIZE=world, and every launcher exited 0."""
    text = "\n".join(out for _, out in outs)
    for rc, out in outs:
        if rc != 0:
            fail(f"{what}: a launcher exited {rc}", text)
    ranks = sorted(int(m.group(1)) for m in re.finditer(rf"env rank=(\d+) world={world} ", text))
    if ranks != list(range(world)):
        fail(f"{what}: expected ranks 0..{world - 1} with WORLD_SIZE={world}, saw {ranks}", text)
    return text


def case_pytorchjob_static(args):
    port = free_port()
    procs = []
    for r in range(2):
        env = base_env({"PET_NNODES": "2", "PET_NPROC_PER_NODE": "2", "PET_NODE_RANK": str(r),
                        "PET_MASTER_ADDR": "localhost", "PET_MASTER_PORT": str(port),
                        # what the operator sets for plain (non-torchrun) containers too
                        "MASTER_ADDR": "localhost", "MASTER_PORT": str(port), "RANK": str(r), "WORLD_SIZE": "2",
                        "PYTHONUNBUFFERED": "1", "KUBERNETES_SERVICE_HOST": "10.96.0.1"})
        procs.append(start([args.launcher, *WORKER], env))
    check_world(finish(procs), 4, "PyTorchJob static")
    print("ok: two launchers placed by PET_NNODES/PET_NODE_RANK/PET_MASTER_* ran ranks 0-3 of 4")


def case_pytorchjob_elastic(args):
    port = free_port()
    procs = []
    for _ in range(2):
        env = base_env({"PET_NNODES": "2:3", "PET_NPROC_PER_NODE": "1", "PET_RDZV_BACKEND": "c10d",
                        "PET_RDZV_ENDPOINT": f"localhost:{port}", "PET_RDZV_ID": "pytorchjob-elastic",
                        "PET_STANDALONE": "", "KUBERNETES_SERVICE_HOST": "10.96.0.1"})
        # A container args list: no shell, so the quotes arrive verbatim.
        procs.append(start([args.launcher, "--rdzv-conf='join_timeout=60,last_call_timeout=1'", *WORKER], env))
    text = check_world(finish(procs), 2, "PyTorchJob elastic")
    if text.count("--rdzv-conf: read 'join_timeout=60,last_call_timeout=1' without its quotes") != 2:
        fail("each launcher should say once that it dropped the --rdzv-conf quotes", text)
    print("ok: PET_NNODES=2:3 with c10d PET_RDZV_* and a quoted --rdzv-conf: one round of 2 nodes, a notice each")


def case_trainjob(args):
    port = free_port()
    procs = []
    for index in range(2):
        env = base_env({"JOB_COMPLETION_INDEX": str(index), "PET_NNODES": "2", "PET_NPROC_PER_NODE": "1",
                        "PET_MASTER_ADDR": "localhost", "PET_MASTER_PORT": str(port), "PET_STANDALONE": ""})
        procs.append(start([args.launcher, *WORKER], env))
    outs = finish(procs)
    text = check_world(outs, 2, "TrainJob")
    for index, (_, out) in enumerate(outs):
        if f"node rank {index} from JOB_COMPLETION_INDEX" not in out:
            fail(f"launcher {index} does not say its node rank came from JOB_COMPLETION_INDEX", text)
        if f"env rank={index} world=2 group={index}" not in out:
            fail(f"launcher {index}'s worker is not rank {index} of group {index}", text)
    print("ok: JOB_COMPLETION_INDEX placed each launcher (said so), PET_STANDALONE=\"\" counted as unset")


def late_dns(args, host, flags, what):
    """Two launchers, each in a private mount namespace whose /etc/hosts lacks host until both
    said they wait for it and 3 s passed; then the job runs."""
    if os.geteuid() != 0:
        skip("needs root for a private mount namespace (unshare -m)")
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        skip("cannot create a mount namespace here (unshare -m)")
    with tempfile.TemporaryDirectory() as tmp:
        hosts = os.path.join(tmp, "hosts")
        shutil.copy("/etc/hosts", hosts)
        procs = []
        for r in range(2):
            inner = 'mount --bind "$1" /etc/hosts && shift && exec "$@"'
            cmd = ["unshare", "-m", "sh", "-c", inner, "sh", hosts, args.launcher, "--nnodes=2", *flags(r), *WORKER]
            procs.append(start(cmd, base_env({})))
        began = time.monotonic()
        readers = [Reader(p) for p in procs]
        # The name appears once both launchers said they wait for it, and 3 s have passed.
        waiting = re.compile(rf"waiting for DNS of {re.escape(host)} \(\d+ s\)")
        while not all(waiting.search(r.text()) for r in readers):
            if time.monotonic() - began > 60 or any(p.poll() is not None for p in procs):
                for p in procs:
                    p.kill()
                fail("the launchers did not both report `waiting for DNS of HOST (N s)`",
                     "\n".join(r.join() for r in readers))
            time.sleep(0.1)
        time.sleep(max(0.0, 3 - (time.monotonic() - began)))
        with open(hosts, "a") as f:  # the same inode: the bind mounts see it
            f.write(f"127.0.0.1 {host}\n")
        outs = [(p.wait(timeout=TIMEOUT), r.join()) for p, r in zip(procs, readers)]
    text = check_world(outs, 2, what)
    for _, out in outs:
        if f"DNS of {host} resolved after" not in out:
            fail("a launcher did not say when the name resolved", text)
    return text


def case_late_dns(args):
    host = "late-rendezvous.ddp.test"
    port = free_port()
    late_dns(args, host, lambda r: [f"--node-rank={r}", f"--master-addr={host}", f"--master-port={port}"], "late DNS")
    print(f"ok: both launchers waited for DNS of {host}, said so, then ran the job once it resolved")


def require_tool(name, missing):
    """The tool's path; without it a failure under CI (the set-up installs it), else a skip."""
    exe = shutil.which(name)
    if not exe:
        if os.environ.get("CI"):
            fail(missing)
        skip(missing)
    return exe


def start_etcd(tmp):
    """A one-member etcd on loopback (free ports); returns (process, client port)."""
    exe = require_tool("etcd", "etcd not found (Debian package etcd-server, scripts/install-deps.sh)")
    client, peer = free_port(), free_port()
    proc = subprocess.Popen(
        [exe, "--name=m0", f"--data-dir={tmp}/etcd", f"--listen-client-urls=http://127.0.0.1:{client}",
         f"--advertise-client-urls=http://127.0.0.1:{client}", f"--listen-peer-urls=http://127.0.0.1:{peer}",
         f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}", f"--initial-cluster=m0=http://127.0.0.1:{peer}",
         "--log-level=warn"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", client), timeout=1).close()
            return proc, client
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.2)
    proc.kill()
    fail("etcd did not come up on loopback")


def case_late_dns_etcd(args):
    host = "late-etcd.ddp.test"
    with tempfile.TemporaryDirectory() as tmp:
        etcd, client = start_etcd(tmp)
        try:
            # One launcher spells the backend etcd-v2 (torchrun's name), the other etcd.
            late_dns(args, host, lambda r: [f"--rdzv-backend={'etcd' if r == 0 else 'etcd-v2'}",
                                            f"--rdzv-endpoint={host}:{client}", "--rdzv-id=late-etcd"],
                     "late DNS of etcd")
        finally:
            etcd.terminate()
            etcd.wait()
    print(f"ok: both launchers waited for DNS of the etcd endpoint {host}, said so, then ran the job once it resolved")


def case_mpirun(args):
    mpirun = require_tool("mpirun",
                          "mpirun not found; install it with scripts/install-deps.sh (Debian package openmpi-bin)")
    port = free_port()
    cmd = [mpirun, "--allow-run-as-root", "-np", "2", "--oversubscribe", args.launcher, "--master-addr=127.0.0.1",
           f"--master-port={port}", "--nproc-per-node=2", *WORKER]
    outs = finish([start(cmd, base_env({}))])
    text = check_world(outs, 4, "mpirun")
    for r in range(2):
        if f"node rank {r} of 2 from Open MPI" not in text:
            fail(f"task {r} does not say its node rank came from Open MPI", text)
    print("ok: mpirun -np 2 started two launchers that took node rank and count from OMPI_COMM_WORLD_*")


def case_local_rank(args):
    script = os.path.join(HERE, "bin", "local_rank_script.py")
    env = base_env({"PYTHON_EXEC": sys.executable})
    (rc, out), = finish([start([args.launcher, "--nproc-per-node=2", script, "--tag", "t"], env)])
    if rc != 0:
        fail(f"exit {rc}, expected 0", out)
    for r in range(2):
        if f"local_rank_script rank {r} local_rank {r} tag=t ok" not in out:
            fail(f"rank {r} did not get --local_rank={r}", out)
    if out.count("passing --local_rank=<local rank> to each worker") != 1 or "--use-env turns this off" not in out:
        fail("expected one notice naming the argument and how to turn it off", out)
    # `python script.py`: the argument goes after the script.
    (rc, out), = finish([start([args.launcher, "--nproc-per-node=1", sys.executable, "-u", script], env)])
    if rc != 0 or "local_rank_script rank 0 local_rank 0 tag= ok" not in out:
        fail(f"python script.py: exit {rc}, expected the script to get --local_rank=0", out)
    # --use-env: nothing is passed; argparse rejects the call (exit 2).
    (rc, out), = finish([start([args.launcher, "--use-env", "--nproc-per-node=1", script], env)])
    if rc != 2 or "--local_rank" not in out or "passing --local_rank" in out:
        fail(f"--use-env: expected the script's argparse error (exit 2) and no notice, got {rc}", out)
    print("ok: --local_rank passed to a script that declares it (also as `python script.py`); --use-env turns it off")


CASES = {name[len("case_"):]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--launcher", required=True)
    parser.add_argument("case", choices=sorted(CASES))
    args = parser.parse_args()
    CASES[args.case](args)


if __name__ == "__main__":
    main()
