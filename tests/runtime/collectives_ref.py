"""The collectives of tests/runtime/collectives_test.cpp through Python torch.distributed (gloo).

Run under ddp-launch. Writes dump_<rank>.txt into --out: one line per result, "name v1 v2 ...",
in the same names as the C++ scenario, for check_collectives.py to compare. What torch 1.13's
gloo lacks is done the way a torch 1.13 user would: AVG as SUM / world, reduce_scatter as one
reduce per member, all_gather_into_tensor as all_gather, the list all_to_all as
all_to_all_single over the flattened tensors.

--mixed: this process is one rank of a job whose other ranks run libddp: it joins libddp's
store namespace (ddp/restart<N>/: join/<rank>, join/count, join/all) and its group (store prefix "pg0"), and runs
only the shared part, with reduce_scatter as libddp's gloo fallback (all_reduce of the
concatenated inputs, then this rank's slice): both sides must put the same ops on the wire.
"""
import argparse
import os
from datetime import timedelta

import torch
import torch.distributed as dist

DTYPES = [("float32", torch.float32), ("float64", torch.float64), ("int32", torch.int32), ("int64", torch.int64)]
R = dist.ReduceOp


def inp(dtype, n, r, k):
    base = torch.arange(n, dtype=torch.float64)
    if dtype.is_floating_point:
        return (base * 0.37 + r * 1.5 + k * 0.25 + 1).to(dtype)
    return (torch.remainder(base * 3 + r * 7 + k, 11) + 1).to(dtype)


def ops_for(dtype):
    if dtype.is_floating_point:
        return [("sum", R.SUM), ("avg", "avg"), ("product", R.PRODUCT), ("min", R.MIN), ("max", R.MAX)]
    return [("sum", R.SUM), ("product", R.PRODUCT), ("min", R.MIN), ("max", R.MAX), ("band", R.BAND),
            ("bor", R.BOR), ("bxor", R.BXOR)]


class Dump:
    def __init__(self, path):
        self.f = open(path, "w")

    def put(self, name, t):
        self.f.write(name + "".join(" " + repr(float(x)) for x in t.double().reshape(-1).tolist()) + "\n")


def all_reduce(t, op, group=None):
    dist.all_reduce(t, op=R.SUM if isinstance(op, str) else op, group=group)
    if isinstance(op, str):
        t.div_(dist.get_world_size(group))


def reduce(t, dst, op):
    dist.reduce(t, dst, op=R.SUM if isinstance(op, str) else op)
    if isinstance(op, str) and dist.get_rank() == dst:
        t.div_(dist.get_world_size())


def reduce_scatter(out, ins, op, mixed):
    world, rank = dist.get_world_size(), dist.get_rank()
    if mixed:  # libddp's fallback on gloo, op for op
        flat = torch.cat([t.reshape(-1) for t in ins])
        dist.all_reduce(flat, op=R.SUM if isinstance(op, str) else op)
        out.copy_(flat[rank * out.numel():(rank + 1) * out.numel()].view_as(out))
        if isinstance(op, str):
            out.div_(world)
        return
    for j in range(world):
        t = ins[j].clone()
        reduce(t, j, op)
        if j == rank:
            out.copy_(t)


def a2a_rows(r, j):
    return (r + j) % 3 + 1


def shared_part(d, rank, world, mixed):
    for t, dt in DTYPES:
        ar = inp(dt, 5, rank, 1)
        dist.all_reduce(ar)
        d.put(f"shared/all_reduce/{t}", ar)
        for opname, op in ops_for(dt):
            if opname in ("product", "band", "bor", "bxor"):
                continue
            ins = [inp(dt, 3, rank * 10 + j, 2) for j in range(world)]
            out = torch.empty(3, dtype=dt)
            reduce_scatter(out, ins, op, mixed)
            d.put(f"reduce_scatter/{t}/{opname}", out)
            big = inp(dt, 3 * world, rank, 3)
            out2 = torch.empty(3, dtype=dt)
            reduce_scatter(out2, list(big.chunk(world)), op, mixed)
            d.put(f"reduce_scatter_tensor/{t}/{opname}", out2)
        in_s = [a2a_rows(rank, j) for j in range(world)]
        out_s = [a2a_rows(j, rank) for j in range(world)]
        a2a_in = inp(dt, sum(in_s) * 2, rank, 4).view(sum(in_s), 2)
        a2a_out = torch.empty(sum(out_s), 2, dtype=dt)
        dist.all_to_all_single(a2a_out, a2a_in, out_s, in_s)
        d.put(f"all_to_all_single/{t}/uneven", a2a_out)
        eq_in = inp(dt, 2 * world, rank, 5)
        eq_out = torch.empty(2 * world, dtype=dt)
        dist.all_to_all_single(eq_out, eq_in)
        d.put(f"all_to_all_single/{t}/equal", eq_out)
        l_in = [inp(dt, a2a_rows(rank, j), rank * 10 + j, 6) for j in range(world)]
        l_out = [torch.empty(a2a_rows(j, rank), dtype=dt) for j in range(world)]
        flat_out = torch.empty(sum(o.numel() for o in l_out), dtype=dt)
        dist.all_to_all_single(flat_out, torch.cat(l_in), [o.numel() for o in l_out], [i.numel() for i in l_in])
        for j, piece in enumerate(flat_out.split([o.numel() for o in l_out])):
            d.put(f"all_to_all/{t}/from{j}", piece)


def full(d, rank, world):
    for t, dt in DTYPES:
        for opname, op in ops_for(dt):
            x = inp(dt, 5, rank, 0)
            all_reduce(x, op)
            d.put(f"all_reduce/{t}/{opname}", x)
            y = inp(dt, 4, rank, 1)
            reduce(y, 1 % world, op)
            if rank == 1 % world:
                d.put(f"reduce/{t}/{opname}", y)
        b = inp(dt, 6, rank, 2)
        dist.broadcast(b, world - 1)
        d.put(f"broadcast/{t}", b)
        g = [torch.empty(3, dtype=dt) for _ in range(world)]
        dist.all_gather(g, inp(dt, 3, rank, 3))
        for j in range(world):
            d.put(f"all_gather/{t}/{j}", g[j])
        into = [torch.empty(3, dtype=dt) for _ in range(world)]
        dist.all_gather(into, inp(dt, 3, rank, 4))
        d.put(f"all_gather_into_tensor/{t}", torch.stack(into))
        ga = [torch.empty(2, dtype=dt) for _ in range(world)] if rank == world - 1 else None
        dist.gather(inp(dt, 2, rank, 5), ga, dst=world - 1)
        for j, x in enumerate(ga or []):
            d.put(f"gather/{t}/{j}", x)
        sc = torch.empty(4, dtype=dt)
        dist.scatter(sc, [inp(dt, 4, j, 6) for j in range(world)] if rank == 0 else None, src=0)
        d.put(f"scatter/{t}", sc)
    shared_part(d, rank, world, mixed=False)
    mine = inp(torch.float64, 4, rank, 7)
    from_left = torch.empty(4, dtype=torch.float64)
    rx = dist.irecv(from_left, (rank + world - 1) % world)
    tx = dist.isend(mine, (rank + 1) % world)
    tx.wait()
    rx.wait()
    d.put("ring", from_left)
    if rank == 0:
        got = {}
        for _ in range(1, world):
            t = torch.empty(3, dtype=torch.float32)
            got[dist.recv(t)] = t
        for src in sorted(got):
            d.put(f"recv_any/{src}", got[src])
    else:
        dist.send(inp(torch.float32, 3, rank, 8), 0)
    a1 = inp(torch.float32, 5, rank, 9)
    a2 = inp(torch.float64, 6, rank, 10)
    a3 = [torch.empty(2, dtype=torch.int64) for _ in range(world)]
    works = [dist.all_reduce(a1, op=R.MAX, async_op=True), dist.broadcast(a2, 0, async_op=True),
             dist.all_gather(a3, inp(torch.int64, 2, rank, 12), async_op=True)]
    for w in works:
        w.wait()
    a4 = torch.empty(3, dtype=torch.float32)
    reduce_scatter(a4, [inp(torch.float32, 3, rank * 10 + j, 11) for j in range(world)], R.SUM, False)
    d.put("async/all_reduce", a1)
    d.put("async/broadcast", a2)
    for j in range(world):
        d.put(f"async/all_gather/{j}", a3[j])
    d.put("async/reduce_scatter", a4)
    ends = dist.new_group([0, world - 1])
    if rank in (0, world - 1):
        s = inp(torch.float32, 4, rank, 13)
        dist.all_reduce(s, group=ends)
        d.put("group/all_reduce", s)
        ins = [inp(torch.float32, 2, rank, 14), inp(torch.float32, 2, rank, 15)]
        out = torch.empty(2, dtype=torch.float32)
        me = dist.get_rank(ends)
        for j, t in enumerate(ins):
            t = t.clone()
            dist.reduce(t, [0, world - 1][j], group=ends)
            if j == me:
                out.copy_(t)
        d.put("group/reduce_scatter", out)
    dist.barrier()


def join_libddp_group(rank, world):
    """libddp's rendezvous (runtime/src/group/store_init.cpp) and its world group's store prefix."""
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world, is_master=False,
                          timeout=timedelta(seconds=120))
    base = dist.PrefixStore("ddp/restart" + os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"), store)
    base.set(f"join/{rank}", "1")
    if base.add("join/count", 1) == world:  # the rank that completes the count lets everyone go
        base.set("join/all", "1")
    base.wait(["join/all"])
    # torch 1.13: the group's keys under the group_name given, and init_process_group ends in a
    # store barrier the libddp ranks do not join: the lowest Python rank (rank 0: it also
    # publishes gloo's sequence number) counts them in. torch 2.x names the world group "0"
    # itself (libddp lays its keys out the same way) and has no such barrier unless
    # TORCH_DIST_INIT_BARRIER=1.
    legacy = int(torch.__version__.split(".")[0]) < 2
    if rank == 0 and (legacy or os.environ.get("TORCH_DIST_INIT_BARRIER") == "1"):
        base.add("store_based_barrier_key:0", world - (world + 1) // 2)
    dist.init_process_group("gloo", store=base, rank=rank, world_size=world, group_name="pg0" if legacy else None,
                            timeout=timedelta(seconds=120))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--mixed", action="store_true")
    args = p.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if args.mixed:
        join_libddp_group(rank, world)
    else:
        dist.init_process_group("gloo")
    d = Dump(os.path.join(args.out, f"dump_{rank}.txt"))
    if args.mixed:
        shared_part(d, rank, world, mixed=True)
    else:
        full(d, rank, world)
    d.f.close()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
