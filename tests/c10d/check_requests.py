"""Does the workers' store serve every request the installed torch's TCPStore can send?

Usage: check_requests.py --helper PATH [--header PATH] [--self-test]
Reads c10d's request enum (QueryType) from the header the torch of this Python installs
(TORCH/include/torch/csrc/distributed/c10d/store/TCPStoreBackend.hpp, or
.../c10d/TCPStoreBackend.hpp in older 2.x wheels), or --header, and compares it with the
opcode table `c10d_store_helper --requests` prints (launcher/c10d/wire.cpp's): each of
torch's requests must be served at torch's opcode. A request torch has and the store lacks
fails the test, naming it: a client sending it would lose its store (the server closes the
connection on an unknown opcode, and torch's client never reconnects).
--self-test: the same check against a copy of the header with one more request, which must
fail (the check is live). Exit 77 (skipped) when there is no torch or no such header
(torch 1.13 keeps its enum in a .cpp file).
"""
import argparse
import importlib.util
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from checks import fail  # noqa: E402

SKIP = 77
HEADERS = ("include/torch/csrc/distributed/c10d/store/TCPStoreBackend.hpp",
           "include/torch/csrc/distributed/c10d/TCPStoreBackend.hpp")


def torch_dir():
    """torch's package folder, found without importing torch (seconds, and CUDA probing)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def torch_version(root):
    try:
        with open(os.path.join(root, "version.py")) as f:
            m = re.search(r"""__version__\s*=\s*['"]([^'"]+)""", f.read())
        return m.group(1) if m else "?"
    except OSError:
        return "?"


def query_types(text):
    """The enumerators of `enum class QueryType`, as {opcode: NAME}."""
    m = re.search(r"enum\s+class\s+QueryType\s*:\s*uint8_t\s*\{(.*?)\}", text, re.S)
    if not m:
        return None
    body = re.sub(r"//[^\n]*|/\*.*?\*/", "", m.group(1), flags=re.S)
    ops, code = {}, 0
    for item in (i.strip() for i in body.split(",")):
        if not item:
            continue
        name, _, value = (p.strip() for p in item.partition("="))
        if value:
            code = int(value, 0)
        ops[code] = name
        code += 1
    return ops


def ours(helper):
    out = subprocess.run([helper, "--requests"], stdout=subprocess.PIPE, text=True, check=True).stdout
    return {int(code): name for code, name in (line.split() for line in out.splitlines())}


def compare(torch_ops, store_ops, where):
    """Problems, one line each: what torch has that the store does not serve as torch numbers it."""
    problems = []
    by_name = {name: code for code, name in store_ops.items()}
    for code, name in sorted(torch_ops.items()):
        if store_ops.get(code) == name:
            continue
        if name not in by_name:
            problems.append(f"{where} has request {name} (opcode {code}), which the workers' store does "
                            f"not serve: a client calling it would lose its store; add it to launcher/c10d "
                            f"(wire.hpp's Op and the 2.x table in wire.cpp, key_space.cpp)")
        else:
            problems.append(f"{where} numbers request {name} {code}, the workers' store {by_name[name]}")
    return problems


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--helper", required=True)
    p.add_argument("--header")
    p.add_argument("--self-test", action="store_true")
    args = p.parse_args()
    header, version = args.header, "?"
    if not header:
        root = torch_dir()
        if root is None:
            print(f"SKIP: {sys.executable} has no torch")
            sys.exit(SKIP)
        version = torch_version(root)
        found = [os.path.join(root, h) for h in HEADERS if os.path.exists(os.path.join(root, h))]
        if not found:
            print(f"SKIP: torch {version} at {root} installs no TCPStoreBackend.hpp (torch 1.13 keeps "
                  f"its request enum in TCPStore.cpp)")
            sys.exit(SKIP)
        header = found[0]
    with open(header) as f:
        text = f.read()
    torch_ops = query_types(text)
    if not torch_ops:
        fail(f"{header} has no `enum class QueryType : uint8_t`; has torch moved it?")
    store_ops = ours(args.helper)
    where = f"torch {version}'s TCPStore ({header})"
    if args.self_test:
        fake = re.sub(r"(enum\s+class\s+QueryType\s*:\s*uint8_t\s*\{.*?)\}", r"\1, FUTURE_REQUEST }", text,
                      count=1, flags=re.S)
        with tempfile.NamedTemporaryFile("w", suffix=".hpp") as f:
            f.write(fake)
            f.flush()
            problems = compare(query_types(open(f.name).read()), store_ops, "the edited header")
        if not any("FUTURE_REQUEST" in line and "does not serve" in line for line in problems):
            fail("a header with one more request passed the check", "\n".join(problems))
        print("ok: a header with one more request fails the check, naming it:")
        print("  " + "\n  ".join(problems))
        return
    problems = compare(torch_ops, store_ops, where)
    if problems:
        fail("the workers' store does not serve every request of the installed torch", "\n".join(problems))
    extra = sorted(set(store_ops.values()) - set(torch_ops.values()))
    print(f"ok: every request of {where} is served at its opcode: "
          + ", ".join(f"{c} {n}" for c, n in sorted(torch_ops.items())))
    if extra:
        print(f"note: the store also serves {', '.join(extra)} (newer torch)")


if __name__ == "__main__":
    main()
