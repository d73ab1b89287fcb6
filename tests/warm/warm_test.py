"""Warm restarts end to end (docs/warm-restarts.md): the real ddp-launch, real standbys.

Usage: warm_test.py --launcher PATH --python PY [--native PATH --point PATH] CASE. Each case runs the
launcher on tests/warm's workers, waits (events.jsonl) until the standbys are ready, then
lets attempt 0 fail and checks that attempt 1 ran in the standbys. No timing thresholds:
every wait is for an event, under a generous deadline.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import fail  # noqa: E402
from ports import free_port  # noqa: E402
from warm_worker import alive  # noqa: E402  (next to this file)

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "warm_worker.py")
DEADLINE_S = 120


def events(logs):
    out = []
    for root, _dirs, files in os.walk(logs):
        if "events.jsonl" in files:
            with open(os.path.join(root, "events.jsonl")) as f:
                out += [json.loads(line) for line in f if line.strip()]
    return out


def standby_events(logs, state, local_rank=None):
    return [e for e in events(logs) if e["event"] == "standby" and e["state"] == state and
            (local_rank is None or e["local_rank"] == local_rank)]


def wait_for(what, predicate, procs=()):
    deadline = time.time() + DEADLINE_S
    while time.time() < deadline:
        if predicate():
            return
        for p in procs:
            if p.poll() is not None:
                out, err = p.communicate()
                fail(f"the launcher exited ({p.returncode}) while waiting for {what}", out + err)
        time.sleep(0.05)
    for p in procs:
        p.kill()
    fail(f"timed out after {DEADLINE_S} s waiting for {what}")


def start(args, launcher_args, env_extra=None):
    env = dict(os.environ, PYTHON_EXEC=args.python, OMP_NUM_THREADS="1")
    env.update(env_extra or {})
    return subprocess.Popen([args.launcher] + launcher_args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def finish(p):
    try:
        out, err = p.communicate(timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        fail("the launcher did not finish", out + err)
    return p.returncode, out + err


def record(out, restart, rank):
    with open(os.path.join(out, f"a{restart}.r{rank}.json")) as f:
        return json.load(f)


def check_warm_attempt(out, logs, ranks, argv_tail, text):
    adopted = {e["pid"] for e in standby_events(logs, "adopted")}
    for rank in ranks:
        cold, warm = record(out, 0, rank), record(out, 1, rank)
        if cold["warm"]:
            fail(f"rank {rank}'s first attempt ran in a standby", text)
        if not warm["warm"] or warm["pid"] not in adopted:
            fail(f"rank {rank}'s restart did not run in a standby (record {warm}, adopted {adopted})", text)
        if warm["name"] != "__main__" or not warm["main_module"]:
            fail(f"rank {rank}'s restart did not run as __main__: {warm}", text)
        if warm["restart"] != "1" or warm["rank"] != str(rank) or warm["port"] == cold["port"]:
            fail(f"rank {rank}'s restart has a stale identity: {warm} (first: {cold})", text)
        if warm["argv"][1:] != argv_tail or warm["file"] != WORKER or warm["path0"] != HERE:
            fail(f"rank {rank}'s restart has argv {warm['argv']}, __file__ {warm['file']}, sys.path[0] "
                 f"{warm['path0']}", text)
    return adopted


def case_python(args, tmp, mode="ok", flags=(), state="ready"):
    out, logs = os.path.join(tmp, "out"), os.path.join(tmp, "logs")
    os.makedirs(out)
    p = start(args, ["--nproc-per-node=2", "--max-restarts=1", f"--log-dir={logs}", *flags, WORKER, out, mode, "x y"])
    wait_for(f"two {state} standbys", lambda: len(standby_events(logs, state)) >= 2, [p])
    open(os.path.join(out, "go"), "w").close()
    code, text = finish(p)
    return out, logs, code, text


def case_python_restart(args, tmp):
    out, logs, code, text = case_python(args, tmp, flags=["--preload=wave"])
    if code != 0:
        fail(f"exit code {code}, expected 0", text)
    check_warm_attempt(out, logs, [0, 1], [out, "ok", "x y"], text)
    if not all(record(out, 1, rank)["preloaded"] for rank in (0, 1)) or record(out, 0, 0)["preloaded"]:
        fail("--preload=wave: the module was not imported in the standbys (only)", text)
    if any(e["event"] == "worker_exit" and e["pid"] in {s["pid"] for s in standby_events(logs, "exited")}
           for e in events(logs)):
        fail("a standby was reported as a worker", text)


def case_escaping_helpers(args, tmp):
    # Workers cold and warm (in standbys) start helpers that escape every way: the restart in the
    # standbys begins only after attempt 0's are gone, and nothing of the job outlives it.
    marker = ("DDP_TEST_ESCAPE_MARK", tmp)
    out, logs = os.path.join(tmp, "out"), os.path.join(tmp, "logs")
    os.makedirs(out)
    p = start(args, ["--nproc-per-node=2", "--max-restarts=1", "--shutdown-timeout=1", f"--log-dir={logs}", WORKER,
                     out, "escape", "x y"], dict([marker]))
    wait_for("two ready standbys", lambda: len(standby_events(logs, "ready")) >= 2, [p])
    open(os.path.join(out, "go"), "w").close()
    code, text = finish(p)
    if code != 0:
        fail(f"exit code {code}, expected 0", text)
    check_warm_attempt(out, logs, [0, 1], [out, "escape", "x y"], text)
    for rank in (0, 1):
        if record(out, 1, rank)["previous_alive"]:
            fail(f"rank {rank}'s warm attempt found attempt 0's helpers alive: {record(out, 1, rank)}", text)
    left = [pid for pid in map(int, filter(str.isdigit, os.listdir("/proc"))) if alive(pid) and
            f"{marker[0]}={marker[1]}".encode() in open_environ(pid)]
    if left:
        fail(f"processes of the job outlived it: {left}", text)


def open_environ(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def case_python_errors(args, tmp):
    out, logs, code, text = case_python(args, tmp, "raise")
    if code != 1:
        fail(f"a warm worker's exception: exit code {code}, expected 1", text)
    if "RuntimeError: warm boom" not in text or f'File "{WORKER}"' not in text:
        fail("the warm worker's traceback is missing", text)
    if "runpy" in text or 'File "<string>"' in text:
        fail("the traceback shows the standby's frames", text)
    tmp2 = os.path.join(tmp, "exit")
    os.makedirs(tmp2)
    _out, _logs, code, text = case_python(args, tmp2, "exit7")
    if code != 7:
        fail(f"a warm worker's sys.exit(7): exit code {code}, expected 7", text)


def case_not_ready(args, tmp):
    """A failure right after the standbys started: they are handed the restart while (most
    likely) still importing torch, and read it when ready."""
    out, logs, code, text = case_python(args, tmp, state="started")
    if code != 0:
        fail(f"exit code {code}, expected 0", text)
    check_warm_attempt(out, logs, [0, 1], [out, "ok", "x y"], text)


def finish_given_up(p, out, logs, why):
    """Waits for three standbys that ended, lets attempt 0 fail and checks that the job ends 0,
    the give-up notice said once with `why` (the standbys' output), no standby adopted."""
    wait_for("three standbys that ended", lambda: len(standby_events(logs, "exited")) >= 3, [p])
    open(os.path.join(out, "go"), "w").close()
    code, text = finish(p)
    if code != 0:
        fail(f"exit code {code}, expected 0", text)
    if text.count("standbys keep dying before they are ready") != 1 or why not in text:
        fail(f"the give-up notice (once, with '{why}' from the standbys' output) is missing", text)
    if standby_events(logs, "adopted"):
        fail("a standby that never got ready was adopted", text)
    return text


def case_standby_gives_up(args, tmp):
    """Standbys that cannot warm up (a --preload module that does not exist) are given up
    after three early deaths, said once with their output; the restart is cold and works."""
    out, logs = os.path.join(tmp, "out"), os.path.join(tmp, "logs")
    os.makedirs(out)
    p = start(args, ["--nproc-per-node=2", "--max-restarts=1", f"--log-dir={logs}", "--preload=no_such_module_xyz",
                     WORKER, out, "ok"])
    text = finish_given_up(p, out, logs, "no_such_module_xyz")
    if standby_events(logs, "ready") or record(out, 1, 1)["warm"]:
        fail("a standby that never got ready was used", text)


def case_python_without_torch(args, tmp):
    """An interpreter without torch (a package on PYTHONPATH whose import fails as a missing
    torch does) running a script that does not need it: the standbys warm up without torch and
    take over the restart; no standby dies, no notice."""
    fake = os.path.join(tmp, "no_torch", "torch")
    os.makedirs(fake)
    with open(os.path.join(fake, "__init__.py"), "w") as f:
        f.write('raise ModuleNotFoundError("No module named \'torch\'", name="torch")\n')
    out, logs = os.path.join(tmp, "out"), os.path.join(tmp, "logs")
    os.makedirs(out)
    p = start(args, ["--nproc-per-node=2", "--max-restarts=1", f"--log-dir={logs}", WORKER, out, "ok"],
              {"PYTHONPATH": os.path.dirname(fake)})
    wait_for("two ready standbys", lambda: len(standby_events(logs, "ready")) >= 2, [p])
    open(os.path.join(out, "go"), "w").close()
    code, text = finish(p)
    if code != 0:
        fail(f"exit code {code}, expected 0", text)
    if standby_events(logs, "exited") or "standbys keep dying" in text:
        fail("a standby died in an interpreter without torch", text)
    adopted = {e["pid"] for e in standby_events(logs, "adopted")}
    for rank in (0, 1):
        if record(out, 1, rank)["pid"] not in adopted or record(out, 1, rank)["warm"]:
            fail(f"rank {rank}'s restart did not run in a standby without torch: {record(out, 1, rank)}", text)


def case_standby_killed(args, tmp):
    out, logs = os.path.join(tmp, "out"), os.path.join(tmp, "logs")
    os.makedirs(out)
    p = start(args, ["--nproc-per-node=2", "--max-restarts=1", f"--log-dir={logs}", WORKER, out, "ok", "x y"])
    wait_for("two ready standbys", lambda: len(standby_events(logs, "ready")) >= 2, [p])
    victim = standby_events(logs, "ready", 1)[0]["pid"]
    os.kill(victim, signal.SIGKILL)
    wait_for("a replacement standby for local rank 1",
             lambda: any(e["pid"] != victim for e in standby_events(logs, "ready", 1)), [p])
    open(os.path.join(out, "go"), "w").close()
    code, text = finish(p)
    if code != 0:
        fail(f"exit code {code}, expected 0", text)
    if not any(e["pid"] == victim and e.get("signal") == "SIGKILL" for e in standby_events(logs, "exited", 1)):
        fail("the killed standby has no exited event", text)
    adopted = check_warm_attempt(out, logs, [0, 1], [out, "ok", "x y"], text)
    if victim in adopted:
        fail("the killed standby was adopted", text)


def case_launcher_sigkill(args, tmp):
    out, logs = os.path.join(tmp, "out"), os.path.join(tmp, "logs")
    os.makedirs(out)
    tag = f"warm-test-{os.getpid()}-{time.time()}"
    p = start(args, ["--nproc-per-node=2", "--max-restarts=1", f"--log-dir={logs}", WORKER, out, "ok"],
              {"WARM_TEST_TAG": tag})
    wait_for("two ready standbys", lambda: len(standby_events(logs, "ready")) >= 2, [p])
    standbys = [e["pid"] for e in standby_events(logs, "started")]
    p.kill()
    p.communicate()

    def tagged():  # every process of this run: the workers and standbys carry the tag
        found = []
        for pid in os.listdir("/proc"):
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if f"WARM_TEST_TAG={tag}".encode() in f.read() and alive(int(pid)):
                        found.append(int(pid))
            except (OSError, ValueError):
                pass
        return found

    deadline = time.time() + 30
    while time.time() < deadline and (tagged() or any(alive(s) for s in standbys)):
        time.sleep(0.1)
    if tagged() or any(alive(s) for s in standbys):
        fail(f"processes outlived the SIGKILLed launcher: {tagged()} (standbys {standbys})")


def case_native_restart(args, tmp):
    out, logs = os.path.join(tmp, "out"), os.path.join(tmp, "logs")
    os.makedirs(out)
    p = start(args, ["--nproc-per-node=2", "--max-restarts=1", f"--log-dir={logs}", args.native, out])
    wait_for("two ready standbys", lambda: len(standby_events(logs, "ready")) >= 2, [p])
    text = finish_in_standbys(p, out, logs, native_restart_pid(out))
    if "restarts are cold" in text:
        fail("a libddp program got the cold notice", text)


def native_restart_pid(out):
    """Where a native worker's restart wrote its pid (OUT/a1.r<rank>.txt)."""
    def pid(rank):
        with open(os.path.join(out, f"a1.r{rank}.txt")) as f:
            return int(f.read())
    return pid


def finish_in_standbys(p, out, logs, restart_pid):
    """Lets attempt 0 fail (OUT/go), waits for the job to end 0 and checks that each rank's
    restart (restart_pid(rank)) ran in an adopted standby; its output."""
    open(os.path.join(out, "go"), "w").close()
    code, text = finish(p)
    if code != 0:
        fail(f"exit code {code}, expected 0", text)
    adopted = {e["pid"] for e in standby_events(logs, "adopted")}
    for rank in (0, 1):
        if restart_pid(rank) not in adopted:
            fail(f"rank {rank}'s restart (pid {restart_pid(rank)}) did not run in a standby (adopted {adopted})", text)
    return text


def case_point_restart(args, tmp):
    """A libddp program calling ddp::standby_point(): its standbys run main() up to the point
    before any failure (the worker's identity hidden there), and the restart continues below it."""
    out, logs = os.path.join(tmp, "out"), os.path.join(tmp, "logs")
    os.makedirs(out)
    p = start(args, ["--nproc-per-node=2", "--max-restarts=1", f"--log-dir={logs}", args.point, out])
    wait_for("two ready standbys", lambda: len(standby_events(logs, "ready")) >= 2, [p])
    ready = {e["pid"] for e in standby_events(logs, "ready")}
    for pid in ready:  # the code above the point ran in the standby, before the failure
        above = os.path.join(out, f"above.{pid}.txt")
        if not os.path.exists(above):
            fail(f"standby {pid} is ready but did not run the code above its standby point", "")
        with open(above) as f:
            text = f.read()
        if "RANK unset" not in text or "worker_env refused: the worker's identity was read above" not in text:
            fail(f"standby {pid} saw a worker identity above its standby point", text)
    text = finish_in_standbys(p, out, logs, native_restart_pid(out))
    for rank in (0, 1):
        with open(os.path.join(out, f"a0.r{rank}.txt")) as f:
            cold = int(f.read())
        with open(os.path.join(out, f"above.{cold}.txt")) as f:
            if f"worker_env rank {rank}" not in f.read():
                fail(f"the cold rank {rank} did not see its identity above the point (nothing is hidden there)", text)
    if "point worker rank 1 restart 1" not in text:
        fail("the warm restart's output below the point is missing", text)


POINT_WORKER = os.path.join(HERE, "warm_point_worker.py")


def at_point(logs):
    return {e["pid"] for e in standby_events(logs, "ready") if e.get("at_point")}


def check_standbys_at_point(p, out, logs, mode):
    """Before the failure: two standbys ready at their point, the script's top run in them with
    the identity hidden (MODE late: only after a plain ready, once a worker passed the point)."""
    if mode == "late":  # standbys ready before any worker passed the point: prepared only then
        wait_for("two standbys ready (imports only)", lambda: len(standby_events(logs, "ready")) >= 2, [p])
        if at_point(logs):
            fail("a standby was prepared before any worker passed the point", "")
        open(os.path.join(out, "step"), "w").close()
    wait_for("two standbys ready at their point", lambda: len(at_point(logs)) >= 2, [p])
    for pid in at_point(logs):
        path = os.path.join(out, f"above.{pid}.json")
        if not os.path.exists(path):
            fail(f"standby {pid} is ready at its point but did not run the script above it", "")
        with open(path) as f:
            above = json.load(f)
        if above["rank"] is not None or not above["torch"]:
            fail(f"standby {pid} above its point: {above} (expected RANK hidden, torch imported)", "")


def check_point_restart(args, tmp, mode):
    """A script calling ddp_standby.point(): once a worker passed it, the standbys run the script up
    to the point (identity hidden there), and the restart continues below it with the worker's
    progress record."""
    out, logs = os.path.join(tmp, "out"), os.path.join(tmp, "logs")
    os.makedirs(out)
    p = start(args, ["--nproc-per-node=2", "--max-restarts=1", f"--log-dir={logs}", POINT_WORKER, out, mode])
    try:
        check_standbys_at_point(p, out, logs, mode)
    except BaseException:  # failed (fail() exits): nothing of the job is left running
        p.kill()
        p.wait()
        raise
    text = finish_in_standbys(p, out, logs, lambda rank: record(out, 1, rank)["pid"])
    for rank in (0, 1):
        cold, warm = record(out, 0, rank), record(out, 1, rank)
        if warm["pid"] not in at_point(logs):
            fail(f"rank {rank}'s restart ran in a standby that was not at its point", text)
        with open(os.path.join(out, f"above.{cold['pid']}.json")) as f:
            if json.load(f)["rank"] != str(rank):
                fail(f"the cold rank {rank} did not see its identity above the point", text)
        if not warm["fed"] or warm["argv"][1:] != [out, mode]:
            fail(f"rank {rank}'s restart below the point: {warm} (expected its progress record fed)", text)
        if os.path.dirname(warm["standby_module"]) == os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"):
            fail(f"ddp_standby came from {warm['standby_module']}, not the launcher's folder", text)
    steps = [e for e in events(logs) if e["event"] == "recovery" and e.get("phase") == "first_step"]
    if not steps:
        fail("no first step after the restart: the warm workers' progress records were not read", text)


def case_python_point_restart(args, tmp):
    check_point_restart(args, tmp, "ok")


def case_python_point_late(args, tmp):
    """The standbys are ready (imports only) before any worker passed the point: they are
    prepared when the first step shows it, and ready again at the point."""
    check_point_restart(args, tmp, "late")


def case_python_point_unreached(args, tmp):
    """A script that names ddp_standby.point() but never reaches it in a standby: the standbys end
    above it, three in a row make restarts cold (one notice, with why), and the restart works."""
    out, logs = os.path.join(tmp, "out"), os.path.join(tmp, "logs")
    os.makedirs(out)
    p = start(args, ["--nproc-per-node=2", "--max-restarts=1", f"--log-dir={logs}", POINT_WORKER, out,
                     "unreached"])
    text = finish_given_up(p, out, logs, "above ddp_standby.point()")
    standbys = {e["pid"] for e in standby_events(logs, "started")}
    if any(record(out, 1, rank)["pid"] in standbys for rank in (0, 1)):
        fail("the restart ran in a standby that never reached its point", text)


def case_cold_notice(args, tmp):
    logs = os.path.join(tmp, "logs")
    script = f"[ \"$TORCHELASTIC_RESTART_COUNT\" = 1 ] || exit 3"
    p = start(args, ["--nproc-per-node=2", "--max-restarts=1", f"--log-dir={logs}", "sh", "-c", script])
    code, text = finish(p)
    if code != 0:
        fail(f"exit code {code}, expected 0 (restarted once)", text)
    notice = "warm restarts need a Python script or a program linked with libddp; sh is neither: restarts are cold"
    if text.count(notice) != 1:
        fail("the cold-restart notice is not there exactly once", text)
    if standby_events(logs, "started"):
        fail("a standby was started for a program without the hook", text)
    p = start(args, ["--nproc-per-node=1", "--max-restarts=1", "--no-warm-restarts", "sh", "-c", script])
    code, text = finish(p)
    if code != 0 or "restarts are cold" in text:
        fail("--no-warm-restarts: no notice expected", text)


def case_multinode(args, tmp):
    out = os.path.join(tmp, "out")
    os.makedirs(out)
    port = free_port()
    nodes = []
    for node in (0, 1):
        logs = os.path.join(tmp, f"logs{node}")
        nodes.append((logs, start(args, [
            "--nnodes=2", "--nproc-per-node=1", "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}",
            "--rdzv-id=warm", f"--node-rank={node}", f"--rdzv-conf=join_timeout=60,is_host={1 - node}",
            "--max-restarts=1", f"--log-dir={logs}", WORKER, out, "ok", "x y"])))
    procs = [p for _logs, p in nodes]
    for logs, _p in nodes:
        wait_for(f"a ready standby in {logs}", lambda logs=logs: standby_events(logs, "ready"), procs)
    open(os.path.join(out, "go"), "w").close()
    results = [finish(p) for p in procs]
    text = "\n".join(t for _c, t in results)
    if any(c != 0 for c, _t in results):
        fail(f"exit codes {[c for c, _t in results]}, expected 0 on both nodes", text)
    for node, (logs, _p) in enumerate(nodes):
        check_warm_attempt(out, logs, [node], [out, "ok", "x y"], text)


def case_dry_run(args, tmp):
    p = start(args, ["--dry-run", "--max-restarts=1", "--preload=json", WORKER, tmp, "ok"])
    code, text = finish(p)
    if code != 0 or "restarts: warm (a Python standby per worker, preloading torch,json)" not in text:
        fail("the dry run does not show warm restarts", text)
    p = start(args, ["--dry-run", "--max-restarts=1", "--no-warm-restarts", WORKER, tmp, "ok"])
    code, text = finish(p)
    if code != 0 or "restarts: cold (--no-warm-restarts)" not in text:
        fail("the dry run does not show --no-warm-restarts", text)


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_") and name != "case_python"}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--launcher", required=True)
    parser.add_argument("--python", required=True)
    parser.add_argument("--native")
    parser.add_argument("--point")
    parser.add_argument("case", choices=sorted(CASES))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="warm-") as tmp:
        CASES[args.case](args, tmp)
    print(f"PASS: {args.case}")


if __name__ == "__main__":
    main()
