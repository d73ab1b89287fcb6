"""TCP ports for tests and benchmarks to listen on: free on this machine right now and below
the kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range), so that no connection's
own port takes one between the pick and the listener's bind (the suite opens thousands of
connections; a port taken so is bound but refuses connections). Another picker may still take
one: the caller binds soon. `python3 ports.py [N]` prints N ports on one line (scripts/lib.sh)."""
import os
import random
import socket
import sys
import time

LOWEST = 10000


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


_given = set()  # never the same port twice in one process


def free_ports(n=1):
    """n distinct ports, all bound at once on every address, then released."""
    top = _ephemeral_low()
    rng = random.Random(os.getpid() ^ time.monotonic_ns())
    held = []
    try:
        for _ in range(200 * n):
            if len(held) == n:
                break
            port = rng.randrange(LOWEST, top) if top > LOWEST + 1000 else 0
            if port in _given:
                continue
            s = socket.socket()
            try:
                s.bind(("", port))
                held.append(s)
            except OSError:
                s.close()
        while len(held) < n:  # the range is crowded: the kernel's choice
            s = socket.socket()
            s.bind(("", 0))
            held.append(s)
        ports = [s.getsockname()[1] for s in held]
        _given.update(ports)
        return ports
    finally:
        for s in held:
            s.close()


def free_port():
    return free_ports(1)[0]


if __name__ == "__main__":
    print(" ".join(str(p) for p in free_ports(int(sys.argv[1]) if len(sys.argv) > 1 else 1)))
