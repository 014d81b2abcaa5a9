#!/usr/bin/env python3
"""Reviews whose bodies the server drops are still answered inside a review.

A body past --max-body, or one that arrives while the memory budget is held
in full, is read and dropped; an HTTP error at its end (413, 503) is a
failed call, and the pod-status webhook (failurePolicy Ignore) lets a
failed call's write through. The server keeps the body's first 4 KiB and,
when the review's uid is there (the API server writes it in the first
hundred-odd bytes), answers 200: on /validate allowed false with status
code 503 or 413 and a message naming the flag, on /mutate allowed without a
patch. A body with no uid in its first bytes still gets 503 or 413.
Last, GET /debug/ledger, /debug/view and /debug/pending are answered from a
budget of their own (--debug-memory-budget): still served while admission's
is full, and charging nothing to it (a fake API server gives the replica a
view and a ledger; tests/e2e/test_debug_stall.py has readers that stall).
The budget is filled as test_hostile does it: review bodies stalled one byte
short, which the server holds as they arrive."""

import http.server
import json
import os
import sys
import threading
import uuid

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guard  # noqa: E402
from guard import check  # noqa: E402
from test_hostile import padded_review, post_raw, read_answer, tls  # noqa: E402

MIB = 1 << 20
# The smallest budget the flags allow with --max-body 1Mi (max-body + 4Mi).
ARGS = ["--threads", "1", "--idle-timeout", "60s", "--body-timeout", "60s", "--max-body", "1Mi",
        "--memory-budget", "5Mi"]
BUDGET = 5 * MIB


def metrics(srv):
    m = srv.metrics()

    def get(name, **labels):
        return guard.metric(m, name, **labels) or 0

    return {
        "in_use": get("dra_guard_memory_in_use_bytes"),
        "refused_body": get("dra_guard_memory_refusals_total", kind="body"),
        "refused_answer": get("dra_guard_memory_refusals_total", kind="answer"),
        "e503": get("dra_guard_http_errors_total", code="503"),
        "e413": get("dra_guard_http_errors_total", code="413"),
        "error_validate": get("dra_guard_requests_total", endpoint="validate", resource="unknown",
                              operation="unknown", result="error"),
        "error_mutate": get("dra_guard_requests_total", endpoint="mutate", resource="unknown",
                            operation="unknown", result="error"),
    }


def kubelet_clearing_amounts(uid):
    """A pods/status UPDATE the policy denies (status.pod.writer): a kubelet
    takes away the amounts the scheduler wrote."""
    amounts = [{"resourceClaimName": "gpu-claim", "containers": ["app"], "resources": {"memory": "8Gi"}}]

    def pod(statuses):
        p = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pod-a", "namespace": "team-a"},
             "spec": {"nodeName": "worker-1", "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}]},
             "status": {"phase": "Pending"}}
        if statuses is not None:
            p["status"]["nodeAllocatableResourceClaimStatuses"] = statuses
        return p

    rev = guard.review_for(pod(None), operation="UPDATE", old=pod(amounts), user="system:node:worker-1",
                           groups=["system:nodes"], uid=uid, kind=("", "v1", "Pod"), resource="pods",
                           sub_resource="status", namespace="team-a")
    return api_server_order(rev)


def api_server_order(rev):
    """The review as the API server writes it: kind, apiVersion, request
    with uid first (encoding/json, fields in declaration order)."""
    req = dict(rev["request"])
    ordered = {"uid": req.pop("uid")}
    ordered.update(req)
    return json.dumps({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
                       "request": ordered}).encode()


def post(srv, body, endpoint="validate", chunked=False):
    """(status, headers, body) of one POST on a new connection."""
    s = tls(srv)
    s.settimeout(30)
    try:
        if chunked:
            s.sendall(b"POST /%s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Transfer-Encoding: chunked\r\n\r\n" % endpoint.encode())
            for i in range(0, len(body), 16384):
                chunk = body[i:i + 16384]
                s.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            s.sendall(b"0\r\n\r\n")
        else:
            s.sendall(b"POST /%s?timeout=10s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n" % (endpoint.encode(), len(body)) + body)
        return read_answer(s)
    finally:
        s.close()


class FullBudget:
    """Five 1 MiB review bodies stalled one byte short: 5 x (1 MiB - 1)
    bytes held, 5 bytes of the 5 MiB budget left, so any other body is
    refused."""

    def __init__(self, srv, room=0):
        self.srv = srv
        self.socks = []
        held = 0
        for i in range(5):
            body = padded_review(MIB - (room if i == 0 else 0))
            s = tls(srv)
            s.settimeout(30)
            post_raw(s, body, send=len(body) - 1)
            self.socks.append(s)
            held += len(body) - 1
        check(BUDGET - held == 5 + room, "fillers leave %d bytes" % (BUDGET - held))
        srv.wait(lambda: metrics(srv)["in_use"] == held, "the budget to be held by the stalled bodies")

    def release(self):
        for s in self.socks:
            s.sendall(b"}")
        for s in self.socks:
            status, _, _ = read_answer(s)
            check(status == 200, "a stalled filler answered %d" % status)
            s.close()
        self.srv.wait(lambda: metrics(self.srv)["in_use"] == 0, "the budget to be given back")


def review_of(status, data, what):
    check(status == 200, "%s: HTTP %d %s" % (what, status, data[:300]))
    return json.loads(data)["response"]


def test_reviews_dropped_by_the_full_budget_are_answered():
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        with guard.Server(certs, ARGS) as srv:
            # With room in the budget the pods/status write is denied.
            uid = str(uuid.uuid4())
            r = review_of(*post(srv, kubelet_clearing_amounts(uid))[::2], "with room")
            check(r["uid"] == uid and r["allowed"] is False and r["status"]["code"] == 403 and
                  "status.pod.writer" in r["status"]["message"], "with room: %r" % r)

            full = FullBudget(srv)
            m0 = metrics(srv)
            # 1. The same write while the budget is full: still a denial, in a review.
            uid = str(uuid.uuid4())
            status, headers, data = post(srv, kubelet_clearing_amounts(uid))
            r = review_of(status, data, "pods/status with the budget full")
            check(r["uid"] == uid and r["allowed"] is False, "budget full: %r" % r)
            check(r["status"]["code"] == 503 and "--memory-budget 5Mi" in r["status"]["message"] and
                  "retry" in r["status"]["message"], "budget full: %r" % r)
            check(headers.get(b"content-type", b"").startswith(b"application/json"), "headers %r" % headers)
            line = srv.find_log("admission error")
            check(line and line.get("uid") == uid and line.get("code") == 503, "logged as %r" % line)
            # Chunked, the same.
            uid = str(uuid.uuid4())
            r = review_of(*post(srv, kubelet_clearing_amounts(uid), chunked=True)[::2], "chunked, budget full")
            check(r["uid"] == uid and r["allowed"] is False and r["status"]["code"] == 503, "chunked: %r" % r)
            # 2. /mutate: allowed without a patch, as for any review it cannot read.
            uid = str(uuid.uuid4())
            r = review_of(*post(srv, kubelet_clearing_amounts(uid), endpoint="mutate")[::2], "mutate")
            check(r["uid"] == uid and r["allowed"] is True and "patch" not in r, "mutate, budget full: %r" % r)
            m1 = metrics(srv)
            check(m1["refused_body"] - m0["refused_body"] == 3, "body refusals %r -> %r" % (m0, m1))
            check(m1["error_validate"] - m0["error_validate"] == 2 and m1["error_mutate"] - m0["error_mutate"] == 1,
                  "requests_total{result=error} %r -> %r" % (m0, m1))
            check(m1["e503"] == m0["e503"], "a 200 answer counted as 503: %r -> %r" % (m0, m1))

            # 3. No uid in the body's first 4 KiB: still 503, with Retry-After.
            late = json.loads(padded_review(64 * 1024))
            late_uid = late["request"].pop("uid")
            late["request"]["uid"] = late_uid       # now after the 64 KiB object
            for what, body in (("uid after a 64 KiB object", json.dumps(late).encode()),
                               ("not JSON", b"x" * 20000),
                               ("v1beta1", kubelet_clearing_amounts("b1").replace(b"admission.k8s.io/v1",
                                                                                  b"admission.k8s.io/v1beta1"))):
                status, headers, data = post(srv, body)
                check(status == 503 and json.loads(data)["code"] == 503 and headers.get(b"retry-after") == b"1",
                      "%s: %d %r %s" % (what, status, headers, data[:200]))
            m2 = metrics(srv)
            check(m2["e503"] - m1["e503"] == 3 and m2["refused_body"] - m1["refused_body"] == 3,
                  "503s %r -> %r" % (m1, m2))
            full.release()

            # 4. Nothing held afterwards; a review is judged again.
            r = review_of(*post(srv, kubelet_clearing_amounts(str(uuid.uuid4())))[::2], "after")
            check(r["status"]["code"] == 403, "after the budget is free: %r" % r)
            log = srv.log()
            check('"code":503' in log and "admission error" in log, "the answered refusals are not logged")
            check(srv.stop() == 0, "exit code")


def test_an_answer_past_the_budget_is_answered():
    """The body fits, its answer does not (a uid of 256 '<' is echoed as
    \\u003c, six bytes each): a small denial in its place."""
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        with guard.Server(certs, ARGS) as srv:
            uid = "<" * 256
            cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "team-a"}}
            body = api_server_order(guard.review_for(cm, uid=uid, kind=("", "v1", "ConfigMap"),
                                                     resource="configmaps", namespace="team-a"))
            full = FullBudget(srv, room=len(body) + 16)
            m0 = metrics(srv)
            r = review_of(*post(srv, body)[::2], "answer past the budget")
            check(r["uid"] == uid and r["allowed"] is False and r["status"]["code"] == 503 and
                  "the answer to this review" in r["status"]["message"] and
                  "--memory-budget 5Mi" in r["status"]["message"], "answer past the budget: %r" % r)
            m1 = metrics(srv)
            check(m1["refused_answer"] - m0["refused_answer"] == 1 and m1["e503"] == m0["e503"],
                  "counters %r -> %r" % (m0, m1))
            full.release()
            check(srv.stop() == 0, "exit code")


def test_bodies_past_max_body_are_answered():
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        with guard.Server(certs, ARGS) as srv:
            m0 = metrics(srv)
            big = padded_review(MIB + 100 * 1024)
            uid = json.loads(big)["request"]["uid"]
            for chunked in (False, True):
                r = review_of(*post(srv, big, chunked=chunked)[::2], "over --max-body, chunked %s" % chunked)
                check(r["uid"] == uid and r["allowed"] is False and r["status"]["code"] == 413 and
                      "--max-body 1Mi" in r["status"]["message"], "413 in a review: %r" % r)
            r = review_of(*post(srv, big, endpoint="mutate")[::2], "mutate over --max-body")
            check(r["uid"] == uid and r["allowed"] is True and "patch" not in r, "mutate: %r" % r)
            m1 = metrics(srv)
            check(m1["e413"] == m0["e413"] and m1["error_validate"] - m0["error_validate"] == 2,
                  "counters %r -> %r" % (m0, m1))
            # No uid in the first 4 KiB: 413 as before.
            late = json.loads(big)
            late["request"]["uid"] = late["request"].pop("uid")
            status, _, data = post(srv, json.dumps(late).encode())
            check(status == 413 and json.loads(data)["code"] == 413, "no uid: %d %s" % (status, data[:200]))
            check(metrics(srv)["e413"] - m1["e413"] == 1, "413 not counted")
            check(srv.stop() == 0, "exit code")


# --- GET /debug/ledger beside the budget ----------------------------------------------

DISCOVERY = {"kind": "APIGroup", "apiVersion": "v1", "name": "resource.k8s.io",
             "versions": [{"groupVersion": "resource.k8s.io/v1", "version": "v1"}],
             "preferredVersion": {"groupVersion": "resource.k8s.io/v1", "version": "v1"}}
SLICE = {"metadata": {"name": "s1", "resourceVersion": "7"},
         "spec": {"driver": "d.example.com", "nodeName": "n1",
                  "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": "dev-0"}]}}
STOP = threading.Event()


class FakeAPIServer(http.server.BaseHTTPRequestHandler):
    """Lists with one slice and nothing else; watches held open."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send_body(self, body):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if guard.refuse_streaming_list(self):
            return
        path, _, query = self.path.partition("?")
        if path == "/apis/resource.k8s.io":
            return self.send_body(json.dumps(DISCOVERY).encode())
        if "watch=true" not in query:
            items = [SLICE] if path.endswith("/resourceslices") else []
            return self.send_body(json.dumps({"kind": "List", "metadata": {"resourceVersion": "10"},
                                              "items": items}).encode())
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        while not STOP.wait(0.2):
            pass
        try:
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass


def test_debug_answers_never_take_the_admission_budget():
    """Before: /debug/ledger (41.8 MB at 5,000 nodes), /debug/view and
    /debug/pending were charged to the admission budget while sent, so
    readers that did not read them held admission's memory. Now they have
    their own budget: served while admission's is full, never charged to
    it."""
    paths = ("/debug/ledger", "/debug/view", "/debug/pending")
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        api, kc = guard.fake_api_server(FakeAPIServer, certs)
        STOP.clear()
        try:
            with guard.Server(certs, ARGS + ["--kubeconfig", kc]) as srv:
                for path in paths:
                    status, text = guard.http_get(srv.metrics_port, path)
                    check(status == 200 and isinstance(json.loads(text), (dict, list)),
                          "%s: %d %s" % (path, status, text[:200]))
                full = FullBudget(srv)
                for path in paths:
                    status, text = guard.http_get(srv.metrics_port, path)
                    check(status == 200 and isinstance(json.loads(text), (dict, list)),
                          "%s with the admission budget full: %d %s" % (path, status, text[:200]))
                    check(metrics(srv)["in_use"] == 5 * (MIB - 1), "the text of %s was charged to admission" % path)
                full.release()
                for path in paths:
                    status, text = guard.http_get(srv.metrics_port, path)
                    check(status == 200, "%s after: %d" % (path, status))
                srv.wait(lambda: metrics(srv)["in_use"] == 0, "the texts' charges to be given back")
                STOP.set()
                check(srv.stop() == 0, "exit code")
        finally:
            STOP.set()
            api.shutdown()


def main():
    guard.run_tests([
        test_reviews_dropped_by_the_full_budget_are_answered,
        test_an_answer_past_the_budget_is_answered,
        test_bodies_past_max_body_are_answered,
        test_debug_answers_never_take_the_admission_budget,
    ])


if __name__ == "__main__":
    main()
