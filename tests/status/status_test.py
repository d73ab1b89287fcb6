"""ddp-launch's status endpoint with the real tools: promtool, a Prometheus server, headless
Chromium, hostile clients, a port in use, the termination log, `ddp-launch status`.

Usage: status_test.py --launcher PATH CASE
Cases: promtool, prometheus, hostile, port_in_use, exposure, page, termination_log, status_cmd,
restart, multinode_links, dashboard (every query of dashboards/grafana/ddp-launch.json through a real
Prometheus, against the launcher's own goodput ledger).
Workers are plain python3 scripts feeding their progress records (python/ddp_progress.py);
nothing here asserts a duration: every wait polls with a generous deadline. A case whose
tool is missing exits 77 (skipped).
"""
import argparse
import functools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
import checks  # noqa: E402
from ports import free_port  # noqa: E402

DEADLINE_S = 60
SKIP = 77
fail = functools.partial(checks.fail, heading="launcher stderr")

WORKER = """\
import os, sys, time
import ddp_progress
step = 0
while True:
    step += 1
    time.sleep(0.05)
    ddp_progress.heartbeat(step)
"""


class Job:
    """A ddp-launch job with its status endpoint on a free port (--metrics-port 0, or `port`)."""

    def __init__(self, launcher, tmp, nproc=2, extra=(), program=None, args=(), env=None, port=0):
        self.tmp = tmp
        program = program or os.path.join(tmp, "worker.py")
        if not os.path.exists(program):
            with open(program, "w") as f:
                f.write(WORKER)
        e = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"), OMP_NUM_THREADS="1")
        e.update(env or {})
        self.stderr_path = os.path.join(tmp, "launcher.err")
        self.stderr = open(self.stderr_path, "w")
        cmd = [launcher, "--nproc-per-node", str(nproc), "--metrics-port", str(port),
               "--log-dir", os.path.join(tmp, "logs"), *extra, program, *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.stderr, env=e,
                                     start_new_session=True)
        self.url = self._wait_for_url()

    def _wait_for_url(self):
        deadline = time.time() + DEADLINE_S
        while time.time() < deadline:
            m = re.search(r"status at (http://[^/\s]+)/", self.log())
            if m:
                return m.group(1)
            if self.proc.poll() is not None:
                fail(f"the launcher exited ({self.proc.returncode}) before serving", self.log())
            time.sleep(0.1)
        fail("the launcher never printed its status address", self.log())

    def log(self):
        with open(self.stderr_path) as f:
            return f.read()

    def get(self, path):
        with urllib.request.urlopen(self.url + path, timeout=10) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()

    def steps(self):
        """rank -> step, from /metrics."""
        _, _, text = self.get("/metrics")
        return {int(m.group(1)): int(m.group(2)) for m in
                re.finditer(r'^ddp_launch_rank_step\{rank="(\d+)",local_rank="\d+"\} (\d+)$', text, re.M)}

    def wait_steps(self, ranks, above=None):
        """Polls /metrics until every rank has a step (above `above`'s, if given)."""
        deadline = time.time() + DEADLINE_S
        seen = {}
        while time.time() < deadline:
            seen = self.steps()
            if all(r in seen and (above is None or seen[r] > above[r]) for r in ranks):
                return seen
            time.sleep(0.2)
        fail(f"ranks {ranks} never reported steps{' above ' + str(above) if above else ''}: {seen}", self.log())

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=DEADLINE_S)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.stderr.close()


def case_promtool(launcher, tmp):
    promtool = shutil.which("promtool")
    if not promtool:
        print("SKIP: promtool not installed (Debian's prometheus package; scripts/install-deps.sh)")
        return SKIP
    job = Job(launcher, tmp)
    try:
        first = job.wait_steps([0, 1])
        status, ctype, text = job.get("/metrics")
        if status != 200 or not ctype.startswith("text/plain; version=0.0.4"):
            fail(f"/metrics answered {status} {ctype!r}")
        check = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
        if check.returncode != 0:
            fail(f"promtool check metrics refused the output: {check.stdout}{check.stderr}", text)
        for series in ["ddp_launch_job_info", "ddp_launch_attempt", "ddp_launch_world_size 2",
                       'ddp_launch_workers{state="running"} 2', "ddp_launch_rank_step_seconds",
                       "ddp_launch_rank_seconds_since_progress", "ddp_launch_rank_collective_seq",
                       "ddp_launch_rank_straggler", 'ddp_launch_restarts_total{cause="crash"} 0',
                       'ddp_launch_recovery_seconds_bucket{phase="total",le="+Inf"} 0',
                       "ddp_launch_hang_verdicts_total 0", "process_cpu_seconds_total",
                       "process_resident_memory_bytes"]:
            if series not in text:
                fail(f"/metrics lacks {series}", text)
        # Labels stay bounded: never a pid or a path.
        labels = set(re.findall(r'(\w+)="', text))
        allowed = {"rank", "local_rank", "state", "cause", "phase", "kind", "le", "run_id", "role", "backend",
                   "version"}
        if labels - allowed:
            fail(f"unexpected labels {labels - allowed}", text)
        if tmp in text:
            fail("a path shows in /metrics", text)
        job.wait_steps([0, 1], above=first)
    finally:
        job.stop()
    print("PASS: promtool accepts /metrics of a live 2-worker job; each rank's step advances")
    return 0


def case_prometheus(launcher, tmp):
    prometheus = shutil.which("prometheus")
    if not prometheus:
        print("SKIP: prometheus not installed (scripts/install-deps.sh)")
        return SKIP
    job = Job(launcher, tmp)
    server = None
    try:
        target = job.url[len("http://"):]
        config = os.path.join(tmp, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                    "scrape_configs:\n  - job_name: ddp\n"
                    f"    static_configs: [{{targets: ['{target}']}}]\n")
        port = free_port()
        plog = open(os.path.join(tmp, "prometheus.log"), "w")
        server = subprocess.Popen([prometheus, f"--config.file={config}", f"--storage.tsdb.path={tmp}/tsdb",
                                   f"--web.listen-address=127.0.0.1:{port}"], stdout=plog, stderr=plog)
        api = f"http://127.0.0.1:{port}/api/v1/query?query=ddp_launch_rank_step"

        def query():
            try:
                with urllib.request.urlopen(api, timeout=5) as r:
                    data = json.load(r)
            except (urllib.error.URLError, ConnectionError, OSError):
                return {}
            return {int(x["metric"]["rank"]): float(x["value"][1]) for x in data["data"]["result"]}

        deadline = time.time() + DEADLINE_S
        first = {}
        while time.time() < deadline and not (0 in first and 1 in first):
            first = query()
            time.sleep(0.5)
        if not (0 in first and 1 in first):
            fail(f"Prometheus never returned both ranks' steps: {first}", open(plog.name).read()[-3000:])
        later = {}
        while time.time() < deadline:
            later = query()
            if all(later.get(r, 0) > first[r] for r in (0, 1)):
                break
            time.sleep(0.5)
        else:
            fail(f"Prometheus saw no step advance: {first} then {later}")
    finally:
        if server:
            server.terminate()
            server.wait()
        job.stop()
    print(f"PASS: a real Prometheus scraped the job: steps {first} then {later}")
    return 0


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def raw_exchange(url, data):
    """Sends data on a new connection; returns everything the server sent before closing."""
    host, port = url[len("http://"):].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=DEADLINE_S) as s:
        s.sendall(data)
        got = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return got
            got += chunk


def case_hostile(launcher, tmp):
    job = Job(launcher, tmp)
    host, port = job.url[len("http://"):].rsplit(":", 1)
    socks = []
    try:
        job.wait_steps([0, 1])
        # Garbage, a head past the limit, a write: each answered with an error, then closed.
        for data, want in [(b"\x00\x01\x02 garbage\r\n\r\n", b"HTTP/1.1 400"),
                           (b"GET / HTTP/1.1\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n", b"HTTP/1.1 431"),
                           (b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", b"HTTP/1.1 405")]:
            reply = raw_exchange(job.url, data)
            if not reply.startswith(want):
                fail(f"{data[:30]!r}... got {reply[:80]!r}, expected {want!r}", job.log())
        # A client that connects and never sends is dropped (the request deadline).
        with socket.create_connection((host, int(port)), timeout=DEADLINE_S) as idle:
            if idle.recv(100) != b"":
                fail("an idle client got data instead of being dropped")
        # Hundreds of connections that send nothing: memory stays bounded, the loop goes on.
        before = rss_kib(job.proc.pid)
        for _ in range(300):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex((host, int(port)))
            socks.append(s)
        time.sleep(1)
        grew = rss_kib(job.proc.pid) - before
        if grew > 16 * 1024:
            fail(f"300 idle connections grew the launcher by {grew} KiB (limit 16 MiB)", job.log())
        # A client that sends requests and never reads what comes back.
        unread = socket.create_connection((host, int(port)), timeout=DEADLINE_S)
        unread.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" * 100)
        socks.append(unread)
        for s in socks:
            s.close()
        socks.clear()
        # Served again once they are gone, with fresh steps: the launcher's loop never stalled.
        before_steps = job.wait_steps([0, 1])
        job.wait_steps([0, 1], above=before_steps)
        if job.proc.poll() is not None:
            fail("the launcher died under hostile clients", job.log())
    finally:
        for s in socks:
            s.close()
        job.stop()
    print(f"PASS: garbage -> 400, a huge head -> 431, POST -> 405, an idle client dropped; "
          f"300 idle connections grew the launcher by {grew} KiB; served again after")
    return 0


def case_port_in_use(launcher, tmp):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = subprocess.run([launcher, "--metrics-port", str(port), "--no-python", "true"],
                           capture_output=True, text=True, timeout=DEADLINE_S)
        if r.returncode != 121 or str(port) not in r.stderr or "in use" not in r.stderr:
            fail(f"a port in use: exit {r.returncode}, expected 121 naming port {port}", r.stderr)
    r = subprocess.run([launcher, "--metrics-port", "http", "--no-python", "true"],
                       capture_output=True, text=True, timeout=DEADLINE_S)
    if r.returncode != 121 or "--metrics-port" not in r.stderr:
        fail(f"--metrics-port http: exit {r.returncode}, expected 121 naming the flag", r.stderr)
    r = subprocess.run([launcher, "--nproc-per-node", "1", "--no-python", "true"], capture_output=True, text=True,
                       timeout=DEADLINE_S, env=dict(os.environ, PET_METRICS_PORT="0"))
    if r.returncode != 0 or "status at http://127.0.0.1:" not in r.stderr:
        fail(f"PET_METRICS_PORT=0: exit {r.returncode}, expected a loopback endpoint", r.stderr)
    print(f"PASS: port {port} in use -> 121 naming it; a bad value -> 121; PET_METRICS_PORT=0 serves on loopback")
    return 0


def case_exposure(launcher, tmp):
    env = {"MY_SECRET_VALUE": "hunter2-env"}
    hidden = Job(launcher, tmp, env=env, args=["--password=swordfish"],
                 extra=["--rdzv-conf", "token=tok-s3cret"])
    try:
        hidden.wait_steps([0, 1])
        bodies = "".join(hidden.get(p)[2] for p in ["/", "/status.json", "/metrics"])
        for secret in ["hunter2-env", "swordfish", "tok-s3cret"]:
            if secret in bodies:
                fail(f"{secret!r} shows on the endpoint without --metrics-show-args", bodies)
        if hidden.url.split("//")[1].split(":")[0] != "127.0.0.1":
            fail(f"a loopback job's endpoint listens on {hidden.url}")
    finally:
        hidden.stop()
    sub = os.path.join(tmp, "shown")
    os.mkdir(sub)
    shown = Job(launcher, sub, env=env, args=["--password=swordfish"], extra=["--metrics-show-args"])
    try:
        shown.wait_steps([0, 1])
        status = json.loads(shown.get("/status.json")[2])
        if "--password=swordfish" not in status["job"].get("args", []):
            fail(f"--metrics-show-args: the arguments are missing: {status['job']}")
        if "hunter2-env" in json.dumps(status):
            fail("an environment value shows in /status.json")
    finally:
        shown.stop()
    print("PASS: no environment value, token or argument shows unless asked; loopback by default")
    return 0


def dump_dom(chromium, url):
    r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                        "--virtual-time-budget=3000", "--dump-dom", url],
                       capture_output=True, text=True, timeout=DEADLINE_S)
    if r.returncode != 0 or "<html" not in r.stdout:
        fail(f"chromium --dump-dom failed ({r.returncode})", r.stderr[-3000:])
    return r.stdout


def dom_steps(dom):
    return {int(m.group(1)): int(m.group(2)) for m in
            re.finditer(r'<tr id="rank-(\d+)"[^>]*>.*?<td class="step">(\d+)</td>', dom)}


def case_page(launcher, tmp):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("SKIP: chromium not installed (scripts/install-deps.sh)")
        return SKIP
    program = os.path.join(tmp, "w<i id='pwn'>x.py")  # a program name holding HTML
    with open(program, "w") as f:
        f.write(WORKER)
    job = Job(launcher, tmp, program=program)
    try:
        job.wait_steps([0, 1])
        first = dom_steps(dump_dom(chromium, job.url + "/"))
        if set(first) != {0, 1}:
            fail(f"the rendered page lacks a rank's row: {first}")
        deadline = time.time() + DEADLINE_S
        while True:
            dom = dump_dom(chromium, job.url + "/")
            later = dom_steps(dom)
            if set(later) == {0, 1} and all(later[r] > first[r] for r in (0, 1)):
                break
            if time.time() > deadline:
                fail(f"the page's steps did not advance: {first} then {later}", dom)
        if "<i id=" in dom or "id=\"pwn\"" in dom:
            fail("the program name's HTML was rendered as markup", dom)
        if "w&lt;i id='pwn'&gt;x.py" not in dom and "w&lt;i id=\"pwn\"&gt;x.py" not in dom:
            fail("the program name is not shown as text", dom)
        for external in ["https://", "http://cdn", "fonts.googleapis"]:
            if external in dom:
                fail(f"the page loads something external ({external})", dom)
    finally:
        job.stop()
    print(f"PASS: headless Chromium shows both ranks' rows, steps {first} then {later}; the HTML in the "
          "program name shows as text")
    return 0


def case_termination_log(launcher, tmp):
    path = os.path.join(tmp, "termination-log")
    script = ("import sys, os\nif os.environ['RANK'] == '1':\n"
              "    sys.stderr.write('ValueError: <b>bad</b> batch 17 ' + 'x' * 9000 + '\\n'); sys.exit(3)\n"
              "import time; time.sleep(60)\n")
    worker = os.path.join(tmp, "fail.py")
    with open(worker, "w") as f:
        f.write(script)
    r = subprocess.run([launcher, "--nproc-per-node", "2", "--termination-log", path, worker],
                       capture_output=True, text=True, timeout=DEADLINE_S)
    if r.returncode != 3:
        fail(f"exit {r.returncode}, expected the worker's 3", r.stderr)
    with open(path, "rb") as f:
        raw = f.read()
    text = raw.decode()
    if len(raw) > 4096:
        fail(f"the termination log holds {len(raw)} bytes (at most 4096)", text)
    for want in ["rank 1 (local_rank 1) on " + socket.gethostname(), "exit code 3", "kind: crash",
                 "last error: ValueError: <b>bad</b> batch 17"]:
        if want not in text:
            fail(f"the termination log lacks {want!r}", text)
    # A successful job leaves no termination log.
    os.unlink(path)
    r = subprocess.run([launcher, "--termination-log", path, "--no-python", "true"], capture_output=True,
                       text=True, timeout=DEADLINE_S)
    if r.returncode != 0 or os.path.exists(path):
        fail("a job that succeeded wrote a termination log", r.stderr)
    print(f"PASS: the termination log names the rank, node, exit and last error in {len(raw)} bytes")
    return 0


def case_status_cmd(launcher, tmp):
    job = Job(launcher, tmp)
    try:
        job.wait_steps([0, 1])
        target = job.url[len("http://"):]
        r = subprocess.run([launcher, "status", target], capture_output=True, text=True, timeout=DEADLINE_S)
        rows = re.findall(r"^\s+(\d+)\s+\d+\s+(\d+)\s.*running", r.stdout, re.M)
        if r.returncode != 0 or sorted(int(x[0]) for x in rows) != [0, 1]:
            fail(f"status {target}: exit {r.returncode}, expected 0 and both ranks running", r.stdout + r.stderr)
        run_dir = [os.path.join(tmp, "logs", d) for d in os.listdir(os.path.join(tmp, "logs"))][0]
        r = subprocess.run([launcher, "status", run_dir], capture_output=True, text=True, timeout=DEADLINE_S)
        if r.returncode != 0 or "STEP" not in r.stdout:
            fail(f"status RUN_DIR of a live job: exit {r.returncode}, expected 0 and its table", r.stdout + r.stderr)
        # --watch on a pipe: plain tables until the job ends, then the ended code.
        watch = subprocess.Popen([launcher, "status", "--watch", "--interval", "0.2", run_dir],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1)
        job.stop()
        out, err = watch.communicate(timeout=DEADLINE_S)
        if watch.returncode != 3 or out.count("RANK") < 2 or "ended: interrupted" not in out or "\x1b[" in out:
            fail(f"status --watch: exit {watch.returncode}, expected several plain tables then 3 (ended)", out + err)
        r = subprocess.run([launcher, "status", run_dir], capture_output=True, text=True, timeout=DEADLINE_S)
        if r.returncode != 3 or "ended: interrupted" not in r.stdout:
            fail(f"status of a finished run directory: exit {r.returncode}, expected 3", r.stdout + r.stderr)
        r = subprocess.run([launcher, "status", target], capture_output=True, text=True, timeout=DEADLINE_S)
        if r.returncode != 4 or "unreachable" not in r.stdout:
            fail(f"status of a gone endpoint: exit {r.returncode}, expected 4 (unreachable)", r.stdout + r.stderr)
        r = subprocess.run([launcher, "status", "no such thing"], capture_output=True, text=True, timeout=DEADLINE_S)
        if r.returncode != 121 or "HOST:PORT" not in r.stderr:
            fail(f"status with a bad target: exit {r.returncode}, expected 121", r.stderr)
    finally:
        job.stop()
    print("PASS: status HOST:PORT and RUN_DIR of a live job -> 0; --watch until it ends -> 3; gone -> 4; bad -> 121")
    return 0


RESTART_WORKER = """\
import os, sys, time
import ddp_progress
ddp_progress.joined()  # as init_process_group and a restore would tell the recovery timeline
ddp_progress.restored()
step = 0
while True:
    step += 1
    time.sleep(0.05)
    ddp_progress.heartbeat(step)
    if step == 10 and os.environ["RANK"] == "1" and os.environ["TORCHELASTIC_RESTART_COUNT"] == "0":
        sys.exit(5)
"""


def case_restart(launcher, tmp):
    program = os.path.join(tmp, "restart.py")
    with open(program, "w") as f:
        f.write(RESTART_WORKER)
    job = Job(launcher, tmp, program=program, extra=["--max-restarts", "1"])
    try:
        deadline = time.time() + DEADLINE_S
        while True:
            text = job.get("/metrics")[2]
            if ("ddp_launch_attempt 1\n" in text and 'ddp_launch_restarts_total{cause="crash"} 1\n' in text
                    and all(f'ddp_launch_recovery_seconds_count{{phase="{p}"}} 1\n' in text
                            for p in ("total", "first_step", "joined", "restored", "step"))):
                break
            if time.time() > deadline:
                fail("after rank 1's crash and the restart, /metrics lacks attempt 1, one crash restart and "
                     "one recovery with its phases (first step: joined, restored, step)", text + job.log())
            time.sleep(0.3)
        m = re.search(r'^ddp_launch_recovery_seconds_sum\{phase="total"\} (\S+)$', text, re.M)
        status = json.loads(job.get("/status.json")[2])
        kinds = [e["event"] for e in status["events"]]
        if "restart" not in kinds or "failure" not in kinds:
            fail(f"/status.json's events lack the failure and the restart: {kinds}")
        job.wait_steps([0, 1])
    finally:
        job.stop()
    print(f"PASS: a crash and its restart: restarts_total{{cause=crash}} 1, recovery total {m.group(1)} s, "
          "the events on the page")
    return 0


def case_multinode_links(launcher, tmp):
    port = free_port()
    common = ["--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}",
              "--rdzv-id", "status-links"]
    jobs = []
    try:
        for node in range(2):
            d = os.path.join(tmp, f"node{node}")
            os.mkdir(d)
            jobs.append(Job(launcher, d, nproc=1, extra=common))
        deadline = time.time() + DEADLINE_S
        while True:
            views = [json.loads(j.get("/status.json")[2]) for j in jobs]
            leader = [v for v in views if v["nodes"]]
            if leader and len(leader[0]["nodes"]) == 2 and all(v["ranks"] and v["ranks"][0]["fed"] for v in views):
                break
            if time.time() > deadline:
                fail(f"group rank 0's status never listed both nodes: {[v['nodes'] for v in views]}",
                     jobs[0].log() + jobs[1].log())
            time.sleep(0.3)
        urls = sorted(n["url"] for n in leader[0]["nodes"])
        if urls != sorted(j.url for j in jobs):
            fail(f"the links {urls} are not the nodes' endpoints {[j.url for j in jobs]}")
        ranks = set()
        for url in urls:
            with urllib.request.urlopen(url + "/status.json", timeout=10) as r:
                ranks |= {x["rank"] for x in json.load(r)["ranks"]}
        if ranks != {0, 1}:
            fail(f"following the links shows ranks {ranks}, expected 0 and 1")
        page = [j for j, v in zip(jobs, views) if v["nodes"]][0].get("/")[2]
        if not all(f'href="{u}/"' in page for u in urls):
            fail("group rank 0's page does not link both nodes", page)
    finally:
        for j in jobs:
            j.stop()
    print(f"PASS: group rank 0's page links both nodes ({', '.join(urls)}); each serves its own rank")
    return 0


DASHBOARD = os.path.join(REPO, "dashboards", "grafana", "ddp-launch.json")
# What Grafana puts in a query before Prometheus gets it: its interval variables, and each
# template variable's "All" (its allValue, .*, in the dashboard's `=~` matchers).
GRAFANA_VARS = {"$__rate_interval": "30s", "$__interval": "15s", "$__range": "5m"}
BADPUT_KINDS = {"preflight", "waiting", "startup", "restart", "restore", "redone", "stall", "slow", "hang",
                "detection", "shutdown"}

DASHBOARD_WORKER = """\
import os, sys, time
import ddp_progress
stop_file = sys.argv[1]
first_attempt = os.environ["TORCHELASTIC_RESTART_COUNT"] == "0"
ddp_progress.joined()
saved = f"{stop_file}.step{os.environ['RANK']}"  # this rank's "snapshot": its step, every 10 steps
step = 0
if not first_attempt:
    step = int(open(saved).read())
    ddp_progress.restored(step)  # the ledger keeps attempt 0's steps up to it
start = time.monotonic()
while True:
    step += 1
    time.sleep(0.02)
    ddp_progress.heartbeat(step)
    if step % 10 == 0:
        with open(saved, "w") as f:
            f.write(str(step))
    if first_attempt and os.environ["RANK"] == "1" and time.monotonic() - start > 2:
        sys.exit(1)
    if not first_attempt and os.path.exists(stop_file):
        sys.exit(0)
"""


def dashboard_targets(path):
    """[(panel title, legend, expr as Prometheus gets it)] for every target of every panel; fails
    on what Grafana would not import as it is (an exported dashboard: the ${DS_PROMETHEUS}
    input, panels with ids, places and Prometheus targets)."""
    with open(path) as f:
        dash = json.load(f)
    inputs = [i for i in dash.get("__inputs", []) if i.get("name") == "DS_PROMETHEUS"]
    if not inputs or inputs[0].get("type") != "datasource" or inputs[0].get("pluginId") != "prometheus":
        fail(f"{path}: __inputs lacks the DS_PROMETHEUS datasource input")
    if not 36 <= dash.get("schemaVersion", 0) <= 41 or not dash.get("uid") or not dash.get("title"):
        fail(f"{path}: schemaVersion {dash.get('schemaVersion')}, uid or title missing")
    variables = {v["name"] for v in dash.get("templating", {}).get("list", [])}
    for v in dash.get("templating", {}).get("list", []):
        if v.get("includeAll") and v.get("allValue") != ".*":
            fail(f"{path}: variable {v['name']}'s All is {v.get('allValue')!r}, not .*")
    panels = dash.get("panels", [])
    ids = [p.get("id") for p in panels]
    if not 6 <= len(panels) <= 9 or len(set(ids)) != len(ids) or None in ids:
        fail(f"{path}: {len(panels)} panels with ids {ids} (6 to 9, each its own id)")
    targets = []
    for p in panels:
        title = p.get("title", "")
        g = p.get("gridPos", {})
        if (p.get("type") not in ("timeseries", "stat", "bargauge", "gauge") or not title
                or not all(isinstance(g.get(k), int) for k in "hwxy") or g["x"] + g["w"] > 24):
            fail(f"{path}: panel {p.get('id')} ({title!r}): its type, title or gridPos")
        refs = [t.get("refId") for t in p.get("targets", [])]
        if not refs or len(set(refs)) != len(refs):
            fail(f"{path}: panel {title!r}: targets {refs} (at least one, each its own refId)")
        for t in [p] + p["targets"]:
            if t.get("datasource") != {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}:
                fail(f"{path}: panel {title!r}: datasource {t.get('datasource')} is not the DS_PROMETHEUS input")
        for t in p["targets"]:
            expr = t.get("expr", "")
            for var, value in GRAFANA_VARS.items():
                expr = expr.replace(var, value)
            for name in re.findall(r"\$\{?(\w+)", expr):
                if name not in variables:
                    fail(f"{path}: panel {title!r}: ${name} in {t.get('expr')!r} is no variable of the dashboard")
            expr = re.sub(r"\$\{(\w+)(:regex)?\}|\$(\w+)", ".*", expr)
            if not expr.strip():
                fail(f"{path}: panel {title!r}: target {t.get('refId')} has no query")
            targets.append((title, t.get("legendFormat", t.get("refId")), expr))
    return targets


def case_dashboard(launcher, tmp):
    began = time.time()
    targets = dashboard_targets(DASHBOARD)
    prometheus = shutil.which("prometheus")
    if not prometheus:
        print("SKIP: prometheus not installed (scripts/install-deps.sh)")
        return SKIP

    def target(title, legend):
        for t in targets:
            if t[0] == title and t[1] == legend:
                return t[2]
        fail(f"the dashboard has no panel {title!r} with a target {legend!r}")

    live_q = target("Goodput ratio (job)", "live")
    resolved_q = target("Goodput ratio (job)", "resolved")
    goodput_q = target("Where the wall time went (stacked)", "goodput")
    kinds_q = target("Badput by kind", "{{kind}}")
    restarts_q = target("Restarts", "total")
    recovery_q = target("Recovery time", "mean")
    recoveries_q = target("Recovery time", "recoveries")

    program = os.path.join(tmp, "dashboard_worker.py")
    with open(program, "w") as f:
        f.write(DASHBOARD_WORKER)
    stop_file = os.path.join(tmp, "stop")
    launcher_port, prom_port = free_port(), free_port()
    config = os.path.join(tmp, "prometheus.yml")
    with open(config, "w") as f:
        f.write("global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}\n"
                "scrape_configs:\n  - job_name: ddp\n"
                f"    static_configs: [{{targets: ['127.0.0.1:{launcher_port}']}}]\n")
    plog_path = os.path.join(tmp, "prometheus.log")
    api = f"http://127.0.0.1:{prom_port}/api/v1/query?"
    server = job = None

    def prometheus_log():
        with open(plog_path) as f:
            return f.read()[-3000:]

    def query(expr):
        """The instant query's result: [(labels, value)]; fails on an error."""
        try:
            with urllib.request.urlopen(api + urllib.parse.urlencode({"query": expr}), timeout=10) as r:
                data = json.load(r)
        except urllib.error.HTTPError as e:
            data = {"status": "error", "error": f"HTTP {e.code}: {e.read().decode()[:500]}"}
        if data.get("status") != "success":
            fail(f"Prometheus refused {expr!r}: {data.get('error', data)}")
        return [(x["metric"], float(x["value"][1])) for x in data["data"]["result"]]

    def scalar(expr):
        result = query(expr)
        if len(result) != 1:
            fail(f"{expr!r}: {len(result)} series from Prometheus, expected one: {result}")
        return result[0][1]

    def ledger():
        return json.loads(job.get("/status.json")[2]).get("goodput") or fail(
            "/status.json has no \"goodput\"", job.get("/status.json")[2])

    try:
        with open(plog_path, "w") as plog:
            server = subprocess.Popen([prometheus, f"--config.file={config}", f"--storage.tsdb.path={tmp}/tsdb",
                                       f"--web.listen-address=127.0.0.1:{prom_port}"],
                                      stdout=plog, stderr=plog)
        job = Job(launcher, tmp, program=program, args=[stop_file], extra=["--max-restarts", "1"],
                  port=launcher_port)
        # Rank 1 fails after ~2 s; the restart's first step closes the recovery timeline.
        deadline = time.time() + DEADLINE_S
        while True:
            text = job.get("/metrics")[2]
            count = re.search(r'^ddp_launch_recovery_seconds_count\{phase="total"\} (\S+)$', text, re.M)
            if "ddp_launch_attempt 1\n" in text and count and float(count.group(1)) >= 1:
                break
            if job.proc.poll() is not None or time.time() > deadline:
                fail("no restart with its first step: /metrics lacks attempt 1 and a timed recovery "
                     f"(launcher {'exited ' + str(job.proc.returncode) if job.proc.poll() is not None else 'runs'})",
                     text + job.log())
            time.sleep(0.2)
        # Then at least 5 s and 5 scrapes of attempt 1 (attempt 0's samples add 0).
        first_step = time.time()
        deadline = first_step + DEADLINE_S
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{prom_port}/-/ready", timeout=5) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            if server.poll() is not None or time.time() > deadline:
                fail(f"Prometheus never got ready (exit {server.poll()})", prometheus_log())
            time.sleep(0.3)
        scrapes = 0
        while True:
            result = query("sum_over_time(ddp_launch_attempt[1m])")
            scrapes = result[0][1] if result else 0
            if scrapes >= 5 and time.time() >= first_step + 5:
                break
            if time.time() > deadline:
                fail(f"Prometheus scraped attempt 1 {scrapes} times in {DEADLINE_S} s", prometheus_log())
            time.sleep(0.5)

        # Every panel's every query answers.
        values = {}
        for title, legend, expr in targets:
            result = query(expr)
            if not result:
                checks.fail(f"panel {title!r}, target {legend!r}: no data from Prometheus for {expr!r}",
                            job.get("/metrics")[2], heading="the launcher's /metrics")
            values[(title, legend)] = result

        # The job's goodput as Prometheus has it agrees with the launcher's own ledger. Prometheus
        # holds the last scrape (up to a second or two old on a loaded machine): the ledger is read
        # before and after, and a disagreement must last to fail.
        deadline = time.time() + 20
        tries = 0
        while True:
            tries += 1
            before = ledger()
            live, resolved, goodput = scalar(live_q), scalar(resolved_q), scalar(goodput_q)
            after = ledger()

            def near(value, key, tol, f=None):
                f = f or (lambda g: g[key])
                lo, hi = sorted([f(before), f(after)])
                return lo - tol <= value <= hi + tol

            agree = {"ratio": near(live, "ratio", 0.05),
                     "goodput/wall": near(resolved, None, 0.05, lambda g: g["goodput_s"] / g["wall_s"]),
                     "goodput_s": near(goodput, "goodput_s", 3.0)}
            if all(agree.values()):
                break
            if time.time() > deadline:
                fail(f"Prometheus (live ratio {live:.4f}, resolved ratio {resolved:.4f}, goodput {goodput:.3f} s) "
                     f"disagrees with /status.json's goodput on {[k for k, ok in agree.items() if not ok]}: "
                     f"before {before}, after {after}")
            time.sleep(0.5)

        # The ledger adds up: goodput + every badput + pending = wall, in /status.json and in Prometheus.
        g = after
        if set(g.get("badput_s", {})) != BADPUT_KINDS:
            fail(f"/status.json's badput_s kinds {sorted(g.get('badput_s', {}))}, expected {sorted(BADPUT_KINDS)}")
        total = g["goodput_s"] + sum(g["badput_s"].values()) + g["pending_s"]
        if abs(total - g["wall_s"]) > max(0.01 * g["wall_s"], 0.002):
            fail(f"/status.json: goodput + badput + pending = {total:.3f} s, wall {g['wall_s']:.3f} s: {g}")
        if not 0 <= g["ratio"] <= 1:
            fail(f"/status.json's goodput ratio {g['ratio']} is not within 0..1: {g}")
        # Attempt 1 resumed from its ranks' last saved step: attempt 0's steps up to it are kept
        # (about 2 s of them), the rest (under 10 steps, and the step in flight) redone.
        if not 1 <= g["goodput_s"] <= 3 or not 0 < g["badput_s"]["redone"] < 0.6:
            fail(f"/status.json: goodput {g['goodput_s']:.2f} s (expected 1..3: attempt 0's kept steps), redone "
                 f"{g['badput_s']['redone']:.2f} s (expected under 0.6: at most 10 steps of 20 ms and one in flight)")
        kinds = {labels.get("kind") for labels, _ in values[("Badput by kind", "{{kind}}")]}
        if kinds != BADPUT_KINDS:
            fail(f"{kinds_q!r}: kinds {sorted(kinds)}, expected {sorted(BADPUT_KINDS)}")
        sums = scalar("(sum(ddp_launch_goodput_seconds_total) + sum(ddp_launch_badput_seconds_total)"
                      " + sum(ddp_launch_goodput_pending_seconds)) / sum(ddp_launch_wall_seconds)")
        if abs(sums - 1) > 0.01:
            fail(f"in Prometheus, (goodput + badput + pending) / wall = {sums:.4f}, expected 1 within 1%")
        restarts, recoveries, recovery = scalar(restarts_q), scalar(recoveries_q), scalar(recovery_q)
        if restarts != 1 or recoveries < 1:
            fail(f"Prometheus: {restarts:g} restarts ({restarts_q!r}), expected 1; {recoveries:g} recoveries "
                 f"({recoveries_q!r}), expected at least 1")

        with open(stop_file, "w"):
            pass
        try:
            code = job.proc.wait(timeout=DEADLINE_S)
        except subprocess.TimeoutExpired:
            fail("the job did not end once the stop file was there", job.log())
        if code != 0:
            fail(f"the job exited {code}, expected 0", job.log())
    finally:
        if server:
            server.terminate()
            try:
                server.wait(timeout=DEADLINE_S)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        if job:
            job.stop()
    badput = ", ".join(f"{k} {v:.2f}" for k, v in sorted(g["badput_s"].items()) if v)
    print(f"PASS: {len(targets)} queries of {DASHBOARD.split(REPO + os.sep)[1]} answered by a real Prometheus "
          f"({scrapes:g} scrapes of attempt 1); job ratio {live:.3f} (/status.json {g['ratio']:.3f}, agreed at try "
          f"{tries}), goodput "
          f"{goodput:.2f} s ({g['goodput_s']:.2f}), pending {g['pending_s']:.2f} s, badput: {badput or 'none'}; "
          f"wall {g['wall_s']:.2f} s adds up; 1 restart, {recoveries:g} recovery of {recovery:.2f} s; "
          f"{time.time() - began:.1f} s")
    return 0


CASES = {"promtool": case_promtool, "prometheus": case_prometheus, "hostile": case_hostile,
         "port_in_use": case_port_in_use, "exposure": case_exposure, "page": case_page,
         "termination_log": case_termination_log, "status_cmd": case_status_cmd, "restart": case_restart,
         "multinode_links": case_multinode_links, "dashboard": case_dashboard}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--launcher", required=True)
    p.add_argument("case", choices=sorted(CASES))
    a = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="ddp-status-")
    try:
        sys.exit(CASES[a.case](os.path.abspath(a.launcher), tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
