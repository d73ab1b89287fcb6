"""The workers' store against torch's own TCPStore server: same calls, same answers.

Usage: check_differential.py --helper PATH
Run by the Python whose torch is to be compared (DDP_TEST_PYTHON). For each client kind
(torch 2.x: use_libuv=True and use_libuv=False; torch 1.13: its one client) it runs the same
script of calls twice, on fresh servers: once against torch's own server
(TCPStore(is_master=True), libuv or not like the client) and once against the launcher's
(c10d_store_helper), and compares every answer; an error is compared by its type (the
message names ports and times). The script calls every public method of
torch.distributed.TCPStore this torch has: set, get, add, compare_set, check, wait (with
and without a timeout, timing out, woken by another client), num_keys, delete_key, append,
multi_get, multi_set, queue_push / queue_pop / queue_len (blocking, timing out, not
blocking on an empty queue), list_keys, barrier (alone, two clients, timing out, a reused
key, woken by a SET), set_timeout / timeout, clone, has_extended_api, libuvBackend, and the
errors: get of a missing key timing out, ADD and BARRIER on a value that is not a number
(the server closes that client's connection, and only that one). A method this torch lacks
is left out on both sides. Prints a table; exits 1 on the first difference.
"""
import argparse
import datetime
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from checks import fail  # noqa: E402

# c10d logs each timeout and lost connection with a stack trace; the test provokes many.
os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
try:
    from torch.distributed import TCPStore
except ImportError:
    print(f"SKIP: {sys.executable} has no torch.distributed")
    sys.exit(77)

TD = datetime.timedelta
SHORT = TD(milliseconds=300)  # what a call expected to time out waits
LONG = TD(seconds=10)  # everything else
TORCH2 = hasattr(TCPStore, "libuvBackend")


class Helper:
    """The launcher's workers' store, on its own."""

    def __init__(self, path):
        self.proc = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("port "):
            fail(f"c10d_store_helper printed {line!r}, expected 'port N ...'", self.proc.stderr.read())
        self.port = int(line.split()[1])

    def stop(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        return self.proc.stderr.read()


def client_kwargs(use_libuv):
    return {"use_libuv": use_libuv} if TORCH2 else {}


class TorchServer:
    """torch's own server: a TCPStore(is_master=True) that waits for nobody."""

    def __init__(self, use_libuv):
        self.master = TCPStore("127.0.0.1", 0, None, True, LONG, wait_for_workers=False,
                               **client_kwargs(use_libuv))
        self.port = self.master.port

    def stop(self):
        del self.master
        return ""


def outcome(fn):
    try:
        return ("ok", normal(fn()))
    except Exception as e:  # compared by type; the message is shown
        return ("error", type(e).__name__, str(e).splitlines()[0] if str(e) else "")


def normal(v):
    if isinstance(v, TD):
        return f"timedelta({v.total_seconds()} s)"
    if isinstance(v, (list, tuple)):
        return [normal(x) for x in v]
    return v


def quietly(fn):
    """fn for a timer thread: its error (a legacy client's NotImplementedError) shows in the step."""
    return lambda: outcome(fn)


class in_thread:
    """fn on a thread of its own: parked() while it blocks, result() joins it."""

    def __init__(self, fn):
        self.box = {}
        self.thread = threading.Thread(target=lambda: self.box.setdefault("r", outcome(fn)))
        self.thread.start()

    def parked(self):
        return self.thread.is_alive()

    def result(self):
        self.thread.join(30)
        return self.box.get("r", ("still running after 30 s",))


def script(port, use_libuv):
    """Every call, in order, as (what, outcome). The same for any server that behaves as torch's."""
    steps = []

    def connect():
        return TCPStore("127.0.0.1", port, None, False, LONG, **client_kwargs(use_libuv))

    c, c2 = connect(), connect()

    def step(what, fn, needs=None):
        if needs and not all(hasattr(c, m) for m in needs.split()):
            return
        steps.append((what, outcome(fn)))

    def timing_out(fn):
        """Runs fn with the store's timeout at SHORT."""
        def run():
            c.set_timeout(SHORT)
            try:
                return fn()
            finally:
                c.set_timeout(LONG)
        return run

    step("set, get", lambda: (c.set("a", "1"), c.get("a")))
    step("set bytes, get", lambda: (c.set("bin", b"\x00\xff\n"), c.get("bin")))
    step("set overwrites", lambda: (c.set("a", "one"), c.get("a")))
    step("another client sees it", lambda: c2.get("a"))
    step("get of a missing key times out", timing_out(lambda: c.get("missing")))
    step("the client works after that", lambda: c.get("a"))
    step("add to a new key", lambda: c.add("n", 5))
    step("add to it", lambda: c.add("n", -7))
    step("add 0", lambda: c.add("n", 0))
    step("get of a counter", lambda: c.get("n"))
    step("compare_set, match", lambda: c.compare_set("a", "one", "two"))
    step("compare_set, mismatch", lambda: c.compare_set("a", "wrong", "three"))
    step("compare_set, missing key, expected empty", lambda: c.compare_set("cs", "", "new"))
    step("compare_set, missing key, expected set", lambda: c.compare_set("cs_none", "e", "new"))
    step("compare_set left cs_none missing", lambda: c.check(["cs_none"]), "check")
    step("check, all present", lambda: c.check(["a", "n"]), "check")
    step("check, one missing", lambda: c.check(["a", "nope"]), "check")
    step("check, none", lambda: c.check([]), "check")
    step("wait, present", lambda: c.wait(["a", "n"]))
    step("wait with a timeout, missing", lambda: c.wait(["nope"], SHORT))
    step("wait without one (the store's), missing", timing_out(lambda: c.wait(["nope"])))
    step("the client works after that", lambda: c.get("a"))

    def woken_wait():
        late = threading.Timer(0.2, quietly(lambda: c2.set("late", "x")))
        late.start()
        r = c.wait(["late", "a"], LONG)
        late.join()
        return r
    step("wait woken by another client's set", woken_wait)
    step("num_keys", lambda: c.num_keys())
    step("delete_key, present", lambda: c.delete_key("late"))
    step("delete_key, absent", lambda: c.delete_key("late"))
    step("num_keys after", lambda: c.num_keys())
    step("append to a new key", lambda: (c.append("ap", "x"), c.get("ap")), "append")
    step("append to it", lambda: (c.append("ap", b"\x00y"), c.get("ap")), "append")
    step("multi_set, multi_get", lambda: (c.multi_set(["m1", "m2"], ["1", b"2"]), c.multi_get(["m2", "m1", "a"])),
         "multi_set multi_get")
    step("multi_get, empty", lambda: c.multi_get([]), "multi_get")
    step("multi_get of a missing key times out", timing_out(lambda: c.multi_get(["m1", "nope"])), "multi_get")
    step("the client works after that", lambda: c.get("m1"))

    step("queue_len of no queue", lambda: c.queue_len("q"), "queue_len")
    step("queue_push twice, queue_len", lambda: (c.queue_push("q", "v1"), c.queue_push("q", b"v2"), c.queue_len("q")),
         "queue_push queue_len")
    step("check of a queue", lambda: c.check(["q"]), "check queue_push")
    step("queue_pop, not blocking", lambda: c.queue_pop("q", block=False), "queue_pop")
    step("queue_pop, blocking, an item there", lambda: c.queue_pop("q"), "queue_pop")
    step("queue_pop of an empty queue, not blocking", lambda: c.queue_pop("q", block=False), "queue_pop")
    step("queue_pop of an empty queue times out", timing_out(lambda: c.queue_pop("q")), "queue_pop")
    step("the client works after that", lambda: c.get("a"))

    def woken_pop():
        push = threading.Timer(0.2, quietly(lambda: c2.queue_push("q2", "late")))
        push.start()
        r = c.queue_pop("q2")
        push.join()
        return r, c.queue_len("q2")
    step("queue_pop woken by another client's push", woken_pop, "queue_pop queue_push")

    def pops_one_each():
        first = in_thread(lambda: c.queue_pop("q3"))
        second = in_thread(lambda: c2.queue_pop("q3"))
        time.sleep(0.2)
        parked = first.parked(), second.parked()
        feeder = connect()
        feeder.queue_push("q3", "one")
        feeder.queue_push("q3", "two")
        return parked, sorted(x[1] for x in (first.result(), second.result()) if x[0] == "ok")
    step("two blocked pops, two pushes: one item each", pops_one_each, "queue_pop queue_push")
    step("list_keys (the data keys, not the queues)", lambda: sorted(c.list_keys()), "list_keys")

    step("barrier, world size 1", lambda: c.barrier("b1", 1), "barrier")
    step("its counter", lambda: c.get("b1"), "barrier")
    step("barrier, the same key again", lambda: (c.barrier("b1", 1), c.get("b1")), "barrier")
    step("barrier, world size 0", lambda: c.barrier("b0", 0), "barrier")

    def two_clients():
        first = in_thread(lambda: c2.barrier("b2", 2))
        time.sleep(0.2)
        parked = first.parked()
        second = outcome(lambda: c.barrier("b2", 2))
        return parked, first.result(), second, c.get("b2")
    step("barrier, two clients, world size 2", two_clients, "barrier")

    def three_clients():
        third = connect()
        waiting = [in_thread(lambda: c2.barrier("b3", 3)), in_thread(lambda: third.barrier("b3", 3))]
        time.sleep(0.3)
        parked = [w.parked() for w in waiting]
        last = outcome(lambda: c.barrier("b3", 3))
        return parked, [w.result() for w in waiting], last, c.get("b3")
    step("barrier, three clients", three_clients, "barrier")
    step("barrier times out (the store's timeout)", timing_out(lambda: c.barrier("bt", 2)), "barrier")
    step("barrier with a timeout argument times out", lambda: c.barrier("bt", 3, SHORT), "barrier")
    step("the timed-out arrivals stay counted", lambda: c.get("bt"), "barrier")
    step("the client works after that", lambda: c.get("a"))

    def set_wakes():
        arrival = in_thread(lambda: c2.barrier("bs", 5))
        time.sleep(0.2)
        parked = arrival.parked()
        c.set("bs", "9")
        return parked, arrival.result(), c.get("bs")
    step("a set of the key wakes a parked barrier", set_wakes, "barrier")

    def wait_on_barrier_key():
        waiter = in_thread(lambda: c2.wait(["bw"], TD(seconds=5)))
        time.sleep(0.2)
        first = in_thread(lambda: connect().barrier("bw", 2))
        time.sleep(0.3)
        early = waiter.parked(), first.parked(), c.check(["bw"]), c.get("bw")  # the key exists, both parked
        c.barrier("bw", 2)
        return early, waiter.result(), first.result()
    step("a wait on a barrier's key ends when the barrier does", wait_on_barrier_key, "barrier check")

    step("set_timeout, timeout", lambda: (c.set_timeout(TD(seconds=7)), c.timeout), "timeout")
    step("set_timeout back", lambda: (c.set_timeout(LONG), c.timeout), "timeout")

    def clone():
        k = c.clone()
        k.set("from_clone", "c")
        return k.get("a"), c.get("from_clone"), k.timeout
    step("clone", clone, "clone")
    step("has_extended_api", lambda: c.has_extended_api(), "has_extended_api")
    step("libuvBackend", lambda: c.libuvBackend, "libuvBackend")
    step("num_keys at the end", lambda: c.num_keys())
    step("list_keys at the end", lambda: sorted(c.list_keys()), "list_keys")

    # Errors that cost the caller its connection: each on a client of its own.
    c.set("text", "abc")
    bad = connect()
    step("add on a value that is not a number", lambda: bad.add("text", 1))
    step("that client afterwards", lambda: bad.get("a"))
    bad = connect()
    step("barrier on a value that is not a number", lambda: bad.barrier("text", 2), "barrier")
    step("that client afterwards", lambda: bad.get("a"), "barrier")
    step("the other clients are served", lambda: (c.get("a"), c2.get("a")))
    return steps


def run(kind, server, use_libuv):
    try:
        steps = script(server.port, use_libuv)
    finally:
        log = server.stop()
    return steps, log


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--helper", required=True)
    args = p.parse_args()
    import torch
    kinds = [True, False] if TORCH2 else [None]
    for use_libuv in kinds:
        client = f"use_libuv={use_libuv}" if TORCH2 else "torch 1.13's"
        theirs, _ = run("torch", TorchServer(use_libuv), use_libuv)
        ours, log = run("ours", Helper(args.helper), use_libuv)
        print(f"== torch {torch.__version__}, client {client}: torch's server | the launcher's")
        if [w for w, _ in theirs] != [w for w, _ in ours]:
            fail("the two runs made different calls")
        differ = []
        for (what, a), (_, b) in zip(theirs, ours):
            same = a[:2] == b[:2]
            print(f"{'ok  ' if same else 'DIFF'} {what}: {a[1] if a[0] == 'ok' else a[1] + ' (' + a[2] + ')'}"
                  + ("" if same else f"  |  ours: {b}"))
            if not same:
                differ.append(what)
        if differ:
            fail(f"{len(differ)} call(s) answered differently by the launcher's store: {', '.join(differ)}", log)
        closed = [line for line in log.splitlines() if "closed the connection" in line]
        expected = ["ADD on key '/text'"] + (["BARRIER on key '/text'"] if hasattr(TCPStore, "barrier") else [])
        if len(closed) != len(expected) or not all(any(e in line for line in closed) for e in expected):
            fail(f"the store should have closed exactly the {len(expected)} connections that sent ADD/BARRIER "
                 f"on a value that is not a number", log)
        print(f"ok: {len(ours)} calls, the same answers; the store's log: {len(closed)} closed connection(s), "
              f"as expected")


if __name__ == "__main__":
    main()
