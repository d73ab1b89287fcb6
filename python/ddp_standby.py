# ddp-launch's Python standby (warm restarts, docs/warm-restarts.md). The launcher runs it as
# `python FLAGS -c <this file>` with the worker slot's environment plus DDP_LAUNCH_STANDBY_FD
# (its end of the control channel) and DDP_LAUNCH_STANDBY_PRELOAD (modules to import besides
# torch). It imports them (torch only if this interpreter has it), says it is ready (one byte),
# and blocks until the launcher hands it a worker: argv, environment, cwd and
# stdin/stdout/stderr (contract/standby_handoff.hpp, which this mirrors). Then it becomes that
# worker: the script runs as __main__, as under `python -u script.py` (or `-m module`).
#
# A script that calls point() (`import ddp_standby; ddp_standby.point()`: the launcher puts
# its copy of this file on every worker's PYTHONPATH) marks where its rank-independent start
# ends. Once a worker has passed it (the features field of its progress record says so), the
# launcher sends its standbys a prepare frame: they run the script with the worker's
# identity hidden up to point(), which says so and blocks there for the handoff, and the
# restart continues below it. Standard library only; embedded into ddp-launch.
import os
import socket
import struct
import sys

_MAGIC = b"DDPH"
_VERSION = 1
_MAX_PAYLOAD = 4 << 20
_FD_COUNT = 3
_READY = b"R"
_POINT = b"P"
_PREPARE_MAGIC = b"DDPS"
_FD_ENV = "DDP_LAUNCH_STANDBY_FD"
_PENDING_ENV = "DDP_LAUNCH_STANDBY_PENDING"  # set in a prepared standby until the handoff
_FEATURES_OFFSET = 112  # the progress record's features field (contract/progress_record.hpp)
_FEATURE_STANDBY_POINT = 1
# What says who a worker is, hidden above the point (an earlier attempt's values; the C++
# standby hook hides the same).
_IDENTITY = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
             "ROLE_RANK", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT",
             "TORCHELASTIC_RUN_ID", "TORCHELASTIC_ERROR_FILE", "DDP_LAUNCH_PROGRESS_FILE")


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


def _reader(payload):
    """take(n), u32(), string() and done() over payload, front to back."""
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

    def done():
        return pos == len(payload)

    return take, u32, string, done


def _decode(payload):
    """(argv, env, cwd) of a handoff, or (argv, None, None) of a prepare frame."""
    take, u32, string, done = _reader(payload)
    magic = take(4)
    if magic not in (_MAGIC, _PREPARE_MAGIC) or take(1)[0] != _VERSION:
        raise ValueError("standby handoff of another version: the launcher and this standby differ")
    argv = [string() for _ in range(u32())]
    env, cwd = ([string() for _ in range(u32())], string()) if magic == _MAGIC else (None, None)
    if not done() or not argv:
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


def _say(sock, byte):
    try:
        sock.sendall(byte)
    except OSError:
        pass  # handed a worker before it was ready: the launcher's end is closed, the handoff queued


def _take_frame(sock):
    """The next frame: (argv, env, cwd, fds), env None for a prepare frame; exits when the
    launcher let the standby go."""
    received = _receive(sock)
    if received is None:
        os._exit(0)
    payload, fds = received
    argv, env, cwd = _decode(payload)
    if env is not None and len(fds) != _FD_COUNT:
        raise SystemExit("ddp-launch standby: the handoff carried no fds")
    return argv, env, cwd, fds


def point():
    """Where the script's rank-independent start ends (docs/warm-restarts.md, "The standby point").

    In a standby that ddp-launch prepared (it runs the script up to here before any failure):
    says so, blocks until the launcher hands it a worker, becomes that worker (environment,
    cwd, stdin/stdout/stderr) and returns. Anywhere else (a cold worker, no launcher, a second
    call) it returns at once. Above it: nothing rank-dependent (RANK, WORLD_SIZE, MASTER_ADDR,
    ... are unset in a standby), no process group, no store, no device, no output the user must
    see. Once a worker of the job passed it, the launcher prepares the job's standbys.
    """
    fd_text = os.environ.get(_FD_ENV)
    if not fd_text or not os.environ.get(_PENDING_ENV):
        _show_point()
        return
    del os.environ[_FD_ENV]
    sock = socket.socket(fileno=int(fd_text))
    _say(sock, _POINT)
    argv, env, cwd, fds = _take_frame(sock)
    sock.close()
    if env is None:
        raise SystemExit("ddp-launch standby: a second prepare frame")
    _become(argv, env, cwd, fds)  # the pending mark goes with the standby's environment
    _await_store()
    progress = sys.modules.get("ddp_progress")
    if progress is not None:  # imported above the point, without the worker's record
        progress.reopen()
    _show_point()


def _show_point():
    """Tells the launcher (the features field of this worker's progress record, set whether or not
    the record is fed) that the script passed its point: its next standbys are prepared."""
    path = os.environ.get("DDP_LAUNCH_PROGRESS_FILE")
    if not path:
        return
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return
    try:
        old = os.pread(fd, 4, _FEATURES_OFFSET)
        features = struct.unpack("<I", old)[0] if len(old) == 4 else 0
        os.pwrite(fd, struct.pack("<I", features | _FEATURE_STANDBY_POINT), _FEATURES_OFFSET)
    except OSError:
        pass
    finally:
        os.close(fd)


def main():
    fd = int(os.environ.pop(_FD_ENV))
    _preload()
    sock = socket.socket(fileno=fd)
    _say(sock, _READY)
    argv, env, cwd, fds = _take_frame(sock)
    kind, name, args = _target(argv)
    if env is None:  # prepared: the script runs up to point(), which takes the handoff
        for key in _IDENTITY:
            os.environ.pop(key, None)
        os.environ[_PENDING_ENV] = "1"
        os.environ[_FD_ENV] = str(sock.detach())
    else:
        sock.close()
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
    if os.environ.get(_PENDING_ENV):  # a standby: the script ended without reaching its point
        sys.stderr.write("ddp-launch standby: the script ended above ddp_standby.point()\n")
        sys.exit(3)


if __name__ == "__main__":
    main()
