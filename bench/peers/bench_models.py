"""The Python benchmark peers' models and data, defined once: the MLP (default 784-1024-1024-
1024-10, 2913290 parameters; the tiny variant is 10-10-5) and the GPU check's small conv net,
each with its flags, plus the synthetic batch every rank trains on. The C++ twins build the
same: tests/runtime/bench.cpp (ddp_bench) and tests/gpu/bench.cpp.

Used by bench/peers/python_ddp_bench.py (next to it) and tests/gpu/python_gpu_bench.py,
which finds it from its own location:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "peers"))
Seeding is the caller's: torch.manual_seed(0) before building a model.
"""
import torch
import torch.nn as nn


def add_model_args(parser):
    """The model and data flags, in this order: --batch, --hidden, --layers, --in-dim, --classes."""
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--in-dim", type=int, default=784)
    parser.add_argument("--classes", type=int, default=10)


def mlp(in_dim, hidden, layers, classes):
    """layers Linear layers in_dim -> hidden -> ... -> classes, a ReLU after each but the last."""
    modules, d = [], in_dim
    for _ in range(layers - 1):
        modules += [nn.Linear(d, hidden), nn.ReLU()]
        d = hidden
    modules.append(nn.Linear(d, classes))
    return nn.Sequential(*modules)


def conv_net(classes):
    """Two 3x3 convolutions (3 -> 32 -> 64 channels) on 32x32 images, global average pool, one Linear."""
    return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, classes))


def synthetic_batch(shape, classes, rank):
    """One fixed batch per rank (its own seed, 1000 + rank), on the CPU: inputs of shape
    `shape` (batch first) from a normal distribution, and shape[0] class labels."""
    g = torch.Generator().manual_seed(1000 + rank)
    x = torch.randn(*shape, generator=g)
    y = torch.randint(0, classes, (shape[0],), generator=g)
    return x, y


# ---- a learnable data set both benchmark twins read (scripts/bench-compress.sh) ----------
# File layout (little-endian): 8-byte magic b"DDPDATA1", then int64 n_train, n_val, dim,
# classes; then float32 inputs [(n_train + n_val) x dim], row-major; then int64 labels.
# tests/runtime/bench.cpp (--data) reads the same layout.
DATA_MAGIC = b"DDPDATA1"


def centres_dataset(n_train, n_val, dim=784, classes=10, separation=0.15, seed=7):
    """Gaussian classes: class c's inputs are separation * centre_c + N(0, 1) noise, the
    centres themselves N(0, 1) in `dim` dimensions; labels uniform. Deterministic in seed."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.randn(classes, dim, generator=g)
    y = torch.randint(0, classes, (n_train + n_val,), generator=g)
    x = separation * centres[y] + torch.randn(n_train + n_val, dim, generator=g)
    return x, y


def write_dataset(path, x, y, n_train):
    """Writes x (float32 rows) and y (labels) in the layout above; the first n_train rows train."""
    import struct
    n, dim = x.shape
    with open(path, "wb") as f:
        f.write(DATA_MAGIC + struct.pack("<4q", n_train, n - n_train, dim, int(y.max()) + 1))
        f.write(x.to(torch.float32).contiguous().numpy().tobytes())
        f.write(y.to(torch.int64).contiguous().numpy().tobytes())


def read_dataset(path):
    """(x_train, y_train, x_val, y_val, classes) from a file write_dataset made."""
    import struct
    import numpy as np
    with open(path, "rb") as f:
        if f.read(8) != DATA_MAGIC:
            raise SystemExit(f"{path}: not a benchmark data set (no {DATA_MAGIC!r} magic); "
                             "make one with scripts/bench_compress.py data")
        n_train, n_val, dim, classes = struct.unpack("<4q", f.read(32))
        n = n_train + n_val
        x = torch.from_numpy(np.frombuffer(f.read(4 * n * dim), dtype=np.float32).reshape(n, dim).copy())
        y = torch.from_numpy(np.frombuffer(f.read(8 * n), dtype=np.int64).copy())
    if y.numel() != n:
        raise SystemExit(f"{path}: truncated ({y.numel()} of {n} labels)")
    return x[:n_train], y[:n_train], x[n_train:], y[n_train:], classes


def epoch_shard(n, epoch, rank, world, seed=0):
    """This rank's sample indices for one epoch: a permutation of n seeded with seed + epoch,
    every world-th from rank (as DistributedSampler, drop_last: an equal share each)."""
    g = torch.Generator().manual_seed(seed + epoch)
    perm = torch.randperm(n, generator=g)
    share = n // world
    return perm[rank:share * world:world]
