"""PyTorch's own ZeroRedundancyOptimizer on the inputs of zero_test.cpp's "zero-python" scenario.

Usage (under ddp-launch, gloo): zero_python.py OUT_DIR adam|sgd
The same parameters (seed 11, the shapes below), 5 steps with rank-dependent gradients (seed
100 + 7 step + rank), then consolidate_state_dict(to=0); rank 0 writes OUT_DIR/py_params.bin
(the final parameters) and OUT_DIR/py_state.bin (per parameter: exp_avg, exp_avg_sq, step for
Adam; momentum_buffer for SGD), float32 in parameter order, as the C++ scenario does.
"""
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.optim import ZeroRedundancyOptimizer

SHAPES = [(5, 7), (13,), (3, 3, 3), (64,), (1,), (9, 4), (17, 2), (30,)]


def main():
    out_dir, name = sys.argv[1], sys.argv[2]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(11)
    params = [torch.randn(shape).requires_grad_() for shape in SHAPES]
    if name == "adam":
        zero = ZeroRedundancyOptimizer(params, optimizer_class=torch.optim.Adam, lr=0.01)
    else:
        zero = ZeroRedundancyOptimizer(params, optimizer_class=torch.optim.SGD, lr=0.05, momentum=0.9)
    for step in range(5):
        zero.zero_grad()
        torch.manual_seed(100 + 7 * step + rank)
        for p in params:
            p.grad = torch.randn(p.shape)
        zero.step()
    zero.consolidate_state_dict(to=0)
    if rank == 0:
        state = zero.state_dict()["state"]
        with open(os.path.join(out_dir, "py_params.bin"), "wb") as f:
            for p in params:
                f.write(p.detach().float().contiguous().numpy().tobytes())
        with open(os.path.join(out_dir, "py_state.bin"), "wb") as f:
            for i in range(len(params)):
                keys = ["exp_avg", "exp_avg_sq", "step"] if name == "adam" else ["momentum_buffer"]
                for key in keys:
                    f.write(torch.as_tensor(state[i][key]).float().reshape(-1).contiguous().numpy().tobytes())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
