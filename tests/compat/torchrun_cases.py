"""PyTorch's own launcher tests, replayed as command lines against ddp-launch.

The cases of test/distributed/launcher/run_test.py (PyTorch 1.13.1: etcd rendezvous),
test_run.py (PyTorch 2.x: c10d and the default static one) and launch_test.py
(torch.distributed.launch) that go through the launcher's command line: each case's
arguments and PET_* variables as the test passes them, with workers of our own that do
what the test's scripts do (bin/: touch RANK, the launcher's variables, --fail,
is_torchelastic_launched, a gloo all-reduce through env:// and tcp://, a required
--local_rank). The outcome the test asserts is checked: which ranks ran, an error before
anything starts (the test's ValueError / RuntimeError), a failed worker (ChildFailedError),
the output lines. The cases that patch torchrun's internals (mocks) or need GPUs are not
command lines and are not counted.

Usage: torchrun_cases.py --launcher PATH [--python PY] [--torchrun WRAPPER] [-k SUBSTRING]
  --launcher   ddp-launch
  --python     the workers' interpreter, with torch (PYTHON_EXEC; default: this one)
  --torchrun   run the same cases against torchrun instead: a Python file that runs
               torch.distributed.run's main (for the record: torch 1.13 lacks 2.x's flags)
Prints one line per case and a summary; exits 1 when a case fails (under ddp-launch), 77
when the workers' interpreter has no torch.
"""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.join(HERE, "bin")
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from ports import free_port  # noqa: E402
TIMEOUT = 180


class Failure(Exception):
    pass


class Skip(Exception):
    pass


class Context:
    """How to launch (ddp-launch or torchrun), the workers' interpreter, an etcd endpoint."""

    def __init__(self, args):
        self.python = args.python
        if args.torchrun:
            self.torchrun = [args.python, args.torchrun]
            # torch.distributed.launch with the same wrapper's fixes applied first.
            shim = ("import runpy, sys; runpy.run_path(sys.argv.pop(1), run_name='shim'); "
                    "from torch.distributed.launch import main; main()")
            self.launch = [args.python, "-c", shim, args.torchrun]
        else:
            self.torchrun = self.launch = [args.launcher]
        self.under_torchrun = bool(args.torchrun)
        self.etcd = None
        self.etcd_error = None
        self.etcd_proc = None
        self.etcd_dir = None

    def etcd_endpoint(self):
        if self.etcd or self.etcd_error:
            if self.etcd_error:
                raise Skip(self.etcd_error)
            return self.etcd
        exe = shutil.which("etcd")
        if not exe:
            self.etcd_error = "etcd not found (Debian package etcd-server, scripts/install-deps.sh)"
            raise Skip(self.etcd_error)
        self.etcd_dir = tempfile.mkdtemp(prefix="replay-etcd-")
        client, peer = free_port(), free_port()
        self.etcd_proc = subprocess.Popen(
            [exe, "--name=m0", f"--data-dir={self.etcd_dir}/data", f"--listen-client-urls=http://127.0.0.1:{client}",
             f"--advertise-client-urls=http://127.0.0.1:{client}", f"--listen-peer-urls=http://127.0.0.1:{peer}",
             f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}", f"--initial-cluster=m0=http://127.0.0.1:{peer}",
             "--enable-v2", "--log-level=warn"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", client), timeout=1).close()
                self.etcd = f"127.0.0.1:{client}"
                return self.etcd
            except OSError:
                time.sleep(0.2)
        self.etcd_error = "etcd did not come up"
        raise Skip(self.etcd_error)

    def close(self):
        if self.etcd_proc:
            self.etcd_proc.terminate()
            self.etcd_proc.wait()
        if self.etcd_dir:
            shutil.rmtree(self.etcd_dir, ignore_errors=True)


def env_for(ctx, extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PET_", "TORCHELASTIC_", "SLURM_", "OMPI_"))}
    env.update({"TEST_SENTINEL_PARENT": "FOOBAR", "PYTHON_EXEC": ctx.python})
    for k, v in (extra or {}).items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def start(cmd, env):
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def wait(proc):
    try:
        out, _ = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, _ = proc.communicate()
        raise Failure(f"did not finish within {TIMEOUT} s:\n{out[-3000:]}")
    return proc.returncode, out


def run(ctx, args, env=None, launcher=None):
    cmd = [*(launcher or ctx.torchrun), *args]
    return wait(start(cmd, env_for(ctx, env)))


def py(script):
    return os.path.join(BIN, script)


def expect_ranks(rc, out, tmp, world):
    if rc != 0:
        raise Failure(f"exit {rc}, expected 0:\n{out[-3000:]}")
    got = set(os.listdir(tmp))
    if got != {str(i) for i in range(world)}:
        raise Failure(f"ranks that ran: {sorted(got)}, expected 0..{world - 1}:\n{out[-3000:]}")


def expect_error(rc, out, tmp):
    """The test's assertRaises(ValueError/RuntimeError): the launch is refused, nothing runs."""
    if rc == 0:
        raise Failure(f"exit 0, expected the launch to be refused:\n{out[-3000:]}")
    if tmp and os.listdir(tmp):
        raise Failure(f"expected nothing to run, but ranks {sorted(os.listdir(tmp))} did")


def fresh_dir(tmp):
    for name in os.listdir(tmp):
        os.unlink(os.path.join(tmp, name))


# ---- the cases: (id, function(ctx, tmp)) ------------------------------------------------------------------

CASES = []


def case(source, name):
    def register(fn):
        CASES.append((f"{source}::{name}", fn))
        return fn
    return register


def etcd_args(ctx):
    return ["--rdzv_backend=etcd", f"--rdzv_endpoint={ctx.etcd_endpoint()}", f"--rdzv_id={uuid.uuid4().int}"]


V1 = "run_test.py@1.13.1"
V2 = "test_run.py@2.x"
LT = "launch_test.py"


@case(V1, "test_launch_user_script_python")
def v1_user_script_python(ctx, tmp):
    rc, out = run(ctx, ["--nnodes=1", "--nproc_per_node=4", *etcd_args(ctx), "--monitor_interval=1",
                        "--start_method=spawn", py("touch_rank.py"), f"--touch_file_dir={tmp}"])
    expect_ranks(rc, out, tmp, 4)


@case(V1, "test_launch_user_script_python_caffe2_bc")
def v1_caffe2_bc(ctx, tmp):
    rc, out = run(ctx, ["--nnodes=1", "--nproc_per_node=4", "--monitor_interval=1", "--start_method=spawn",
                        "--master_addr=localhost", f"--master_port={free_port()}", "--node_rank=0",
                        py("touch_rank.py"), f"--touch_file_dir={tmp}"])
    expect_ranks(rc, out, tmp, 4)


def bash_case(ctx, tmp, common, world):
    script = [py("touch_rank"), tmp]
    rc, out = run(ctx, common + ["--module"] + script)
    expect_error(rc, out, tmp)
    rc, out = run(ctx, common + script)
    expect_ranks(rc, out, tmp, world)


@case(V1, "test_launch_user_script_bash")
def v1_bash(ctx, tmp):
    bash_case(ctx, tmp, ["--nnodes=1", "--nproc_per_node=4", *etcd_args(ctx), "--monitor_interval=1",
                         "--start_method=spawn", "--no_python"], 4)


@case(V1, "test_launch_user_script_default_nproc")
def v1_default_nproc(ctx, tmp):
    bash_case(ctx, tmp, ["--nnodes=1", *etcd_args(ctx), "--monitor_interval=1", "--start_method=spawn",
                         "--no_python"], 1)


def env_vars_case(ctx, tmp, extra):
    env = {"PET_NNODES": "1", "PET_NPROC_PER_NODE": "4", "PET_MONITOR_INTERVAL": "1", "PET_START_METHOD": "spawn",
           "PET_NO_PYTHON": "1", **extra}
    script = [py("touch_rank"), tmp]
    rc, out = run(ctx, script, {**env, "PET_MODULE": "1"})
    expect_error(rc, out, tmp)
    rc, out = run(ctx, script, {**env, "PET_MODULE": "0"})
    expect_ranks(rc, out, tmp, 4)


@case(V1, "test_launch_with_env_vars")
def v1_env_vars(ctx, tmp):
    endpoint = ctx.etcd_endpoint()
    env_vars_case(ctx, tmp, {"PET_RDZV_BACKEND": "etcd", "PET_RDZV_ENDPOINT": endpoint,
                             "PET_RDZV_ID": str(uuid.uuid4().int)})


def nproc_case(ctx, tmp, common, nproc, expected):
    rc, out = run(ctx, common[:1] + [f"--nproc_per_node={nproc}" if "_" in common[1] else f"--nproc-per-node={nproc}"]
                  + common[2:] + [py("touch_rank"), tmp])
    if expected is None:
        expect_error(rc, out, tmp)
    else:
        expect_ranks(rc, out, tmp, expected)


def cpu_count_without_gpus():
    if os.path.exists("/dev/nvidia0"):
        raise Skip("nproc auto counts GPUs on this machine; the test expects the CPU count")
    return os.cpu_count()


def v1_nproc_common(ctx):
    return ["--nnodes=1", "--nproc_per_node=X", *etcd_args(ctx), "--monitor_interval=1", "--start_method=spawn",
            "--no_python"]


@case(V1, "test_nproc_launch_auto_configurations")
def v1_nproc_auto(ctx, tmp):
    nproc_case(ctx, tmp, v1_nproc_common(ctx), "auto", cpu_count_without_gpus())


@case(V1, "test_nproc_launch_number_configurations")
def v1_nproc_number(ctx, tmp):
    nproc_case(ctx, tmp, v1_nproc_common(ctx), "4", 4)


@case(V1, "test_nproc_launch_unknown_configurations")
def v1_nproc_unknown(ctx, tmp):
    nproc_case(ctx, tmp, v1_nproc_common(ctx), "unknown", None)


@case(V1, "test_launch_elastic")
def v1_elastic(ctx, tmp):
    rc, out = run(ctx, ["--nnodes=1:2", "--nproc_per_node=4", *etcd_args(ctx), "--monitor_interval=1",
                        "--start_method=spawn", py("touch_rank.py"), f"--touch_file_dir={tmp}"])
    expect_ranks(rc, out, tmp, 4)


def expect_worker_failure(rc, out):
    if rc == 0:
        raise Failure(f"exit 0, expected the failed worker's (ChildFailedError):\n{out[-3000:]}")
    if "--fail was given" not in out:
        raise Failure(f"exit {rc} without the worker's error in the output:\n{out[-3000:]}")


@case(V1, "test_launch_elastic_worker_raise_exception")
def v1_elastic_worker_raise(ctx, tmp):
    rc, out = run(ctx, ["--nnodes=1:2", "--nproc_per_node=4", *etcd_args(ctx), "--monitor_interval=1",
                        "--max_restarts=0", "--start_method=spawn", py("touch_rank.py"), "--fail"])
    expect_worker_failure(rc, out)


@case(V1, "test_launch_standalone")
def v1_standalone(ctx, tmp):
    rc, out = run(ctx, ["--nnodes=1", "--nproc_per_node=4", "--standalone", "--monitor_interval=1",
                        "--start_method=spawn", py("touch_rank.py"), f"--touch_file_dir={tmp}"])
    expect_ranks(rc, out, tmp, 4)


@case(V1, "test_launch_run_path")
def v1_run_path(ctx, tmp):
    rc, out = run(ctx, ["--run_path", "--nnodes=1", "--nproc_per_node=4", "--monitor_interval=1",
                        "--start_method=spawn", py("touch_rank.py"), f"--touch_file_dir={tmp}"])
    expect_ranks(rc, out, tmp, 4)


def two_agents(ctx, tmp, args):
    other = start([*ctx.torchrun, *args], env_for(ctx))
    rc, out = run(ctx, args)
    rc2, out2 = wait(other)
    if rc2 != 0:
        raise Failure(f"the second agent exited {rc2}:\n{out2[-3000:]}")
    expect_ranks(rc, out + out2, tmp, 8)


@case(V1, "test_launch_elastic_multiple_agents")
def v1_multiple_agents(ctx, tmp):
    two_agents(ctx, tmp, ["--nnodes=1:2", "--nproc_per_node=4", *etcd_args(ctx), "--monitor_interval=1",
                          "--start_method=spawn", py("touch_rank.py"), f"--touch_file_dir={tmp}"])


def min_max_case(ctx, tmp):
    rc, out = run(ctx, ["--nnodes=2:20:30", "--no_python", py("touch_rank"), tmp])
    expect_error(rc, out, tmp)


@case(V1, "test_min_max_nodes_parse")
def v1_min_max(ctx, tmp):
    min_max_case(ctx, tmp)


def is_launched_case(ctx, tmp, run_path, nproc, out_flag, extra=()):
    out_file = os.path.join(tmp, "out")
    rc, out = run(ctx, [run_path, "--nnodes=1", nproc, "--monitor_interval=1", *extra, py("is_launched.py"),
                        f"{out_flag}={out_file}"])
    if rc != 0:
        raise Failure(f"exit {rc}, expected 0:\n{out[-3000:]}")
    with open(out_file) as f:
        if f.readline() != "True":
            raise Failure("is_torchelastic_launched() was not True in the worker")


@case(V1, "test_is_torchelastic_launched")
def v1_is_launched(ctx, tmp):
    is_launched_case(ctx, tmp, "--run_path", "--nproc_per_node=1", "--out_file")


def init_method_case(ctx, tmp, flags, init):
    port = free_port()
    names = dict(run_path="--run_path", nproc="--nproc_per_node", addr="--master_addr", port="--master_port",
                 monitor="--monitor_interval", init="--init_method")
    if flags == "dash":
        names = {k: v.replace("_", "-") for k, v in names.items()}
    url = f"tcp://localhost:{port}" if init == "tcp" else "env://"
    rc, out = run(ctx, [names["run_path"], "--nnodes=1", f"{names['nproc']}=4", f"{names['addr']}=localhost",
                        f"{names['port']}={port}", f"{names['monitor']}=1", py("init_method.py"),
                        f"{names['init']}={url}"])
    if rc != 0 or out.count("init_method ok") != 4:
        raise Failure(f"exit {rc}, expected 0 and four workers' all-reduce:\n{out[-3000:]}")


@case(V1, "test_init_method_tcp_with_torchelastic")
def v1_init_tcp(ctx, tmp):
    init_method_case(ctx, tmp, "underscore", "tcp")


@case(V1, "test_init_method_env_with_torchelastic")
def v1_init_env(ctx, tmp):
    init_method_case(ctx, tmp, "underscore", "env")


# PyTorch 2.x: test_run.py (dashed flags, c10d, --logs-specs, prefixes).

def v2_rdzv_id():
    return f"--rdzv-id={uuid.uuid4().int}"


@case(V2, "test_launch_user_script_python")
def v2_user_script_python(ctx, tmp):
    rc, out = run(ctx, ["--nnodes=1", "--nproc-per-node=4", v2_rdzv_id(), "--monitor-interval=1",
                        "--start-method=spawn", py("touch_rank.py"), f"--touch-file-dir={tmp}"])
    expect_ranks(rc, out, tmp, 4)


@case(V2, "test_launch_user_script_python_caffe2_bc")
def v2_caffe2_bc(ctx, tmp):
    rc, out = run(ctx, ["--nnodes=1", "--nproc-per-node=4", "--monitor-interval=1", "--start-method=spawn",
                        "--master-addr=localhost", f"--master-port={free_port()}", "--node-rank=0",
                        py("touch_rank.py"), f"--touch-file-dir={tmp}"])
    expect_ranks(rc, out, tmp, 4)


@case(V2, "test_launch_user_script_bash")
def v2_bash(ctx, tmp):
    bash_case(ctx, tmp, ["--nnodes=1", "--nproc-per-node=4", v2_rdzv_id(), "--monitor-interval=1",
                         "--start-method=spawn", "--no-python"], 4)


@case(V2, "test_launch_user_script_default_nproc")
def v2_default_nproc(ctx, tmp):
    bash_case(ctx, tmp, ["--nnodes=1", v2_rdzv_id(), "--monitor-interval=1", "--start-method=spawn",
                         "--no-python"], 1)


@case(V2, "test_launch_with_env_vars")
def v2_env_vars(ctx, tmp):
    env_vars_case(ctx, tmp, {"PET_RDZV_ID": str(uuid.uuid4().int)})


def v2_nproc_common():
    return ["--nnodes=1", "--nproc-per-node=X", v2_rdzv_id(), "--monitor-interval=1", "--start-method=spawn",
            "--no-python"]


@case(V2, "test_nproc_launch_auto_configurations")
def v2_nproc_auto(ctx, tmp):
    nproc_case(ctx, tmp, v2_nproc_common(), "auto", cpu_count_without_gpus())


@case(V2, "test_nproc_launch_number_configurations")
def v2_nproc_number(ctx, tmp):
    nproc_case(ctx, tmp, v2_nproc_common(), "4", 4)


@case(V2, "test_nproc_launch_unknown_configurations")
def v2_nproc_unknown(ctx, tmp):
    nproc_case(ctx, tmp, v2_nproc_common(), "unknown", None)


def v2_c10d(conf):
    return ["--rdzv-backend=c10d", f"--rdzv-endpoint=localhost:{free_port()}", conf, v2_rdzv_id()]


@case(V2, "test_launch_elastic")
def v2_elastic(ctx, tmp):
    rc, out = run(ctx, ["--nnodes=1:2", "--nproc-per-node=4",
                        *v2_c10d("--rdzv-conf='join_timeout=5,last_call_timeout=1,timeout=5'"), "--monitor-interval=1",
                        "--start-method=spawn", py("touch_rank.py"), f"--touch-file-dir={tmp}"])
    expect_ranks(rc, out, tmp, 4)


@case(V2, "test_launch_elastic_worker_raise_exception")
def v2_elastic_worker_raise(ctx, tmp):
    rc, out = run(ctx, ["--nnodes=1:2", "--nproc-per-node=4",
                        *v2_c10d("--rdzv-conf='join_timeout=5,last_call_timeout=1,timeout=5'"), "--monitor-interval=1",
                        "--max-restarts=0", "--start-method=spawn", py("touch_rank.py"), "--fail"])
    expect_worker_failure(rc, out)


@case(V2, "test_launch_standalone")
def v2_standalone(ctx, tmp):
    rc, out = run(ctx, ["--nnodes=1", "--nproc-per-node=4", "--standalone", "--monitor-interval=1",
                        "--start-method=spawn", py("touch_rank.py"), f"--touch-file-dir={tmp}"])
    expect_ranks(rc, out, tmp, 4)


@case(V2, "test_launch_run_path")
def v2_run_path(ctx, tmp):
    rc, out = run(ctx, ["--run-path", "--nnodes=1", "--nproc-per-node=4", "--monitor-interval=1",
                        "--start-method=spawn", py("touch_rank.py"), f"--touch-file-dir={tmp}"])
    expect_ranks(rc, out, tmp, 4)


@case(V2, "test_launch_elastic_multiple_agents")
def v2_multiple_agents(ctx, tmp):
    two_agents(ctx, tmp, ["--nnodes=1:2", "--nproc-per-node=4", *v2_c10d("--rdzv_conf=timeout=5"),
                          "--monitor-interval=1", "--start-method=spawn", py("touch_rank.py"),
                          f"--touch-file-dir={tmp}"])


@case(V2, "test_min_max_nodes_parse")
def v2_min_max(ctx, tmp):
    min_max_case(ctx, tmp)


@case(V2, "test_is_torchelastic_launched")
def v2_is_launched(ctx, tmp):
    is_launched_case(ctx, tmp, "--run-path", "--nproc-per-node=1", "--out-file")


@case(V2, "test_is_torchelastic_launched_with_logs_spec_defined")
def v2_is_launched_logs_specs(ctx, tmp):
    is_launched_case(ctx, tmp, "--run-path", "--nproc-per-node=1", "--out-file", ["--logs_specs=default"])


@case(V2, "test_logs_logs_spec_entrypoint_must_be_defined")
def v2_logs_specs_missing(ctx, tmp):
    rc, out = run(ctx, ["--run-path", "--nnodes=1", "--nproc-per-node=1", "--monitor-interval=1",
                        "--logs_specs=DOESNOT_EXIST", py("is_launched.py"), f"--out-file={tmp}/out"])
    expect_error(rc, out, tmp)


@case(V2, "test_init_method_tcp_with_torchelastic")
def v2_init_tcp(ctx, tmp):
    init_method_case(ctx, tmp, "dash", "tcp")


@case(V2, "test_init_method_env_with_torchelastic")
def v2_init_env(ctx, tmp):
    init_method_case(ctx, tmp, "dash", "env")


@case(V2, "test_capture_logs_using_default_logs_specs")
def v2_capture_logs(ctx, tmp):
    rc, out = run(ctx, ["--nnodes=1", "--nproc-per-node=4", v2_rdzv_id(), "--redirect=3", "--tee=3",
                        "--monitor-interval=1", "--start-method=spawn", "--no-python", py("touch_rank"), tmp],
                  {"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": "[rank${rank}]: "})
    expect_ranks(rc, out, tmp, 4)
    for i in range(4):
        if f"[rank{i}]: creating " not in out:
            raise Failure(f"no '[rank{i}]: creating ' line on the console:\n{out[-3000:]}")


# torch.distributed.launch: launch_test.py.

@case(LT, "test_launch_without_env")
def lt_without_env(ctx, tmp):
    rc, out = run(ctx, ["--nnodes=1", "--nproc-per-node=4", "--monitor-interval=1", "--start-method=spawn",
                        "--master-addr=localhost", f"--master-port={free_port()}", "--node-rank=0",
                        py("local_rank_script.py")], launcher=ctx.launch)
    if rc != 0 or out.count("local_rank_script rank") != 4:
        raise Failure(f"exit {rc}, expected 0 with --local_rank=N for each of 4 workers:\n{out[-3000:]}")


@case(LT, "test_launch_with_env")
def lt_with_env(ctx, tmp):
    rc, out = run(ctx, ["--nnodes=1", "--nproc-per-node=4", "--monitor-interval=1", "--start-method=spawn",
                        "--master-addr=localhost", f"--master-port={free_port()}", "--node-rank=0", "--use-env",
                        py("touch_rank.py"), f"--touch-file-dir={tmp}"], launcher=ctx.launch)
    expect_ranks(rc, out, tmp, 4)


# PyTorch 2.x: test_api.py (launch_agent exports --signals-to-handle to the workers) as
# command lines, and the behaviours of torchrun 2.15's run.py, torch/distributed/launcher/api.py and
# elastic/multiprocessing/api.py that its newest tests cover: the fresh run id and free port
# of a plain single-node job, OMP_NUM_THREADS, TORCH_NCCL_ASYNC_ERROR_HANDLING,
# --duplicate-*-filters, --shutdown-timeout, --virtual-local-rank without GPUs.

API = "test_api.py@2.x"
B215 = "run.py@2.15"


def env_of(tmp, rank):
    path = os.path.join(tmp, f"{rank}.env")
    if not os.path.exists(path):
        raise Failure(f"rank {rank} left no {path}")
    with open(path) as f:
        return dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)


def dump_env(ctx, tmp, args, env=None):
    rc, out = run(ctx, [*args, "--no-python", py("env_dump"), tmp], env)
    if rc != 0:
        raise Failure(f"exit {rc}, expected 0:\n{out[-3000:]}")
    return out


def expect_var(env, name, want):
    if env.get(name) != want:
        raise Failure(f"{name}={env.get(name)!r}, expected {want!r}")


@case(API, "test_launch_agent_sets_signals_env_var")
def api_signals(ctx, tmp):
    dump_env(ctx, tmp, ["--nproc-per-node=1", "--signals-to-handle=SIGTERM,SIGUSR1,SIGUSR2"])
    expect_var(env_of(tmp, 0), "TORCHELASTIC_SIGNALS_TO_HANDLE", "SIGTERM,SIGUSR1,SIGUSR2")


@case(API, "test_launch_agent_default_signals")
def api_default_signals(ctx, tmp):
    dump_env(ctx, tmp, ["--nproc-per-node=1"])
    expect_var(env_of(tmp, 0), "TORCHELASTIC_SIGNALS_TO_HANDLE", "SIGTERM,SIGINT,SIGHUP,SIGQUIT")


@case(B215, "plain single node: a uuid4 run id and a free port")
def b_free_port(ctx, tmp):
    dump_env(ctx, tmp, ["--nproc-per-node=2"])
    e0, e1 = env_of(tmp, 0), env_of(tmp, 1)
    run_id = e0.get("TORCHELASTIC_RUN_ID", "")
    try:
        if uuid.UUID(run_id).version != 4:
            raise ValueError
    except ValueError:
        raise Failure(f"TORCHELASTIC_RUN_ID={run_id!r}, expected a uuid4")
    if e0.get("MASTER_PORT") != e1.get("MASTER_PORT") or e0.get("MASTER_PORT") in (None, "29500", "0"):
        raise Failure(f"MASTER_PORT {e0.get('MASTER_PORT')} / {e1.get('MASTER_PORT')}: expected one free port")
    # An explicit --master-port keeps the static rendezvous and the given run id.
    fresh_dir(tmp)
    port = free_port()
    dump_env(ctx, tmp, ["--nproc-per-node=1", f"--master-port={port}", "--rdzv-id=job7"])
    expect_var(env_of(tmp, 0), "MASTER_PORT", str(port))
    expect_var(env_of(tmp, 0), "TORCHELASTIC_RUN_ID", "job7")


@case(B215, "OMP_NUM_THREADS=1 only when unset and nproc_per_node > 1")
def b_omp(ctx, tmp):
    dump_env(ctx, tmp, ["--nproc-per-node=1"], {"OMP_NUM_THREADS": None})
    if "OMP_NUM_THREADS" in env_of(tmp, 0):
        raise Failure("OMP_NUM_THREADS set for a single worker")
    fresh_dir(tmp)
    dump_env(ctx, tmp, ["--nproc-per-node=2"], {"OMP_NUM_THREADS": None})
    expect_var(env_of(tmp, 1), "OMP_NUM_THREADS", "1")
    fresh_dir(tmp)
    dump_env(ctx, tmp, ["--nproc-per-node=2"], {"OMP_NUM_THREADS": "3"})
    expect_var(env_of(tmp, 1), "OMP_NUM_THREADS", "3")


@case(B215, "TORCH_NCCL_ASYNC_ERROR_HANDLING only, not the deprecated name")
def b_nccl_async(ctx, tmp):
    dump_env(ctx, tmp, ["--nproc-per-node=1"], {"NCCL_ASYNC_ERROR_HANDLING": None})
    e = env_of(tmp, 0)
    expect_var(e, "TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")
    if "NCCL_ASYNC_ERROR_HANDLING" in e:
        raise Failure("NCCL_ASYNC_ERROR_HANDLING set: every 2.x rank warns about the deprecated name")


def filtered(tmp, name):
    found = [os.path.join(d, name) for d, _, files in os.walk(os.path.join(tmp, "logs")) if name in files]
    if len(found) != 1:
        raise Failure(f"expected one {name} under the log dir, found {found}")
    if os.path.basename(os.path.dirname(found[0])) != "attempt_0":
        raise Failure(f"{found[0]} is not in the attempt directory")
    with open(found[0]) as f:
        return f.read()


@case(B215, "--duplicate-stdout/stderr-filters: matching tee'd lines of every rank in the attempt dir")
def b_duplicate_filters(ctx, tmp):
    rc, out = run(ctx, ["--nproc-per-node=2", f"--log-dir={tmp}/logs", "--tee=3",
                        "--duplicate-stdout-filters=loss,,acc,step", "--duplicate_stderr_filters=warn",
                        "--no-python", py("print_lines")])
    if rc != 0:
        raise Failure(f"exit {rc}, expected 0:\n{out[-3000:]}")
    so, se = filtered(tmp, "filtered_stdout.log"), filtered(tmp, "filtered_stderr.log")
    for rank in (0, 1):
        for text, where in ((f"rank {rank} loss,acc 0.5", so), (f"rank {rank} step 2", so),
                            (f"rank {rank} warn: careful", se)):
            if text not in where:
                raise Failure(f"'{text}' missing from the filtered logs:\n{so}\n{se}")
    if "other line" in so or "quiet" in se:
        raise Failure(f"a line matching no filter was copied:\n{so}\n{se}")


@case(B215, "--duplicate-stdout-filters with --local-ranks-filter: only the ranks on the console")
def b_duplicate_filters_ranks(ctx, tmp):
    rc, out = run(ctx, ["--nproc-per-node=2", f"--log-dir={tmp}/logs", "--tee=1", "--local-ranks-filter=1",
                        "--duplicate-stdout-filters=step", "--no-python", py("print_lines")])
    if rc != 0:
        raise Failure(f"exit {rc}, expected 0:\n{out[-3000:]}")
    so = filtered(tmp, "filtered_stdout.log")
    if "rank 1 step 2" not in so or "rank 0" in so:
        raise Failure(f"expected only rank 1's matching line:\n{so}")


@case(B215, "--shutdown-timeout: a worker ignoring SIGTERM is killed after it")
def b_shutdown_timeout(ctx, tmp):
    began = time.monotonic()
    rc, out = run(ctx, ["--nproc-per-node=2", "--shutdown-timeout=2", "--no-python", py("ignore_term")])
    took = time.monotonic() - began
    if rc == 0:
        raise Failure(f"exit 0, expected the failed worker's:\n{out[-3000:]}")
    if took > 25:
        raise Failure(f"took {took:.0f} s: the worker ignoring SIGTERM was not killed after 2 s")


@case(B215, "--virtual-local-rank: LOCAL_RANK=0, CUDA_VISIBLE_DEVICES the rank's device")
def b_virtual_local_rank(ctx, tmp):
    dump_env(ctx, tmp, ["--nproc-per-node=2", "--virtual-local-rank"], {"CUDA_VISIBLE_DEVICES": "3,5"})
    for rank, device in ((0, "3"), (1, "5")):
        expect_var(env_of(tmp, rank), "LOCAL_RANK", "0")
        expect_var(env_of(tmp, rank), "CUDA_VISIBLE_DEVICES", device)


@case(B215, "--event-log-handler=console, --numa-binding on a machine without GPUs, --nproc-per-node=xpu")
def b_new_flags(ctx, tmp):
    dump_env(ctx, tmp, ["--nproc-per-node=1", "--event-log-handler=console"])
    if not os.path.exists("/dev/nvidia0"):
        for flag in ("--numa-binding=node", "--nproc-per-node=xpu"):
            fresh_dir(tmp)
            rc, out = run(ctx, ["--nproc-per-node=1" if "numa" in flag else flag, *([flag] if "numa" in flag else []),
                                "--no-python", py("env_dump"), tmp])
            expect_error(rc, out, tmp)


# Cases expected to fail under ddp-launch, with the reason (docs/torchrun-compat.md); none today.
KNOWN_FAILING = {}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launcher", required=True)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--torchrun", help="a Python file that runs torch.distributed.run's main")
    parser.add_argument("-k", dest="only", default="", help="run the cases whose id contains this")
    args = parser.parse_args()
    if subprocess.run([args.python, "-c", "import torch.distributed"], capture_output=True).returncode != 0:
        print(f"SKIP: {args.python} has no torch (the replay's workers import it; Debian's python3-torch)")
        sys.exit(77)
    ctx = Context(args)
    results = {"pass": [], "fail": [], "skip": []}
    try:
        for case_id, fn in CASES:
            if args.only not in case_id:
                continue
            tmp = tempfile.mkdtemp(prefix="replay-")
            began = time.monotonic()
            try:
                fn(ctx, tmp)
                verdict, why = "pass", ""
            except Skip as e:
                verdict, why = "skip", str(e)
            except Failure as e:
                verdict, why = "fail", str(e)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            results[verdict].append(case_id)
            print(f"{verdict.upper():4} {case_id} ({time.monotonic() - began:.1f} s)"
                  + (f"\n     {why.strip()}" if why else ""), flush=True)
    finally:
        ctx.close()
    who = "torchrun" if args.torchrun else "ddp-launch"
    print(f"{who}: {len(results['pass'])} of {len(results['pass']) + len(results['fail'])} cases pass"
          + (f", {len(results['skip'])} skipped" if results["skip"] else ""))
    if args.torchrun:
        return 0
    unexpected = [c for c in results["fail"] if c not in KNOWN_FAILING]
    for c in unexpected:
        print(f"FAIL: {c}")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
