# ddp-launch's Python standby (warm restarts, docs/warm-restarts.md). The launcher runs it as
# `python FLAGS -c <this file>` with the worker slot's environment plus DDP_LAUNCH_STANDBY_FD
# (its end of the control channel) and DDP_LAUNCH_STANDBY_PRELOAD (modules to import besides
# torch). It imports them (torch only if this interpreter has it), says it is ready (one byte), and blocks until the launcher hands it
# a worker: argv, environment, cwd and stdin/stdout/stderr (contract/standby_handoff.hpp, which
# this mirrors). Then it becomes that worker: the script runs as __main__, as under
# `python -u script.py` (or `-m module`). Standard library only; embedded into ddp-launch.
import os
import socket
import struct
import sys

_MAGIC = b"DDPH"
_VERSION = 1
_MAX_PAYLOAD = 4 << 20
_FD_COUNT = 3
_READY = b"R"


# What DistributedDataParallel's constructor imports the first time (torch 2.x: torch._dynamo,
# with sympy and ~900 modules: about a second): paid here, before the failure, not after it.
_DDP_LAZY_IMPORTS = ("torch.distributed", "torch.nn.parallel", "torch._dynamo")


def _preload():
    try:
        import torch  # noqa: F401  (what a warm restart saves most)
    except ModuleNotFoundError as e:
        if e.name != "torch":
            raise
        # An interpreter without torch runs a script that does not need it (one that does
        # fails in the standby's worker just as it would cold): the interpreter's start is saved.
    else:
        for name in _DDP_LAZY_IMPORTS:
            try:
                __import__(name)
            except ImportError:  # an older or smaller torch: nothing to pay for there
                break
    for name in [m for m in os.environ.pop("DDP_LAUNCH_STANDBY_PRELOAD", "").split(",") if m]:
        __import__(name)


def _receive(sock):
    """The handoff frame and its fds; None when the launcher closed the channel."""
    data, fds = b"", []
    want = 4
    while len(data) < want:
        chunk, new_fds, _flags, _addr = socket.recv_fds(sock, want - len(data), _FD_COUNT)
        if not chunk:
            return None
        fds.extend(new_fds)
        data += chunk
        if want == 4 and len(data) == 4:
            (length,) = struct.unpack("<I", data)
            if length > _MAX_PAYLOAD:
                raise SystemExit("ddp-launch standby: the handoff is too large")
            want = 4 + length
    return data[4:], fds


def _decode(payload):
    pos = 0

    def take(n):
        nonlocal pos
        if len(payload) - pos < n:
            raise ValueError("truncated standby handoff")
        out = payload[pos:pos + n]
        pos += n
        return out

    def u32():
        return struct.unpack("<I", take(4))[0]

    def string():
        return os.fsdecode(take(u32()))

    if take(4) != _MAGIC or take(1)[0] != _VERSION:
        raise ValueError("standby handoff of another version: the launcher and this standby differ")
    argv = [string() for _ in range(u32())]
    env = [string() for _ in range(u32())]
    cwd = string()
    if pos != len(payload) or not argv:
        raise ValueError("malformed standby handoff")
    return argv, env, cwd


def _target(argv):
    """('path', script, args) or ('module', name, args) from `python [flags] script|-m mod args`."""
    i = 1
    with_value = {"-W", "-X", "--check-hash-based-pycs"}
    while i < len(argv):
        a = argv[i]
        if a == "-m":
            return "module", argv[i + 1], argv[i + 2:]
        if a in with_value:
            i += 2
            continue
        if a.startswith("-") and a != "-":
            i += 1
            continue
        return "path", a, argv[i + 1:]
    raise ValueError("no script in the worker's command line")


def _become(argv, env, cwd, fds):
    os.environ.clear()
    for entry in env:
        key, sep, value = entry.partition("=")
        if sep and key:
            os.environ[key] = value
    if cwd:
        os.chdir(cwd)
    sys.stdout.flush()
    sys.stderr.flush()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    if os.environ.get("PYTHONFAULTHANDLER"):
        import faulthandler
        faulthandler.enable()


def _await_store(limit_s=1.0):
    """A rank other than 0 waits (at most limit_s) until rank 0's store accepts connections.

    Only when worker rank 0 hosts the store (--worker-store=rank0): the launcher's own store
    (TORCHELASTIC_USE_AGENT_STORE=True) listens before any worker starts.

    A restarted rank 0 in a standby listens within milliseconds, but a rank that connects
    first is refused, and c10d's TCPStore client retries a refused connect only a second
    later: the wait keeps warm restarts warm. Scripts that use no env:// store lose at most
    limit_s (a cold start costs more).
    """
    addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT", "")
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
        return
    if os.environ.get("RANK", "0") == "0" or not addr or not port.isdigit():
        return
    import time
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection((addr, int(port)), timeout=limit_s).close()
            return
        except OSError:
            time.sleep(0.005)


def _print_exception(exc, path):
    """The traceback as `python script.py` prints it: from the script's frames on."""
    import traceback
    tb = exc.__traceback__
    while tb is not None and path and os.path.abspath(tb.tb_frame.f_code.co_filename) != path:
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb if tb is not None else exc.__traceback__)


def _run(kind, name, args):
    import runpy
    if kind == "module":
        sys.argv = ["-m"] + args  # runpy sets argv[0] to the module's file
        sys.path[0] = os.getcwd()
        runpy.run_module(name, run_name="__main__", alter_sys=True)
        return None
    path = os.path.abspath(name)
    sys.argv = [name] + args
    sys.path[0] = os.path.dirname(path)
    runpy.run_path(path, run_name="__main__")  # __file__ absolute, as Python 3.11 makes it
    return path


def main():
    fd = int(os.environ.pop("DDP_LAUNCH_STANDBY_FD"))
    _preload()
    sock = socket.socket(fileno=fd)
    try:
        sock.sendall(_READY)
    except OSError:
        pass  # handed a worker before it was ready: the launcher's end is closed, the handoff queued
    received = _receive(sock)
    if received is None:
        os._exit(0)  # the launcher let this standby go
    payload, fds = received
    sock.close()
    if len(fds) != _FD_COUNT:
        raise SystemExit("ddp-launch standby: the handoff carried no fds")
    argv, env, cwd = _decode(payload)
    kind, name, args = _target(argv)
    _become(argv, env, cwd, fds)
    _await_store()
    path = os.path.abspath(name) if kind == "path" else None
    try:
        _run(kind, name, args)
    except SystemExit:
        raise
    except KeyboardInterrupt as exc:  # as the interpreter does: the traceback, then die of SIGINT
        import signal
        _print_exception(exc, path)
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        raise
    except BaseException as exc:  # noqa: B902 - printed as the interpreter would, then exit 1
        _print_exception(exc, path)
        sys.stderr.flush()
        sys.exit(1)


main()
