"""scripts/bench-compress.sh's helper: the data set file, the link probe, and the summary.

  bench_compress.py data OUT --train N --val M --dim D --classes C
      writes the Gaussian-classes data set (bench/peers/bench_models.py) both twins train on
  bench_compress.py probe-server IP PORT      (in one namespace: receives until EOF)
  bench_compress.py probe IP PORT MIB         (in the other: sends MIB, prints gbit_per_s=X)
  bench_compress.py summary RESULTS
      the medians table of the result lines (link=... peer=... hook=... samples_per_s=...
      accuracy=...) and the targets: PowerSGD rank 2 vs plain all-reduce and vs Python's best
      hook that worked, at each shaped link, accuracy within 0.5 points of plain.
"""
import os
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench", "peers"))


def data(argv):
    import argparse
    import bench_models
    p = argparse.ArgumentParser(prog="bench_compress.py data")
    p.add_argument("out")
    p.add_argument("--train", type=int, default=4096)
    p.add_argument("--val", type=int, default=2048)
    p.add_argument("--dim", type=int, default=784)
    p.add_argument("--classes", type=int, default=10)
    a = p.parse_args(argv)
    x, y = bench_models.centres_dataset(a.train, a.val, a.dim, a.classes)
    bench_models.write_dataset(a.out, x, y, a.train)


def probe_server(ip, port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((ip, int(port)))
    s.listen(1)
    s.settimeout(30)
    c, _ = s.accept()
    while c.recv(1 << 20):
        pass


def probe(ip, port, mib):
    for _ in range(100):  # the server may still be starting
        try:
            s = socket.create_connection((ip, int(port)), timeout=30)
            break
        except OSError:
            time.sleep(0.05)
    else:
        sys.exit(f"probe: cannot connect to {ip}:{port}")
    chunk = b"x" * (1 << 20)
    t0 = time.perf_counter()
    for _ in range(int(mib)):
        s.sendall(chunk)
    s.shutdown(socket.SHUT_WR)
    s.recv(1)  # the server has read everything once it closes
    dt = time.perf_counter() - t0
    print(f"gbit_per_s={int(mib) * 8 * 1.048576 / 1000 / dt:.2f}")


def label(kv):
    return kv["hook"] + (f"-r{kv['rank']}" if kv.get("rank") else "")


def summary(path):
    rows, reasons = {}, {}
    for line in open(path):
        if line.startswith("# failed: "):
            kv = dict(t.split("=", 1) for t in line[10:].split(" reason=")[0].split())
            reasons[(kv["link"], kv["peer"], label(kv))] = line.split(" reason=", 1)[1].strip()
            continue
        if not line.startswith("case=compress "):
            continue
        kv = dict(t.split("=", 1) for t in line.split())
        rows.setdefault((kv["link"], kv["peer"], label(kv)), []).append(
            (float(kv["samples_per_s"]), float(kv.get("accuracy", "nan"))))
    if not rows:
        sys.exit(f"bench-compress.sh: error: {path}: no 'case=compress ...' result lines "
                 "(every configuration failed: see the '# failed:' lines above)")
    med = {k: (statistics.median(v[0] for v in vs), statistics.median(v[1] for v in vs), len(vs))
           for k, vs in rows.items()}
    links = list(dict.fromkeys(k[0] for k in list(rows) + list(reasons)))
    print("\n# medians: MLP 784-1024-1024-1024-10, world 2 (one worker per namespace), samples/s and final accuracy")
    print("# x plain: over libddp's plain all-reduce on that link; x py plain: over Python DDP's; "
          "x py hook: over Python's fastest hook that worked")
    print(f"{'link':10} {'peer':11} {'hook':12} {'samples/s':>10} {'accuracy':>9} {'x plain':>8} {'x py plain':>11} "
          f"{'x py hook':>10} {'runs':>5}")
    verdicts = []
    floor = med.get(("no-comm", "cpp-ddp", "none"))
    for link in links:
        plain = med.get((link, "cpp-ddp", "allreduce"))
        py_plain = med.get((link, "python-ddp", "allreduce"))
        py = {k[2]: v for k, v in med.items() if k[0] == link and k[1] == "python-ddp" and k[2] != "allreduce"}
        best = max(py.items(), key=lambda kv: kv[1][0]) if py else None
        for key in [k for k in list(med) + list(reasons) if k[0] == link]:
            if key in reasons and key not in med:
                print(f"{link:10} {key[1]:11} {key[2]:12} failed: {reasons[key]}")
                continue
            s, acc, n = med[key]
            xp = f"{s / plain[0]:8.2f}" if plain else f"{'':8}"
            xq = f"{s / py_plain[0]:11.2f}" if py_plain else f"{'':11}"
            xb = f"{s / best[1][0]:10.2f}" if best else f"{'':10}"
            print(f"{link:10} {key[1]:11} {key[2]:12} {s:10.1f} {100 * acc:8.2f}% {xp} {xq} {xb} {n:5d}")
        psgd = med.get((link, "cpp-ddp", "powersgd-r2"))
        shaped = link != "no-comm" and not link.startswith("unshaped")
        if psgd and plain and shaped:
            line = (f"# {link}: PowerSGD rank 2 = {psgd[0] / plain[0]:.2f}x plain all-reduce (target >= 3)")
            if best:
                line += f", {psgd[0] / best[1][0]:.2f}x Python's best hook {best[0]} (target >= 1.5)"
            line += f", accuracy {100 * (psgd[1] - plain[1]):+.2f} points vs plain (target within 0.5)"
            verdicts.append(line)
        if psgd and plain and link.endswith("ep"):
            verdicts.append(f"# {link}: the longer schedule's accuracy: PowerSGD rank 2 {100 * psgd[1]:.2f}%, plain "
                            f"{100 * plain[1]:.2f}% ({100 * (psgd[1] - plain[1]):+.2f} points; target within 0.5)")
        if floor and plain and link != "no-comm" and not link.endswith("ep"):
            verdicts.append(f"# {link}: the ceiling: free communication (the floor) would be {floor[0] / plain[0]:.2f}x "
                            f"plain all-reduce here (plain {plain[0]:.1f} samples/s, floor {floor[0]:.1f})")
    if floor:
        verdicts.append(f"# compute floor (two workers, no communication): {floor[0]:.1f} samples/s; "
                        "no hook can beat it")
    print("\n".join([""] + verdicts))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "data":
        data(args)
    elif cmd == "probe-server" and len(args) == 2:
        probe_server(*args)
    elif cmd == "probe" and len(args) == 3:
        probe(*args)
    elif cmd == "summary" and len(args) == 1:
        summary(args[0])
    else:
        sys.exit(f"bench_compress.py: error: unknown command {' '.join(sys.argv[1:])!r}; see its header")


if __name__ == "__main__":
    main()
