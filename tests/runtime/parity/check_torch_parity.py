#!/usr/bin/env python3
"""libddp's DistributedSampler and SyncBatchNorm against Python torch (run with /usr/bin/python3).

  sampler   every case of a table: torch.utils.data.distributed.DistributedSampler's indices and
            torch_parity's must be identical
  syncbn    torch_parity syncbn under ddp-launch (uneven batches, a rank without samples at world 3;
            1d/2d/3d, affine=False, no running stats, cumulative momentum): outputs, input/weight/bias
            gradients, running stats and eval outputs against a plain torch BatchNorm over the
            concatenated global batch (torch's own SyncBatchNorm refuses CPU tensors in 1.13)
  ddp       a SyncBatchNorm model under libddp's DDP: gradients and buffers against the same model
            with BatchNorm1d on the global batch, the loss averaged over ranks as DDP does
  convert   convert_sync_batchnorm on module trees (torch_parity checks itself)
Float64 throughout; tolerance 1e-9 (absolute, on values of order 1).
"""
import argparse
import os
import subprocess
import sys
import tempfile

try:
    import torch
    from torch.utils.data.distributed import DistributedSampler
except ImportError:
    print("skipped: this Python has no torch", file=sys.stderr)
    sys.exit(77)

TOL = 1e-9


def fail(message, output=""):
    print(f"FAILED: {message}")
    if output:
        print(output[-6000:])
    sys.exit(1)


def run(cmd, stdin=None):
    p = subprocess.run(cmd, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=150)
    return p.returncode, p.stdout


def check_sampler(args):
    cases = []
    for size in (0, 1, 2, 3, 5, 7, 10, 11, 17, 90, 100, 1001):
        for replicas in (1, 2, 3, 4, 7):
            for rank in range(replicas):
                for shuffle in (1, 0):
                    for seed in ((0, 1, 42, 2**40 + 3) if shuffle else (0,)):
                        for epoch in (0, 1, 5):
                            for drop_last in (0, 1):
                                cases.append((size, replicas, rank, seed, epoch, shuffle, drop_last))
    rc, out = run([args.binary, "sampler"], "".join(" ".join(map(str, c)) + "\n" for c in cases))
    if rc != 0:
        fail(f"torch_parity sampler exited {rc}", out)
    lines = out.split("\n")
    if len(lines) < len(cases):
        fail(f"{len(lines)} lines for {len(cases)} cases", out)
    for case, line in zip(cases, lines):
        size, replicas, rank, seed, epoch, shuffle, drop_last = case
        s = DistributedSampler(range(size), num_replicas=replicas, rank=rank, shuffle=bool(shuffle), seed=seed,
                               drop_last=bool(drop_last))
        s.set_epoch(epoch)
        expected = list(iter(s))
        got = [int(v) for v in line.split()]
        if got != expected:
            fail(f"size {size} replicas {replicas} rank {rank} seed {seed} epoch {epoch} shuffle {shuffle} "
                 f"drop_last {drop_last}: libddp {got[:20]}..., torch {expected[:20]}...")
    print(f"ok: {len(cases)} sampler cases identical to torch {torch.__version__}'s DistributedSampler")


def read_dump(path):
    values = {}
    with open(path) as f:
        for line in f:
            name, shape, data = line.rstrip("\n").split("|")
            dims = [int(d) for d in shape.split(",")] if shape else []
            flat = [float(v) for v in data.split()] if data else []
            values[name] = torch.tensor(flat, dtype=torch.float64).reshape(dims)
    return values


def launch(args, mode, tmp):
    cmd = [args.launcher, "--nproc-per-node", str(args.nproc), args.binary, mode, tmp]
    rc, out = run(cmd)
    if rc != 0:
        fail(f"{' '.join(cmd)} exited {rc}", out)
    return [read_dump(os.path.join(tmp, f"rank{r}.txt")) for r in range(args.nproc)], out


def close(name, got, expected, out):
    if got.shape != expected.shape:
        fail(f"{name}: shape {list(got.shape)}, torch {list(expected.shape)}", out)
    err = (got - expected).abs().max().item() if got.numel() else 0.0
    if not err <= TOL:
        fail(f"{name}: max difference {err:.3g} > {TOL} (libddp {got.flatten()[:6].tolist()}, "
             f"torch {expected.flatten()[:6].tolist()})", out)
    return err


BN_CASES = {"1d_2": 1, "1d_3": 1, "2d": 2, "3d": 3, "2d_no_affine": 2, "2d_no_stats": 2, "2d_cumulative": 2}


def check_syncbn(args):
    with tempfile.TemporaryDirectory() as tmp:
        ranks, out = launch(args, "syncbn", tmp)
    worst = 0.0
    for case, dim in BN_CASES.items():
        affine, track = "no_affine" not in case, "no_stats" not in case
        cls = {1: torch.nn.BatchNorm1d, 2: torch.nn.BatchNorm2d, 3: torch.nn.BatchNorm3d}[dim]
        bn = cls(3, eps=1e-3, momentum=None if "cumulative" in case else 0.1, affine=affine,
                 track_running_stats=track).double()
        if affine:
            with torch.no_grad():
                bn.weight.copy_(ranks[0][f"{case}.weight"])
                bn.bias.copy_(ranks[0][f"{case}.bias"])
        for step in (1, 2):
            at = f"{case}.step{step}"
            x = torch.cat([r[f"{at}.x"] for r in ranks]).requires_grad_()
            dy = torch.cat([r[f"{at}.dy"] for r in ranks])
            bn.zero_grad()
            y = bn(x)
            (y * dy).sum().backward()
            start = 0
            for rank, r in enumerate(ranks):
                n = r[f"{at}.x"].shape[0]
                worst = max(worst, close(f"{at} rank {rank} output", r[f"{at}.y"], y[start:start + n].detach(), out))
                worst = max(worst, close(f"{at} rank {rank} grad_input", r[f"{at}.grad_x"], x.grad[start:start + n], out))
                if track:
                    worst = max(worst, close(f"{at} rank {rank} running_mean", r[f"{at}.running_mean"], bn.running_mean, out))
                    worst = max(worst, close(f"{at} rank {rank} running_var", r[f"{at}.running_var"], bn.running_var, out))
                start += n
            if affine:  # each rank's are local (DDP reduces them): their sum is the global batch's
                worst = max(worst, close(f"{at} grad_weight summed over ranks",
                                         sum(r[f"{at}.grad_weight"] for r in ranks), bn.weight.grad, out))
                worst = max(worst, close(f"{at} grad_bias summed over ranks",
                                         sum(r[f"{at}.grad_bias"] for r in ranks), bn.bias.grad, out))
        bn.eval()
        with torch.no_grad():
            for rank, r in enumerate(ranks):
                worst = max(worst, close(f"{case} eval rank {rank}", r[f"{case}.eval.y"], bn(r[f"{case}.eval.x"]), out))
    sizes = "/".join(str(r["2d.step1.x"].shape[0]) for r in ranks)
    print(f"ok: SyncBatchNorm at world {args.nproc} (batches {sizes}): {len(BN_CASES)} cases (1d/2d/3d, "
          f"affine=False, no running stats, momentum None), 2 training steps + eval, outputs, gradients and "
          f"running stats match torch's BatchNorm on the global batch (max difference {worst:.2g})")


def check_ddp(args):
    with tempfile.TemporaryDirectory() as tmp:
        ranks, out = launch(args, "ddp", tmp)
    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.ReLU(),
                              torch.nn.Linear(3, 2)).double()
    with torch.no_grad():
        for name, p in net.named_parameters():
            p.copy_(ranks[0][f"param.{name}"])
    x = torch.cat([r["x"] for r in ranks])
    dy = torch.cat([r["dy"] for r in ranks])
    ((net(x) * dy).sum() / args.nproc).backward()  # DDP averages the ranks' gradients
    worst = 0.0
    for rank, r in enumerate(ranks):
        for name, p in net.named_parameters():
            worst = max(worst, close(f"rank {rank} grad {name}", r[f"grad.{name}"], p.grad, out))
        for name, b in net.named_buffers():
            if "num_batches" not in name:
                worst = max(worst, close(f"rank {rank} buffer {name}", r[f"buffer.{name}"], b, out))
    sizes = "/".join(str(r["x"].shape[0]) for r in ranks)
    print(f"ok: DDP over a converted SyncBatchNorm model at world {args.nproc} (batches {sizes}): averaged "
          f"gradients and running stats match torch on the global batch (max difference {worst:.2g})")


def check_convert(args):
    rc, out = run([args.binary, "convert"])
    print(out, end="")
    if rc != 0:
        fail(f"torch_parity convert exited {rc}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--launcher", required=True)
    p.add_argument("--binary", required=True)
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("case", choices=["sampler", "syncbn", "ddp", "convert"])
    args = p.parse_args()
    {"sampler": check_sampler, "syncbn": check_syncbn, "ddp": check_ddp, "convert": check_convert}[args.case](args)


if __name__ == "__main__":
    main()
