#!/usr/bin/env python3
"""Run every test suite of `make test` and count the results.

    tools/run_tests.py SUITE...

A SUITE is KIND:ARG:
  unit:PATH      a cmocka binary; run with CMOCKA_MESSAGE_OUTPUT=TAP, one test per
                 "ok"/"not ok" line
  e2e:PATH       a Python end-to-end script; guard.run_tests lines ("ok", "FAIL",
                 "SKIP") or unittest's "Ran N tests" / "FAILED (...)" summary
  fuzz:PATH      a libFuzzer target run by tools/fuzz.sh for FUZZ_SMOKE_SECONDS;
                 one test, passed when it exits 0

Every suite runs, whatever the ones before it did; its output is echoed as it
comes. A suite runs in its own process group, killed when it ends; one that
runs past SUITE_TIMEOUT seconds (1500), or whose leftover processes hold its
output open 10 s after it exited, is killed and counts as a failure. A suite that exits non-zero without a failed test to show for it (a
crash, a sanitizer abort, an import error) counts as one more failure, and so
does one that reports no test at all. The last line is "N passed, N failed"
(", N skipped" follows when a test was skipped; the line before it says how
many of those were for want of a real API server);
the exit status is 1 when anything failed.
"""

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# What tests/e2e/envtest.py's require() (and tests that need the real API
# server's own behaviour) say when they skip.
API_SKIP = "needs a real API server"
UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in ")
UNITTEST_FAILED = re.compile(r"^FAILED \((.*)\)$")
UNITTEST_OK = re.compile(r"^OK(?: \((.*)\))?$")
UNITTEST_COUNT = re.compile(r"(\w+)=(\d+)")
# How long processes a suite started may outlive it, holding its output.
LINGER = 10.0


def suite_timeout():
    """Seconds one suite may run (SUITE_TIMEOUT, default 1500): one stuck
    suite fails on its own instead of eating CI's whole time."""
    try:
        return max(1, int(os.environ.get("SUITE_TIMEOUT", "1500")))
    except ValueError:
        return 1500


class Count:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.skipped = 0
        self.skipped_api = 0      # of them, for want of a real API server
        self.failures = []


def parse_unit(line, c, name):
    if line.startswith("ok "):
        c.passed += 1
    elif line.startswith("not ok "):
        c.failed += 1
        c.failures.append("%s: %s" % (name, line[len("not ok "):].strip()))


class E2e:
    """Both result styles the end-to-end scripts print."""

    def __init__(self):
        self.ran = None
        self.summary = None

    def parse(self, line, c, name):
        if line.startswith("ok   "):
            c.passed += 1
        elif line.startswith("FAIL "):
            c.failed += 1
            c.failures.append("%s: %s" % (name, line[5:].split()[0] if line[5:].split() else "?"))
        elif line.startswith("SKIP "):
            c.skipped += 1
            if API_SKIP in line:
                c.skipped_api += 1
        else:
            m = UNITTEST_RAN.match(line)
            if m:
                self.ran = int(m.group(1))
                return
            m = UNITTEST_FAILED.match(line) or UNITTEST_OK.match(line)
            if m and self.ran is not None:
                self.summary = dict((k, int(v)) for k, v in UNITTEST_COUNT.findall(m.group(1) or ""))
            if line.startswith(("FAIL: ", "ERROR: ")):
                c.failures.append("%s: %s" % (name, line.split(": ", 1)[1]))

    def finish(self, c):
        if self.ran is None or self.summary is None:
            return
        bad = self.summary.get("failures", 0) + self.summary.get("errors", 0) + \
            self.summary.get("unexpected successes", 0)
        skipped = self.summary.get("skipped", 0)
        c.failed += bad
        c.skipped += skipped
        c.passed += self.ran - bad - skipped


def run_suite(kind, arg, total):
    name = arg
    if os.path.isabs(arg) and arg.startswith(ROOT + os.sep):
        name = os.path.relpath(arg, ROOT)
    env = dict(os.environ)
    if kind == "unit":
        cmd = [arg]
        env["CMOCKA_MESSAGE_OUTPUT"] = "TAP"
    elif kind == "e2e":
        cmd = [sys.executable, arg]
    elif kind == "fuzz":
        cmd = [os.path.join(ROOT, "tools", "fuzz.sh"), arg, env.get("FUZZ_SMOKE_SECONDS") or "6", "smoke"]
    else:
        sys.exit("run_tests.py: unknown suite kind %r in %s:%s" % (kind, kind, arg))
    print("== %s" % name, flush=True)
    c = Count()
    e2e = E2e()
    t0 = time.time()
    # Its own process group: whatever the suite starts and leaves behind
    # goes with it, and cannot hold its output open (and this run) forever.
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, errors="replace", bufsize=1, start_new_session=True)
    lines = queue.Queue()

    def pump():
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    deadline = t0 + suite_timeout()
    exited_at = None
    trouble = None
    while True:
        now = time.time()
        if exited_at is None and proc.poll() is not None:
            exited_at = now
        if exited_at is not None and now - exited_at > LINGER:
            trouble = "exited, but processes it started still held its output %.0f s later: killed" % LINGER
            break
        if now > deadline:
            trouble = "still running after %d s (SUITE_TIMEOUT): killed" % suite_timeout()
            break
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            continue
        if line is None:
            break
        sys.stdout.write(line)
        sys.stdout.flush()
        line = line.rstrip("\n")
        if kind == "unit":
            parse_unit(line, c, name)
        elif kind == "e2e":
            e2e.parse(line, c, name)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    rc = proc.wait()
    if trouble:
        print("%s: %s" % (name, trouble), flush=True)
        c.failed += 1
        c.failures.append("%s: %s" % (name, trouble))
    if kind == "e2e":
        e2e.finish(c)
    if kind == "fuzz":
        if rc == 0:
            c.passed += 1
        else:
            c.failed += 1
            c.failures.append("%s: the fuzz smoke run failed" % name)
    elif rc != 0 and c.failed == 0:
        c.failed += 1
        c.failures.append("%s: exited with status %d without reporting a failed test" % (name, rc))
    elif rc == 0 and c.passed + c.failed + c.skipped == 0:
        c.failed += 1
        c.failures.append("%s: reported no test" % name)
    print("-- %s: %d passed, %d failed%s (%.1fs)" % (
        name, c.passed, c.failed, ", %d skipped" % c.skipped if c.skipped else "", time.time() - t0),
        flush=True)
    total.passed += c.passed
    total.failed += c.failed
    total.skipped += c.skipped
    total.skipped_api += c.skipped_api
    total.failures += c.failures


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    total = Count()
    for spec in sys.argv[1:]:
        kind, sep, arg = spec.partition(":")
        if not sep or not arg:
            print("run_tests.py: %r is not KIND:PATH" % spec, file=sys.stderr)
            return 2
        run_suite(kind, arg, total)
    print()
    for f in total.failures:
        print("FAILED: %s" % f)
    if total.skipped:
        print("%d skipped (each says why above), %d of them for want of a real API server%s" % (
            total.skipped, total.skipped_api,
            " (set KUBE_APISERVER and ETCD to run them)" if total.skipped_api else ""))
    print("%d passed, %d failed%s" % (total.passed, total.failed,
                                      ", %d skipped" % total.skipped if total.skipped else ""))
    return 1 if total.failed else 0


if __name__ == "__main__":
    sys.exit(main())
