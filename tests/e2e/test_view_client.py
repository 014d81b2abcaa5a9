#!/usr/bin/env python3
"""The cluster view's client held to client-go's reflector, against an API
server that misbehaves the way a real one, or what stands before it, can:

- every WATCH of one resource ends at once with no event (a proxy that
  closes idle streams): the watch resumes from the same resourceVersion,
  never with a LIST, after a growing, jittered backoff - not in a loop of
  some twenty WATCHes a second;
- every WATCH of another answers 410 Expired: each LIST after one waits as
  the reflector waits (0.8 s doubling), not ten LISTs a second;
- the WATCH of a third stays open and says nothing, not even a bookmark (a
  half-open connection): after --watch-silence it is cut and sent again
  from its resourceVersion, without a LIST;
- the long bearer token of the kubeconfig arrives whole.

The fake server is this file's (a real API server does not misbehave on
request); the guard runs under ASan."""

import http.server
import json
import os
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import guard  # noqa: E402
from guard import check  # noqa: E402

DISCOVERY = {"kind": "APIGroup", "apiVersion": "v1", "name": "resource.k8s.io",
             "versions": [{"groupVersion": "resource.k8s.io/v1", "version": "v1"}],
             "preferredVersion": {"groupVersion": "resource.k8s.io/v1", "version": "v1"}}
WINDOW = 8.0       # seconds of misbehaviour observed
SILENCE = 2        # --watch-silence, seconds
TOKEN = "t" * 20000 + "END"


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = []      # (time, resource, "list"|"watch", resourceVersion)
        self.tokens_ok = True
        self.stop = threading.Event()

    def count(self, resource, kind, since=0.0):
        with self.lock:
            return sum(1 for t, r, k, _ in self.requests if r == resource and k == kind and t >= since)

    def rvs(self, resource, kind):
        with self.lock:
            return [rv for _, r, k, rv in self.requests if r == resource and k == kind]


STATE = State()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send_body(self, code, body):
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def chunk(self, b):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))
        self.wfile.flush()

    def do_GET(self):
        if self.headers.get("Authorization") != "Bearer " + TOKEN:
            STATE.tokens_ok = False
        path, _, query = self.path.partition("?")
        q = dict(urllib.parse.parse_qsl(query))
        if path == "/apis/resource.k8s.io":
            return self.send_body(200, json.dumps(DISCOVERY).encode())
        resource = path.rsplit("/", 1)[1]
        watch = q.get("watch") == "true"
        if q.get("sendInitialEvents") == "true":
            # No streaming lists here: refused as by a server with the
            # WatchList feature off, and the guard lists in pages.
            with STATE.lock:
                STATE.requests.append((time.time(), resource, "stream", None))
            guard.refuse_streaming_list(self)
            return
        with STATE.lock:
            STATE.requests.append((time.time(), resource, "watch" if watch else "list", q.get("resourceVersion")))
        if not watch:
            kind = {"resourceslices": "ResourceSliceList", "resourceclaims": "ResourceClaimList",
                    "pods": "PodList", "nodes": "NodeList", "configmaps": "ConfigMapList"}[resource]
            body = {"kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": "100"}, "items": []}
            return self.send_body(200, json.dumps(body).encode())
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            if resource == "resourceslices":
                # Ends at once, nothing on it.
                self.chunk(b"")
                return
            if resource == "resourceclaims":
                # The resourceVersion is gone, every time.
                self.chunk(json.dumps({"type": "ERROR", "object": {
                    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "too old resource version: 100 (200)", "reason": "Expired", "code": 410}}).encode()
                    + b"\n")
                self.chunk(b"")
                return
            if resource == "pods":
                # Open and silent until the client gives up.
                while not STATE.stop.wait(0.2):
                    pass
                self.chunk(b"")
                return
            # Healthy: a bookmark a second.
            kind = "Node" if resource == "nodes" else "ConfigMap"
            while not STATE.stop.wait(1.0):
                self.chunk(json.dumps({"type": "BOOKMARK", "object": {
                    "kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": "100"}}}).encode() + b"\n")
            self.chunk(b"")
        except OSError:
            pass


def metric(s, name, **labels):
    return guard.metric(s.metrics(), name, **labels) or 0


def test_misbehaving_watches_back_off_and_resume_without_a_list():
    with guard.TempDir() as d:
        guard.make_certs(d)
        srv, kc = guard.fake_api_server(Handler, d)
        with open(kc) as f:
            text = f.read()
        with open(kc, "w") as f:
            f.write(text.replace("token: t0k3n", "token: " + TOKEN))
        try:
            with guard.Server(d, args=["--kubeconfig", kc, "--watch-silence", "%ds" % SILENCE],
                              asan=True, wait_ready=False) as s:
                s.wait(lambda: STATE.count("resourceslices", "watch") >= 1, "the first slices WATCH", timeout=30)
                t0 = time.time()
                time.sleep(WINDOW)
                slices = STATE.count("resourceslices", "watch", t0)
                claim_lists = STATE.count("resourceclaims", "list", t0)
                pods = STATE.count("pods", "watch", t0)
                # A tight loop is ~20 a second (160 here); the backoff
                # (0.25 s doubling, jittered over its upper half) allows 6.
                check(2 <= slices <= 8, "%d slices WATCHes in %.0fs: want a backoff (2 to 8)" % (slices, WINDOW))
                check(STATE.count("resourceslices", "list") == 1,
                      "the slices were listed again (%d LISTs): a watch that ends at once resumes from its "
                      "resourceVersion" % STATE.count("resourceslices", "list"))
                check(set(STATE.rvs("resourceslices", "watch")) == {"100"},
                      "slices WATCHes from %s, want the listed 100" % set(STATE.rvs("resourceslices", "watch")))
                check(metric(s, "dra_guard_watch_restarts_total", resource="resourceslices", reason="short") >= 2,
                      "short watches not counted")
                # After 410s: 0.8 s doubling, jittered over the upper half.
                check(2 <= claim_lists <= 6, "%d claims LISTs after 410s in %.0fs: want the reflector's backoff "
                      "(2 to 6)" % (claim_lists, WINDOW))
                check(metric(s, "dra_guard_watch_relists_total", resource="resourceclaims", reason="expired") >= 2,
                      "410 relists not counted")
                # Silent: cut every SILENCE seconds, resumed from 100.
                check(pods >= WINDOW / (SILENCE + 1.5) - 1, "%d pods WATCHes in %.0fs: a silent watch was not cut "
                      "after %ds" % (pods, WINDOW, SILENCE))
                check(STATE.count("pods", "list") == 1 and set(STATE.rvs("pods", "watch")) == {"100"},
                      "a silent watch was listed again or resumed elsewhere: %d LISTs, from %s"
                      % (STATE.count("pods", "list"), set(STATE.rvs("pods", "watch"))))
                check(metric(s, "dra_guard_watch_restarts_total", resource="pods", reason="silent") >= 1,
                      "silent restarts not counted")
                check(metric(s, "dra_guard_watch_errors_total", resource="pods", request="watch") == 0,
                      "a silent watch counted as an error (it alerts)")
                # The healthy ones: one WATCH each, bookmarks flowing.
                check(STATE.count("nodes", "watch") == 1, "the healthy nodes WATCH was restarted (%d WATCHes)"
                      % STATE.count("nodes", "watch"))
                check(STATE.tokens_ok, "a request came without the whole %d-byte token" % len(TOKEN))
                STATE.stop.set()
                check(s.stop() == 0, "the guard did not exit cleanly")
        finally:
            STATE.stop.set()
            srv.shutdown()


if __name__ == "__main__":
    guard.run_tests([test_misbehaving_watches_back_off_and_resume_without_a_list])
