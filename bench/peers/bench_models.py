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
