"""python/ddp_tensor_table.py on its own: a state round-trips through a table (dtypes, 0-dim,
empty and non-contiguous tensors, nn.Parameter and requires_grad, a tensor referenced twice,
values that are not tensors), the tensors read are views of the payload (no copy), map_location
places them as torch.load would, states a table cannot hold give None, and a payload that is
not a table is refused saying what it is."""
import os
import sys

import torch

sys.path.insert(0, os.environ["DDP_TEST_PYTHON_DIR"])
import ddp_tensor_table as table  # noqa: E402


def fail(what):
    print(f"FAIL: {what}")
    sys.exit(1)


def encode(state):
    plan = table.plan(torch, state)
    if plan is None:
        fail(f"no table for {list(state)}")
    payload = bytearray(plan.length)
    table.write(torch, plan, payload)
    return plan, payload


shared = torch.arange(6, dtype=torch.int64)
state = {
    "f32": torch.randn(7, 3),
    "bf16": torch.randn(5).to(torch.bfloat16),
    "f16": torch.randn(4).half(),
    "f64": torch.randn(2, dtype=torch.float64),
    "i8": torch.tensor([-3, 4], dtype=torch.int8),
    "bool": torch.tensor([True, False, True]),
    "c64": torch.randn(3, dtype=torch.complex64),
    "scalar": torch.tensor(2.5),
    "empty": torch.empty(0, 4),
    "transposed": torch.arange(12.0).view(3, 4).t(),
    "param": torch.nn.Parameter(torch.ones(2)),
    "frozen": torch.nn.Parameter(torch.ones(2), requires_grad=False),
    "needs_grad": torch.zeros(3, requires_grad=True),
    "twice": [shared, {"again": shared}],
    "plain": {"lr": 0.1, "name": "adam", "betas": (0.9, 0.999), "device": torch.device("cpu"), "dtype": torch.float16},
}
plan, payload = encode(state)
if len(plan.head) % table.ALIGN or any(offset % table.ALIGN for _, offset, _ in plan.tensors):
    fail("the head and the tensors are not 64-byte aligned")
if len(plan.tensors) != 14:
    fail(f"{len(plan.tensors)} tensors in the table, expected 14 (the one referenced twice once)")
got = table.read(torch, payload)
for key in ("f32", "bf16", "f16", "f64", "i8", "bool", "c64", "scalar", "empty", "transposed", "param", "frozen", "needs_grad"):
    a, b = state[key], got[key]
    if a.dtype != b.dtype or a.shape != b.shape or not torch.equal(a.detach(), b.detach()):
        fail(f"{key}: {b!r} read back, expected {a!r}")
if type(got["param"]) is not torch.nn.Parameter or not got["param"].requires_grad:
    fail("an nn.Parameter did not come back as one that requires grad")
if type(got["frozen"]) is not torch.nn.Parameter or got["frozen"].requires_grad:
    fail("a frozen nn.Parameter came back requiring grad")
if type(got["needs_grad"]) is not torch.Tensor or not got["needs_grad"].requires_grad:
    fail("a tensor that requires grad came back without it")
if got["twice"][0] is not got["twice"][1]["again"] or not torch.equal(got["twice"][0], shared):
    fail("a tensor referenced twice did not come back as one tensor")
if got["plain"] != state["plain"]:
    fail(f"values that are not tensors: {got['plain']} read back")
print("ok: a state round-trips (dtypes, 0-dim, empty, non-contiguous, parameters, shared, plain values)")

# The tensors read are views of the payload: one byte changed there shows in the tensor.
_, offset, _ = plan.tensors[0]
changed = torch.tensor([got["f32"][0, 0].item() + 1.0])  # float32, as stored
payload[offset:offset + 4] = bytes(changed.view(torch.uint8).tolist())
if got["f32"][0, 0].item() != changed.item():
    fail("the tensors read are copies, not views of the payload")
print("ok: the tensors read are views of the payload's bytes")

# map_location as torch.load takes it.
placed = table.read(torch, payload, map_location="cpu")["f32"]
mapped = table.read(torch, payload, map_location={"cuda:0": "cpu"})["f32"]
seen = []
called = table.read(torch, payload, map_location=lambda t, where: seen.append(where) or t * 2)["scalar"]
if placed.device.type != "cpu" or mapped.device.type != "cpu" or called.item() != 5.0 or "cpu" not in seen:
    fail(f"map_location: {placed.device}, {mapped.device}, callable gave {called} with {seen[:2]}")
print("ok: map_location: a name, a dict, a callable (given the saved device)")

# What a table cannot hold: torch.save's business.
for what, value in (("a sparse tensor", torch.eye(3).to_sparse()),
                    ("a quantized tensor", torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.quint8))):
    if table.plan(torch, {"x": value}) is not None:
        fail(f"{what} was laid out as a table")


class Tagged(torch.Tensor):
    pass


if table.plan(torch, {"x": torch.ones(2).as_subclass(Tagged)}) is not None:
    fail("a tensor subclass was laid out as a table")
print("ok: sparse, quantized and subclassed tensors give no table")

try:
    table.read(torch, b"PK\x03\x04" + bytes(100))
    fail("a zip payload was read as a table")
except ValueError as e:
    if "not a ddp_snapshot tensor table of 104 bytes" not in str(e):
        fail(f"a payload that is not a table: {e}")
if table.is_table(b"PK\x03\x04") or not table.is_table(payload):
    fail("is_table")
print("ok: a payload that is not a table is refused, saying what it is")
