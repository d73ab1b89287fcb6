"""Turns gpu-check-summary.md's check table and bench lines into JSON on stdout (for machines):
{"checks": [{"name", "result", "seconds", "detail"}], "bench": [{key: value, ...}]}.
"""
import json
import sys

checks, bench = [], []
for line in open(sys.argv[1], encoding="utf-8"):
    line = line.rstrip("\n")
    if line.startswith("| ") and not line.startswith("| check ") and not line.startswith("|---"):
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        if len(cells) >= 4:
            checks.append({"name": cells[0], "result": cells[1], "seconds": int(cells[2] or 0),
                           "detail": " | ".join(cells[3:]).replace("\\|", "|")})
    elif line.startswith("peer="):
        bench.append(dict(tok.split("=", 1) for tok in line.split() if "=" in tok))
json.dump({"checks": checks, "bench": bench}, sys.stdout, indent=1)
print()
