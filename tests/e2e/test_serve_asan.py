#!/usr/bin/env python3
"""A few thousand requests of every kind against the ASan+UBSan build, with a
certificate rotation and policy reloads in the middle; the process must exit
0 on SIGTERM with no sanitizer report (leaks included) in its stderr."""

import json
import os
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guard  # noqa: E402
from guard import check, metric  # noqa: E402

REQUESTS = int(os.environ.get("DRA_GUARD_ASAN_REQUESTS", "4000"))
THREADS = 4
SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "runtime error:", "UndefinedBehaviorSanitizer")


NODE = {"authentication.kubernetes.io/node-name": ["worker-1"]}


def slice_review(mutate=None):
    # The example policy wants the driver's token bound to the slice's node.
    return guard.slice_review(mutate, extra=NODE)


def deny_pods(obj):
    obj["spec"]["devices"][0]["nodeAllocatableResourceMappings"]["pods"] = {"allocationMultiplier": "1"}


def worker(srv, n, seed, errors, counts):
    kinds = ["allow", "deny", "mutate", "claim", "bad-json", "not-review", "wrong-type", "404", "health",
             "oversize", "new-connection"]
    c = guard.Client(srv, timeout=60)
    try:
        for i in range(n):
            kind = kinds[(i * 7 + seed) % len(kinds)]
            try:
                if kind == "allow":
                    ok = c.review(slice_review())["allowed"] is True
                elif kind == "deny":
                    ok = c.review(slice_review(deny_pods))["allowed"] is False
                elif kind == "mutate":
                    r = c.review(slice_review(), endpoint="mutate")
                    ok = r["allowed"] and guard.decode_patch(r)
                elif kind == "claim":
                    ok = "allowed" in c.review(guard.claim_create_review())
                elif kind == "bad-json":
                    ok = c.request("POST", "/validate", b'{"apiVersion": [')[0] == 400
                elif kind == "not-review":
                    ok = c.request("POST", "/mutate", json.dumps({"kind": "Pod"}).encode())[0] == 400
                elif kind == "wrong-type":
                    ok = c.request("POST", "/validate", b"{}", {"Content-Type": "text/yaml"})[0] == 415
                    c.close()
                    c = guard.Client(srv, timeout=60)
                elif kind == "404":
                    ok = c.request("GET", "/metrics")[0] == 404
                    c.close()
                    c = guard.Client(srv, timeout=60)
                elif kind == "health":
                    ok = c.request("GET", "/readyz")[0] == 200
                elif kind == "oversize":
                    ok = c.request("POST", "/validate", b" " * (70 * 1024))[0] == 413
                    c.close()
                    c = guard.Client(srv, timeout=60)
                else:
                    c.close()
                    c = guard.Client(srv, timeout=60)
                    ok = c.review(slice_review())["allowed"] is True
                if not ok:
                    errors.append("%s: wrong answer" % kind)
                counts[kind] = counts.get(kind, 0) + 1
            except Exception as e:  # noqa: BLE001 - any failure is a finding
                errors.append("%s: %s: %s" % (kind, type(e).__name__, e))
                c.close()
                c = guard.Client(srv, timeout=60)
    finally:
        c.close()


def test_thousands_of_requests_under_asan_leave_no_report():
    with guard.TempDir() as tmp:
        ca_dir = guard.make_certs(os.path.join(tmp, "ca"))
        secret = guard.ConfigMapDir(os.path.join(tmp, "secret"))
        files = lambda: {n: open(os.path.join(ca_dir, n)).read() for n in ("tls.crt", "tls.key")}  # noqa: E731
        secret.publish(files())
        cm = guard.ConfigMapDir(os.path.join(tmp, "policy"))
        policy = guard.policy_text()
        cm.publish({"policy.yaml": policy, "freeze": "false"})
        env = {"ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1"),
               "UBSAN_OPTIONS": os.environ.get("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")}
        with guard.Server(ca_dir, ["--policy-dir", cm.path, "--max-body", "64Ki", "--threads", "3"], asan=True,
                          env=env, cert=os.path.join(secret.path, "tls.crt"),
                          key=os.path.join(secret.path, "tls.key")) as srv:
            # One counts dict per thread: `counts[k] = counts.get(k, 0) + 1` is
            # not atomic, and a shared dict lost an increment under load.
            errors, per_thread = [], [{} for _ in range(THREADS)]
            per = REQUESTS // THREADS
            threads = [threading.Thread(target=worker, args=(srv, per, i, errors, per_thread[i]))
                       for i in range(THREADS)]
            t0 = time.time()
            for t in threads:
                t.start()
            # Reloads while the load runs: a new certificate, a freeze, a
            # broken policy, the freeze lifted.
            time.sleep(0.5)
            guard.new_serving_cert(ca_dir)
            secret.publish(files())
            time.sleep(0.3)
            cm.publish({"policy.yaml": policy, "freeze": "true", "freeze-reason": "asan run"})
            time.sleep(0.3)
            cm.publish({"policy.yaml": policy + "bogus: 1\n", "freeze": "true"})
            time.sleep(0.3)
            cm.publish({"policy.yaml": policy, "freeze": "false"})
            for t in threads:
                t.join(600)
            elapsed = time.time() - t0
            m = srv.metrics()
            code = srv.stop(timeout=120)
            log = srv.log()
            reports = [mark for mark in SANITIZER_MARKS if mark in log]
            check(not reports, "sanitizer report in stderr (%s):\n%s" % (reports, log[-6000:]))
            check(code == 0, "exit code %d:\n%s" % (code, log[-3000:]))
            check(not errors, "%d failed requests: %s" % (len(errors), errors[:5]))
            counts = {}
            for d in per_thread:
                for k, v in d.items():
                    counts[k] = counts.get(k, 0) + v
            total = sum(counts.values())
            check(total == per * THREADS, "ran %d requests" % total)
            check(metric(m, "dra_guard_tls_reload_total", result="success") == 2, "rotation under ASan")
            check(metric(m, "dra_guard_policy_reload_total", result="error") >= 1, "broken policy counted")
            print("     %d requests in %.1fs under ASan+UBSan, exit 0, no report" % (total, elapsed))


def main():
    guard.run_tests([test_thousands_of_requests_under_asan_leave_no_report])


if __name__ == "__main__":
    main()
