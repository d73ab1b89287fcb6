"""libddp's collectives against Python torch.distributed (gloo), under the real ddp-launch.

Usage: check_collectives.py --launcher PATH --binary PATH --python PATH CASE
CASE:
  compare N  ddp_runtime_tests' collectives-dump scenario and collectives_ref.py, each at world
             N under ddp-launch; every result (names in dump_<rank>.txt) must be in both and
             equal to 1e-6
  mixed      ONE job at world 3: ranks 0 and 2 run collectives_ref.py --mixed, rank 1 the C++
             collectives-mixed scenario, in one process group (all_reduce, reduce_scatter,
             all_to_all); each rank's results must equal those of a Python-only job
Prints what it checked; exits 1 on the first mismatch.
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from checks import fail  # noqa: E402

REF = os.path.join(HERE, "collectives_ref.py")


def launch(args, nproc, program, out_dir):
    env = dict(os.environ, PYTHON_EXEC=args.python, OMP_NUM_THREADS="1", DDP_TEST_OUT=out_dir)
    cmd = [args.launcher, f"--nproc-per-node={nproc}", *program]
    print("running:", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    if p.returncode != 0:
        fail(f"exit code {p.returncode}, expected 0: {' '.join(cmd)}", p.stdout)
    return p.stdout


def read_dump(path):
    results = {}
    with open(path) as f:
        for line in f:
            name, *values = line.split()
            if name in results:
                fail(f"{path}: {name} written twice")
            results[name] = [float(v) for v in values]
    return results


def compare(label, ours, theirs, names=None):
    names = sorted(set(ours) | set(theirs)) if names is None else names
    for name in names:
        if name not in ours or name not in theirs:
            fail(f"{label}: {name} is in only one of the dumps (libddp: {name in ours}, torch: {name in theirs})")
        a, b = ours[name], theirs[name]
        if len(a) != len(b) or any(abs(x - y) > 1e-6 * max(1.0, abs(y)) for x, y in zip(a, b)):
            fail(f"{label}: {name} differs: libddp {a}, torch {b}")
    return len(names)


def case_compare(args, world):
    with tempfile.TemporaryDirectory() as cpp, tempfile.TemporaryDirectory() as py:
        launch(args, world, [args.binary, "--worker", "collectives-dump"], cpp)
        launch(args, world, [REF, "--out", py], py)
        checked = 0
        for rank in range(world):
            ours = read_dump(os.path.join(cpp, f"dump_{rank}.txt"))
            theirs = read_dump(os.path.join(py, f"dump_{rank}.txt"))
            checked += compare(f"rank {rank}", ours, theirs)
    print(f"ok: world {world}: {checked} results of libddp equal torch.distributed's (gloo) to 1e-6")


def case_mixed(args):
    world = 3
    with tempfile.TemporaryDirectory() as mixed, tempfile.TemporaryDirectory() as py:
        wrapper = os.path.join(mixed, "mixed_worker.sh")
        with open(wrapper, "w") as f:
            f.write("#!/bin/sh\n"
                    f'if [ $((RANK % 2)) -eq 0 ]; then exec "{args.python}" "{REF}" --mixed --out "{mixed}"; fi\n'
                    f'exec "{args.binary}" --worker collectives-mixed\n')
        os.chmod(wrapper, 0o755)
        launch(args, world, [wrapper], mixed)
        launch(args, world, [REF, "--out", py], py)
        checked = 0
        for rank in range(world):
            ours = read_dump(os.path.join(mixed, f"dump_{rank}.txt"))
            theirs = read_dump(os.path.join(py, f"dump_{rank}.txt"))
            checked += compare(f"mixed rank {rank} ({'Python' if rank % 2 == 0 else 'libddp'})", ours, theirs,
                               sorted(ours))
    print(f"ok: Python ranks 0, 2 and libddp rank 1 in one gloo group: {checked} results "
          "(all_reduce, reduce_scatter, all_to_all) equal a Python-only job's")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--launcher", required=True)
    p.add_argument("--binary", required=True)
    p.add_argument("--python", required=True)
    p.add_argument("case", choices=["compare", "mixed"])
    p.add_argument("world", nargs="?", type=int, default=2)
    args = p.parse_args()
    if args.case == "compare":
        case_compare(args, args.world)
    else:
        case_mixed(args)


if __name__ == "__main__":
    main()
