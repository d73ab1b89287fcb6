"""Store-at-scale benchmark driver (run by scripts/bench-store-scale.sh; a benchmark, not a test).

N emulated torch 2.x ranks (tests/c10d/store_crowd.cpp: one connection each, spread over
processes of at most --per-process ranks, from 127.0.0.1) against three
servers, side by side, alternating within each round: ddp-launch's workers' store
(c10d_store_helper sized with --ranks N as the launcher sizes it), torch 2.x's own TCPStore
server (the libuv backend, the default since 2.4) in this Python, and the floor
(c10d_store_crowd --floor: the least a server must do to answer them). Two shapes: barrier
(SET, ADD, the last rank SETs a key everyone WAITs for: c10d's store barrier) and init
(VALIDATE, PING, ADD init/, rank 0 SETs the NCCL unique id, the others WAIT and GET it).
Per shape, size and server: seconds from the first connect to the last rank released (median
of the rounds, min-max), connections refused and reset (summed over the rounds), and the
server's RSS growth (its peak while serving minus its idle RSS) and CPU seconds (medians).
torch's server looks up the name of every peer it accepts (getnameinfo, on its one thread):
where the host's DNS is slow or unreachable each lookup waits for the resolver (5 s on the
development VM from the 48th connection on). The torch server therefore runs in a mount
namespace whose /etc/resolv.conf names 127.0.0.1, where nothing answers (each lookup fails at
once), when this runs as root with unshare; --servers torch-dns adds it as the host has it.
Usage: bench_store_scale.py --helper BIN --crowd BIN [--sizes 1024,4096,16384,max] [--rounds 3]
"""
import argparse
import datetime
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

TORCH_SERVER = r"""
import sys
import torch.distributed as dist
store = dist.TCPStore("127.0.0.1", 0, int(sys.argv[1]), True, wait_for_workers=False, use_libuv=True)
print(f"port {store.port}", flush=True)
sys.stdin.read()
"""
RESERVED_FILES = 256  # what launcher/node/worker_store.hpp keeps for the launcher itself
PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")


def rss_bytes(pid):
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * PAGE


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


class Server:
    """One server process: started, its port read, sampled while it serves, stopped."""

    def __init__(self, name, argv):
        self.name = name
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("port "):
            err = self.proc.stderr.read() if self.proc.poll() is not None else ""
            self.stop()
            raise RuntimeError(f"{name}: no port line ({line.strip()!r}; {err.strip()[-300:]})")
        self.port = int(line.split()[1])
        time.sleep(0.2)  # settled: its idle figures
        self.idle_rss, self.idle_cpu = rss_bytes(self.proc.pid), cpu_seconds(self.proc.pid)
        self.peak_rss = self.idle_rss
        self._sampling = True
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def _sample(self):
        while self._sampling:
            try:
                self.peak_rss = max(self.peak_rss, rss_bytes(self.proc.pid))
            except OSError:
                return
            time.sleep(0.02)

    def figures(self):
        """(RSS growth in bytes, CPU seconds) since it was idle."""
        self._sampling = False
        self._sampler.join()
        self.peak_rss = max(self.peak_rss, rss_bytes(self.proc.pid))
        return self.peak_rss - self.idle_rss, cpu_seconds(self.proc.pid) - self.idle_cpu

    def stop(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (subprocess.TimeoutExpired, OSError):
            self.proc.kill()
            self.proc.wait()


def can_skip_dns():
    """Whether this process may run a server in a mount namespace of its own (root, unshare)."""
    return os.geteuid() == 0 and shutil.which("unshare") is not None


def without_dns(argv, tmp):
    """argv in a mount namespace whose resolv.conf makes every lookup fail at once (root only)."""
    if not can_skip_dns():
        return argv
    conf = os.path.join(tmp, "resolv.conf")
    with open(conf, "w") as f:
        f.write("nameserver 127.0.0.1\n")
    return ["unshare", "-m", "sh", "-c", f'mount --bind "{conf}" /etc/resolv.conf && exec "$@"', "sh"] + argv


def start_server(name, a, ranks):
    if name == "ddp-launch":
        return Server(name, [a.helper, "--host", "127.0.0.1", "--ranks", str(ranks)])
    if name in ("torch", "torch-dns"):
        argv = [sys.executable, "-c", TORCH_SERVER, str(ranks)]
        return Server(name, argv if name == "torch-dns" else without_dns(argv, a.tmp))
    return Server(name, [a.crowd, "--floor"])


def run_crowd(a, port, ranks, shape):
    """Every rank released? (seconds first connect -> last release or None, refused, reset, done)."""
    procs = []
    for first in range(0, ranks, a.per_process):
        count = min(a.per_process, ranks - first)
        procs.append(subprocess.Popen([a.crowd, "--port", str(port), "--ranks", str(ranks), "--first", str(first),
                                       "--count", str(count), "--shape", shape, "--timeout", str(a.timeout),
                                       "--sources", str(a.sources)],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    starts, ends, refused, reset, done = [], [], 0, 0, 0
    for p in procs:
        out, err = p.communicate(timeout=a.timeout + 30)
        words = out.split()
        if len(words) < 12 or words[0] != "done":
            raise RuntimeError(f"the crowd printed {out.strip()!r} ({err.strip()[-300:]})")
        done += int(words[1])
        refused += int(words[5])
        reset += int(words[7])
        starts.append(float(words[9]))
        ends.append(float(words[11]))
    seconds = max(ends) - min(starts) if done == ranks else None
    return seconds, refused, reset, done


def usage_error(text):
    print(f"bench-store-scale.sh: {text}", file=sys.stderr)
    sys.exit(2)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--helper", required=True, help="build/tests/c10d/c10d_store_helper")
    p.add_argument("--crowd", required=True, help="build/tests/c10d/c10d_store_crowd")
    p.add_argument("--sizes", default="1024,4096,16384,max",
                   help="ranks per run, comma separated; max: the open-file limit's largest job")
    p.add_argument("--shapes", default="barrier,init")
    p.add_argument("--servers", default="ddp-launch,torch,floor")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--per-process", type=int, default=8000, help="emulated ranks per crowd process")
    p.add_argument("--timeout", type=float, default=120, help="seconds a run may take")
    p.add_argument("--plot", default="", help="also draw the medians as a PNG there (gnuplot)")
    p.add_argument("--sources", type=int, default=1,
                   help="loopback source addresses 127.0.0.1.. (above 1: names torch's server cannot look up)")
    a = p.parse_args()
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    a.max_ranks = (hard if hard != resource.RLIM_INFINITY else 1 << 20) - RESERVED_FILES
    try:
        a.sizes = [a.max_ranks if s == "max" else int(s) for s in a.sizes.split(",")]
        if min(a.sizes) < 1:
            raise ValueError
    except ValueError:
        usage_error(f"--sizes must be rank counts >= 1 or max, got '{a.sizes}'")
    a.shapes = a.shapes.split(",")
    a.servers = a.servers.split(",")
    if set(a.shapes) - {"barrier", "init"} or set(a.servers) - {"ddp-launch", "torch", "torch-dns", "floor"} or \
            a.rounds < 1:
        usage_error("--shapes from barrier,init; --servers from ddp-launch,torch,torch-dns,floor; --rounds >= 1")
    a.tmp = tempfile.mkdtemp(prefix="store-scale-")
    return a


def cell_seconds(values):
    ok = [v for v in values if v is not None]
    if not ok:
        return "-"
    text = f"{statistics.median(ok):.2f} s ({min(ok):.2f}-{max(ok):.2f})"
    return text if len(ok) == len(values) else f"{text}, {len(values) - len(ok)} of {len(values)} unfinished"


def main():
    a = parse_args()
    load = open("/proc/loadavg").read().split()[:3]
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    results = {}  # (shape, ranks, server) -> list of (seconds, refused, reset, rss, cpu)
    for shape in a.shapes:
        for ranks in a.sizes:
            for rnd in range(a.rounds):
                order = a.servers[rnd % len(a.servers):] + a.servers[:rnd % len(a.servers)]
                for name in order:
                    server = start_server(name, a, ranks)
                    try:
                        seconds, refused, reset, done = run_crowd(a, server.port, ranks, shape)
                    finally:
                        rss, cpu = server.figures()
                        server.stop()
                    results.setdefault((shape, ranks, name), []).append((seconds, refused, reset, rss, cpu))
                    got = f"{seconds:.3f} s" if seconds is not None else f"{done} of {ranks} released"
                    print(f"# {shape} {ranks} round {rnd + 1}/{a.rounds} {name}: {got}, refused {refused}, "
                          f"reset {reset}, RSS +{rss / 2**20:.1f} MiB, CPU {cpu:.2f} s", file=sys.stderr, flush=True)
    print(f"# {started}, {os.cpu_count()} CPUs, load {' '.join(load)} before, "
          f"{' '.join(open('/proc/loadavg').read().split()[:3])} after; {a.rounds} rounds, servers alternating; "
          f"open-file limit {a.max_ranks + RESERVED_FILES}; torch {torch_version()}; torch's server "
          f"{'without DNS lookups (a mount namespace)' if can_skip_dns() else 'with the host DNS'}")
    if a.plot:
        plot(a.plot, a, results)
    shutil.rmtree(a.tmp, ignore_errors=True)
    unfinished = [k for k, rows in results.items() if any(r[0] is None for r in rows)]
    if unfinished:
        print(f"- not every rank released: {', '.join(f'{s} {n} {v}' for s, n, v in unfinished)}")
        sys.exit(1)
    print()
    print("| shape | ranks | server | first connect -> every rank released: median (min-max) | vs torch | "
          "vs floor | refused / reset | server RSS growth | per connection | server CPU |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for shape in a.shapes:
        for ranks in a.sizes:
            medians = {}
            for name in a.servers:
                ok = [r[0] for r in results[(shape, ranks, name)] if r[0] is not None]
                medians[name] = statistics.median(ok) if ok else None
            for name in a.servers:
                rows = results[(shape, ranks, name)]
                mine = medians[name]
                ratio = {other: (f"{mine / medians[other]:.2f}x" if mine and medians.get(other) else "-")
                         for other in ("torch", "floor")}
                rss = statistics.median(r[3] for r in rows)
                cpu = statistics.median(r[4] for r in rows)
                print(f"| {shape} | {ranks} | {name} | {cell_seconds([r[0] for r in rows])} | {ratio['torch']} | "
                      f"{ratio['floor']} | {sum(r[1] for r in rows)} / {sum(r[2] for r in rows)} | "
                      f"{rss / 2**20:.1f} MiB | {rss / ranks / 1024:.1f} KiB | {cpu:.2f} s |")


def plot(path, a, results):
    """Seconds to release every rank against the ranks, one line per server and shape (gnuplot)."""
    data = os.path.join(a.tmp, "plot.dat")
    lines = []
    with open(data, "w") as f:
        for shape in a.shapes:
            for name in a.servers:
                f.write(f"# {shape} {name}\n")
                for ranks in a.sizes:
                    ok = [r[0] for r in results[(shape, ranks, name)] if r[0] is not None]
                    if ok:
                        f.write(f"{ranks} {statistics.median(ok):.4f}\n")
                f.write("\n\n")
                lines.append(f"'{data}' index {len(lines)} with linespoints lw 2 title '{name}, {shape}'")
    script = (f"set terminal pngcairo size 900,500; set output '{path}'; set logscale xy; "
              f"set xlabel 'emulated torch 2.x ranks'; set ylabel 'seconds until every rank is released'; "
              f"set key top left; set grid; set title \"The workers' store at scale: emulated ranks on loopback\"; "
              f"plot " + ", ".join(lines))
    subprocess.run(["gnuplot", "-e", script], check=True)


def torch_version():
    try:
        out = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                             text=True, timeout=60)
        return out.stdout.strip() or "?"
    except (OSError, subprocess.TimeoutExpired):
        return "?"


if __name__ == "__main__":
    main()
