#!/usr/bin/env python3
"""The gate's Lease written by someone who is not a replica.

Whoever can write the Lease dra-guard/dra-guard-gate could name a holder
that never releases a Pod, renew it with an hour-long leaseDurationSeconds,
and so keep new Pods gated and gated Pods held after the freeze. A fake API
server plays that writer (the guard runs under ASan against it): the guard
must not count such a holder as live (no Pod is gated for it), must say so
(dra_guard_gate_lease_foreign, a log line) and must take the Lease back;
a holder that names a running Pod of the guard, within the configured
duration, is a replica and is left alone; the same with an hour-long
duration is foreign again. A fake server is the only way to stage it: the
manifests' RBAC lets only the guard write the Lease."""

import http.server
import json
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import guard  # noqa: E402
from guard import check  # noqa: E402

DISCOVERY = {"kind": "APIGroup", "apiVersion": "v1", "name": "resource.k8s.io",
             "versions": [{"groupVersion": "resource.k8s.io/v1", "version": "v1"}],
             "preferredVersion": {"groupVersion": "resource.k8s.io/v1", "version": "v1"}}
LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/dra-guard/leases/dra-guard-gate"
PODS_PATH = "/api/v1/namespaces/dra-guard/pods"
IDENTITY = "guard-under-test_1"
LEASE_S = 5
REPLICA_POD = "dra-guard-5c9d7f6b8-q2w7k"


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.holder = "gatekeeper_1"      # pod-shaped, but no Pod of the guard
        self.duration = 3600
        self.renewals = 0
        self.puts = []                    # holderIdentity of every PUT
        self.pod_lookups = []
        self.stop = threading.Event()


STATE = State()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send_body(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def lease(self):
        # The writer renews on every read: the record never lasts out.
        with STATE.lock:
            STATE.renewals += 1
            return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": "dra-guard-gate", "namespace": "dra-guard",
                                 "resourceVersion": str(100 + STATE.renewals)},
                    "spec": {"holderIdentity": STATE.holder, "leaseDurationSeconds": STATE.duration,
                             "renewTime": "2026-12-02T00:00:%02d.%06dZ" % (STATE.renewals % 60, STATE.renewals),
                             "leaseTransitions": 3}}

    def do_GET(self):
        if guard.refuse_streaming_list(self):
            return
        path, _, query = self.path.partition("?")
        if path == "/apis/resource.k8s.io":
            return self.send_body(200, DISCOVERY)
        if path == LEASE_PATH:
            return self.send_body(200, self.lease())
        if path == PODS_PATH:
            with STATE.lock:
                STATE.pod_lookups.append(query)
            items = []
            if "metadata.name%3D" + REPLICA_POD in query and "app.kubernetes.io%2Fname%3Ddra-guard" in query:
                items = [{"metadata": {"name": REPLICA_POD, "namespace": "dra-guard",
                                       "labels": {"app.kubernetes.io/name": "dra-guard"}},
                          "status": {"phase": "Running"}}]
            return self.send_body(200, {"kind": "PodList", "apiVersion": "v1",
                                        "metadata": {"resourceVersion": "10"}, "items": items})
        if "watch=true" not in query:
            return self.send_body(200, {"kind": "List", "metadata": {"resourceVersion": "10"}, "items": []})
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

    def do_PUT(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n) or b"{}")
        with STATE.lock:
            STATE.puts.append(body.get("spec", {}).get("holderIdentity"))
        # The other writer always wins the race.
        self.send_body(409, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Conflict",
                             "code": 409})

    def do_POST(self):
        self.do_PUT()


def metric(s, name):
    return guard.metric(s.metrics(), name) or 0


def gate(s):
    return s.ready()[1].get("gate") or {}


def thread_switches(s, name):
    """Voluntary context switches of the guard's thread called name so far."""
    tasks = "/proc/%d/task" % s.proc.pid
    for tid in os.listdir(tasks):
        with open(os.path.join(tasks, tid, "comm")) as f:
            if f.read().strip() != name:
                continue
        with open(os.path.join(tasks, tid, "status")) as f:
            for line in f:
                if line.startswith("voluntary_ctxt_switches:"):
                    return int(line.split()[1])
    check(False, "no thread named %s in %s" % (name, os.listdir(tasks)))
    return 0


def set_holder(holder, duration):
    with STATE.lock:
        STATE.holder, STATE.duration = holder, duration
        del STATE.puts[:]


def test_a_foreign_or_overlong_holder_is_not_live_and_is_taken_back():
    with guard.TempDir() as d:
        guard.make_certs(d)
        srv, kc = guard.fake_api_server(Handler, d)
        try:
            with guard.Server(d, args=["--kubeconfig", kc, "--gate-release", "--gate-identity", IDENTITY,
                                       "--gate-lease-duration", "%ds" % LEASE_S], asan=True,
                              wait_ready=False) as s:
                s.wait(lambda: s.ready()[0], "the guard to sync", timeout=60)
                # 1. No replica: a Pod-shaped name that is no Pod of the guard.
                s.wait(lambda: metric(s, "dra_guard_gate_lease_foreign") == 1, "the foreign holder noticed")
                check(gate(s).get("live") is False, "a foreign holder counts as live: %s" % gate(s))
                s.wait(lambda: IDENTITY in STATE.puts, "the guard to take the Lease from the foreign holder")
                check(s.find_log("gate: the lease holder is foreign (no replica, or a duration no replica "
                                 "writes); no Pod is gated for it", holder="gatekeeper_1") is not None,
                      "the foreign holder is not logged")
                # 2. A running Pod of the guard, within the configured duration: a replica.
                set_holder(REPLICA_POD + "_7", LEASE_S)
                s.wait(lambda: metric(s, "dra_guard_gate_lease_foreign") == 0, "the replica holder recognised")
                s.wait(lambda: gate(s).get("live") is True, "the replica's Lease live")
                with STATE.lock:
                    del STATE.puts[:]
                    seen = STATE.renewals
                s.wait(lambda: STATE.renewals >= seen + 3, "a few more Lease reads")
                check(not STATE.puts, "the guard wrote over a live replica's Lease: %s" % STATE.puts)
                # Between renewals (every LEASE_S/5 s) the Lease thread sleeps, and
                # the release thread sleeps until a renewal, a new view or the freeze
                # wakes it: a thread that woke every 10 or 20 ms to look switched 50 to
                # 100 times a second; one renewal costs a handful.
                threads = ("dra-gate-lease", "dra-gate-free")
                before, reads = [thread_switches(s, t) for t in threads], STATE.renewals
                s.wait(lambda: STATE.renewals >= reads + 3, "three more Lease reads")
                after, reads = [thread_switches(s, t) for t in threads], STATE.renewals - reads
                for t, b, a in zip(threads, before, after):
                    check(a - b < 30 * reads, "thread %s woke %d times for %d renewals" % (t, a - b, reads))
                check(any(REPLICA_POD in q for q in STATE.pod_lookups), "the holder's Pod was never looked up")
                # 3. The same replica's name with an hour-long duration: foreign.
                set_holder(REPLICA_POD + "_7", 3600)
                s.wait(lambda: metric(s, "dra_guard_gate_lease_foreign") == 1, "the hour-long duration noticed")
                check(gate(s).get("live") is False, "an hour-long Lease counts as live: %s" % gate(s))
                STATE.stop.set()
                check(s.stop() == 0, "the guard did not exit cleanly")
        finally:
            STATE.stop.set()
            srv.shutdown()


if __name__ == "__main__":
    guard.run_tests([test_a_foreign_or_overlong_holder_is_not_live_and_is_taken_back])
