"""ddp-launch's console as people see it: a real pseudo-terminal (os.openpty) or pipes.

Usage: console_test.py --launcher PATH CASE [--capture FILE]
Cases: terminal_bar, terminal_two_bars, pipe_bars, long_line, pdb_stdin, pdb_ctrl_c.
The workers are bar_worker.py (tqdm- and pdb-style output) run by python3. Nothing here
asserts a duration: a bar must be on screen while its worker is provably still running
(it waits for a gate file that the test creates only after seeing the bar). Every wait has
a generous deadline. Exits 1 with the transcript on the first mismatch.
"""
import argparse
import fcntl
import functools
import os
import re
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "support"))
import checks  # noqa: E402

WORKER = os.path.join(HERE, "bar_worker.py")
DEADLINE_S = 60
COLS, ROWS = 100, 30
fail = functools.partial(checks.fail, heading="transcript")  # fail(message, transcript="")


class Screen:
    """A small terminal: printable text, \\r, \\n, backspace, ESC[nA, ESC[J, ESC[K."""

    def __init__(self, cols=COLS):
        self.cols, self.rows, self.y, self.x = cols, [[]], 0, 0

    def feed(self, text):
        i = 0
        while i < len(text):
            c = text[i]
            if c == "\x1b":
                m = re.match(r"\x1b\[(\d*)([A-Za-z])", text[i:])
                if m:
                    n = int(m.group(1) or 1)
                    if m.group(2) == "A":
                        self.y = max(0, self.y - n)
                    elif m.group(2) == "J":
                        self.rows[self.y] = self.rows[self.y][: self.x]
                        del self.rows[self.y + 1:]
                    elif m.group(2) == "K":
                        self.rows[self.y] = self.rows[self.y][: self.x]
                    i += len(m.group(0))
                    continue
            elif c == "\r":
                self.x = 0
            elif c == "\n":
                self.y += 1
                if self.y == len(self.rows):
                    self.rows.append([])
            elif c == "\b":
                self.x = max(0, self.x - 1)
            elif c >= " ":
                if self.x >= self.cols:  # wrap
                    self.x = 0
                    self.y += 1
                    if self.y == len(self.rows):
                        self.rows.append([])
                row = self.rows[self.y]
                row.extend(" " * (self.x - len(row)))
                if self.x < len(row):
                    row[self.x] = c
                else:
                    row.append(c)
                self.x += 1
            i += 1

    def lines(self):
        return ["".join(r).rstrip() for r in self.rows]

    def text(self):
        return "\n".join(self.lines())


class PtyRun:
    """ddp-launch on a pseudo-terminal that is its controlling terminal (so ^C is SIGINT)."""

    def __init__(self, launcher_args):
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))

        def controlling_tty():
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        env = dict(os.environ, PYTHON_EXEC=sys.executable, OMP_NUM_THREADS="1", TERM="xterm")
        self.proc = subprocess.Popen(launcher_args, stdin=slave, stdout=slave, stderr=slave, env=env,
                                     start_new_session=True, preexec_fn=controlling_tty)
        os.close(slave)
        self.raw = b""
        self.screen = Screen()

    def pump(self, timeout=0.2):
        r, _, _ = select.select([self.master], [], [], timeout)
        if not r:
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the terminal's other side is closed
            return False
        self.raw += data
        self.screen.feed(data.decode("utf-8", "replace"))
        return bool(data)

    def wait_screen(self, predicate, what):
        end = time.monotonic() + DEADLINE_S
        while time.monotonic() < end:
            if predicate(self.screen.lines()):
                return
            if self.proc.poll() is not None and not self.pump(0.5):
                break
            self.pump()
        fail(f"never saw {what}", self.transcript())

    def type(self, text):
        os.write(self.master, text.encode())

    def finish(self, timeout=DEADLINE_S):
        end = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < end:
            self.pump()
        while self.pump(0.3):
            pass
        if self.proc.poll() is None:
            self.proc.kill()
            fail("the launcher did not exit", self.transcript())
        return self.proc.returncode

    def transcript(self):
        return self.screen.text() + "\n---- raw ----\n" + repr(self.raw[-3000:])


def launcher_cmd(args, *rest):
    return [args.launcher, *rest]


def check_terminal_bars(args, nproc):
    with tempfile.TemporaryDirectory() as tmp:
        gate = os.path.join(tmp, "gate")
        run = PtyRun(launcher_cmd(args, f"--nproc-per-node={nproc}", WORKER, "bar", gate, "5"))
        last = lambda r: f"[rank{r}]: train r{r}:  83%|#####| 5/6"  # the frame shown until the gate
        run.wait_screen(lambda lines: all(last(r) in lines for r in range(nproc)),
                        f"every rank's live bar ({nproc}) on the terminal before the workers finish")
        if run.proc.poll() is not None:
            fail("the launcher ended before the gate opened", run.transcript())
        open(gate, "w").close()
        rc = run.finish()
        lines = run.screen.lines()
        if rc != 0:
            fail(f"exit code {rc}", run.transcript())
        for r in range(nproc):
            final = f"[rank{r}]: train r{r}: 100%|#####| 6/6"
            if lines.count(final) != 1:
                fail(f"rank {r}'s final bar should be on screen once as {final!r}", run.transcript())
            if lines.count(f"[rank{r}]: done") != 1:
                fail(f"rank {r}'s 'done' line missing", run.transcript())
        for line in lines:
            if "train" in line and not re.fullmatch(r"\[rank(\d)\]: train r\1: .*", line):
                fail(f"unreadable line on the terminal: {line!r}", run.transcript())
        if args.capture:
            with open(args.capture, "w") as f:
                f.write("# live screen while both bars were drawing, then the final screen\n")
                f.write(run.screen.text() + "\n")
        print(f"ok: {nproc} live bar(s) prefixed on the terminal before the end, final lines readable")


def check_pipe_bars(args):
    with tempfile.TemporaryDirectory() as tmp:
        gate = os.path.join(tmp, "gate")
        open(gate, "w").close()
        env = dict(os.environ, PYTHON_EXEC=sys.executable, OMP_NUM_THREADS="1")
        p = subprocess.run(launcher_cmd(args, "--nproc-per-node=2", WORKER, "bar", gate, "5"), env=env,
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=DEADLINE_S)
        err = p.stderr.decode()
        if p.returncode != 0:
            fail(f"exit code {p.returncode}", err)
        if "\r" in err or "\x1b" in err:
            fail("a pipe got carriage returns or escape sequences", repr(err))
        bar_lines = [l for l in err.splitlines() if "train" in l]
        expected = sorted(f"[rank{r}]: train r{r}: 100%|#####| 6/6" for r in range(2))
        if sorted(bar_lines) != expected:
            fail(f"a pipe should get only the final bar of each rank, got {bar_lines}", err)
        print("ok: a pipe gets complete lines: one final bar per rank, no frames, no \\r")


def check_long_line(args):
    n = 200_000
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PYTHON_EXEC=sys.executable)
        p = subprocess.run(launcher_cmd(args, "--log-dir", tmp, "--tee=1", WORKER, "longline", str(n)),
                           env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=DEADLINE_S)
        out = p.stdout.decode()
        if p.returncode != 0:
            fail(f"exit code {p.returncode}", p.stderr.decode())
        lines = out.splitlines()
        prefix = "[rank0]: "
        if not lines or any(not l.startswith(prefix) for l in lines):
            fail("every piece of a long line must carry the prefix", out[:500])
        pieces = [l[len(prefix):] for l in lines]
        if max(len(x) for x in pieces) > 65536 or len(pieces) != -(-n // 65536):
            fail(f"pieces of sizes {[len(x) for x in pieces]}, expected at most 64 KiB each")
        expected = ("0123456789" * (n // 10 + 1))[:n]
        if "".join(pieces) != expected:
            fail("the pieces do not add up to the line")
        logs = [os.path.join(d, f) for d, _, fs in os.walk(tmp) for f in fs if f == "stdout.log"]
        with open(logs[0]) as f:
            if f.read() != expected + "\n":
                fail("the log file must keep the worker's raw bytes (one line)")
        print(f"ok: a {n}-byte line reached the console in {len(pieces)} prefixed pieces; the log keeps it whole")


def check_pdb_stdin(args):
    run = PtyRun(launcher_cmd(args, "--nproc-per-node=2", "--stdin-rank=1", WORKER, "pdb", "1"))
    run.wait_screen(lambda lines: any(l.startswith("[rank1]: (Pdb)") for l in lines), "rank 1's (Pdb) prompt")
    run.type("p RANK\n")
    run.wait_screen(lambda lines: any(re.fullmatch(r"\[rank1\]: (\(Pdb\) )?1", l) for l in lines),
                    "pdb's answer to `p RANK` (1)")
    run.type("c\n")
    rc = run.finish()
    lines = run.screen.lines()
    resumed = any(re.fullmatch(r"\[rank1\]: (\(Pdb\) )?after-breakpoint rank=1", l) for l in lines)
    if rc != 0 or not resumed or "[rank0]: after-breakpoint rank=0" not in lines:
        fail(f"after `c` the job should finish (exit {rc})", run.transcript())
    if args.capture:
        with open(args.capture, "w") as f:
            f.write(run.screen.text() + "\n")
    # Default: stdin is a terminal, so rank 0 gets it without a flag.
    run0 = PtyRun(launcher_cmd(args, "--nproc-per-node=2", WORKER, "pdb", "0"))
    run0.wait_screen(lambda lines: any(l.startswith("[rank0]: (Pdb)") for l in lines), "rank 0's (Pdb) prompt")
    run0.type("p RANK\nc\n")
    rc0 = run0.finish()
    resumed0 = any(re.fullmatch(r"\[rank0\]: (\(Pdb\) )*after-breakpoint rank=0", l) for l in run0.screen.lines())
    if rc0 != 0 or not resumed0:
        fail("default stdin rank (0 on a terminal) did not drive pdb", run0.transcript())
    print("ok: pdb on rank 1 (--stdin-rank) and on rank 0 (the default on a terminal): p RANK, c")


def check_pdb_ctrl_c(args):
    run = PtyRun(launcher_cmd(args, "--nproc-per-node=2", "--stdin-rank=1", "--shutdown-timeout=60",
                              WORKER, "pdb", "1"))
    run.wait_screen(lambda lines: any(l.startswith("[rank1]: (Pdb)") for l in lines), "rank 1's (Pdb) prompt")
    run.type("\x03")  # ^C: the terminal sends SIGINT to the launcher's process group
    end = time.monotonic() + 15
    while run.proc.poll() is None and time.monotonic() < end:
        run.pump()
    presses = 1
    if run.proc.poll() is None:  # pdb catches SIGINT at its prompt; the second ^C kills
        run.type("\x03")
        presses = 2
    rc = run.finish()
    if rc != 130:
        fail(f"Ctrl-C should end the job with 130, got {rc}", run.transcript())
    if "received SIGINT" not in run.screen.text():
        fail("the launcher did not say it received SIGINT", run.transcript())
    print(f"ok: Ctrl-C ({presses} press(es)) stopped a job with rank 1 in pdb: exit 130")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launcher", required=True)
    ap.add_argument("--capture")
    ap.add_argument("case")
    args = ap.parse_args()
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    cases = {
        "terminal_bar": lambda: check_terminal_bars(args, 1),
        "terminal_two_bars": lambda: check_terminal_bars(args, 2),
        "pipe_bars": lambda: check_pipe_bars(args),
        "long_line": lambda: check_long_line(args),
        "pdb_stdin": lambda: check_pdb_stdin(args),
        "pdb_ctrl_c": lambda: check_pdb_ctrl_c(args),
    }
    cases[args.case]()


if __name__ == "__main__":
    main()
