#!/usr/bin/env python3
"""tools/run_tests.py, the runner of `make test`, on suites that misbehave.

A suite that hangs, or that exits while a process it started (a guard, a
sampling thread's child) still holds its output, once held the whole run
until CI's own limit killed it with nothing counted. Each must now fail on
its own, be killed with everything it started, and let the next suite run.
The suites here are small scripts written to a temporary folder; the
runner's output is captured, not echoed, so its lines are not counted as
this suite's."""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import guard  # noqa: E402
from guard import check  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNNER = os.path.join(ROOT, "tools", "run_tests.py")


def write(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def run(suites, timeout=None):
    env = dict(os.environ)
    if timeout is not None:
        env["SUITE_TIMEOUT"] = str(timeout)
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, RUNNER] + ["e2e:" + s for s in suites], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    return p.returncode, p.stdout, time.monotonic() - t0


def alive(marker):
    return subprocess.run(["pgrep", "-f", marker], stdout=subprocess.DEVNULL).returncode == 0


def test_a_suite_that_leaves_a_process_holding_its_output_fails_and_the_process_goes():
    with guard.TempDir() as tmp:
        marker = "sleep 987%d" % os.getpid()
        leaky = write(tmp, "test_leaky.py", "import subprocess\n"
                      "subprocess.Popen(['sh', '-c', '%s'])\n"
                      "print('ok   test_leaky 0.0s', flush=True)\n" % marker)
        after = write(tmp, "test_after.py", "print('ok   test_after 0.0s', flush=True)\n")
        rc, out, took = run([leaky, after])
        check(rc == 1, "runner exit %d:\n%s" % (rc, out))
        check("held its output" in out, "no word of the leftover process:\n%s" % out)
        check(out.rstrip().endswith("2 passed, 1 failed"), "last line:\n%s" % out)
        check(not alive(marker), "the leftover process still runs")
        check(took < 60, "took %.1f s" % took)
        print("     leftover process killed, run went on: %.1f s" % took)


def test_a_suite_past_its_time_is_killed_and_counted():
    with guard.TempDir() as tmp:
        marker = "sleep 876%d" % os.getpid()
        stuck = write(tmp, "test_stuck.py", "import subprocess\n"
                      "print('ok   test_before_hang 0.0s', flush=True)\n"
                      "subprocess.run(['sh', '-c', '%s'])\n" % marker)
        after = write(tmp, "test_after.py", "print('ok   test_after 0.0s', flush=True)\n")
        rc, out, took = run([stuck, after], timeout=3)
        check(rc == 1, "runner exit %d:\n%s" % (rc, out))
        check("still running after 3 s (SUITE_TIMEOUT)" in out, "no word of the timeout:\n%s" % out)
        check(out.rstrip().endswith("2 passed, 1 failed"), "last line:\n%s" % out)
        check(not alive(marker), "the stuck suite's child still runs")
        print("     stuck suite killed at its limit, run went on: %.1f s" % took)


def test_a_clean_suite_passes_as_before():
    with guard.TempDir() as tmp:
        clean = write(tmp, "test_clean.py", "print('ok   test_a 0.0s', flush=True)\n"
                      "print('SKIP test_b needs a real API server', flush=True)\n")
        rc, out, took = run([clean])
        check(rc == 0, "runner exit %d:\n%s" % (rc, out))
        check(out.rstrip().endswith("1 passed, 0 failed, 1 skipped"), "last line:\n%s" % out)
        check(took < 10, "a clean suite took %.1f s" % took)


def main():
    guard.run_tests([
        test_a_suite_that_leaves_a_process_holding_its_output_fails_and_the_process_goes,
        test_a_suite_past_its_time_is_killed_and_counted,
        test_a_clean_suite_passes_as_before,
    ])


if __name__ == "__main__":
    main()
