"""Judges device_probe.py's JSON lines (stdin, one per worker, any prefix before the '{') against
what the launcher should have given each worker; prints "ok ..." and exits 0, or names what
differed and exits 1. Options: --workers N, --visible unset|per-rank|VALUE, --count N,
--local-ranks-zero, --bus0 PCI_BUS_ID, --uuid0 GPU-UUID (of the worker's device 0).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import fail  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--workers", type=int, required=True)
p.add_argument("--visible", default=None)
p.add_argument("--count", type=int, default=None)
p.add_argument("--local-ranks-zero", action="store_true")
p.add_argument("--bus0", default=None)
p.add_argument("--uuid0", default=None)
a = p.parse_args()

seen = []
for line in sys.stdin:
    sys.stdout.write(line)
    if "{" in line:
        try:
            seen.append(json.loads(line[line.index("{"):]))
        except json.JSONDecodeError:
            pass

problems = []
if len(seen) != a.workers:
    problems.append(f"{len(seen)} worker(s) reported, expected {a.workers}")
for w in seen:
    who = f"rank {w['rank']}"
    want = {"unset": None, "per-rank": str(w["rank"])}.get(a.visible, a.visible)
    if a.visible is not None and w["cuda_visible_devices"] != want:
        problems.append(f"{who}: CUDA_VISIBLE_DEVICES={w['cuda_visible_devices']!r}, expected {want!r}")
    if a.count is not None and w["device_count"] != a.count:
        problems.append(f"{who}: torch.cuda.device_count()={w['device_count']}, expected {a.count}")
    if a.local_ranks_zero and w["local_rank"] != "0":
        problems.append(f"{who}: LOCAL_RANK={w['local_rank']}, expected 0 (--virtual-local-rank)")
    first = w["devices"][0] if w["devices"] else {}
    if a.bus0 and (first.get("pci_bus_id") or "").upper() != a.bus0.upper():
        problems.append(f"{who}: device 0 has PCI bus id {first.get('pci_bus_id')}, expected {a.bus0}")
    if a.uuid0 and first.get("uuid") != a.uuid0:
        problems.append(f"{who}: device 0 has UUID {first.get('uuid')}, expected {a.uuid0}")

if problems:
    fail("; ".join(problems))
summary = ", ".join(f"rank {w['rank']}: CUDA_VISIBLE_DEVICES={w['cuda_visible_devices']} count={w['device_count']} "
                    f"bus0={(w['devices'] or [{}])[0].get('pci_bus_id')}" for w in seen)
print(f"ok {len(seen)} worker(s): {summary}")
