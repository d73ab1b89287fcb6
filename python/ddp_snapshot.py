"""In-memory snapshots for workers under ddp-launch: the newest training state survives a crash.

Dependency-free (standard library only; torch only when given tensors). Under ddp-launch,
DDP_LAUNCH_SNAPSHOT_FILE names a file in /dev/shm that the launcher keeps across restarts
(layout: contract/snapshot_region.hpp, docs/snapshots.md): two slots, each checksummed
(CRC-32, written last), so a slot torn by a crash mid-copy is never read back.

    import ddp_snapshot
    resumed = ddp_snapshot.load(map_location="cpu")
    start = 0
    if resumed:
        start, state = resumed
        model.load_state_dict(state["model"]); opt.load_state_dict(state["opt"])
    for step in range(start, steps):
        ...
        ddp_snapshot.save(step + 1, {"model": model.state_dict(), "opt": opt.state_dict()})

Under DDP every rank must resume from the same step: agree on the smallest newest step (an
all_reduce MIN) and load(step=that) where it differs (tests/python/snapshot_resume.py).

save(step, state, background=True) leaves the checksum and copy to a thread while the next
step runs (see save(); wait() blocks until it landed).

Without ddp-launch (no DDP_LAUNCH_SNAPSHOT_FILE) save() warns once and does nothing and
load() returns None. If the file system cannot hold a snapshot (/dev/shm full or too
small) save() warns once naming the size needed and snapshots stay off for this process.
"""
import io
import os
import struct
import sys
import threading
import zlib

MAGIC = 0x53504444
VERSION = 1
HEADER_SIZE = 4096
ALIGN = 4096
ENV_VAR = "DDP_LAUNCH_SNAPSHOT_FILE"

_HEAD = struct.Struct("<IIQ")       # magic, version, header_size
_SLOT = struct.Struct("<QQQQIIQ")   # seq, step, offset, length, checksum, reserved, pad (48 bytes)
_SLOTS_AT = 16
_CHECKSUMMED = 32                   # seq, step, offset, length

_fd = None
_off = False  # snapshots disabled for this process (said once)


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


def _checksum(seq, step, offset, length, payload):
    return zlib.crc32(payload, zlib.crc32(struct.pack("<QQQQ", seq, step, offset, length)))


def _write(fd, step, payload):
    """The copy: payload into the older slot of the region on fd, checksum last. False if off."""
    global _off, _fd
    slots = _read_slots(fd)
    target = 0 if slots[0][0] <= slots[1][0] else 1
    other = slots[1 - target]
    length = len(payload)
    if other[0] == 0 or HEADER_SIZE + length <= other[2]:
        offset = HEADER_SIZE
    else:
        offset = (other[2] + other[3] + ALIGN - 1) // ALIGN * ALIGN
    seq = max(slots[0][0], slots[1][0]) + 1
    try:
        os.posix_fallocate(fd, offset, max(length, 1))
    except OSError as e:
        _off = True
        os.close(fd)
        _fd = None
        where = os.path.dirname(os.environ.get(ENV_VAR, "/dev/shm"))
        _warn(f"cannot reserve {offset + length} bytes in {where} for a snapshot of {length} bytes "
              f"({e.strerror}): snapshots are off for this worker; give {where} more room "
              f"(e.g. docker run --shm-size) or rely on disk checkpoints")
        return False
    desc_at = _SLOTS_AT + target * _SLOT.size
    os.pwrite(fd, _HEAD.pack(MAGIC, VERSION, HEADER_SIZE), 0)
    os.pwrite(fd, bytes(_SLOT.size), desc_at)  # the slot is empty while it is written
    view = memoryview(payload)
    done = 0
    while done < length:
        done += os.pwrite(fd, view[done:], offset + done)
    os.pwrite(fd, struct.pack("<QQQQ", seq, step, offset, length), desc_at)
    os.pwrite(fd, struct.pack("<I", _checksum(seq, step, offset, length, payload)), desc_at + _CHECKSUMMED)
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
            seq, held, offset, length, checksum = slots[i][:5]
            if seq == 0 or offset < HEADER_SIZE or offset > size or length > size - offset:
                continue
            if step is not None and held != step:
                continue
            payload = os.pread(fd, length, offset)
            if len(payload) == length and _checksum(seq, held, offset, length, payload) == checksum:
                return held, payload
        return None
    finally:
        os.close(fd)


def save(step, state, background=False):
    """Snapshots `state` (anything torch.save takes: a dict of state_dicts) as `step`.

    background=True: serialises here (the next optimizer step changes the tensors), then the
    checksum and copy run on a thread while training goes on; the next save(), load() and
    wait() wait for it. A kill before it lands leaves that slot torn and the previous snapshot
    in use (one step more to redo). Under DDP the write must land before this rank's next
    gradient all-reduce, or a rank killed mid-write can hold no step in common with ranks that
    finished the next step: register allreduce_hook on the DDP model, or call wait() before
    backward(). A failed write warns (as save does) and the next save() returns False."""
    if _open() is None:  # serialised while the previous write may still run, then save_bytes waits
        return False
    import torch
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


def load(map_location=None, step=None):
    """(step, state) of the newest complete snapshot (torch.load'ed), or None. With `step`:
    that step's snapshot from either slot (a rank one snapshot ahead of the others still holds
    the step before), or None."""
    found = load_bytes(step)
    if found is None:
        return None
    import torch
    step, payload = found
    return step, torch.load(io.BytesIO(payload), map_location=map_location)
