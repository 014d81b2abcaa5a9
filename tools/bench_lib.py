"""Helpers shared by tools/bench_e2e.py and tools/soak_run.py: the server
process, /proc sampling, wrk runs, a kubelet-style mounted directory.

Standard library only. Everything listens on 127.0.0.1; every process started
here is stopped here, by PID.
"""

import http.client
import json
import os
import resource
import signal
import socket
import ssl
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WRK_SCRIPT = os.path.join(ROOT, "bench", "wrk_post.lua")
URL_PATH = "/validate?timeout=10s"
CLK_TCK = os.sysconf("SC_CLK_TCK")


class BenchError(Exception):
    pass


# --- certificates and mounted directories: the end-to-end tests' helpers ----------

sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from guard import ConfigMapDir as MountedDir  # noqa: E402,F401  (kubelet-style volume)
from guard import fingerprint_file as cert_fingerprint  # noqa: E402,F401
from guard import make_certs, new_serving_cert, served_fingerprint  # noqa: E402,F401
from guard import policy_text as example_policy  # noqa: E402,F401


# --- /proc ---------------------------------------------------------------------------


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_ticks(pid):
    """utime + stime of pid, in clock ticks."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def status_kib(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def reset_hwm(pid):
    """Reset VmHWM to the current RSS where the kernel allows it."""
    try:
        with open("/proc/%d/clear_refs" % pid, "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def sys_ticks():
    """(busy, steal) machine-wide ticks: busy = user nice system irq softirq."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[0] + v[1] + v[2] + v[5] + v[6], v[7]


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def machine():
    model = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {"cpus": os.cpu_count(), "cpu_model": model, "kernel": os.uname().release,
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def wait_quiet(busy_pct, limit_s):
    """Wait up to limit_s for one second in which the machine as a whole
    (busy + steal) used at most busy_pct % of one CPU; True if it came."""
    t0 = time.time()
    while time.time() - t0 < limit_s:
        b0, s0 = sys_ticks()
        time.sleep(1)
        b1, s1 = sys_ticks()
        if 100.0 * (b1 - b0 + s1 - s0) / CLK_TCK <= busy_pct:
            return True
    return False


# --- the server -----------------------------------------------------------------------


class Server:
    """dra-guard serve on 127.0.0.1 with a free port; stderr to log_path."""

    def __init__(self, binary, cert, key, ca, log_path, args=(), env=None, ready_timeout=30):
        self.port = free_port()
        self.metrics_port = free_port()
        self.ca = ca
        self.log_path = log_path
        cmd = [binary, "serve", "--listen", "127.0.0.1:%d" % self.port,
               "--metrics-listen", "127.0.0.1:%d" % self.metrics_port,
               "--tls-cert", cert, "--tls-key", key] + list(args)
        self.cmd = cmd
        e = dict(os.environ)
        e.update(env or {})
        self.log_file = open(log_path, "wb")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self.log_file, env=e)
        self.pid = self.proc.pid
        deadline = time.time() + ready_timeout
        while True:
            if self.proc.poll() is not None:
                raise BenchError("server exited (%s) while starting:\n%s" % (self.proc.returncode, self.log()[-3000:]))
            try:
                if self.get("/readyz")[0] == 200:
                    break
            except OSError:
                pass
            if time.time() > deadline:
                self.kill()
                raise BenchError("server not ready after %ss:\n%s" % (ready_timeout, self.log()[-3000:]))
            time.sleep(0.05)

    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def get(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=5)
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def metrics(self):
        """{name or name{labels}: value} from /metrics (labels kept verbatim)."""
        status, body = self.get("/metrics")
        if status != 200:
            raise BenchError("/metrics answered %d" % status)
        out = {}
        for line in body.decode().splitlines():
            if line and not line.startswith("#"):
                k, _, v = line.rpartition(" ")
                out[k] = float(v)
        return out

    def alive(self):
        return self.proc.poll() is None

    def stop(self, timeout=30):
        """SIGTERM and wait; the exit code (None if it had to be killed)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            code = None
        self.log_file.close()
        return code

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def post_review(port, ca, body, timeout=30, path=URL_PATH):
    """POST body over a new TLS connection (CA checked); (status, parsed JSON or None, seconds)."""
    ctx = ssl.create_default_context(cafile=ca)
    c = http.client.HTTPSConnection("localhost", port, timeout=timeout, context=ctx)
    t0 = time.monotonic()
    try:
        c.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
    finally:
        c.close()
    dt = time.monotonic() - t0
    try:
        doc = json.loads(data)
    except ValueError:
        doc = None
    return r.status, doc, dt


def check_verdict(port, ca, path, want_allowed):
    """One POST of a body file; raises unless 200, uid echoed and the verdict as wanted."""
    body = open(path, "rb").read()
    uid = json.loads(body)["request"]["uid"]
    status, doc, _ = post_review(port, ca, body)
    resp = (doc or {}).get("response") or {}
    if status != 200 or resp.get("uid") != uid or (want_allowed is not None and resp.get("allowed") is not want_allowed):
        raise BenchError("%s: HTTP %d, want uid %s allowed=%s, got %s" % (
            os.path.basename(path), status, uid, want_allowed, str(doc)[:400]))
    return resp.get("allowed")


# --- wrk -------------------------------------------------------------------------------------


WRK_ERRORS = ("err_connect", "err_read", "err_write", "err_status", "err_timeout")


def wrk_cmd(port, bodies, conns, seconds, threads=1, timeout="5s"):
    return ["wrk", "-t%d" % threads, "-c%d" % conns, "-d%ds" % seconds, "--timeout", timeout,
            "-s", WRK_SCRIPT, "https://127.0.0.1:%d%s" % (port, URL_PATH), "--"] + list(bodies)


def parse_wrk(out):
    for line in out.splitlines():
        if line.startswith("RESULT "):
            res = {}
            for kv in line.split()[1:]:
                k, _, v = kv.partition("=")
                res[k] = float(v) if "." in v else int(v)
            res["errors"] = sum(res[k] for k in WRK_ERRORS)
            return res
    raise BenchError("wrk printed no RESULT line:\n%s" % out[-2000:])


def run_wrk(port, bodies, conns, seconds, threads=1, timeout="5s"):
    cmd = wrk_cmd(port, bodies, conns, seconds, threads, timeout)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
    if p.returncode != 0:
        raise BenchError("wrk failed (%d): %s" % (p.returncode, (p.stdout + p.stderr)[-2000:]))
    return parse_wrk(p.stdout)


def least_squares(xs, ys):
    """(slope, intercept, residual standard deviation) of ys over xs."""
    n = len(xs)
    if n < 2:
        return 0.0, (ys[0] if ys else 0.0), 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    icpt = my - slope * mx
    res = [y - (icpt + slope * x) for x, y in zip(xs, ys)]
    sd = (sum(r * r for r in res) / max(n - 2, 1)) ** 0.5
    return slope, icpt, sd


def ab_arguments(ap, rounds=2):
    """The options of a tool that runs one release binary, or two in turn
    (A, and B as the base), on bench bodies: --bin, --base, --bodies,
    --sizes, --conns, --seconds, --rounds."""
    ap.add_argument("--bin", required=True)
    ap.add_argument("--base")
    ap.add_argument("--bodies", required=True)
    ap.add_argument("--sizes", default="32 128")
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--seconds", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=rounds)
