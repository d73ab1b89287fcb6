"""python/ddp_snapshot.py on its own (no launcher: DDP_LAUNCH_SNAPSHOT_FILE set by hand): the
newest snapshot is read back, a torn newest slot (a tensor table's head corrupted, or a
torch.save payload's middle) is skipped for the older one, both torn read as None, and no
variable at all means no-op with one warning."""
import os
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.environ["DDP_TEST_PYTHON_DIR"])
import ddp_snapshot  # noqa: E402


def fail(what):
    print(f"FAIL: {what}")
    sys.exit(1)


with tempfile.TemporaryDirectory() as d:
    region = os.path.join(d, "region")
    open(region, "wb").close()
    os.environ[ddp_snapshot.ENV_VAR] = region
    if ddp_snapshot.load() is not None:
        fail("an empty region holds a snapshot")
    for step in (1, 2, 3):
        ddp_snapshot.save(step, {"w": torch.full((100,), float(step))})
    step, state = ddp_snapshot.load()
    if step != 3 or not torch.equal(state["w"], torch.full((100,), 3.0)):
        fail(f"newest snapshot is step {step}, expected 3")
    fd = os.open(region, os.O_RDWR)
    slots = ddp_snapshot._read_slots(fd)
    newest = max(slots, key=lambda s: s[0])
    length, flags, checked = newest[3], newest[5], newest[6]
    if flags != 1 or not 0 < checked < length or os.pread(fd, 4, newest[2]) != b"DDPY":
        fail(f"a state of tensors is not a tensor table whose head the checksum covers: {newest}")
    # Tear the newest slot (step 3) by hand: one byte of its head (a tensor table's tensor bytes
    # are covered by the order of the writes: the descriptor is empty until they are complete).
    offset = newest[2] + checked // 2
    byte = os.pread(fd, 1, offset)
    os.pwrite(fd, bytes([byte[0] ^ 0xFF]), offset)
    step, state = ddp_snapshot.load()
    if step != 2 or not torch.equal(state["w"], torch.full((100,), 2.0)):
        fail(f"with the newest slot torn, read step {step}, expected 2")
    older = min(slots, key=lambda s: s[0])
    os.pwrite(fd, b"\0", older[2] + 3)
    os.close(fd)
    if ddp_snapshot.load() is not None:
        fail("both slots torn, yet a snapshot was read")
    print("ok: newest read, torn newest skipped for the older slot, both torn -> None")

    # A state a table cannot hold (a sparse tensor) is a torch.save, checksummed whole: a byte
    # torn in its middle is found.
    for step in (4, 5):
        ddp_snapshot.save(step, {"w": torch.eye(50).to_sparse() * step})
    step, state = ddp_snapshot.load()
    if step != 5 or not state["w"].is_sparse or not torch.equal(state["w"].to_dense(), torch.eye(50) * 5):
        fail(f"a sparse state read back as step {step}")
    fd = os.open(region, os.O_RDWR)
    newest = max(ddp_snapshot._read_slots(fd), key=lambda s: s[0])
    offset = newest[2] + newest[3] // 2
    os.pwrite(fd, bytes([os.pread(fd, 1, offset)[0] ^ 0xFF]), offset)
    os.close(fd)
    step, state = ddp_snapshot.load()
    if newest[5] != 0 or step != 4:
        fail(f"a torch.save payload (flags {newest[5]}) torn in its middle: read step {step}, expected 4")
    print("ok: a torch.save payload is checksummed whole: torn in its middle, the older slot is read")

code = ("import sys; sys.path.insert(0, sys.argv[1]); import ddp_snapshot as s; "
        "print(s.save(1, b'x'), s.save(2, b'y'), s.load())")
env = {k: v for k, v in os.environ.items() if k != ddp_snapshot.ENV_VAR}
proc = subprocess.run([sys.executable, "-c", code, os.environ["DDP_TEST_PYTHON_DIR"]], env=env,
                      capture_output=True, text=True, timeout=60)
if proc.stdout.strip() != "False False None" or proc.stderr.count("snapshots are off") != 1:
    fail(f"outside ddp-launch: out {proc.stdout!r} err {proc.stderr!r}")
print("ok: outside ddp-launch save() is a no-op with one warning, load() is None")

with tempfile.TemporaryDirectory() as d:
    region = os.path.join(d, "region")
    open(region, "wb").close()
    os.environ[ddp_snapshot.ENV_VAR] = region
    os.close(ddp_snapshot._fd)
    ddp_snapshot._fd = None  # the module keeps its region open: make it open this one
    ddp_snapshot.save_bytes(4, b"four")
    ddp_snapshot.save_bytes(5, b"five")
    if ddp_snapshot.load_bytes(4) != (4, b"four") or ddp_snapshot.load_bytes(6) is not None:
        fail("load_bytes(step) did not find the older slot's step 4, or found a step 6 never saved")
    print("ok: a given step is read from the older slot")

# A region that cannot grow (RLIMIT_FSIZE stands in for a full /dev/shm: posix_fallocate
# fails, EFBIG instead of ENOSPC): one warning naming the size the region needs (after the
# first slot: 8192 + 1000000), then snapshots stay off and the older snapshot stays readable.
code = ("import resource, sys; sys.path.insert(0, sys.argv[1]); import ddp_snapshot as s; "
        "resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536)); "
        "print(s.save_bytes(1, b'x' * 100), s.save_bytes(2, b'y' * 1000000), s.save_bytes(3, b'z'), "
        "s.load_bytes() == (1, b'x' * 100))")
with tempfile.TemporaryDirectory() as d:
    region = os.path.join(d, "region")
    open(region, "wb").close()
    env = dict(os.environ, **{ddp_snapshot.ENV_VAR: region})
    proc = subprocess.run([sys.executable, "-c", code, os.environ["DDP_TEST_PYTHON_DIR"]], env=env,
                          capture_output=True, text=True, timeout=60)
    if proc.stdout.strip() != "True False False True" or proc.stderr.count("cannot reserve") != 1 \
            or "cannot reserve 1008192 bytes" not in proc.stderr:
        fail(f"a region that cannot grow: out {proc.stdout!r} err {proc.stderr!r}")
print("ok: a region that cannot grow: one warning naming the size, snapshots off, the older one kept")
