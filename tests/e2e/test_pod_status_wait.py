#!/usr/bin/env python3
"""ledger.pod.amounts waits (bounded) for the claim a Pod status is about.

kube-scheduler 1.36 writes a claim's allocation and then, milliseconds
later, the Pod's status.nodeAllocatableResourceClaimStatuses; the guard's
watch may deliver the claim a moment after the Pod status review arrives.
Before deciding "claim-unseen" (let through, unjudged) the guard waits up to
--view-recheck for a newer view, as it does before a denial stands.

A fake API server serves the view: a node, a slice whose device accel-0
maps cpu 2 and memory 8Gi, and a bound Pod; the claim's allocation reaches
the watch only after the Pod status review was sent. The status claims
cpu 4: once the claim is seen it is judged, and refused. A status for a
claim that never comes is let through after the wait, counted undecided.
The guard runs under ASan."""

import http.server
import json
import os
import queue
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import guard  # noqa: E402
from guard import check  # noqa: E402

DISCOVERY = {"kind": "APIGroup", "apiVersion": "v1", "name": "resource.k8s.io",
             "versions": [{"groupVersion": "resource.k8s.io/v1", "version": "v1"}],
             "preferredVersion": {"groupVersion": "resource.k8s.io/v1", "version": "v1"}}
POD_UID = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1", "resourceVersion": "3"},
        "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}}}
SLICE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
         "metadata": {"name": "worker-1-dra", "resourceVersion": "4"},
         "spec": {"driver": "dra.example.com", "nodeName": "worker-1",
                  "pool": {"name": "worker-1", "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": "accel-0", "nodeAllocatableResourceMappings": {
                      "cpu": {"allocationMultiplier": "2"}, "memory": {"allocationMultiplier": "8Gi"}}}]}}


def pod(status=None):
    p = {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": "pod-a", "namespace": "team-a", "uid": POD_UID, "resourceVersion": "5"},
         "spec": {"nodeName": "worker-1", "resourceClaims": [{"name": "gpus", "resourceClaimName": "gpu-claim"}],
                  "containers": [{"name": "app", "resources": {"requests": {"cpu": "500m"},
                                                               "claims": [{"name": "gpus"}]}}]},
         "status": {"phase": "Pending"}}
    if status is not None:
        p["status"]["nodeAllocatableResourceClaimStatuses"] = [
            {"resourceClaimName": "gpu-claim", "containers": ["app"], "resources": status}]
    return p


def claim(name, rv):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "team-a", "uid": "5f0c1b7e-3d2a-4c8e-9b1a-7e6d5c4b3a2%d" % rv,
                         "resourceVersion": str(10 + rv)},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
            "status": {"allocation": {"devices": {"results": [
                {"request": "gpu", "driver": "dra.example.com", "pool": "worker-1", "device": "accel-0"}]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": ["worker-1"]}]}]}},
                "reservedFor": [{"resource": "pods", "name": "pod-a", "uid": POD_UID}]}}


LISTS = {"/api/v1/nodes": [NODE], "/apis/resource.k8s.io/v1/resourceslices": [SLICE], "/api/v1/pods": [pod()]}
CLAIM_EVENTS = queue.Queue()
STOP = threading.Event()


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

    def do_GET(self):
        if guard.refuse_streaming_list(self):
            return
        path, _, query = self.path.partition("?")
        if path == "/apis/resource.k8s.io":
            return self.send_body(200, json.dumps(DISCOVERY).encode())
        if "watch=true" not in query:
            body = {"kind": "List", "metadata": {"resourceVersion": "10"}, "items": LISTS.get(path, [])}
            return self.send_body(200, json.dumps(body).encode())
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            while not STOP.is_set():
                if not path.endswith("/resourceclaims"):
                    STOP.wait(0.2)
                    continue
                try:
                    ev = CLAIM_EVENTS.get(timeout=0.05)
                except queue.Empty:
                    continue
                b = json.dumps(ev).encode() + b"\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass


def status_review(status, claim_name="gpu-claim"):
    new, old = pod(status), pod()
    new["status"]["nodeAllocatableResourceClaimStatuses"][0]["resourceClaimName"] = claim_name
    return guard.review_for(new, operation="UPDATE", old=old, user="system:kube-scheduler",
                            kind=("", "v1", "Pod"), resource="pods", sub_resource="status", namespace="team-a")


def undecided(s):
    return guard.metric(s.metrics(), "dra_guard_ledger_undecided_total", rule="ledger.pod.amounts",
                        reason="claim-unseen") or 0


def test_a_status_right_after_its_claim_is_judged():
    with guard.TempDir() as d:
        guard.make_certs(d)
        srv, kc = guard.fake_api_server(Handler, d)
        try:
            with guard.Server(d, args=["--kubeconfig", kc, "--view-recheck", "2s"], asan=True) as s:
                c = guard.Client(s)
                # The claim's allocation reaches the watch a moment after the
                # Pod status review arrives (the scheduler's order).
                timer = threading.Timer(0.2, lambda: CLAIM_EVENTS.put({"type": "ADDED",
                                                                       "object": claim("gpu-claim", 1)}))
                timer.start()
                r = c.review(status_review({"cpu": "4", "memory": "8Gi"}))
                timer.join()
                check(not r["allowed"] and "ledger.pod.amounts" in json.dumps(r),
                      "a status of cpu 4 for a claim charged cpu 2 was not judged: %s" % r)
                check(undecided(s) == 0, "counted undecided although it was judged")
                # The same claim seen: a right status passes at once.
                r = c.review(status_review({"cpu": "2", "memory": "8Gi"}))
                check(r["allowed"], "the right status was refused: %s" % r)
                # A claim that never comes: let through after the wait, counted.
                r = c.review(status_review({"cpu": "2"}, "never-claim"))
                check(r["allowed"], "a status for a claim the view never saw was refused: %s" % r)
                check(undecided(s) == 1, "undecided claim-unseen: %s, want 1" % undecided(s))
                c.close()
                STOP.set()
                check(s.stop() == 0, "the guard did not exit cleanly")
        finally:
            STOP.set()
            srv.shutdown()


if __name__ == "__main__":
    guard.run_tests([test_a_status_right_after_its_claim_is_judged])
