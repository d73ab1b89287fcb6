"""Recovery benchmark driver (run by scripts/bench-recovery.sh; a benchmark, not a test).

What a failure costs a user: the time from SIGKILL of one worker to the next completed
training step, and from launch to the first step, for torchrun and ddp-launch side by side.
Every run is 2 workers under --max-restarts 1 whose rank 1 this driver SIGKILLs (the pid its
record names) once that rank has completed --kill-step steps of the first attempt and
--kill-after seconds have passed since the first step; the job trains on until the new
attempt's first step, then this driver stops it (SIGTERM, SIGKILL 10 s later). The workers
record their own times (CLOCK_REALTIME, "<attempt> <event> <value> <time>" lines in
DIR/rank<R>.log): bench/peers/python_ddp_recovery.py (env BENCH_RECOVERY_DIR) and the C++
trainer (train --step-times DIR). Configurations alternate run by run; one whose ddp-launch
flag is missing is skipped, saying so; a failed or timed-out run is listed, never dropped.
Usage: bench_recovery.py --ddp-launch BIN --train BIN [--torchrun CMD] --peer PY [--runs N] ...
"""
import argparse
import datetime
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from bench_records import PYTHON, peers_line, torchrun_command, Record, first_step_time, known_flags, load_average, stop  # next to this file


class Config:
    """One configuration: launcher argv prefix, program, ddp-launch flags it needs."""

    def __init__(self, name, launcher, program, flags=(), optional=(), requires=(), env=None, mlp=False):
        self.name, self.launcher, self.program = name, launcher, program
        self.mlp = mlp  # the benchmark MLP (23 MB of state) with snapshots every step, else the small model
        self.env = dict(env or {})  # set for the launcher (and so its workers)
        self.flags = list(flags)  # always passed (each needs its flag in --help: requires)
        self.optional = list(optional)  # passed when ddp-launch knows the flag, else today's behaviour anyway
        self.requires = list(requires)  # each a tuple of flag names, one of which ddp-launch --help must list


def all_configs():
    cold, rank0 = ["--no-warm-restarts"], ["--worker-store=rank0"]
    warm = ("--warm-restarts", "--no-warm-restarts")  # warm is the default where either exists
    return [
        Config("torchrun + py", "torchrun", "py"),
        # torch 2.x's torchrun shares its rendezvous store with the workers and their keys carry no
        # attempt any more: a restarted gloo group can read the dead attempt's addresses (measured
        # with 2.15: connectFullMesh to the killed rank's old port). Its own switch turns that off.
        Config("torchrun + py, TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1", "torchrun", "py",
               env={"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}),
        Config("ddp-launch + py, cold, rank-0 store", "ddp", "py", optional=cold + rank0),
        Config("ddp-launch + py, cold, launcher store", "ddp", "py", flags=["--worker-store=launcher"], optional=cold,
               requires=[("--worker-store",)]),
        Config("ddp-launch + py, warm", "ddp", "py", requires=[warm]),
        Config("ddp-launch + py, warm, --preload", "ddp", "py", flags=["--preload=torch.distributed,torch.utils.data"],
               requires=[warm, ("--preload",)]),
        Config("ddp-launch + train, cold", "ddp", "train", optional=cold),
        Config("ddp-launch + train, warm", "ddp", "train", requires=[warm]),
        # The benchmark MLP (784-1024-1024-1024-10, batch 32: 23 MB of model and optimizer state):
        # torchrun with the tutorial's checkpoint file, ddp-launch with in-memory snapshots every step.
        Config("torchrun + py, MLP 23 MB, TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1", "torchrun", "py",
               env={"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}, mlp=True),
        Config("ddp-launch + py, warm, MLP 23 MB, ddp_snapshot every step", "ddp", "py", requires=[warm], mlp=True),
        # The same script without its ddp_standby.point(): the standbys import torch only.
        Config("ddp-launch + py, warm, MLP 23 MB, ddp_snapshot every step, no standby point", "ddp", "py",
               requires=[warm], env={"BENCH_NO_STANDBY_POINT": "1"}, mlp=True),
        Config("ddp-launch + train, warm, MLP 23 MB, --snapshot-every 1", "ddp", "train", requires=[warm], mlp=True),
    ]

# The benchmark MLP's options for each program.
MLP_PY = ["--hidden", "1024", "--layers", "3", "--in-dim", "784", "--classes", "10", "--batch", "32"]
MLP_TRAIN = ["--hidden", "1024,1024,1024", "--in-dim", "784", "--classes", "10", "--batch-size", "32"]


def flag_name(flag):
    return flag.split("=", 1)[0]


def argv_of(cfg, a, known, work):
    """The job: trains until this driver stops it (after the restart's first step)."""
    if cfg.launcher == "torchrun":
        prefix = a.torchrun + ["--standalone", "--nproc_per_node=2", "--monitor_interval=0.1",
                  "--max_restarts=1"]
    else:
        prefix = [a.ddp_launch, "--nproc-per-node=2", "--max-restarts=1"]
        prefix += cfg.flags + [f for f in cfg.optional if flag_name(f) in known]
    if cfg.program == "py":
        snapshots = ["--snapshot-every", "1"] if cfg.mlp and cfg.launcher == "ddp" else []
        return prefix + [a.peer, "--steps", str(10**9), "--checkpoint-every", str(a.checkpoint_every)] + (
            MLP_PY + snapshots if cfg.mlp else [])
    return prefix + [a.train, "--epochs", str(10**6), "--val-samples", "512", "--checkpoint-dir",
                     os.path.join(work, "ckpt"), "--checkpoint-interval", str(a.checkpoint_every), "--progress",
                     "none", "--step-times", work] + (MLP_TRAIN + ["--snapshot-every", "1"] if cfg.mlp else [])


class Run:
    """One run's outcome: the figures, or why it failed."""

    def __init__(self):
        self.error = None
        self.launch_to_step = self.kill_to_step = None
        self.kill_step = None
        self.phases = {}  # seconds from the kill: started, imported, joined, first step
        self.init_times = []  # init_process_group seconds, every rank and attempt
        self.startup_times = []  # a worker's start -> its init_process_group call (imports, data)


def one_run(cfg, a, known):
    """Launch; SIGKILL rank 1 once it has done --kill-step steps and --kill-after seconds have
    passed since the first step; stop the job at the new attempt's first step."""
    run = Run()
    with tempfile.TemporaryDirectory(prefix="bench-recovery.") as work:
        env = dict(os.environ, OMP_NUM_THREADS="1", BENCH_RECOVERY_DIR=work, PYTHON_EXEC=PYTHON, LOGLEVEL="ERROR",
                   **cfg.env)
        argv = argv_of(cfg, a, known, work)
        out_path = os.path.join(work, "output.txt")
        records = [Record(os.path.join(work, f"rank{r}.log")) for r in range(2)]
        t_kill, recovered = None, False
        with open(out_path, "w") as out:
            t_launch = time.time()
            proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            deadline = time.monotonic() + a.timeout
            try:
                while proc.poll() is None and time.monotonic() < deadline:
                    recs = [r.poll() for r in records]
                    if t_kill is None:
                        victim, first = recs[1].get(0, {}), first_step_time(recs, 0)
                        if victim.get("last_step", (0,))[0] >= a.kill_step and "pid" in victim and \
                                time.time() - first >= a.kill_after:
                            os.kill(victim["pid"], signal.SIGKILL)
                            t_kill = time.time()
                            run.kill_step = victim["last_step"][0]
                    elif first_step_time(recs, 1) is not None:
                        recovered = True
                        break
                    time.sleep(0.002)
            finally:  # done, timed out, or this driver interrupted: stop the job, leave nothing behind
                rc = proc.poll()
                if rc is None:
                    stop(proc)
        recs = [r.poll() for r in records]
        output = open(out_path, errors="replace").read()
    if not recovered:
        if rc is None:
            run.error = f"timed out after {a.timeout:.0f} s"
        elif t_kill is None:
            run.error = f"the job exited ({rc}) before rank 1 reached step {a.kill_step}"
        else:
            run.error = f"the job exited ({rc}) before a step of the new attempt"
    for rec in recs:
        for r in rec.values():
            if "init_start" in r and "init_end" in r:
                run.init_times.append(r["init_end"] - r["init_start"])
            if "start" in r and "init_start" in r:
                run.startup_times.append(r["init_start"] - r["start"])
    if first_step_time(recs, 0) is not None:
        run.launch_to_step = first_step_time(recs, 0) - t_launch
    if recovered:
        run.kill_to_step = first_step_time(recs, 1) - t_kill
        again = [rec[1] for rec in recs if 1 in rec]
        starts = [r["start"] for r in again if "start" in r]
        imported = [r["init_start"] for r in again if "init_start" in r]
        joined = [r["init_end"] for r in again if "init_end" in r]
        if starts:
            run.phases["started"] = min(starts) - t_kill
        if len(imported) == 2:
            run.phases["imported"] = max(imported) - t_kill
        if len(joined) == 2:
            run.phases["joined"] = max(joined) - t_kill
        run.phases["first step"] = run.kill_to_step
    if run.error:
        tail = " | ".join(line for line in output.splitlines()[-3:] if line.strip())
        run.error += f"; last output: {tail[:300]}" if tail else ""
    return run


def fmt_s(values):
    """median (min-max) in ms, or '-'."""
    if not values:
        return "-"
    return f"{statistics.median(values) * 1000:.0f} ms ({min(values) * 1000:.0f}-{max(values) * 1000:.0f})"


def ratio(values, ref):
    if not values or not ref:
        return "-"
    return f"{statistics.median(values) / statistics.median(ref):.2f}x"


def p90(values):
    s = sorted(values)
    return s[min(len(s) - 1, max(0, -(-len(s) * 9 // 10) - 1))]  # nearest rank


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ddp-launch", required=True)
    p.add_argument("--train", required=True, help="build/trainers/train")
    p.add_argument("--torchrun", default="", help="the torchrun command (default: this Python's, bench_records.torchrun_argv)")
    p.add_argument("--peer", required=True, help="bench/peers/python_ddp_recovery.py")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--kill-step", type=int, default=30, help="rank 1 is SIGKILLed after this step of the first attempt")
    p.add_argument("--kill-after", type=float, default=3.0,
                   help="... and no earlier than this many seconds after the first step (standbys get ready)")
    p.add_argument("--checkpoint-every", type=int, default=10)
    p.add_argument("--timeout", type=float, default=90, help="seconds per run before it is killed and reported")
    p.add_argument("--configs", default="",
                   help="parts of configuration names separated by / (names contain commas), e.g. 'torchrun/py, warm'")
    a = p.parse_args()
    if a.runs < 1 or a.kill_step < 1 or a.kill_after < 0 or a.checkpoint_every < 1:
        print("bench_recovery.py: need --runs >= 1, --kill-step >= 1, --kill-after >= 0 and --checkpoint-every >= 1",
              file=sys.stderr)
        return 2
    a.torchrun = torchrun_command(a.torchrun)

    known = known_flags(a.ddp_launch)
    wanted = [w.strip() for w in a.configs.split("/") if w.strip()]
    configs, skipped = [], []
    for cfg in all_configs():
        if wanted and not any(w in cfg.name for w in wanted):
            continue
        missing = [" or ".join(alt) for alt in cfg.requires if not any(f in known for f in alt)]
        if missing:
            skipped.append(f"{cfg.name}: this ddp-launch has no {', '.join(missing)} (ddp-launch --help)")
        else:
            configs.append(cfg)
    if not configs:
        names = "; ".join(c.name for c in all_configs())
        print(f"bench_recovery.py: no configuration to run: CONFIGS '{a.configs}' matches none that this ddp-launch "
              f"can run; the configurations: {names}", file=sys.stderr)
        return 2

    load_before = load_average()
    runs = {cfg.name: [] for cfg in configs}
    for i in range(a.runs):  # alternate: A B C A B C ...
        for cfg in configs:
            runs[cfg.name].append(one_run(cfg, a, known))
            r = runs[cfg.name][-1]
            print(f"# run {i + 1}/{a.runs} {cfg.name}: " +
                  (f"FAILED: {r.error}" if r.error else
                   f"launch->step {r.launch_to_step * 1000:.0f} ms, kill(step {r.kill_step})->step "
                   f"{r.kill_to_step * 1000:.0f} ms"), file=sys.stderr, flush=True)

    load = load_average()
    landed = [r.kill_step for rs in runs.values() for r in rs if r.kill_step is not None]
    at = f"{min(landed)}-{max(landed)}" if landed and min(landed) != max(landed) else str(a.kill_step)
    print(f"# {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%dT%H:%M:%SZ}, {os.cpu_count()} CPUs, load "
          f"{load_before} before, {load} after; {a.runs} runs per configuration, alternating; 2 workers, "
          f"OMP_NUM_THREADS=1; SIGKILL of rank 1 after step {at} (>= {a.kill_after:g} s after the first step), "
          f"checkpoint every {a.checkpoint_every}, --max-restarts 1")
    flags = sorted(f for f in known if f in ("--worker-store", "--warm-restarts", "--no-warm-restarts", "--preload"))
    found = " ".join(flags) if flags else "none (cold restarts, rank 0 hosts the store)"
    print(f"# ddp-launch recovery flags found: {found}")
    print(peers_line(a.torchrun))
    ok = {n: [r for r in rs if not r.error] for n, rs in runs.items()}
    # The reference: the first torchrun configuration with figures (2.x's default can fail to restart).
    ref = next((ok[n] for n in ok if n.startswith("torchrun") and ok[n]), [])
    ref_launch = [r.launch_to_step for r in ref]
    ref_kill = [r.kill_to_step for r in ref]
    print()
    print("| configuration | launch -> first step: median (min-max) | vs torchrun | SIGKILL -> first step of the new "
          "attempt: median (min-max) | vs torchrun | failed runs |")
    print("|---|---:|---:|---:|---:|---:|")
    for cfg in configs:
        launch = [r.launch_to_step for r in ok[cfg.name]]
        kill = [r.kill_to_step for r in ok[cfg.name]]
        failed = len(runs[cfg.name]) - len(ok[cfg.name])
        print(f"| {cfg.name} | {fmt_s(launch)} | {ratio(launch, ref_launch)} | {fmt_s(kill)} | "
              f"{ratio(kill, ref_kill)} | {failed}/{len(runs[cfg.name])} |")
    print()
    print("| configuration | SIGKILL -> a new worker runs the program | -> every rank calls init_process_group "
          "| -> every rank's init_process_group returned | -> first step | a worker's start-up (imports, data): median "
          "| init_process_group per rank: median | p90 | max | n |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for cfg in configs:
        good = ok[cfg.name]
        phase = [fmt_s([r.phases[k] for r in good if k in r.phases])
                 for k in ("started", "imported", "joined", "first step")]
        inits = [t for r in good for t in r.init_times]
        startups = [t for r in good for t in r.startup_times]
        startup = f"{statistics.median(startups) * 1000:.0f} ms" if startups else "-"
        stats = (f"{statistics.median(inits) * 1000:.0f} ms | {p90(inits) * 1000:.0f} ms | {max(inits) * 1000:.0f} ms | "
                 f"{len(inits)}") if inits else "- | - | - | 0"
        print(f"| {cfg.name} | {' | '.join(phase)} | {startup} | {stats} |")
    failures = [(n, i + 1, r.error) for n, rs in runs.items() for i, r in enumerate(rs) if r.error]
    if skipped or failures:
        print()
    for line in skipped:
        print(f"- skipped: {line}")
    for n, i, err in failures:
        print(f"- failed: {n}, run {i}: {err}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
