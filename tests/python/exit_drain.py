"""The exit drain (python/ddp_exit_drain.py): its wait, with a fake clock, and under ddp-launch.

Under the launcher, a worker that imported torch starts a native thread (one the threading
module does not know, as torch's own are) that needs the GIL for about a second of Python work
after the main thread has returned; it prints a line when done. With the drain (on by default,
its budget raised here for a loaded machine) that line comes before the worker exits 0; with
DDP_LAUNCH_EXIT_DRAIN=0 the interpreter finalizes first and ends the thread, so the line never
comes: the case the drain exists for. The worker also checks that the sitecustomize the drain
shadows (Debian's, a venv's) still ran. Last, a launcher sweeps the hooks folder of a launcher
that no longer runs and keeps a live one's.

    exit_drain.py --launcher BUILD/launcher/ddp-launch --python PYTHON_WITH_TORCH
Prints one line per check; exits 1 on the first failure.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import ddp_exit_drain  # noqa: E402

WORKER = textwrap.dedent("""\
    import _thread, importlib.machinery, os, sys
    import torch  # noqa: F401  (the drain waits only in a process that imported torch)

    hooks = [p for p in os.environ["PYTHONPATH"].split(":") if "ddp-launch-python-" in p]
    assert len(hooks) == 1, f"PYTHONPATH={os.environ['PYTHONPATH']}: expected one hooks directory at its end"
    shadowed = importlib.machinery.PathFinder.find_spec("sitecustomize", [p for p in sys.path if p != hooks[0]])
    ran = sys.modules["sitecustomize"].__file__
    expected = shadowed.origin if shadowed else os.path.join(hooks[0], "sitecustomize.py")
    print(f"sitecustomize in sys.modules: {ran} (expected {expected})", flush=True)
    if ran != expected:
        sys.exit(5)

    def work():
        n = 0
        for i in range(15_000_000):
            n += i
        print("native thread done", flush=True)

    _thread.start_new_thread(work, ())
    print("main done", flush=True)
""")


def fail(message):
    print(f"FAIL: {message}", flush=True)
    sys.exit(1)


def check_logic():
    """drain() with a fake clock and thread sampler."""
    def run(samples, seconds=1.0):
        now = [0.0]
        taken = []

        def sample():
            taken.append(1)
            return samples[min(len(taken), len(samples)) - 1]

        def sleep(s):
            now[0] += s
        done = ddp_exit_drain.drain(seconds, sample=sample, sleep=sleep, clock=lambda: now[0])
        return done, len(taken)

    cases = [
        ("no native thread", [{}], (True, 1)),
        ("idle threads: two quiet samples", [{1: b"S", 2: b"S"}], (True, 2)),
        ("a runnable thread, then idle", [{1: b"R"}, {1: b"S"}, {1: b"R"}, {1: b"S"}, {1: b"S"}], (True, 5)),
        ("a thread in D counts as busy", [{1: b"D"}, {1: b"S"}, {1: b"S"}], (True, 3)),
        ("a stopped thread does not hold exit", [{1: b"t"}], (True, 2)),
    ]
    for name, samples, want in cases:
        got = run(samples)
        if got != want:
            fail(f"drain, {name}: (drained, samples) = {got}, expected {want}")
        print(f"ok: drain, {name}: {got}")
    drained, samples = run([{1: b"R"}], seconds=0.1)
    if drained or not 20 <= samples <= 22:  # 0.1 s of 5 ms sleeps, one sample before each and a last one
        fail(f"drain, always busy: (drained, samples) = {(drained, samples)}, expected (False, about 21)")
    print("ok: drain, a thread busy for good: gives up at the budget")
    for text, want in [("", 2.0), ("0", 0.0), ("0.5", 0.5), ("-3", 0.0), ("soon", 2.0)]:
        os.environ[ddp_exit_drain.ENV] = text
        if ddp_exit_drain.budget() != want:
            fail(f"budget with {ddp_exit_drain.ENV}={text!r}: {ddp_exit_drain.budget()}, expected {want}")
    os.environ.pop(ddp_exit_drain.ENV)
    print("ok: budget parses DDP_LAUNCH_EXIT_DRAIN (empty or bad: 2 s; 0 or less: off)")


def launch(args, script, drain, tmpdir=None):
    env = dict(os.environ, PYTHON_EXEC=args.python, DDP_LAUNCH_EXIT_DRAIN=drain)
    if tmpdir:
        env["TMPDIR"] = tmpdir
    env.pop("PYTHONPATH", None)
    p = subprocess.run([args.launcher, "--nproc-per-node=1", script], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300)
    return p.returncode, p.stdout


def check_launch(args):
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "late_thread.py")
        with open(script, "w") as f:
            f.write(WORKER)
        code, out = launch(args, script, "120")
        if code != 0 or "native thread done" not in out or "main done" not in out:
            fail(f"with the drain: exit {code}, expected 0 with both lines; output:\n{out}")
        print("ok: with the drain, the native thread finished before the worker exited 0")
        code, out = launch(args, script, "0")
        if "main done" not in out or "native thread done" in out:
            fail(f"with DDP_LAUNCH_EXIT_DRAIN=0: exit {code}, expected the thread cut off at finalization; "
                 f"output:\n{out}")
        print(f"ok: with DDP_LAUNCH_EXIT_DRAIN=0 the interpreter ended the thread first (exit {code})")

        # A killed launcher's hooks folder is removed by the next launcher; a live one's is kept,
        # and the launcher removes its own at exit.
        tmpdir = os.path.join(tmp, "tmpdir")
        dead = subprocess.Popen(["true"])
        dead.wait()
        stale = os.path.join(tmpdir, f"ddp-launch-python-{dead.pid}-AbCdEf")
        live = os.path.join(tmpdir, f"ddp-launch-python-{os.getpid()}-AbCdEf")
        for d in (stale, live):
            os.makedirs(d)
        code, out = launch(args, script, "120", tmpdir)
        left = sorted(os.listdir(tmpdir))
        if code != 0 or left != [os.path.basename(live)]:
            fail(f"hooks folders after a launch: {left} (exit {code}), expected only {os.path.basename(live)}")
        print("ok: a dead launcher's hooks folder was swept, a live one's kept, the launcher's own removed")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--launcher", required=True)
    parser.add_argument("--python", required=True)
    args = parser.parse_args()
    check_logic()
    check_launch(args)


if __name__ == "__main__":
    main()
