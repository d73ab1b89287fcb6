"""Progress feed for workers under ddp-launch: tells the launcher that this rank moves.

Dependency-free (standard library only). Under ddp-launch, DDP_LAUNCH_PROGRESS_FILE names
a 128-byte record (layout: contract/progress_record.hpp, docs/hangs.md) that this module
memory-maps and updates with plain stores; without it every call is a no-op.

    import ddp_progress
    for step, batch in enumerate(loader):
        ...
        ddp_progress.heartbeat(step + 1)
    with ddp_progress.pause(timeout=600):   # a checkpoint save, an evaluation
        save_checkpoint()
    with ddp_progress.saving():             # the goodput ledger's stall (docs/goodput.md)
        torch.save(state, path)
    ddp_progress.restored(step)             # after loading a checkpoint of `step`
    ddp_progress.wrap_torch_distributed()   # optional: every dist collective is fed, and
                                            # init_process_group's return (joined())

On import, if DDP_LAUNCH_STACKS_FILE is set, faulthandler is enabled to append every
thread's Python traceback to that file: the launcher sends SIGABRT to a hung worker after
capturing its native stacks.
"""
import contextlib
import faulthandler
import mmap
import os
import struct
import time

MAGIC = 0x50504444
VERSION = 1
RECORD_SIZE = 128
OPS = {"all_reduce": 1, "broadcast": 2, "all_gather": 3, "reduce_scatter": 4, "barrier": 5,
       "reduce": 6, "gather": 7, "scatter": 8, "all_to_all": 9, "send": 10, "recv": 11}
# torch.distributed's functions that wrap_torch_distributed feeds, and the op each records: torch
# 1.13's names and the ones 2.x scripts call (the tensor forms, the object forms, point to point).
WRAPPED = {name: name for name in ("all_reduce", "broadcast", "all_gather", "reduce_scatter", "barrier",
                                   "reduce", "gather", "scatter", "all_to_all", "send", "recv")}
WRAPPED.update({"all_gather_into_tensor": "all_gather", "_all_gather_base": "all_gather",
                "all_gather_object": "all_gather", "reduce_scatter_tensor": "reduce_scatter",
                "_reduce_scatter_base": "reduce_scatter", "all_to_all_single": "all_to_all",
                "broadcast_object_list": "broadcast", "gather_object": "gather",
                "scatter_object_list": "scatter", "batch_isend_irecv": "send"})
DTYPES = {"float32": 1, "float64": 2, "float16": 3, "bfloat16": 4, "int8": 5, "uint8": 6,
          "int32": 7, "int64": 8, "bool": 9}

# Field offsets (contract/progress_record.hpp).
_UPDATES, _STEP, _SEQ_ENTERED, _SEQ_COMPLETED, _NUMEL = 8, 16, 24, 32, 40
_OP, _DTYPE, _GROUP, _PAUSED, _PAUSE_DEADLINE = 48, 52, 56, 60, 64
_STEP_TIME, _COLLECTIVE_TIME, _WRITE_TIME, _JOINED_TIME, _RESTORED_TIME = 72, 80, 88, 96, 104
_SAVING_MS, _RESTORED_NEXT_STEP = 116, 120

_map = None
_stacks_file = None  # kept open for faulthandler
_state = {"updates": 0, "seq_entered": 0, "seq_completed": 0, "paused": 0, "saving_ns": 0}


def _open():
    global _map
    path = os.environ.get("DDP_LAUNCH_PROGRESS_FILE")
    if not path:
        return
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return  # not under a launcher that watches: stay a no-op
    try:
        if os.fstat(fd).st_size < RECORD_SIZE:
            os.ftruncate(fd, RECORD_SIZE)
        _map = mmap.mmap(fd, RECORD_SIZE)
    finally:
        os.close(fd)
    struct.pack_into("<II", _map, 0, MAGIC, VERSION)
    _touch(0)


def _u64(offset, value):
    struct.pack_into("<Q", _map, offset, value)


def _touch(time_offset):
    now = time.monotonic_ns()  # CLOCK_MONOTONIC on Linux, like the launcher's
    if time_offset:
        _u64(time_offset, now)
    _u64(_WRITE_TIME, now)
    _state["updates"] += 1
    _u64(_UPDATES, _state["updates"])


def enabled():
    """True when a launcher watches this process's progress."""
    return _map is not None


def heartbeat(step):
    """Records that `step` steps are complete (call once per training step)."""
    if _map is None:
        return
    _u64(_STEP, int(step))
    _touch(_STEP_TIME)


def joined():
    """Records that init_process_group returned (the recovery timeline's "joined")."""
    if _map is not None:
        _touch(_JOINED_TIME)


def restored(step=None):
    """Records that the training state was restored (the recovery timeline's "restored"); with
    `step`, the restored state's step (the launcher's goodput ledger: later steps redo nothing
    before it). heartbeat() then counts on from it: pass global steps."""
    if _map is not None:
        if step is not None and int(step) >= 0:
            _u64(_RESTORED_NEXT_STEP, int(step) + 1)
        _touch(_RESTORED_TIME)


def saved(seconds):
    """Records that the training thread was blocked `seconds` saving a snapshot or checkpoint
    (summed; the goodput ledger's `stall`)."""
    if _map is None or seconds <= 0:
        return
    _state["saving_ns"] += int(seconds * 1e9)
    struct.pack_into("<I", _map, _SAVING_MS, (_state["saving_ns"] // 1000000) & 0xFFFFFFFF)


@contextlib.contextmanager
def saving():
    """`with ddp_progress.saving(): torch.save(...)`: the block's time is saved()."""
    start = time.monotonic()
    try:
        yield
    finally:
        saved(time.monotonic() - start)


def reopen():
    """Reads the environment again: a standby that became a worker (ddp_standby.point()) imported
    this module before its worker's DDP_LAUNCH_PROGRESS_FILE and DDP_LAUNCH_STACKS_FILE were set."""
    global _map
    if _map is not None:
        _map.close()
        _map = None
    _state.update(updates=0, seq_entered=0, seq_completed=0, paused=0, saving_ns=0)
    _open()
    _enable_faulthandler()


def collective_enter(op, numel=0, dtype="", group=0):
    """Records entering a collective; returns its sequence number."""
    _state["seq_entered"] += 1
    if _map is not None:
        _u64(_SEQ_ENTERED, _state["seq_entered"])
        _u64(_NUMEL, int(numel))
        struct.pack_into("<III", _map, _OP, OPS.get(op, 12), DTYPES.get(dtype, 0), int(group))
        _touch(_COLLECTIVE_TIME)
    return _state["seq_entered"]


def collective_exit():
    """Records that the collective entered last has completed."""
    _state["seq_completed"] = _state["seq_entered"]
    if _map is not None:
        _u64(_SEQ_COMPLETED, _state["seq_completed"])
        _touch(_COLLECTIVE_TIME)


@contextlib.contextmanager
def pause(timeout=None):
    """A legitimate long pause (checkpoint, evaluation): not a hang, for at most `timeout` s."""
    if _map is None:
        yield
        return
    _state["paused"] += 1
    deadline = 0 if timeout is None else time.monotonic_ns() + int(timeout * 1e9)
    struct.pack_into("<I", _map, _PAUSED, _state["paused"])
    _u64(_PAUSE_DEADLINE, deadline)
    _touch(0)
    try:
        yield
    finally:
        _state["paused"] -= 1
        struct.pack_into("<I", _map, _PAUSED, _state["paused"])
        if _state["paused"] == 0:
            _u64(_PAUSE_DEADLINE, 0)
        _touch(0)


def wrap_torch_distributed():
    """Wraps torch.distributed's synchronous collectives so that each one is fed, and
    init_process_group so that its return is recorded (joined())."""
    import torch.distributed as dist

    init = dist.init_process_group
    if not getattr(init, "_ddp_progress", False):
        def init_fed(*args, **kwargs):
            out = init(*args, **kwargs)
            joined()
            return out
        init_fed._ddp_progress = True
        dist.init_process_group = init_fed

    def wrap(name, op):
        inner = getattr(dist, name, None)
        if inner is None or getattr(inner, "_ddp_progress", False):
            return

        def fed(*args, **kwargs):
            tensor = args[0] if args else kwargs.get("tensor")
            numel = getattr(tensor, "numel", lambda: 0)()
            dtype = str(getattr(tensor, "dtype", "")).replace("torch.", "")
            collective_enter(op, numel, dtype)
            try:
                return inner(*args, **kwargs)
            finally:
                collective_exit()
        fed._ddp_progress = True
        setattr(dist, name, fed)

    for name, op in WRAPPED.items():
        wrap(name, op)


def _enable_faulthandler():
    global _stacks_file
    path = os.environ.get("DDP_LAUNCH_STACKS_FILE")
    if not path:
        return
    try:
        _stacks_file = open(path, "a")
    except OSError:
        return
    faulthandler.enable(file=_stacks_file, all_threads=True)


_open()
_enable_faulthandler()
