#!/usr/bin/env python3
"""The cluster view against a hostile API server: bodies that are not JSON,
cut short, nested too deep, objects that do not decode, oversized objects.
Each is an error and a relist (or a skipped, counted object), never a crash
and never a half-built view; the guard runs under ASan here. A fake server
is the only way to send garbage: the real one never does."""

import http.server
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import guard  # noqa: E402
from guard import check  # noqa: E402

DISCOVERY = {"kind": "APIGroup", "apiVersion": "v1", "name": "resource.k8s.io",
             "versions": [{"groupVersion": "resource.k8s.io/v1beta2", "version": "v1beta2"},
                          {"groupVersion": "resource.k8s.io/v1", "version": "v1"}],
             "preferredVersion": {"groupVersion": "resource.k8s.io/v1", "version": "v1"}}

SLICE = {"metadata": {"name": "s1", "resourceVersion": "7"},
         "spec": {"driver": "d.example.com", "nodeName": "n1",
                  "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": "dev-0"}]}}

# What the slices LIST answers, in turn; then a good one.
BAD_LISTS = [
    b'{"kind":"ResourceSliceList","items":[{"metadata":{"name":"x"}} oops]}',
    b'{"kind":"ResourceSliceList","metadata":{"resourceVersion":"5"},"items":[{"metadata":{"name":"x"',
    b'{"items":[' + b'[' * 5000 + b']' * 5000 + b']}',
    b'\xff\xfe\x00garbage',
    b'{"items":[{"metadata":{"name":"big","x":"' + b'a' * (4 << 20) + b'"}}]}',
]


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.slice_lists = 0
        self.slice_watches = 0
        self.stop = threading.Event()


STATE = State()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send_body(self, code, body, ctype="application/json"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path, _, query = self.path.partition("?")
        if path == "/apis/resource.k8s.io":
            return self.send_body(200, json.dumps(DISCOVERY).encode())
        watch = "watch=true" in query
        # No streaming lists: the guard lists in pages, where the garbage is.
        if guard.refuse_streaming_list(self):
            return
        if not watch:
            if path.endswith("/resourceslices"):
                with STATE.lock:
                    n = STATE.slice_lists
                    STATE.slice_lists += 1
                if n < len(BAD_LISTS):
                    return self.send_body(200, BAD_LISTS[n])
                body = {"kind": "ResourceSliceList", "metadata": {"resourceVersion": "10"}, "items": [SLICE]}
                return self.send_body(200, json.dumps(body).encode())
            return self.send_body(200, b'{"kind":"List","metadata":{"resourceVersion":"10"},"items":[]}')
        # WATCH: the first slices watch sends an object that does not decode
        # (skipped) and then garbage (relist); every other watch stays open.
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def chunk(b):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))
            self.wfile.flush()

        if path.endswith("/resourceslices"):
            with STATE.lock:
                n = STATE.slice_watches
                STATE.slice_watches += 1
            if n == 0:
                chunk(b'{"type":"ADDED","object":{"metadata":{"name":"s2","resourceVersion":"11"},'
                      b'"spec":{"devices":"not a list"}}}\n')
                chunk(b'{"type":"ADDED","object":{"metadata":{"name":"s3"}},"x":tru}\n')
                chunk(b"")
                return
        while not STATE.stop.wait(0.2):
            pass
        try:
            chunk(b"")
        except OSError:
            pass


CAP = 100            # --view-max-objects
CAP_SLICES = 3000    # what the slices LIST holds


def cap_slice(i):
    return {"metadata": {"name": "s-%05d" % i, "resourceVersion": "7"},
            "spec": {"driver": "d.example.com", "nodeName": "n%d" % i,
                     "pool": {"name": "n%d" % i, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "dev-0"}]}}


class CapHandler(Handler):
    """A LIST of CAP_SLICES slices, then quiet watches."""

    def do_GET(self):
        if guard.refuse_streaming_list(self):
            return
        path, _, query = self.path.partition("?")
        if path.endswith("/resourceslices") and "watch=true" not in query:
            body = {"kind": "ResourceSliceList", "metadata": {"resourceVersion": "10"},
                    "items": [cap_slice(i) for i in range(CAP_SLICES)]}
            return self.send_body(200, json.dumps(body).encode())
        if path.endswith("/resourceslices"):
            # the WATCH: no event, stays open
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            while not STATE.stop.wait(0.2):
                pass
            try:
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                pass
            return None
        return super().do_GET()


def test_objects_past_the_cap_are_one_counted_line():
    """Past --view-max-objects every further object is left out: counted in
    the metric, logged once by name and then as a count, not a line each."""
    STATE.stop.clear()
    with guard.TempDir() as d:
        guard.make_certs(d)
        srv, kc = guard.fake_api_server(CapHandler, d)
        try:
            with guard.Server(d, args=["--kubeconfig", kc, "--view-max-objects", str(CAP)], asan=True,
                              wait_ready=False) as s:
                s.wait(lambda: s.ready()[0], "the guard to sync", timeout=60)
                left = CAP_SLICES - CAP
                skipped = guard.metric(s.metrics(), "dra_guard_watch_skipped_objects_total",
                                       resource="resourceslices")
                check(skipped == left, "skipped objects: %s, want %d" % (skipped, left))
                named = [x for x in s.log_lines() if x.get("msg") == "cluster view: object not held"]
                counted = [x for x in s.log_lines() if x.get("msg") == "cluster view: objects left out"]
                check(len(named) == 1, "%d lines name a left-out object, want 1" % len(named))
                check("more than %d objects" % CAP in named[0].get("error", ""), "the line says why: %s" % named[0])
                check(1 <= len(counted) <= 3, "%d count lines for one LIST" % len(counted))
                check(sum(x["count"] for x in counted) == left - 1 and counted[-1]["total"] == left,
                      "the count lines do not add up to %d: %s" % (left - 1, counted))
                st, body = guard.http_get(s.metrics_port, "/debug/view")
                check(len(json.loads(body)["resourceslices"]) == CAP, "the view does not hold the first %d" % CAP)
                STATE.stop.set()
                check(s.stop() == 0, "the guard did not exit cleanly")
        finally:
            STATE.stop.set()
            srv.shutdown()


def test_garbage_bodies_relist_and_never_crash():
    with guard.TempDir() as d:
        guard.make_certs(d)
        srv, kc = guard.fake_api_server(Handler, d)
        try:
            with guard.Server(d, args=["--kubeconfig", kc], asan=True, wait_ready=False) as s:
                ok, body = s.ready()
                check(not ok, "ready before the slices LIST succeeded: %s" % body)
                s.wait(lambda: s.ready()[0], "the guard to sync after the bad LISTs", timeout=60)
                m = s.metrics()
                decode = guard.metric(m, "dra_guard_watch_relists_total", resource="resourceslices",
                                      reason="decode") or 0
                check(decode >= len(BAD_LISTS), "relists for bad bodies: %s, want %d" % (decode, len(BAD_LISTS)))
                # the first WATCH: a skipped object, then garbage and a relist
                s.wait(lambda: (guard.metric(s.metrics(), "dra_guard_watch_skipped_objects_total",
                                             resource="resourceslices") or 0) >= 1, "the undecodable object skipped")
                s.wait(lambda: (guard.metric(s.metrics(), "dra_guard_watch_relists_total",
                                             resource="resourceslices", reason="decode") or 0) > decode,
                       "a relist after a garbage WATCH event")
                s.wait(lambda: s.ready()[0], "ready again")
                st, body = guard.http_get(s.metrics_port, "/debug/view")
                v = json.loads(body)
                check([x["name"] for x in v["resourceslices"]] == ["s1"], "the view holds %s" % v["resourceslices"])
                check(s.find_log("cluster view: request failed") is not None, "failures are logged")
                STATE.stop.set()
                check(s.stop() == 0, "the guard did not exit cleanly")
        finally:
            STATE.stop.set()
            srv.shutdown()


if __name__ == "__main__":
    guard.run_tests([test_garbage_bodies_relist_and_never_crash, test_objects_past_the_cap_are_one_counted_line])
