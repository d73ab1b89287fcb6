"""The launcher's workers' store (launcher/c10d) against real c10d clients.

Usage: check_store.py --helper PATH [--python PATH] [--libtorch-client PATH] CASE
CASE:
  python     torch.distributed.TCPStore(is_master=False) of --python (torch 1.13 here, 2.x
             where installed) drives every request type Python exposes
  libtorch   --libtorch-client (LibTorch's c10d::TCPStore, isServer=false) drives every
             request type of the 1.13 client, watchKey included
  garbage    clients the store does not understand (HTTP, an unknown opcode, an oversized
             key, a request never finished) are disconnected with one log line each naming
             the peer, while a real client connected throughout keeps working
  restrict   with --restrict (a rendezvous token) a loopback client is still served
  torch2_raw the torch 2.x dialect as main's client sends it, byte for byte from a raw socket
             (VALIDATE, PING, every request type, a WAIT cancelled after its timeout, LIST_KEYS,
             BARRIER), for machines without torch 2.x
  dual_stack listening on every interface (the default, 0.0.0.0) the store takes clients over
             IPv6 (::1) and IPv4 (127.0.0.1): raw sockets and torch's Python client; an IPv4
             literal listens on IPv4 only, an IPv6 literal on IPv6 only; with --no-ipv6-shim
             (an LD_PRELOAD library refusing IPv6 sockets) it falls back to 0.0.0.0. Skipped
             (77) on a host without IPv6 loopback
Starts c10d_store_helper, prints what it checked, exits 1 on the first mismatch.
"""
import argparse
import os
import socket
import struct
import subprocess
import sys
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from checks import fail  # noqa: E402
from ports import free_port  # noqa: E402

PYTHON_CLIENT = textwrap.dedent(
    """
    import sys, datetime
    from torch.distributed import TCPStore
    port = int(sys.argv[1])
    host = sys.argv[2] if len(sys.argv) > 2 else "127.0.0.1"
    s = TCPStore(host, port, None, False, datetime.timedelta(seconds=20))
    def check(ok, what):
        print(("ok: " if ok else "FAILED: ") + what, flush=True)
        if not ok:
            sys.exit(1)
    s.set("py/a", "hello")
    check(s.get("py/a") == b"hello", "set then get")
    check(s.add("py/n", 4) == 4 and s.add("py/n", 3) == 7, "add")
    check(s.compare_set("py/a", "wrong", "x") == b"hello", "compare_set mismatch returns the current value")
    check(s.compare_set("py/a", "hello", "x") == b"x", "compare_set match swaps")
    s.wait(["py/a", "py/n"])
    check(True, "wait on present keys")
    try:
        s.wait(["py/never"], datetime.timedelta(milliseconds=300))
        check(False, "wait on a missing key times out")
    except Exception:
        check(True, "wait on a missing key times out")
    check(s.get("py/n") == b"7", "the connection works after the timed-out wait")
    n = s.num_keys()
    s.set("py/extra", "1")
    check(s.num_keys() == n + 1, "num_keys counts a new key")
    check(s.delete_key("py/extra") and not s.delete_key("py/extra"), "delete_key once, then nothing")
    if hasattr(s, "append"):  # torch 2.x
        s.append("py/ap", "a"); s.append("py/ap", "b")
        check(s.get("py/ap") == b"ab", "append (2.x)")
        s.multi_set(["py/m1", "py/m2"], ["1", "2"])
        check(s.multi_get(["py/m1", "py/m2"]) == [b"1", b"2"], "multi_set / multi_get (2.x)")
    if hasattr(s, "check"):
        check(s.check(["py/a"]) and not s.check(["py/none"]), "check (2.x)")
    if hasattr(s, "queue_push"):
        s.queue_push("py/q", "v1")
        check(s.queue_len("py/q") == 1 and s.queue_pop("py/q") == b"v1", "queue push/len/pop (2.x)")
    print("all requests served")
    """
)


class Helper:
    def __init__(self, path, extra=(), env=None):
        self.proc = subprocess.Popen([path, *extra], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)
        line = self.proc.stdout.readline()
        if not line.startswith("port "):
            fail(f"c10d_store_helper printed {line!r}, expected 'port N on ADDRESS'", self.proc.stderr.read())
        self.port = int(line.split()[1])
        self.address = line.split()[3]

    def stop(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        return self.proc.stderr.read()


def run_python_client(args, port, host="127.0.0.1"):
    proc = subprocess.run([args.python, "-c", PYTHON_CLIENT, str(port), host], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=120)
    if proc.returncode != 0 or "all requests served" not in proc.stdout:
        fail(f"the Python TCPStore client failed (exit {proc.returncode})", proc.stdout)
    return proc.stdout


def closed_by_server(sock):
    sock.settimeout(20)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def case_python(args):
    helper = Helper(args.helper)
    out = run_python_client(args, helper.port)
    log = helper.stop()
    print(out, end="")
    if "closed the connection" in log:
        fail("the store logged a protocol error for a real client", log)
    print("ok: torch.distributed.TCPStore(is_master=False) was served for every request it made")


def case_libtorch(args):
    """LibTorch's C++ client against ours, then against torch's own server (this Python's
    TCPStore(is_master=True)): every check passes on both, with the same lines."""
    helper = Helper(args.helper)
    proc = subprocess.run([args.libtorch_client, "127.0.0.1", str(helper.port)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=120)
    log = helper.stop()
    print(proc.stdout, end="")
    if proc.returncode != 0:
        fail(f"c10d_libtorch_client exited {proc.returncode}", proc.stdout + log)
    import torch.distributed as dist
    from datetime import timedelta
    port = free_port()  # for torch's server (1.13 cannot bind port 0)
    own = dist.TCPStore("127.0.0.1", port, is_master=True, wait_for_workers=False,
                        timeout=timedelta(seconds=30))
    theirs = subprocess.run([args.libtorch_client, "127.0.0.1", str(own.port)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=120)
    del own
    def checks(output):  # the client's verdict lines; torch's own log lines carry times and addresses
        return [line for line in output.splitlines() if line.startswith(("ok: ", "FAILED: ", "all requests"))]

    if theirs.returncode != 0 or checks(theirs.stdout) != checks(proc.stdout):
        fail("against torch's own server the C++ client saw other answers", f"ours:\n{proc.stdout}\n"
             f"torch's (exit {theirs.returncode}):\n{theirs.stdout}")
    print("ok: LibTorch's c10d::TCPStore client was served for every request type, the same as by torch's own server")


def case_garbage(args):
    helper = Helper(args.helper)
    # A real 1.13 client (raw bytes: ADD init/ 1) stays connected through all of this.
    real = socket.create_connection(("127.0.0.1", helper.port))
    add = bytes([3]) + struct.pack("<Q", 5) + b"init/" + struct.pack("<q", 1)
    real.sendall(add)
    if struct.unpack("<q", real.recv(8))[0] != 1:
        fail("the raw 1.13 client's ADD got a wrong answer")
    bad = {
        "HTTP": b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        "unknown opcode": bytes([0]) + struct.pack("<I", 0x3C85F7CE) + bytes([99]),
        "oversized key": bytes([2]) + struct.pack("<Q", 1 << 40),
        "never finished": bytes([2]) + struct.pack("<Q", 10) + b"abc",
    }
    for what, payload in bad.items():
        s = socket.create_connection(("127.0.0.1", helper.port))
        s.sendall(payload)
        if not closed_by_server(s):
            fail(f"the store kept a client sending {what} connected")
        print(f"ok: a client sending {what} was disconnected")
        s.close()
    real.sendall(add)
    if struct.unpack("<q", real.recv(8))[0] != 2:
        fail("the real client stopped working after the garbage clients")
    print("ok: the real client kept working")
    real.close()
    out = run_python_client(args, helper.port)
    log = helper.stop()
    lines = [l for l in log.splitlines() if "closed the connection from 127.0.0.1:" in l]
    if len(lines) != len(bad):
        fail(f"expected {len(bad)} log lines, one per bad client, got {len(lines)}", log)
    for needle in ("not a c10d TCPStore client: first byte 0x47 ('G')", "unknown opcode 99 for a torch 2.x client",
                   "a key of 1099511627776 bytes, over the limit", "still incomplete after"):
        if not any(needle in l for l in lines):
            fail(f"no log line says {needle!r}", log)
    print("ok: one log line per bad client, naming the peer and what was wrong:")
    print("\n".join("  " + l for l in lines))


def case_restrict(args):
    helper = Helper(args.helper, ["--restrict", "192.0.2.1"])
    out = run_python_client(args, helper.port)
    log = helper.stop()
    if "refused" in log:
        fail("a loopback client was refused", log)
    print("ok: with peers restricted, a loopback client is served")


class Raw:
    """A torch 2.x client's bytes: opcode, then uint64-length strings / raw integers."""
    OPS = dict(VALIDATE=0, SET=1, COMPARE_SET=2, GET=3, ADD=4, CHECK=5, WAIT=6, GETNUMKEYS=7, DELETE_KEY=8,
               APPEND=9, MULTI_GET=10, MULTI_SET=11, CANCEL_WAIT=12, PING=13, QUEUE_PUSH=14, QUEUE_POP=15,
               QUEUE_LEN=16, LIST_KEYS=17, BARRIER=18)

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.settimeout(20)

    @staticmethod
    def string(b):
        b = b.encode() if isinstance(b, str) else b
        return struct.pack("<Q", len(b)) + b

    def send(self, op, *parts):
        self.s.sendall(bytes([self.OPS[op]]) + b"".join(parts))

    def recv(self, n):
        data = b""
        while len(data) < n:
            chunk = self.s.recv(n - len(data))
            if not chunk:
                fail(f"the store closed the connection while {n - len(data)} reply bytes were due")
            data += chunk
        return data

    def i64(self):
        return struct.unpack("<q", self.recv(8))[0]

    def u8(self):
        return self.recv(1)[0]

    def value(self):
        return self.recv(struct.unpack("<Q", self.recv(8))[0])


def case_torch2_raw(args):
    helper = Helper(args.helper)
    c, S = Raw(helper.port), Raw.string
    c.send("VALIDATE", struct.pack("<I", 0x3C85F7CE))
    c.send("PING", struct.pack("<I", 777))
    expect = [(struct.unpack("<I", c.recv(4))[0] == 777, "PING echoes the nonce")]
    c.send("SET", S("k"), S("v"))
    c.send("GET", S("k"))
    expect.append((c.value() == b"v", "SET then GET"))
    c.send("ADD", S("n"), struct.pack("<q", 5))
    expect.append((c.i64() == 5, "ADD"))
    c.send("COMPARE_SET", S("k"), S("v"), S("w"))
    expect.append((c.value() == b"w", "COMPARE_SET"))
    c.send("CHECK", struct.pack("<Q", 2), S("k"), S("nope"))
    expect.append((c.u8() == 1, "CHECK of a missing key: NOT_READY"))
    c.send("WAIT", struct.pack("<Q", 1), S("k"))
    expect.append((c.u8() == 0, "WAIT on a present key: STOP_WAITING"))
    c.send("WAIT", struct.pack("<Q", 1), S("later"))
    c.send("CANCEL_WAIT")
    expect.append((c.u8() == 1, "CANCEL_WAIT after a WAIT: WAIT_CANCELED"))
    c.send("APPEND", S("k"), S("x"))
    c.send("MULTI_SET", struct.pack("<Q", 2), S("a"), S("1"), S("b"), S("2"))
    c.send("MULTI_GET", struct.pack("<Q", 3), S("k"), S("a"), S("b"))
    expect.append(([c.value(), c.value(), c.value()] == [b"wx", b"1", b"2"], "APPEND, MULTI_SET, MULTI_GET"))
    c.send("GETNUMKEYS")
    expect.append((c.i64() == 4, "GETNUMKEYS"))
    c.send("DELETE_KEY", S("a"))
    expect.append((c.i64() == 1, "DELETE_KEY"))
    c.send("QUEUE_PUSH", S("q"), S("item"))
    c.send("QUEUE_LEN", S("q"))
    expect.append((c.i64() == 1, "QUEUE_PUSH, QUEUE_LEN"))
    c.send("QUEUE_POP", S("q"))
    expect.append((c.i64() == 1 and c.value() == b"item", "QUEUE_POP"))
    c.send("LIST_KEYS")
    expect.append((sorted(c.value() for _ in range(c.i64())) == [b"b", b"k", b"n"], "LIST_KEYS (no queues)"))
    other = Raw(helper.port)
    other.send("VALIDATE", struct.pack("<I", 0x3C85F7CE))
    other.send("BARRIER", S("bar"), struct.pack("<q", 2))  # parked: 1 of 2
    time.sleep(0.2)
    c.send("BARRIER", S("bar"), struct.pack("<q", 2))
    expect.append((c.u8() == 0, "BARRIER, the second of two: STOP_WAITING at once"))
    expect.append((other.u8() == 0, "BARRIER, the first of two: STOP_WAITING when the second arrives"))
    c.send("BARRIER", S("bar2"), struct.pack("<q", 2))
    c.send("CANCEL_WAIT")
    expect.append((c.u8() == 1, "BARRIER cancelled after its timeout: WAIT_CANCELED"))
    c.send("GET", S("bar2"))
    expect.append((c.value() == b"1", "the cancelled arrival stays counted"))
    log = helper.stop()
    for ok, what in expect:
        if not ok:
            fail(f"torch 2.x dialect: {what} got a wrong reply", log)
        print(f"ok: {what}")
    if "closed the connection" in log:
        fail("the store logged a protocol error for the 2.x byte stream", log)
    print("ok: every torch 2.x request type was served as main's client expects")


def reaches(host, port):
    """A raw 1.13 ADD over a connection to host: does the store answer it?"""
    try:
        s = socket.create_connection((host, port), timeout=5)
    except OSError:
        return False
    with s:
        s.settimeout(10)
        s.sendall(bytes([3]) + struct.pack("<Q", 2) + b"v6" + struct.pack("<q", 1))
        return len(s.recv(8)) == 8


def case_dual_stack(args):
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError as e:
        print(f"SKIP: this host has no IPv6 loopback ({e})")
        sys.exit(77)
    for host in ("::1", "127.0.0.1"):
        helper = Helper(args.helper)  # a fresh one each: the client's keys must be new
        if helper.address != "::":
            fail(f"listening on every interface, the store bound {helper.address}, not :: (dual-stack)",
                 helper.stop())
        if not reaches(host, helper.port):
            fail(f"a raw client could not use the store over {host}", helper.stop())
        print(f"ok: the store listens on [::]:{helper.port} and serves a raw client over {host}")
        run_python_client(args, helper.port, host)
        log = helper.stop()
        if "closed the connection" in log:
            fail("the store logged a protocol error for a real client", log)
        print(f"ok: torch.distributed.TCPStore(\"{host}\", ...) of {args.python} was served for every request")
    for listen, yes, no in (("127.0.0.1", "127.0.0.1", "::1"), ("::1", "::1", "127.0.0.1")):
        helper = Helper(args.helper, ["--host", listen])
        ok = helper.address == listen and reaches(yes, helper.port) and not reaches(no, helper.port)
        log = helper.stop()
        if not ok:
            fail(f"listening on {listen} (bound {helper.address}) the store should serve {yes} and not {no}", log)
        print(f"ok: listening on the literal {listen}, the store serves {yes} and not {no}")
    if not args.no_ipv6_shim:
        print("note: no --no-ipv6-shim (a sanitizer build): the IPv4 fallback was not tried")
        return
    env = dict(os.environ, LD_PRELOAD=args.no_ipv6_shim)
    helper = Helper(args.helper, env=env)
    ok = helper.address == "0.0.0.0" and reaches("127.0.0.1", helper.port)
    log = helper.stop()
    if not ok:
        fail(f"without IPv6 sockets the store should fall back to 0.0.0.0 and serve 127.0.0.1; it bound "
             f"{helper.address}", log)
    print("ok: where IPv6 sockets are refused, the store listens on 0.0.0.0 and serves 127.0.0.1")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--helper", required=True)
    p.add_argument("--python", default="/usr/bin/python3")
    p.add_argument("--libtorch-client")
    p.add_argument("--no-ipv6-shim", help="an LD_PRELOAD library that refuses AF_INET6 sockets")
    p.add_argument("case", choices=["python", "libtorch", "garbage", "restrict", "torch2_raw", "dual_stack"])
    args = p.parse_args()
    globals()["case_" + args.case](args)


if __name__ == "__main__":
    main()
