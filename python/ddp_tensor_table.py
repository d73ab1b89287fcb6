"""Tensor tables for ddp_snapshot: a state (what torch.save takes) as a small pickled skeleton,
each tensor replaced by its index, followed by the tensors' raw bytes. save() copies each tensor
once, straight into the mapped snapshot region; load() gives views of the bytes read (the
caller's load_state_dict is the only copy). The Python twin of libddp's "DDPT" table
(docs/snapshots.md); the two formats are not interchangeable.

    | header, 24 bytes | b"DDPY", u32 version 1, u64 head bytes (header + meta, padded), u64 total |
    | meta             | pickle of (entries, skeleton); an entry: (offset, dtype name, shape,
    |                  |   device, kind: 0 tensor, 1 tensor that requires grad, 2 nn.Parameter,
    |                  |   3 nn.Parameter that does not)                                      |
    | tensors          | each contiguous, at a 64-byte aligned offset from the payload's start |

The head (header and meta) is what the slot's checksum covers (kPrefixChecked). plan() returns
None for a state a table cannot hold (sparse, quantized or nested tensors, tensor subclasses,
devices other than the CPU and CUDA): the caller then falls back to torch.save.
"""
import collections
import io
import math
import pickle
import struct

MAGIC = b"DDPY"
VERSION = 1
ALIGN = 64
_HEADER = struct.Struct("<4sIQQ")

# head: the header and meta, padded to the first tensor; tensors: (tensor, offset, bytes).
Plan = collections.namedtuple("Plan", "head tensors length")


def _align(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


class _Unsupported(Exception):
    pass


def _kind(torch, t):
    if type(t) is torch.nn.Parameter:
        return 2 if t.requires_grad else 3
    if type(t) is not torch.Tensor:
        raise _Unsupported(type(t).__name__)
    return 1 if t.requires_grad else 0


def _check(torch, t):
    if (t.layout != torch.strided or t.is_quantized or getattr(t, "is_nested", False)
            or t.device.type not in ("cpu", "cuda")):
        raise _Unsupported(str(t.layout))


def plan(torch, state):
    """The table of `state`: Plan(head bytes, [(tensor, offset, bytes)], total length), or None
    when a tensor in it cannot be laid out raw."""
    tensors, index = [], {}

    class Skeleton(pickle.Pickler):
        def persistent_id(self, obj):
            if not isinstance(obj, torch.Tensor):
                return None
            known = index.get(id(obj))
            if known is None:
                _check(torch, obj)
                known = index[id(obj)] = len(tensors)
                tensors.append(obj)
            return known

    skeleton = io.BytesIO()
    try:
        Skeleton(skeleton, protocol=pickle.HIGHEST_PROTOCOL).dump(state)
        kinds = [_kind(torch, t) for t in tensors]
    except (_Unsupported, pickle.PicklingError, TypeError, AttributeError):
        return None  # torch.save says what is wrong, if anything is
    sizes = [t.numel() * t.element_size() for t in tensors]
    relative, at = [], 0
    for n in sizes:
        relative.append(at)
        at = _align(at + n)
    entries = [(off, str(t.dtype).split(".")[-1], tuple(t.shape), str(t.device), k)
               for t, off, k in zip(tensors, relative, kinds)]
    meta = pickle.dumps((entries, skeleton.getvalue()), protocol=pickle.HIGHEST_PROTOCOL)
    head_len = _align(_HEADER.size + len(meta))
    total = head_len + at
    head = bytearray(head_len)
    _HEADER.pack_into(head, 0, MAGIC, VERSION, head_len, total)
    head[_HEADER.size:_HEADER.size + len(meta)] = meta
    laid = [(t, head_len + off, n) for t, off, n in zip(tensors, relative, sizes)]
    return Plan(bytes(head), laid, total)


def write(torch, table, buffer):
    """Copies `table` (a Plan) into `buffer`, a writable buffer of at least table.length bytes
    (a mapping of the region's slot): the head, then each tensor once, from wherever it is."""
    view = memoryview(buffer)
    view[:len(table.head)] = table.head
    with torch.no_grad():
        for t, offset, n in table.tensors:
            if n:
                source = t.detach().reshape(-1).contiguous().view(torch.uint8)
                torch.frombuffer(buffer, dtype=torch.uint8, count=n, offset=offset).copy_(source)


def is_table(payload):
    return bytes(memoryview(payload)[:4]) == MAGIC


def _placed(torch, t, device, map_location):
    """The tensor read from the table where torch.load would put it (its saved device unless
    map_location says otherwise: a device or its name, a dict of names, or a callable)."""
    if map_location is None:
        target = device
    elif callable(map_location):
        return map_location(t, device)
    elif isinstance(map_location, dict):
        target = map_location.get(device, device)
    else:
        target = map_location
    return t if torch.device(target).type == "cpu" else t.to(target)


def read(torch, payload, map_location=None):
    """The state of a table payload. Its tensors on the CPU are views of `payload` (made
    writable first: a bytearray as it is, anything else copied once)."""
    if not isinstance(payload, bytearray):
        payload = bytearray(payload)
    magic, version, head_len, total = _HEADER.unpack_from(payload)
    if magic != MAGIC or version != VERSION or total > len(payload):
        raise ValueError(f"not a ddp_snapshot tensor table of {len(payload)} bytes "
                         f"(magic {magic!r}, version {version}, {total} bytes)")
    entries, skeleton = pickle.loads(memoryview(payload)[_HEADER.size:head_len])
    tensors = []
    for offset, dtype, shape, device, kind in entries:
        dtype = getattr(torch, dtype)
        numel = math.prod(shape)
        if numel:
            t = torch.frombuffer(payload, dtype=dtype, count=numel, offset=head_len + offset).view(shape)
        else:
            t = torch.empty(shape, dtype=dtype)
        t = _placed(torch, t, device, map_location)
        if kind >= 2:
            t = torch.nn.Parameter(t, requires_grad=kind == 2)
        elif kind == 1:
            t.requires_grad_(True)
        tensors.append(t)

    class Skeleton(pickle.Unpickler):
        def persistent_load(self, pid):
            return tensors[pid]

    return Skeleton(io.BytesIO(skeleton)).load()
