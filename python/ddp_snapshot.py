"""In-memory snapshots for workers under ddp-launch: the newest training state survives a crash.

Dependency-free (standard library only; torch only when given tensors). Under ddp-launch,
DDP_LAUNCH_SNAPSHOT_FILE names a file in /dev/shm that the launcher keeps across restarts
(layout: contract/snapshot_region.hpp, docs/snapshots.md): two slots, each checksummed
(CRC-32, written last), so a slot torn by a crash mid-copy is never read back.

    import ddp_snapshot
    resumed = ddp_snapshot.restore(map_location="cpu")  # collective; load() for one process
    start = 0
    if resumed:
        start, state = resumed
        model.load_state_dict(state["model"]); opt.load_state_dict(state["opt"])
    for step in range(start, steps):
        ...
        ddp_snapshot.save(step + 1, {"model": model.state_dict(), "opt": opt.state_dict()})

Under DDP every rank must resume from the same step: call restore() instead of load() on
every rank after init_process_group (tests/python/snapshot_resume.py). It agrees on the
smallest newest step among the ranks that hold a snapshot; ranks without it (a replacement
node, a lost region) receive it from the lowest rank that has it and keep it in their own
region. restore(checkpoint_dir=DIR) resumes from whichever is newer, that snapshot or the
newest DIR/ckpt_<step>.pt (a job that checkpoints more often than it snapshots, a cold start),
and says which and why; it returns None only when there is neither. last_restore tells how
the last restore() went (which source and why, healed, from which rank).

save() lays a state of tensors out as a tensor table (ddp_tensor_table, beside this file):
each tensor copied once, straight into the region (about a memory copy: 1 ms for 23 MB), and
read back as views of the bytes read; anything else (sparse or quantized tensors, a tensor
subclass) is a torch.save, whose checksum and copy save(step, state, background=True) leaves to
a thread while the next step runs (see save(); wait() blocks until it landed).

Without ddp-launch (no DDP_LAUNCH_SNAPSHOT_FILE) save() warns once and does nothing and
load() returns None. If the file system cannot hold a snapshot (/dev/shm full or too
small) save() warns once naming the size needed and snapshots stay off for this process.

With ddp-launch --snapshot-persist-dir DIR the launcher also writes rank 0's newest snapshot
to DIR/ckpt_<step>.pt in the background; load_persisted(DIR) reads it on a cold start.
"""
import collections
import io
import mmap
import os
import struct
import sys
import threading
import zlib

try:
    import ddp_tensor_table  # beside this file; without it, every state is a torch.save
except ImportError:
    ddp_tensor_table = None

MAGIC = 0x53504444
VERSION = 2
HEADER_SIZE = 4096
ALIGN = 4096
ENV_VAR = "DDP_LAUNCH_SNAPSHOT_FILE"

_HEAD = struct.Struct("<IIQ")       # magic, version, header_size
_SLOT = struct.Struct("<QQQQIIQ")   # seq, step, offset, length, checksum, flags, checked (48 bytes)
_SLOTS_AT = 16
_CHECKSUMMED = 32                   # seq, step, offset, length
_PREFIX_CHECKED = 1                 # flags: the checksum covers the payload's first `checked` bytes

_fd = None
_off = False  # snapshots disabled for this process (said once)

# How a restore() went: the step, whether this rank received it (healed), the rank that sent it
# (-1: nobody needed it), the ranks that received it (group ranks), where it came from
# ("snapshot", or the checkpoint file's path) and why that one (one line). None before a
# restore() and after one that found nothing.
Restored = collections.namedtuple("Restored", "step healed source_rank healed_ranks source why",
                                  defaults=("snapshot", ""))
last_restore = None
_NONE = 2 ** 63 - 1  # "no snapshot" in the agreement's all_reduce MIN


def _warn(text):
    sys.stderr.write(f"ddp_snapshot: {text}\n")
    sys.stderr.flush()


def _open():
    """The region's fd, or None (not under ddp-launch, or snapshots are off)."""
    global _fd, _off
    if _fd is not None or _off:
        return _fd
    path = os.environ.get(ENV_VAR)
    if not path:
        _off = True
        _warn(f"{ENV_VAR} is not set (not under ddp-launch): snapshots are off")
        return None
    try:
        _fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except OSError as e:
        _off = True
        _warn(f"cannot open the snapshot region {path}: {e.strerror}; snapshots are off")
    return _fd


def _read_slots(fd):
    head = os.pread(fd, _SLOTS_AT + 2 * _SLOT.size, 0)
    if len(head) < _SLOTS_AT + 2 * _SLOT.size or _HEAD.unpack_from(head) != (MAGIC, VERSION, HEADER_SIZE):
        return [(0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0)]
    return [_SLOT.unpack_from(head, _SLOTS_AT + i * _SLOT.size) for i in range(2)]


def _checksum(seq, step, offset, length, payload, flags=0, checked=0):
    """The descriptor's bytes but the checksum, then the covered payload (contract/snapshot_region.hpp)."""
    covered = checked if flags & _PREFIX_CHECKED and checked < length else length
    descriptor = struct.pack("<QQQQ", seq, step, offset, length) + struct.pack("<IQ", flags, checked)
    return zlib.crc32(memoryview(payload)[:covered], zlib.crc32(descriptor))


def _begin(fd, length):
    """(seq, offset, descriptor offset) of the next write of `length` bytes: the older slot,
    its space reserved and its descriptor emptied; None when the space cannot be reserved
    (warned once, snapshots off)."""
    global _off, _fd
    slots = _read_slots(fd)
    target = 0 if slots[0][0] <= slots[1][0] else 1
    other = slots[1 - target]
    if other[0] == 0 or HEADER_SIZE + length <= other[2]:
        offset = HEADER_SIZE
    else:
        offset = (other[2] + other[3] + ALIGN - 1) // ALIGN * ALIGN
    try:
        info = os.fstat(fd)  # that long already, no holes: fallocate would walk every page again
        if info.st_size < offset + length or info.st_blocks * 512 < info.st_size:
            os.posix_fallocate(fd, offset, max(length, 1))
    except OSError as e:
        _off = True
        _close_maps()
        os.close(fd)
        _fd = None
        where = os.path.dirname(os.environ.get(ENV_VAR, "/dev/shm"))
        _warn(f"cannot reserve {offset + length} bytes in {where} for a snapshot of {length} bytes "
              f"({e.strerror}): snapshots are off for this worker; give {where} more room "
              f"(e.g. docker run --shm-size) or rely on disk checkpoints")
        return None
    desc_at = _SLOTS_AT + target * _SLOT.size
    os.pwrite(fd, _HEAD.pack(MAGIC, VERSION, HEADER_SIZE), 0)
    os.pwrite(fd, bytes(_SLOT.size), desc_at)  # the slot is empty while it is written
    return max(slots[0][0], slots[1][0]) + 1, offset, desc_at


def _finish(fd, begun, step, length, checksum, flags=0, checked=0):
    """The descriptor after the payload, its checksum last."""
    seq, offset, desc_at = begun
    os.pwrite(fd, struct.pack("<QQQQ", seq, step, offset, length), desc_at)
    os.pwrite(fd, struct.pack("<IQ", flags, checked), desc_at + _CHECKSUMMED + 4)
    os.pwrite(fd, struct.pack("<I", checksum), desc_at + _CHECKSUMMED)


def _write(fd, step, payload):
    """The copy: payload into the older slot of the region on fd, checksum last. False if off."""
    length = len(payload)
    begun = _begin(fd, length)
    if begun is None:
        return False
    seq, offset, _ = begun
    view = memoryview(payload)
    done = 0
    while done < length:
        done += os.pwrite(fd, view[done:], offset + done)
    _finish(fd, begun, step, length, _checksum(seq, step, offset, length, payload))
    return True


_maps = {}  # (file, slot offset) -> a shared mapping of the region from there (tensor tables)


def _close_maps():
    for m in _maps.values():
        m.close()
    _maps.clear()


def _mapping(fd, offset, length):
    """A writable shared mapping of the region's bytes [offset, offset + length), kept for the
    next save into that slot (a fresh mapping faults every page in again)."""
    info = os.fstat(fd)
    key = (info.st_dev, info.st_ino, offset)
    m = _maps.get(key)
    if m is None or len(m) < length:
        if m is not None:
            m.close()
        elif len(_maps) >= 2:  # the slots moved (a larger state, another file): the oldest goes
            _maps.pop(next(iter(_maps))).close()
        flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
        m = _maps[key] = mmap.mmap(fd, length, flags=flags, offset=offset)
    return m


def _write_table(fd, step, torch, table):
    """A tensor table (ddp_tensor_table.Plan) written in place into the older slot: each tensor
    copied once into the mapped region, the checksum covering the head. False if off."""
    begun = _begin(fd, table.length)
    if begun is None:
        return False
    seq, offset, _ = begun
    region = _mapping(fd, offset, table.length)
    ddp_tensor_table.write(torch, table, region)
    head = len(table.head)
    checksum = _checksum(seq, step, offset, table.length, table.head, _PREFIX_CHECKED, head)
    _finish(fd, begun, step, table.length, checksum, _PREFIX_CHECKED, head)
    return True


class _Writer(threading.Thread):
    """One background write (zlib.crc32 and os.pwrite release the GIL on large buffers)."""

    def __init__(self, fd, step, payload):
        super().__init__(name="ddp_snapshot writer", daemon=True)
        self.args_ = (fd, step, payload)
        self.ok = False

    def run(self):
        self.ok = _write(*self.args_)
        self.args_ = None  # the payload's memory back


_writer = None  # the write in flight (background=True), until wait()


def wait():
    """Blocks until the snapshot save(..., background=True) started is in the region. True if it
    landed (or none was in flight and snapshots are on), False if it failed or snapshots are off."""
    global _writer
    if _writer is not None:
        w, _writer = _writer, None
        w.join()
        if not w.ok:
            return False
    return _fd is not None and not _off


def save_bytes(step, payload, background=False):
    """Writes `payload` (bytes) as the snapshot of `step` into the older slot. False if off.

    background=True: returns once the write has started on a thread (after waiting for the
    previous one); `payload` must not change until wait(). See save()."""
    if not wait() and _off:
        return False
    fd = _open()
    if fd is None:
        return False
    if not background:
        return _write(fd, step, payload)
    global _writer
    _writer = _Writer(fd, step, payload)
    _writer.start()
    return True


def load_bytes(step=None):
    """(step, payload) of the newest complete snapshot (of `step` if given: either slot), or None."""
    found = _read(step)
    return None if found is None else (found[0], bytes(found[1]))


def _read(step=None):
    """load_bytes(), the payload in a bytearray (a tensor table is read as views of it)."""
    wait()  # this process's write in flight lands first
    path = os.environ.get(ENV_VAR)
    if not path:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        slots = _read_slots(fd)
        for i in sorted(range(2), key=lambda i: -slots[i][0]):
            seq, held, offset, length, checksum, flags, checked = slots[i]
            if seq == 0 or offset < HEADER_SIZE or offset > size or length > size - offset:
                continue
            if step is not None and held != step:
                continue
            payload = bytearray(length)
            if os.preadv(fd, [payload], offset) == length and \
                    _checksum(seq, held, offset, length, payload, flags, checked) == checksum:
                return held, payload
        return None
    finally:
        os.close(fd)


def save(step, state, background=False):
    """Snapshots `state` (anything torch.save takes: a dict of state_dicts) as `step`.

    A state whose tensors are plain (or nn.Parameter), strided, on the CPU or CUDA is written
    as a tensor table, in place and on this thread: background is moot, nothing runs later.
    Otherwise it is a torch.save, and background=True: serialises here (the next optimizer
    step changes the tensors), then the checksum and copy run on a thread while training
    goes on; the next save(), load() and wait() wait for it. A kill before it lands leaves
    that slot torn and the previous snapshot in use (one step more to redo). Under DDP the
    write must land before this rank's next gradient all-reduce, or a rank killed mid-write can
    hold no step in common with ranks that finished the next step: register allreduce_hook on
    the DDP model, or call wait() before backward(). A failed write warns (as save does) and
    the next save() returns False."""
    if _open() is None:  # serialised while the previous write may still run, then save_bytes waits
        return False
    progress = _progress()
    if progress is None:
        return _save(step, state, background)
    with progress.saving():  # what the training thread waits for (a background write's copy not)
        return _save(step, state, background)


def _save(step, state, background):
    import torch
    table = ddp_tensor_table.plan(torch, state) if ddp_tensor_table else None
    if table is not None:
        if not wait() and _off:
            return False
        return _write_table(_fd, step, torch, table)
    buf = io.BytesIO()
    torch.save(state, buf)
    return save_bytes(step, buf.getbuffer(), background=background)


def allreduce_hook(process_group, bucket):
    """A DDP communication hook, torch's default all-reduce, that first waits for this rank's
    snapshot write in flight (save(..., background=True)) at the last bucket of a backward:
    model.register_comm_hook(None, ddp_snapshot.allreduce_hook)."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    if bucket.is_last():
        wait()
    return default_hooks.allreduce_hook(process_group, bucket)


def _torch_load(torch, source, map_location):
    """The state in `source` (a payload's bytes, or a file's path): a tensor table
    (ddp_tensor_table), else torch.load of the job's own bytes, whatever they hold: torch 2.6+
    defaults to weights_only=True, which refuses anything but tensors, containers and
    primitives (a numpy array, a user's class). A snapshot is this job's own save() (a 0600
    region, or the persist folder the user named), not a file from elsewhere, so it is loaded
    as it was saved."""
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as f:
            if ddp_tensor_table and ddp_tensor_table.is_table(f.read(4)):
                f.seek(0)
                source = bytearray(f.read())
            else:
                return torch.load(source, map_location=map_location, weights_only=False)
    if ddp_tensor_table and ddp_tensor_table.is_table(source):
        return ddp_tensor_table.read(torch, source, map_location)
    return torch.load(io.BytesIO(source), map_location=map_location, weights_only=False)


def load(map_location=None, step=None):
    """(step, state) of the newest complete snapshot (torch.load'ed), or None. With `step`:
    that step's snapshot from either slot (a rank one snapshot ahead of the others still holds
    the step before), or None."""
    found = _read(step)
    if found is None:
        return None
    import torch
    step, payload = found
    return step, _torch_load(torch, payload, map_location)


def _global_rank(dist, group, group_rank):
    if group is None or group is dist.group.WORLD:
        return group_rank
    get = getattr(dist, "get_global_rank", None) or dist.distributed_c10d._get_global_rank
    return get(group, group_rank)


def _broadcast_payload(torch, dist, payload, source, group, device):
    """`payload` of group rank `source` on every rank (None on the source): length, then bytes."""
    sending = dist.get_rank(group) == source
    src = _global_rank(dist, group, source)
    n = torch.tensor([len(payload) if sending else 0], dtype=torch.int64, device=device)
    dist.broadcast(n, src=src, group=group)
    n = int(n.item())
    if sending:
        data = torch.frombuffer(bytearray(payload), dtype=torch.uint8).to(device) if n else None
    else:
        data = torch.empty(n, dtype=torch.uint8, device=device)
    if n:
        dist.broadcast(data, src=src, group=group)
    return None if sending else (data.cpu().numpy().tobytes() if n else b"")


def newest_checkpoint(directory):
    """(step, path) of the newest ckpt_<step>.pt in `directory` (the name `train` and ddp-launch
    --snapshot-persist-dir write), or None. Files of other names are ignored."""
    try:
        names = os.listdir(directory)
    except OSError:
        return None
    found = []
    for name in names:
        digits = name[len("ckpt_"):-len(".pt")] if name.startswith("ckpt_") and name.endswith(".pt") else ""
        if digits.isdigit() and os.path.isfile(os.path.join(directory, name)):
            found.append((int(digits), os.path.join(directory, name)))
    return max(found) if found else None


def _checkpoint_step(torch, dist, directory, group, device):
    """Group rank 0's newest checkpoint step in `directory`, on every rank (-1: none)."""
    newest = newest_checkpoint(directory) if dist.get_rank(group) == 0 else None
    step = torch.tensor([newest[0] if newest else -1], dtype=torch.int64, device=device)
    dist.broadcast(step, src=_global_rank(dist, group, 0), group=group)
    return int(step.item())


def _progress():
    """ddp_progress (beside this file), or None."""
    try:
        import ddp_progress
    except ImportError:
        return None
    return ddp_progress


def _mark_restored(result):
    """Tells the launcher's recovery timeline that the state of step result[0] is back."""
    progress = _progress() if result is not None else None
    if progress is not None:
        progress.restored(result[0])
    return result


def restore(map_location=None, group=None, checkpoint_dir=None):
    """Collective (every rank of `group`, default the world, after init_process_group): (step,
    state) of the newest complete state there is, or None when there is none.

    With `checkpoint_dir`, the newest ckpt_<step>.pt there (group rank 0's listing; every rank
    loads that file, so it must see the same folder) competes with the in-memory snapshot: a
    checkpoint newer than the snapshot the ranks agree on wins (a job that checkpoints more
    often than it snapshots, or a cold start), and so does any checkpoint when no rank holds a
    snapshot. The checkpoint's state is what torch.load gives for that file. last_restore.source
    and .why say which was used and why (one line on stderr too, from group rank 0).

    The snapshot: the step the ranks agree on, or None when no rank holds one. The step is the
    smallest newest step among the ranks that hold a snapshot (a rank one ahead loads it from its
    older slot); ranks without it receive it from the lowest rank that has it (a broadcast of its
    bytes: on the current CUDA device for NCCL, else the CPU) and write it into their own region.
    Every rank then torch.load's it; if any cannot, all raise RuntimeError. last_restore says how
    it went. Without a process group: load()."""
    return _mark_restored(_restore(map_location, group, checkpoint_dir))


def _restore(map_location=None, group=None, checkpoint_dir=None):
    """restore() without telling the launcher."""
    global last_restore
    last_restore = None
    import torch
    import torch.distributed as dist
    if not (dist.is_available() and dist.is_initialized()):
        newest = _read()
        on_disk = newest_checkpoint(checkpoint_dir) if checkpoint_dir is not None else None
        if on_disk and (newest is None or on_disk[0] > newest[0]):
            why = ("there is no in-memory snapshot" if newest is None else
                   f"it is newer than the in-memory snapshot of step {newest[0]}")
            _warn(f"resuming from {on_disk[1]} (step {on_disk[0]}): {why}")
            last_restore = Restored(on_disk[0], False, -1, [], on_disk[1], why)
            return on_disk[0], _torch_load(torch, on_disk[1], map_location)
        if newest is None:
            return None
        last_restore = Restored(newest[0], False, -1, [])
        return newest[0], _torch_load(torch, newest[1], map_location)
    why = ""
    device = torch.device("cpu")
    if dist.get_backend(group) == "nccl":
        device = torch.device("cuda", torch.cuda.current_device())
    rank, world = dist.get_rank(group), dist.get_world_size(group)

    newest = _read()
    agreed = torch.tensor([newest[0] if newest else _NONE], dtype=torch.int64, device=device)
    dist.all_reduce(agreed, op=dist.ReduceOp.MIN, group=group)
    step = int(agreed.item())
    if checkpoint_dir is not None:
        on_disk = _checkpoint_step(torch, dist, checkpoint_dir, group, device)
        if on_disk >= 0 and (step == _NONE or on_disk > step):
            path = os.path.join(checkpoint_dir, f"ckpt_{on_disk}.pt")
            why = ("no rank holds an in-memory snapshot" if step == _NONE else
                   f"it is newer than the in-memory snapshot of step {step}")
            state = _torch_load(torch, path, map_location)
            last_restore = Restored(on_disk, False, -1, [], path, why)
            if rank == 0:
                _warn(f"resuming from {path} (step {on_disk}): {why}")
            return on_disk, state
        if step != _NONE:
            why = (f"the newest checkpoint in {checkpoint_dir} is of step {on_disk}" if on_disk >= 0 else
                   f"{checkpoint_dir} holds no checkpoint")
            if rank == 0:
                _warn(f"resuming from the in-memory snapshot of step {step}: {why}")
    if step == _NONE:
        return None  # no rank holds a snapshot (nor a checkpoint in checkpoint_dir)
    held = newest if newest and newest[0] == step else _read(step)
    flags = [torch.zeros(1, dtype=torch.int32, device=device) for _ in range(world)]
    dist.all_gather(flags, torch.tensor([1 if held else 0], dtype=torch.int32, device=device), group=group)
    has = [bool(f.item()) for f in flags]
    source = has.index(True)  # the rank whose newest is the agreed step holds it
    healed_ranks = [r for r, h in enumerate(has) if not h]
    payload = held[1] if held else None
    if healed_ranks:
        received = _broadcast_payload(torch, dist, payload, source, group, device)
        if not held:
            payload = received
    else:
        source = -1

    error = None
    try:
        state = _torch_load(torch, payload, map_location)
    except Exception as e:  # noqa: BLE001 - every rank must learn it, then all raise
        error = f"the in-memory snapshot of step {step} does not load on rank {rank}: {e}"
    failed = torch.tensor([world if error is None else rank], dtype=torch.int64, device=device)
    dist.all_reduce(failed, op=dist.ReduceOp.MIN, group=group)
    if int(failed.item()) < world:
        raise RuntimeError(error or f"the in-memory snapshot of step {step} does not load on rank "
                                    f"{int(failed.item())} (its log says why); nothing was restored")
    if not held:
        if os.environ.get(ENV_VAR):
            save_bytes(step, payload)  # kept: this rank holds it at the next failure
        _warn(f"rank {rank} received the snapshot of step {step} from rank {source}")
    last_restore = Restored(step, not held, source, healed_ranks, "snapshot", why)
    return step, state


def load_persisted(directory, map_location=None):
    """(step, state) of the newest ckpt_<step>.pt in `directory` (torch.load'ed), or None.

    ddp-launch --snapshot-persist-dir DIRECTORY writes local rank 0's newest snapshot there
    (the payload saved by save(), a torch.save file) when a worker fails, at the end, on a
    stop and every --snapshot-persist-interval seconds: a cold start elsewhere (no in-memory
    snapshot) resumes from it. Files that are not ckpt_<digits>.pt are ignored.
    """
    newest = newest_checkpoint(directory)
    if newest is None:
        return None
    import torch
    step, path = newest
    return step, _torch_load(torch, path, map_location)
