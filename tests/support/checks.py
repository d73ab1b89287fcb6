"""What the Python test drivers share: fail(), the verdict of a failed check.

Used by tests/python/check_interop.py, tests/trainers/check_trainers.py,
tests/launcher/console/console_test.py and tests/gpu/check_probe.py. Plain Python 3, no
torch. CTest runs the drivers with /usr/bin/python3 (DDP_TEST_PYTHON) from the build
folder, so each one finds this module from its own location, not from the working
directory:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
    from checks import fail  # noqa: E402
"""
import sys


def fail(message, output="", heading="output"):
    """Prints "FAIL: message" on stdout, then output (if any) under "---- heading ----",
    and exits 1."""
    print(f"FAIL: {message}")
    if output:
        print(f"---- {heading} ----")
        print(output)
    sys.exit(1)
