"""Goodput benchmark driver (run by scripts/bench-goodput.sh; a benchmark, not a test).

How much training survives a SIGKILL of a random worker every --fault-every seconds. Every
configuration runs twice for --duration seconds, back to back: fault-free, then faulty (this
driver SIGKILLs one worker, chosen by a generator seeded with --seed, at every multiple of
--fault-every after the first step). The window starts at the first completed step; the
useful steps are the step the job stands at when the window ends (redone steps count once).
Per configuration: goodput = useful steps/s of the faulty run / steps/s of its fault-free
run; goodput vs the floor = the same over the fault-free run without checkpoints or snapshots;
under ddp-launch, the launcher's own goodput ledger of the faulty run (its `goodput` event in
events.jsonl), over the same span (from the first step, start-up and shutdown left out): its
goodput, and with the time kept steps spent saving (stall), beside the faulty run's goodput
against itself: useful steps/s over its own undisturbed rate (the workers' step records in
the 3 s before each kill and before the window's end, when a restart's side work is over),
which the run-to-run drift of this VM's speed does not move; per failure: steps redone (the last step completed before the kill minus the step the new
attempt resumed from) and failure -> first step of the new attempt. Before the main runs, a
sweep of train's --snapshot-every picks the interval with the most useful steps/s; after them,
the snapshot overhead of train --bench (the benchmark MLP) at interval 0, 10 (its default) and 1.
The workers' records are those of scripts/bench_records.py. Every model is the benchmark MLP
784-1024-1024-1024-10, batch 32 per rank, SGD with momentum, 2 workers, OMP_NUM_THREADS=1.
Usage: bench_goodput.py --ddp-launch BIN --train BIN [--torchrun CMD] --peer PY [--duration S] ...
"""
import argparse
import datetime
import glob
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from bench_records import PYTHON, peers_line, torchrun_command, Record, first_step_time, load_average, stop  # next to this file

PY_MODEL = ["--hidden", "1024", "--layers", "4", "--in-dim", "784", "--classes", "10", "--batch", "32"]
TRAIN_MODEL = ["--hidden", "1024,1024,1024", "--in-dim", "784", "--classes", "10", "--batch", "32", "--lr", "0.01"]
CHECKPOINT_EVERY = 100  # the tutorial-style script's torch.save interval


class Config:
    """One configuration: launcher ("torchrun" or "ddp"), program ("py" or "train") and its flags."""

    def __init__(self, name, launcher, program, args, what, env=None):
        self.name, self.launcher, self.program, self.args, self.what = name, launcher, program, args, what
        self.env = env or {}  # added to the job's environment


def py_config(name, launcher, checkpoint_every, snapshot_every, what, env=None):
    return Config(name, launcher, "py", ["--checkpoint-every", str(checkpoint_every), "--snapshot-every",
                                         str(snapshot_every)], what, env)


def train_config(name, snapshot_every, what):
    return Config(name, "ddp", "train", ["--snapshot-every", str(snapshot_every)], what)


def argv_of(cfg, a, work, restarts):
    if cfg.launcher == "torchrun":
        prefix = a.torchrun + ["--standalone", "--nproc_per_node=2", "--monitor_interval=0.1",
                  f"--max_restarts={restarts}"]
    else:
        prefix = [a.ddp_launch, "--nproc-per-node=2", f"--max-restarts={restarts}", "--log-dir",
                  os.path.join(work, "logs")]  # events.jsonl: the ledger's `goodput` event
    if cfg.program == "py":
        return prefix + [a.peer, "--steps", str(10**9)] + PY_MODEL + cfg.args
    return prefix + [a.train, "--epochs", str(10**6), "--schedule", "constant", "--train-samples", "8192",
                     "--val-samples", "512", "--checkpoint-interval", "0", "--checkpoint-dir",
                     os.path.join(work, "ckpt"), "--progress", "none", "--step-times", work] + TRAIN_MODEL + cfg.args


class Run:
    """One run's outcome: the rate over the window, the failures, or why it failed."""

    def __init__(self):
        self.error = None
        self.rate = None  # useful steps per second over the window
        self.failures = []  # per kill: {"rank", "redone", "to_step"} (to_step None: no step of the new attempt)
        self.postponed = 0  # kills that waited for the previous restart's first step
        self.missed = 0  # kills that waited past the window's end (so never happened)
        self.ledger = None  # ddp-launch: {"goodput", "with_stall", "sum_error"} over the span from the first step
        self.steady = None  # the run's own undisturbed rate: steps/s in the STEADY_S before each kill and the end
        self.same_run = None  # useful steps/s over that rate: goodput measured against the run itself


STEADY_S = 3  # seconds before a kill (or the window's end): the previous restart's side work is over


def steady_rate(events, ends):
    """The median over `ends` of the step rate in the STEADY_S before each (from the workers' own
    step records), or None."""
    rates = []
    for end in ends:
        inside = [(t, step) for t, _, step in events if end - STEADY_S <= t < end]
        if len(inside) >= 2 and inside[-1][0] > inside[0][0] and inside[-1][1] > inside[0][1]:
            rates.append((inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0]))
    return statistics.median(rates) if rates else None


def ledger_of(work):
    """The launcher's `goodput` event (ddp-launch runs), as fractions of the span from the first
    step (start-up, pre-flight, waiting and shutdown left out), or None."""
    for path in glob.glob(os.path.join(work, "logs", "*", "events.jsonl")):
        for line in open(path, errors="replace"):
            e = json.loads(line) if '"goodput"' in line else {}
            if e.get("event") != "goodput":
                continue
            kinds = [k for k in e if k.endswith("_s") and k not in ("wall_s", "goodput_s", "pending_s")]
            span = e["wall_s"] - sum(e.get(k, 0) for k in ("startup_s", "preflight_s", "waiting_s", "shutdown_s"))
            total = e["goodput_s"] + e["pending_s"] + sum(e[k] for k in kinds)
            return {"goodput": e["goodput_s"] / span, "with_stall": (e["goodput_s"] + e["stall_s"]) / span,
                    "sum_error": abs(total - e["wall_s"]) / e["wall_s"]} if span > 0 else None
    return None


def steps_of(recs):
    """Every (time, attempt, step) over the ranks' records, by time."""
    return sorted((t, attempt, step) for rec in recs for attempt, r in rec.items() for step, t in r.get("steps", []))


def one_run(cfg, a, duration, faulty, rng):
    """Launch; from the first step, --duration seconds (SIGKILLs of a random worker every
    --fault-every s when faulty); then wait for the last restart's first step; stop the job."""
    run = Run()
    kills_planned = int((duration - 1e-9) // a.fault_every) if faulty else 0
    with tempfile.TemporaryDirectory(prefix="bench-goodput.") as work:
        env = dict(os.environ, OMP_NUM_THREADS="1", BENCH_RECOVERY_DIR=work, PYTHON_EXEC=PYTHON, LOGLEVEL="ERROR", **cfg.env)
        out_path = os.path.join(work, "output.txt")
        records = [Record(os.path.join(work, f"rank{r}.log")) for r in range(2)]
        kills = []  # (time, rank, attempt killed)
        victim = None
        with open(out_path, "w") as out:
            proc = subprocess.Popen(argv_of(cfg, a, work, kills_planned + 2), env=env, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            deadline = time.monotonic() + duration + a.timeout
            t0, waiting, windowed, done = None, False, False, False
            try:
                while proc.poll() is None and time.monotonic() < deadline:
                    recs = [r.poll() for r in records]
                    now = time.time()
                    if t0 is None:
                        t0 = first_step_time(recs, 0)
                    elif now >= t0 + duration:  # the window is over: wait for the last restart's first step
                        windowed = True
                        if not kills or first_step_time(recs, kills[-1][2] + 1) is not None:
                            done = True
                            break
                    elif len(kills) < kills_planned and now >= t0 + (len(kills) + 1) * a.fault_every:
                        attempt = max(k for rec in recs for k in rec)
                        victim = rng.randrange(2) if not waiting else victim
                        pid = recs[victim].get(attempt, {}).get("pid")
                        if (kills and attempt <= kills[-1][2]) or first_step_time(recs, attempt) is None or pid is None:
                            if not waiting:  # the previous restart has not stepped yet: wait for it
                                run.postponed, waiting = run.postponed + 1, True
                        else:
                            os.kill(pid, signal.SIGKILL)
                            kills.append((time.time(), victim, attempt))
                            waiting = False
                    time.sleep(0.002)
            finally:  # done, timed out, or this driver interrupted: stop the job, leave nothing behind
                rc = proc.poll()
                if rc is None:
                    stop(proc)
        recs = [r.poll() for r in records]
        output = open(out_path, errors="replace").read()
        run.ledger = ledger_of(work) if cfg.launcher == "ddp" else None
    if t0 is None:
        run.error = f"no step within {duration + a.timeout:.0f} s" if rc is None else f"the job exited ({rc}) first"
    elif not windowed:
        run.error = f"the job exited ({rc}) before the window's end" if rc is not None else "timed out in the window"
    elif not done:
        run.error = (f"the job exited ({rc}) before the last restart's first step" if rc is not None else
                     f"no step of the last restart {a.timeout:.0f} s after the window")
    run.missed = kills_planned - len(kills)  # due while a restart had not stepped yet, until the window ended
    events = steps_of(recs)
    if t0 is not None and not run.error:
        first = events[0][2] - 1  # the step the window starts from (0: a fresh start)
        at_end = [step for t, _, step in events if t <= t0 + duration]
        run.rate = (at_end[-1] - first) / duration
        run.steady = steady_rate(events, [t for t, _, _ in kills] + [t0 + duration])
        run.same_run = run.rate / run.steady if run.steady else None
    for t_kill, rank, attempt in kills:
        before = [step for t, _, step in events if t <= t_kill]
        new = [rec[attempt + 1] for rec in recs if attempt + 1 in rec]
        resumed = next((r["resumed_step"] for r in new if "resumed_step" in r), 0)
        to_step = first_step_time(recs, attempt + 1)
        phases = {"started": [r["start"] for r in new if "start" in r],
                  "joined": [r["init_end"] for r in new if "init_end" in r],
                  "restored": [r["resumed"] for r in new if "resumed" in r]}
        run.failures.append({"rank": rank, "redone": (before[-1] if before else 0) - resumed,
                             "to_step": None if to_step is None else to_step - t_kill,
                             "started": min(phases["started"]) - t_kill if phases["started"] else None,
                             "joined": max(phases["joined"]) - t_kill if len(phases["joined"]) == 2 else None,
                             "restored": max(phases["restored"]) - t_kill if len(phases["restored"]) == 2 else None})
    if run.error:
        tail = " | ".join(line for line in output.splitlines()[-3:] if line.strip())
        run.error += f"; last output: {tail[:300]}" if tail else ""
    return run


def overhead_run(a, every):
    """train --bench under ddp-launch: (step ms, % of the timed steps in saves or None), or an error string."""
    argv = [a.ddp_launch, "--nproc-per-node=2", a.train, "--bench", "--steps", str(a.overhead_steps), "--warmup", "20",
            "--snapshot-every", str(every)]
    p = subprocess.run(argv, env=dict(os.environ, OMP_NUM_THREADS="1"), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=600)
    step = re.search(r"step_ms=([0-9.]+)", p.stdout)
    share = re.search(r"bench snapshots: .*?([0-9.]+)% of the timed steps", p.stdout)
    if p.returncode != 0 or not step or (0 < every <= a.overhead_steps and not share):
        tail = " | ".join(line for line in p.stdout.splitlines()[-3:] if line.strip())
        return f"train --bench --snapshot-every {every} exited {p.returncode}: {tail[:300]}"
    return float(step.group(1)), float(share.group(1)) if share else None


def med(values, fmt="{:.0f}"):
    """median (min-max), or '-'."""
    if not values:
        return "-"
    if len(values) == 1:
        return fmt.format(values[0])
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def pct(x, ref):
    return f"{100 * x / ref:.1f}%" if x is not None and ref else "-"


def summary(runs):
    """(median rate or None, failures, error lines) over runs."""
    rates = [r.rate for r in runs if r.rate is not None]
    return (statistics.median(rates) if rates else None, [f for r in runs for f in r.failures],
            [r.error for r in runs if r.error])


def ledger_cells(faulty):
    """The faulty runs' goodput against the run itself (useful steps/s over its own undisturbed
    rate), the launcher's ledger of them (its goodput; with stall, which that rate pays too) and
    the gap between the two in points; medians ('-': none)."""
    same = [r.same_run for r in faulty if r.same_run]
    got = [r for r in faulty if r.ledger]
    gaps = [r.ledger["with_stall"] - r.same_run for r in got if r.same_run]
    cell = lambda xs, f: f(statistics.median(xs)) if xs else "-"  # noqa: E731
    pct1 = lambda x: f"{100 * x:.1f}%"  # noqa: E731
    return " | ".join([cell(same, pct1), cell([r.ledger["goodput"] for r in got], pct1),
                       cell([r.ledger["with_stall"] for r in got], pct1), cell(gaps, lambda x: f"{100 * x:+.1f}")])


def failure_cells(failures):
    redone = [f["redone"] for f in failures]
    to_step = [f["to_step"] * 1000 for f in failures if f["to_step"] is not None]
    return f"{len(failures)} | {med(redone)} | {med(to_step)} ms" if failures else "0 | - | -"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ddp-launch", required=True)
    p.add_argument("--train", required=True, help="build/trainers/train")
    p.add_argument("--torchrun", default="", help="the torchrun command (default: this Python's, bench_records.torchrun_argv)")
    p.add_argument("--peer", required=True, help="bench/peers/python_ddp_recovery.py")
    p.add_argument("--duration", type=float, default=60, help="seconds of each run, from its first step")
    p.add_argument("--fault-every", type=float, default=10, help="seconds between SIGKILLs in a faulty run")
    p.add_argument("--seed", type=int, default=1, help="seeds the choice of the worker killed")
    p.add_argument("--rounds", type=int, default=1, help="fault-free + faulty runs per configuration (medians)")
    p.add_argument("--sweep", default="1,5,10,25,50", help="train --snapshot-every intervals to sweep, comma separated")
    p.add_argument("--sweep-duration", type=float, default=30, help="seconds of each sweep run")
    p.add_argument("--py-snapshot-every", type=int, default=0,
                   help="the Python script's snapshot interval (0: the interval the sweep picks for train)")
    p.add_argument("--overhead-runs", type=int, default=3, help="train --bench runs per snapshot interval (0: none)")
    p.add_argument("--overhead-steps", type=int, default=200, help="timed steps of each train --bench run")
    p.add_argument("--timeout", type=float, default=60, help="seconds a run may take beyond its window")
    p.add_argument("--launchers", default="torchrun,ddp",
                   help="the configurations' launchers to run, comma separated: torchrun, ddp (the floors run always)")
    a = p.parse_args()
    problems = []
    if a.duration <= 0 or a.sweep_duration <= 0 or a.fault_every <= 0:
        problems.append("--duration, --sweep-duration and --fault-every must be > 0 seconds")
    elif a.fault_every >= min(a.duration, a.sweep_duration):
        problems.append(f"--fault-every ({a.fault_every:g} s) must be shorter than --duration ({a.duration:g} s) and "
                        f"--sweep-duration ({a.sweep_duration:g} s), or no run has a failure")
    if a.rounds < 1 or a.overhead_runs < 0 or a.overhead_steps < 1 or a.py_snapshot_every < 0 or a.timeout <= 0:
        problems.append("--rounds and --overhead-steps must be >= 1, --overhead-runs and --py-snapshot-every >= 0, "
                        "--timeout > 0")
    try:
        a.sweep = [int(x) for x in a.sweep.split(",")]
        if not a.sweep or min(a.sweep) < 1:
            raise ValueError
    except ValueError:
        problems.append(f"--sweep must be intervals >= 1 separated by commas (e.g. 1,5,10), got '{a.sweep}'")
    if problems:
        print(f"bench_goodput.py: {'; '.join(problems)}", file=sys.stderr)
        sys.exit(2)
    a.torchrun = torchrun_command(a.torchrun)
    return a


def log(text):
    print(f"# {text}", file=sys.stderr, flush=True)


def main():
    a = parse_args()
    rng = random.Random(a.seed)
    load_before = load_average()
    started = datetime.datetime.now(datetime.timezone.utc)
    failed = []

    # The sweep: train's fault-free rate without snapshots (the floor), then one faulty run per interval.
    floor_train = train_config("floor: train, no snapshots", 0, "`--snapshot-every 0`")
    sweep_floor = one_run(floor_train, a, a.sweep_duration, False, rng)
    log(f"sweep floor: {sweep_floor.error or f'{sweep_floor.rate:.1f} steps/s'}")
    sweep = []
    for every in a.sweep:
        r = one_run(train_config(f"train --snapshot-every {every}", every, ""), a, a.sweep_duration, True, rng)
        log(f"sweep --snapshot-every {every}: {r.error or f'{r.rate:.1f} useful steps/s'}")
        sweep.append((every, r))
    for every, r in sweep:
        if r.error:
            failed.append(f"sweep, train --snapshot-every {every}: {r.error}")
    if sweep_floor.error:
        failed.append(f"sweep, {floor_train.name}: {sweep_floor.error}")
    rated = [(r.rate, every) for every, r in sweep if r.rate is not None]
    best = max(rated)[1] if rated else a.sweep[0]
    py_every = a.py_snapshot_every or best

    # The main runs: per configuration a fault-free run, then a faulty one; configurations alternate.
    floor_py = py_config("floor: the script, no checkpoints", "ddp", 0, 0, "`--checkpoint-every 0`")
    configs = [
        (floor_py, False),
        (py_config("torchrun + py", "torchrun", CHECKPOINT_EVERY, 0, f"rank-0 `torch.save` every {CHECKPOINT_EVERY}"),
         True),
        # torchrun 2.x's default restart often fails on its own shared store (docs/benchmarks.md
        # "Recovery"); its switch to a store per attempt, as ddp-launch always has:
        (py_config("torchrun + py, TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1", "torchrun", CHECKPOINT_EVERY, 0,
                   f"rank-0 `torch.save` every {CHECKPOINT_EVERY}", {"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}), True),
        (py_config("ddp-launch + py, ddp_snapshot", "ddp", CHECKPOINT_EVERY, py_every,
                   f"`ddp_snapshot.save` every {py_every}, `torch.save` every {CHECKPOINT_EVERY}"), True),
        (floor_train, False),
        (train_config("ddp-launch + train, --snapshot-every 1", 1, "`--snapshot-every 1`"), True),
        (train_config(f"ddp-launch + train, --snapshot-every {best} (the sweep's best)", best,
                      f"`--snapshot-every {best}`"), True),
    ]
    launchers = set(a.launchers.split(","))
    configs = [(cfg, faults) for cfg, faults in configs if cfg.launcher in launchers or not faults]
    runs = {cfg.name: {"free": [], "faulty": []} for cfg, _ in configs}
    for i in range(a.rounds):
        for cfg, with_faults in configs:
            kinds = ("free", "faulty") if with_faults else ("free",)
            for kind in kinds:
                r = one_run(cfg, a, a.duration, kind == "faulty", rng)
                runs[cfg.name][kind].append(r)
                log(f"round {i + 1}/{a.rounds} {cfg.name}, {kind}: " + (
                    f"FAILED: {r.error}" if r.error else
                    f"{r.rate:.1f} steps/s, {len(r.failures)} failures, redone "
                    f"{[f['redone'] for f in r.failures]}" + (
                        f", ledger {100 * r.ledger['goodput']:.1f}% (+ stall {100 * r.ledger['with_stall']:.1f}%)"
                        if r.ledger else "") + (f", against itself {100 * r.same_run:.1f}%" if r.same_run else "")))
                if r.error:
                    failed.append(f"{cfg.name}, {kind}, round {i + 1}: {r.error}")

    # The snapshot overhead: train --bench at intervals 0 (none), 10 (the default) and 1, alternating.
    overhead = {0: [], 10: [], 1: []}
    for i in range(a.overhead_runs):
        for every in overhead:
            got = overhead_run(a, every)
            if isinstance(got, str):
                failed.append(f"overhead, round {i + 1}: {got}")
            else:
                overhead[every].append(got)
    load_after = load_average()

    print(f"# {started:%Y-%m-%dT%H:%M:%SZ}, {os.cpu_count()} CPUs, load {load_before} before, {load_after} after; "
          f"2 workers, OMP_NUM_THREADS=1, gloo, CPU; the benchmark MLP 784-1024-1024-1024-10, batch 32 per rank; "
          f"{a.duration:g} s runs from the first step, a SIGKILL of a random worker (seed {a.seed}) every "
          f"{a.fault_every:g} s in the faulty ones; {a.rounds} round(s)")
    print(peers_line(a.torchrun))
    print()
    print(f"Sweep of train's `--snapshot-every` ({a.sweep_duration:g} s runs, one each; the floor, train without "
          f"snapshots fault-free: {'-' if sweep_floor.rate is None else f'{sweep_floor.rate:.1f}'} steps/s):")
    print()
    print("| `--snapshot-every` | useful steps/s under faults | vs the floor | failures | steps redone per failure: "
          "median (min-max) | failure -> first step: median (min-max) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for every, r in sweep:
        rate = "-" if r.rate is None else f"{r.rate:.1f}"
        mark = " (picked)" if every == best else ""
        print(f"| {every}{mark} | {rate} | {pct(r.rate, sweep_floor.rate)} | {failure_cells(r.failures)} |")
    print()
    print("| configuration | state saved | fault-free steps/s | useful steps/s under faults | goodput | goodput vs the "
          "floor | goodput against the run itself | the ledger's goodput | + stall | the ledger's gap, points | failures | "
          "steps redone per failure: median (min-max) | failure -> first step: median (min-max) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    floors = {"py": summary(runs[floor_py.name]["free"])[0], "train": summary(runs[floor_train.name]["free"])[0]}
    for cfg, with_faults in configs:
        free = summary(runs[cfg.name]["free"])[0]
        free_cell = "-" if free is None else f"{free:.1f}"
        if not with_faults:
            print(f"| {cfg.name} | {cfg.what} | {free_cell} | | | | | | | | | | |")
            continue
        rate, failures, _ = summary(runs[cfg.name]["faulty"])
        rate_cell = "-" if rate is None else f"{rate:.1f}"
        print(f"| {cfg.name} | {cfg.what} | {free_cell} | {rate_cell} | {pct(rate, free)} | "
              f"{pct(rate, floors[cfg.program])} | "
              f"{ledger_cells(runs[cfg.name]['faulty'])} | "
              f"{failure_cells(failures)} |")
    sums = [r.ledger["sum_error"] for c, _ in configs for r in runs[c.name]["faulty"] if r.ledger]
    if sums:
        print(f"\nThe ledger's kinds and pending time add up to its wall time within {100 * max(sums):.3f}% "
              f"(the largest gap over {len(sums)} runs).")
    print()
    print("Where a failure's time goes (medians over the failures): SIGKILL -> a new worker runs the program | "
          "-> every rank's init_process_group returned | -> every rank restored its state (none: nothing to restore) "
          "| -> the first step of the new attempt:")
    print()
    print("| configuration | -> a new worker runs | -> every rank joined | -> every rank restored | -> first step |")
    print("|---|---:|---:|---:|---:|")
    for cfg, with_faults in configs:
        if with_faults:
            failures = summary(runs[cfg.name]["faulty"])[1]
            cells = [med([f[k] * 1000 for f in failures if f[k] is not None]) for k in
                     ("started", "joined", "restored", "to_step")]
            print(f"| {cfg.name} | " + " | ".join(c if c == "-" else f"{c} ms" for c in cells) + " |")
    for cfg, with_faults in configs:
        postponed = sum(r.postponed for r in runs[cfg.name]["faulty"])
        missed = sum(r.missed for r in runs[cfg.name]["faulty"])
        if postponed:
            print(f"\n{cfg.name}: {postponed} kill(s) waited for the previous restart's first step"
                  + (f", {missed} of them past the window's end (not counted as failures)" if missed else "") + ".")
    if a.overhead_runs:
        print()
        print(f"Snapshot overhead: `ddp-launch --nproc-per-node=2 train --bench --steps {a.overhead_steps} --warmup 20 "
              f"--snapshot-every N`, {a.overhead_runs} alternating run(s) each:")
        print()
        print("| `--snapshot-every` | step time: median (min-max) | vs without | share of the timed steps in saves |")
        print("|---:|---:|---:|---:|")
        base = statistics.median([s for s, _ in overhead[0]]) if overhead[0] else None
        for every, got in overhead.items():
            steps = [s for s, _ in got]
            shares = [x for _, x in got if x is not None]
            name = "0 (none)" if every == 0 else ("10 (the default)" if every == 10 else str(every))
            vs = f"{100 * (statistics.median(steps) / base - 1):+.1f}%" if steps and base else "-"
            print(f"| {name} | {med(steps, '{:.1f}')} ms | {vs} | "
                  f"{med(shares, '{:.1f}') + '%' if shares else '-'} |")
    if failed:
        print()
    for line in failed:
        print(f"- failed: {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
