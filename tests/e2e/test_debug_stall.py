#!/usr/bin/env python3
"""Readers that stall on the debug paths never stop admission.

Before: /debug/view, /debug/ledger and /debug/pending were charged to the
admission memory budget until their last byte was sent, so two connections
that asked for /debug/view and never read held it: every review was then
denied (503 inside the review; the webhooks fail closed). Now debug answers
have their own budget (--debug-memory-budget), one answer in flight per
path (429 for a second), and a reader that has not taken its answer within
--debug-send-timeout is cut off, even one that reads steadily but slowly.

The replica watches a fake API server holding 20,000 claims with long
names, so /debug/view is some megabytes: more than the kernel's socket
buffers take, so an unread answer stays in the server. Its --memory-budget
is two such answers and a little: before, two stalled readers left less
than one review's body; now reviews are judged as before the stall.
"""

import fcntl
import json
import os
import socket
import struct
import sys
import termios
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import envtest  # noqa: E402
import guard  # noqa: E402
from guard import check  # noqa: E402
from test_hostile import padded_review  # noqa: E402

NS = "n" * 63
CLAIMS = 20000
REVIEW_SIZE = 64 * 1024
BOUND = 120.0


def seed(env, claims=CLAIMS):
    """claims claims of 253-byte names, put straight into the fake store."""
    env.ensure_namespace(NS)
    with env.lock:
        for i in range(claims):
            name = ("claim-%06d-" % i).ljust(253, "x")
            env._put_new("resource.k8s.io", "resourceclaims", NS, {
                "metadata": {"name": name},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                    "deviceClassName": "gpu.example.com"}}]}},
                "status": {}})


def stalled(port, path):
    """A connection that asks for path and never reads: its receive buffer
    as small as the kernel allows."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n" % path.encode())
    return s


def unread(s):
    return struct.unpack("i", fcntl.ioctl(s.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0]


def judge(srv, body):
    c = guard.Client(srv)
    try:
        status, _, data = c.request("POST", "/validate?timeout=10s", body)
    finally:
        c.close()
    check(status == 200, "review: HTTP %d %s" % (status, data[:300]))
    return json.loads(data)["response"]


def start(certs, kc, budget=None):
    args = ["--kubeconfig", kc, "--threads", "2", "--max-body", "1Mi"]
    if budget:
        args += ["--memory-budget", str(budget)]
    srv = guard.Server(certs, args, wait_ready=False)
    srv.wait(lambda: srv.ready()[0] and srv.ready()[1]["clusterView"]["resources"]["resourceclaims"]["objects"]
             == CLAIMS, "the view to hold every claim", timeout=BOUND)
    return srv


def test_stalled_debug_readers_leave_reviews_judged():
    env = envtest.EnvTest()
    env.start()
    try:
        seed(env)
        with guard.TempDir() as d:
            certs = guard.make_certs(d)
            kc = env.kubeconfig(path=os.path.join(d, "kc.yaml"))
            # How large /debug/view is, read in full.
            srv = start(certs, kc)
            try:
                st, text = guard.http_get(srv.metrics_port, "/debug/view")
                check(st == 200, "/debug/view: HTTP %d" % st)
                size = len(text)
            finally:
                srv.stop()
                srv.cleanup()
            check(size > 6 * (1 << 20), "/debug/view is only %d bytes: not past the socket buffers" % size)
            budget = 2 * size + 16 * 1024
            srv = start(certs, kc, budget)
            try:
                body = padded_review(REVIEW_SIZE)
                before = judge(srv, body)
                check(before["allowed"] is True, "the review is not allowed to begin with: %s" % before)
                readers = [stalled(srv.metrics_port, "/debug/view") for _ in range(2)]
                try:
                    # Both requests answered (or refused) and left unread.
                    srv.wait(lambda: all(unread(s) > 0 for s in readers), "the debug answers to start",
                             timeout=BOUND)
                    for i in range(10):
                        r = judge(srv, body)
                        check(r["allowed"] is True and (r.get("status") or {}).get("code") != 503,
                              "review %d while readers stall: %s" % (i, json.dumps(r)[:400]))
                    # One answer per path: the second reader was told to retry.
                    m = srv.metrics()
                    check(guard.metric(m, "dra_guard_debug_refused_total", reason="busy") >= 1,
                          "the second /debug/view was not refused as busy")
                    check(guard.metric(m, "dra_guard_debug_memory_bytes") >= size - 4096,
                          "the stalled answer is not held in the debug budget")
                finally:
                    for s in readers:
                        s.close()
                print("     /debug/view %d bytes, --memory-budget %d: 2 readers stalled, 10 reviews of %d bytes"
                      " judged, %d bytes held in the debug budget" % (size, budget, len(body),
                                                                   guard.metric(m, "dra_guard_debug_memory_bytes")))
                # Given back once the readers are gone.
                srv.wait(lambda: guard.metric(srv.metrics(), "dra_guard_debug_memory_bytes") == 0,
                         "the debug budget to be given back", timeout=BOUND)
            finally:
                srv.stop()
                srv.cleanup()
    finally:
        env.stop()


def test_a_slow_reader_is_cut_off_at_the_send_timeout():
    """--debug-send-timeout: a reader that takes its answer steadily but
    slowly (never idle, so the port's 10 s idle timeout never fires) is cut
    off before it has the whole answer, and the bytes come back. The reader
    takes at most 64 KiB every 50 ms; in the 1 s the flag gives it, that and
    the kernel's buffers (4 MiB to send at most, 64 KiB to receive) are far
    from the whole /debug/view."""
    env = envtest.EnvTest()
    env.start()
    try:
        seed(env)
        with guard.TempDir() as d:
            certs = guard.make_certs(d)
            kc = env.kubeconfig(path=os.path.join(d, "kc.yaml"))
            srv = guard.Server(certs, ["--kubeconfig", kc, "--debug-send-timeout", "1s"], wait_ready=False)
            try:
                srv.wait(lambda: srv.ready()[0] and srv.ready()[1]["clusterView"]["resources"]["resourceclaims"]
                         ["objects"] == CLAIMS, "the view to hold every claim", timeout=BOUND)
                st, text = guard.http_get(srv.metrics_port, "/debug/view")
                check(st == 200, "/debug/view: HTTP %d" % st)
                size = len(text)
                check(size > 8 * (1 << 20), "/debug/view is only %d bytes" % size)
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
                s.settimeout(BOUND)
                s.connect(("127.0.0.1", srv.metrics_port))
                s.sendall(b"GET /debug/view HTTP/1.1\r\nHost: localhost\r\n\r\n")
                got = 0
                try:
                    while True:
                        data = s.recv(64 * 1024)
                        if not data:
                            break
                        got += len(data)
                        time.sleep(0.05)
                except OSError:
                    pass
                finally:
                    s.close()
                check(got < size, "the slow reader took the whole answer (%d of %d bytes): never cut off"
                      % (got, size))
                srv.wait(lambda: guard.metric(srv.metrics(), "dra_guard_debug_memory_bytes") == 0,
                         "the answer's bytes to be given back", timeout=BOUND)
                # The path is free again.
                st, _ = guard.http_get(srv.metrics_port, "/debug/view")
                check(st == 200, "/debug/view after the cut: HTTP %d" % st)
                print("     a reader at 64 KiB per 50 ms was cut off after %d of %d bytes" % (got, size))
                check(srv.stop() == 0, "exit code")
            finally:
                srv.stop()
                srv.cleanup()
    finally:
        env.stop()


def test_an_answer_past_the_debug_budget_is_refused_and_the_path_freed():
    """An answer larger than what --debug-memory-budget has left is never
    built past it: 503 with Retry-After, counted as reason="budget", its
    bytes and its path's slot given back (the next request is refused for
    the budget again, not as busy), and a smaller answer still served."""
    claims = 1000
    env = envtest.EnvTest()
    env.start()
    try:
        seed(env, claims)
        with guard.TempDir() as d:
            certs = guard.make_certs(d)
            kc = env.kubeconfig(path=os.path.join(d, "kc.yaml"))
            srv = guard.Server(certs, ["--kubeconfig", kc, "--debug-memory-budget", "64Ki"], wait_ready=False)
            try:
                srv.wait(lambda: srv.ready()[0] and srv.ready()[1]["clusterView"]["resources"]["resourceclaims"]
                         ["objects"] == claims, "the view to hold every claim", timeout=BOUND)
                for i in range(2):
                    st, body, hdrs = guard.http_get(srv.metrics_port, "/debug/view", with_headers=True)
                    check(st == 503, "/debug/view past the budget, try %d: HTTP %d" % (i, st))
                    check(hdrs.get("Retry-After") == "5", "no Retry-After: %s" % hdrs)
                    check(b"--debug-memory-budget" in body, "the refusal does not name the flag: %r" % body[:300])
                m = srv.metrics()
                check(guard.metric(m, "dra_guard_debug_refused_total", reason="budget") == 2,
                      "budget refusals counted: %s" % guard.metric(m, "dra_guard_debug_refused_total",
                                                                     reason="budget"))
                check(guard.metric(m, "dra_guard_debug_refused_total", reason="busy") == 0,
                      "a refused answer kept its path busy")
                check(guard.metric(m, "dra_guard_debug_memory_bytes") == 0, "a refused answer holds bytes")
                st, _ = guard.http_get(srv.metrics_port, "/debug/pending")
                check(st in (200, 404), "/debug/pending beside the refusals: HTTP %d" % st)
                print("     /debug/view of %d claims refused twice under --debug-memory-budget 64Ki" % claims)
            finally:
                srv.stop()
                srv.cleanup()
    finally:
        env.stop()


if __name__ == "__main__":
    envtest.require("test_debug_stall", fake=True)
    guard.run_tests([test_stalled_debug_readers_leave_reviews_judged,
                     test_a_slow_reader_is_cut_off_at_the_send_timeout,
                     test_an_answer_past_the_debug_budget_is_refused_and_the_path_freed])
