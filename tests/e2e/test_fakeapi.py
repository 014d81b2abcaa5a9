#!/usr/bin/env python3
"""The fake API server (tests/e2e/fakeapi.py) answers as the real 1.36 one.

- Every write of tests/fixtures/replay/audit.log (recorded from a real
  kube-apiserver v1.36.2) is sent again, in order, to the fake one: each
  answer has the recorded status code and the same fields (the paths of
  every key, values aside) as the recorded answer; a webhook's denial has
  the recorded Status's fields, reason, code and message prefix.
- LIST (pages, continue, resourceVersion=0), WATCH (chunked, one event a
  line, bookmarks, the initial events of a streaming list, a 410 ERROR event
  after a compaction), the error Statuses (404, 409 AlreadyExists and
  Conflict, 403, 410 continue, 422, 401), Leases and TokenRequests answer
  what tests/fixtures/apiserver/*.json holds, values that change from run to
  run (uids, resourceVersions, times, tokens) normalized.

With KUBE_APISERVER (and etcd) set, the same scenarios also run against the
real server and its answers must equal the stored ones; `--record` rewrites
tests/fixtures/apiserver/ from the real server (a machine without one says
so and changes nothing)."""

import http.client
import json
import os
import re
import ssl
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import envtest  # noqa: E402
import fakeapi  # noqa: E402
import guard  # noqa: E402
from guard import check  # noqa: E402

FIXTURES = os.path.join(guard.ROOT, "tests", "fixtures", "apiserver")
AUDIT_LOG = os.path.join(guard.ROOT, "tests", "fixtures", "replay", "audit.log")
V1 = envtest.RESOURCE_V1
SLICES = V1 + "/resourceslices"
NS = "fakeapi-test"


# --- shapes --------------------------------------------------------------------------------------------------

def paths(o, pre=""):
    """Every key path of a JSON value ("a.b[].c"), values aside; managed
    fields' contents are opaque."""
    out = set()
    if isinstance(o, dict):
        for k, v in o.items():
            p = pre + "." + k
            out.add(p)
            if k != "fieldsV1":
                out |= paths(v, p)
    elif isinstance(o, list):
        for v in o:
            out |= paths(v, pre + "[]")
    return out


VARIABLE = {"uid", "resourceVersion", "creationTimestamp", "time", "continue", "deletionTimestamp", "token",
            "expirationTimestamp", "lastTransitionTime", "renewTime", "acquireTime", "remainingItemCount"}


def normalize(o):
    """Values that differ between runs (and between servers) replaced."""
    if isinstance(o, dict):
        out = {}
        for k, v in o.items():
            if k in VARIABLE and v is not None:
                out[k] = "<%s>" % k
            elif k == "managedFields":
                out[k] = "<managedFields>"
            elif k == "message" and isinstance(v, str):
                out[k] = re.sub(r"\b\d+\b", "N", v)
            else:
                out[k] = normalize(v)
        return out
    if isinstance(o, list):
        return [normalize(v) for v in o]
    return o


# --- the recorded writes ---------------------------------------------------------------------------------

def recorded_writes():
    with open(AUDIT_LOG) as f:
        for line in f:
            e = json.loads(line)
            if e["verb"] in ("create", "update", "patch", "delete") and e.get("stage") == "ResponseComplete":
                yield e


def test_writes_answer_as_the_recorded_real_server():
    """The fake's answer to each recorded write has the recorded code and
    fields. Denials came from the guard registered as a webhook; here a
    webhook that denies with the same Status gives them."""
    env = fakeapi.FakeEnv()
    env.start()
    try:
        for ns in ("ledger", "dra-guard", "nic-system", "dra-system"):
            env.ensure_namespace(ns)
        checked, kinds = 0, set()
        for e in recorded_writes():
            code = e["responseStatus"]["code"]
            if code >= 300:
                continue
            verb, uri, body = e["verb"], e["requestURI"], e.get("requestObject")
            method = {"create": "POST", "update": "PUT", "patch": "PATCH", "delete": "DELETE"}[verb]
            if verb == "update" and body:
                # The recorded resourceVersion is the real server's.
                body = json.loads(json.dumps(body))
                body["metadata"].pop("resourceVersion", None)
            ctype = "application/strategic-merge-patch+json" if verb == "patch" else "application/json"
            st, out = env.request(method, uri, body, ctype=ctype)
            check(st == code, "%s %s: the real server answered %d, the fake one %d: %s" % (verb, uri, code, st, out))
            want, got = paths(e.get("responseObject")), paths(out)
            check(want == got, "%s %s: fields the real server gave and the fake did not: %s; the other way: %s"
                  % (verb, uri, sorted(want - got), sorted(got - want)))
            checked += 1
            kinds.add((verb, e["objectRef"]["resource"], e["objectRef"].get("subresource")))
        check(checked >= 40 and len(kinds) >= 10, "only %d answers of %d kinds compared" % (checked, len(kinds)))
    finally:
        env.stop()


class DenyingWebhook:
    """A TLS webhook on loopback that denies with a given Status."""

    def __init__(self, status, certs):
        import http.server
        import threading
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.seen.append(self.path)
                body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                   "response": {"uid": req["request"]["uid"], "allowed": False,
                                                "status": status}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.seen = []
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(certs, "tls.crt"), os.path.join(certs, "tls.key"))
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_a_denial_reads_as_the_recorded_one():
    denied = [e for e in recorded_writes() if e["responseStatus"]["code"] == 403]
    check(denied, "the recorded log has no denial")
    rec = denied[0]["responseObject"]
    prefix, _, msg = rec["message"].partition(" denied the request: ")
    name = re.match(r'admission webhook "([^"]+)"', prefix).group(1)
    env = fakeapi.FakeEnv()
    env.start()
    try:
        with guard.TempDir() as d:
            certs = guard.make_certs(d)
            hook = DenyingWebhook({"status": "Failure", "code": 403, "reason": "Forbidden", "message": msg}, certs)
            try:
                with open(os.path.join(certs, "ca.crt")) as f:
                    ca = f.read()
                env.register_webhook(name[:-len(".dra-guard.io")], "https://127.0.0.1:%d/validate" % hook.port, ca,
                                     [{"apiGroups": ["resource.k8s.io"], "apiVersions": ["v1"],
                                       "operations": ["CREATE"], "resources": ["resourceslices"]}])
                st, out = env.request("POST", SLICES, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                                       "metadata": {"name": "s"},
                                                       "spec": {"driver": "d.example.com", "nodeName": "n",
                                                                "pool": {"name": "n", "generation": 1,
                                                                         "resourceSliceCount": 1}}})
                check(st == denied[0]["responseStatus"]["code"], "denial code %d" % st)
                check(out == rec, "the denial differs from the recorded one:\n%s\n%s" % (out, rec))
                check(hook.seen and hook.seen[0].startswith("/validate?timeout=10s"),
                      "the webhook was called at %s (the API server appends ?timeout=Ns)" % hook.seen)
            finally:
                hook.close()
    finally:
        env.stop()


def test_match_conditions_evaluate_as_cel_does():
    """The CEL subset the fake evaluates the project's matchConditions with:
    each expression the manifests and tests use, true and false, and an
    expression outside the subset refused rather than guessed."""
    gated = {"spec": {"schedulingGates": [{"name": "dra-guard.io/freeze"}], "resourceClaims": [{"name": "c"}]}}
    released = {"spec": {"resourceClaims": [{"name": "c"}]}}
    removed = ("has(oldObject.spec.schedulingGates) && oldObject.spec.schedulingGates.exists(g, g.name == "
               "'dra-guard.io/freeze') && !(has(object.spec.schedulingGates) && "
               "object.spec.schedulingGates.exists(g, g.name == 'dra-guard.io/freeze'))")
    cases = [
        (removed, {"object": released, "oldObject": gated, "request": {}}, True),
        (removed, {"object": gated, "oldObject": gated, "request": {}}, False),
        (removed, {"object": released, "oldObject": released, "request": {}}, False),
        ("has(object.spec.resourceClaims) && size(object.spec.resourceClaims) > 0",
         {"object": released, "oldObject": None, "request": {}}, True),
        ("has(object.spec.resourceClaims) && size(object.spec.resourceClaims) > 0",
         {"object": {"spec": {}}, "oldObject": None, "request": {}}, False),
        ("request.userInfo.username != 'envtest-admin'",
         {"object": None, "oldObject": None, "request": {"userInfo": {"username": "envtest-admin"}}}, False),
        ("!has(object.status) || !has(oldObject.status) || object.status != oldObject.status",
         {"object": {"status": {"a": 1}}, "oldObject": {"status": {"a": 1}}, "request": {}}, False),
        ("!has(object.status) || !has(oldObject.status) || object.status != oldObject.status",
         {"object": {"status": {"a": 2}}, "oldObject": {"status": {"a": 1}}, "request": {}}, True),
    ]
    for expr, variables, want in cases:
        got = fakeapi.cel_eval(expr, variables)
        check(got is want, "%s on %s: %s, want %s" % (expr, variables, got, want))
    for bad in ("object.spec.x.map(y, y)[0]", "object.spec ? 1 : 2"):
        try:
            fakeapi.cel_eval(bad, {"object": released, "oldObject": None, "request": {}})
        except ValueError:
            continue
        check(False, "%r evaluated instead of being refused" % bad)


# --- the stored answers -------------------------------------------------------------------------------------

def raw(env, method, path, body=None, ctype="application/json", identity="admin", token=None, timeout=10):
    """(status, headers, body bytes) of one request."""
    conn = http.client.HTTPSConnection("127.0.0.1", env.port, timeout=timeout,
                                       context=env.ssl_context(None if token else identity))
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    data = None
    if body is not None:
        data = json.dumps(body)
        headers["Content-Type"] = ctype
    conn.request(method, path, body=data, headers=headers)
    r = conn.getresponse()
    out = r.read()
    hdrs = {k.lower(): v for k, v in r.getheaders()}
    conn.close()
    return r.status, hdrs, out


def watch_lines(env, path, until, timeout=10):
    """The events of a WATCH, read line by line until until(events) holds or
    the stream ends; with the response's Transfer-Encoding."""
    conn = http.client.HTTPSConnection("127.0.0.1", env.port, timeout=timeout, context=env.ssl_context("admin"))
    conn.request("GET", path, headers={"Accept": "application/json"})
    r = conn.getresponse()
    te = r.getheader("Transfer-Encoding")
    events = []
    try:
        while not until(events):
            line = r.readline()
            if not line:
                break
            line = line.strip()
            if line:
                events.append(json.loads(line))
    finally:
        conn.close()
    return r.status, te, events


def slice_obj(name, node="n1"):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": "gpu.example.com", "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-0"}]}}


def scenarios(env):
    """{name: answer} of every scenario, against env (real or fake)."""
    out = {}
    env.ensure_namespace(NS)
    for i in range(5):
        env.create(SLICES, slice_obj("s-%d" % i, "n%d" % i))
    st, _, body = raw(env, "GET", SLICES + "?limit=2")
    out["list-page"] = normalize({"code": st, "body": json.loads(body)})
    tok = json.loads(body)["metadata"]["continue"]
    st, _, body = raw(env, "GET", SLICES + "?limit=2&continue=" + tok)
    out["list-next-page"] = normalize({"code": st, "body": json.loads(body)})
    st, _, body = raw(env, "GET", SLICES + "?limit=2&resourceVersion=0")
    page = json.loads(body)
    out["list-rv0-ignores-limit"] = normalize({"code": st, "items": len(page["items"]),
                                     "hasContinue": "continue" in page["metadata"]})
    rv = page["metadata"]["resourceVersion"]

    # A watch from rv after a create, an update and a delete: the three
    # events from the watch cache's history, then the bookmark sent before
    # the watch's timeout.
    env.create(SLICES, slice_obj("w-0", "w"))
    env.patch(SLICES + "/w-0", {"metadata": {"labels": {"x": "y"}}})
    env.delete(SLICES + "/w-0")
    st, te, events = watch_lines(env, SLICES + "?watch=true&allowWatchBookmarks=true&timeoutSeconds=3&resourceVersion="
                                 + rv, lambda ev: ev and ev[-1]["type"] == "BOOKMARK", timeout=15)
    out["watch"] = normalize({"code": st, "transferEncoding": te, "events": events})
    # The initial events of a streaming list.
    st, te, events = watch_lines(env, SLICES + "?watch=true&allowWatchBookmarks=true&sendInitialEvents=true"
                                 "&resourceVersionMatch=NotOlderThan&timeoutSeconds=5",
                                 lambda ev: ev and ev[-1]["type"] == "BOOKMARK")
    out["watch-initial-events"] = normalize({"code": st, "events": events})
    # A compaction: the old resourceVersion and the continue token are gone.
    env.create(SLICES, slice_obj("after", "a"))
    env.compact()
    st, te, events = watch_lines(env, SLICES + "?watch=true&resourceVersion=" + rv, lambda ev: len(ev) >= 1)
    out["watch-expired"] = normalize({"code": st, "events": events})
    st, _, body = raw(env, "GET", SLICES + "?limit=2&continue=" + tok)
    out["continue-expired"] = normalize({"code": st, "body": json.loads(body)})
    # Errors.
    st, _, body = raw(env, "GET", SLICES + "/nope")
    out["get-404"] = normalize({"code": st, "body": json.loads(body)})
    st, _, body = raw(env, "POST", SLICES, slice_obj("s-0"))
    out["create-409-exists"] = normalize({"code": st, "body": json.loads(body)})
    cur = env.get(SLICES + "/s-1")
    cur["metadata"]["resourceVersion"] = str(int(cur["metadata"]["resourceVersion"]) - 1)
    st, _, body = raw(env, "PUT", SLICES + "/s-1", cur)
    out["update-409-conflict"] = normalize({"code": st, "body": json.loads(body)})
    st, _, body = raw(env, "POST", SLICES, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                            "metadata": {}, "spec": slice_obj("x")["spec"]})
    out["create-422-no-name"] = normalize({"code": st, "reason": json.loads(body).get("reason")})
    token = env.sa_token(NS, "nobody")
    st, _, body = raw(env, "GET", "/api/v1/secrets", token=token)
    out["list-403"] = normalize({"code": st, "body": json.loads(body)})
    st, _, body = raw(env, "GET", SLICES, token="not-a-token")
    out["list-401"] = normalize({"code": st, "body": json.loads(body)})
    # A Lease as the gate's holder writes it.
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "gate"},
             "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}
    path = "/apis/coordination.k8s.io/v1/namespaces/%s/leases" % NS
    st, _, body = raw(env, "POST", path, lease)
    made = json.loads(body)
    out["lease-create"] = normalize({"code": st, "body": made})
    made["spec"]["holderIdentity"] = "b"
    st, _, body = raw(env, "PUT", path + "/gate", made)
    out["lease-update"] = normalize({"code": st, "body": json.loads(body)})
    st, _, body = raw(env, "PUT", path + "/gate", made)
    out["lease-update-stale"] = normalize({"code": st, "body": json.loads(body)})
    return out


def stored():
    out = {}
    for name in sorted(os.listdir(FIXTURES)):
        if name.endswith(".json"):
            with open(os.path.join(FIXTURES, name)) as f:
                out[name[:-5]] = json.load(f)
    return out


def compare(got, want, who):
    for name in sorted(set(want) | set(got)):
        check(name in got, "%s: no answer for the stored %s" % (who, name))
        check(name in want, "%s: %s has no stored answer (tests/fixtures/apiserver/%s.json)" % (who, name, name))
        check(got[name] == want[name], "%s: %s differs from tests/fixtures/apiserver/%s.json:\n got  %s\n want %s"
              % (who, name, name, json.dumps(got[name], sort_keys=True)[:3000],
                 json.dumps(want[name], sort_keys=True)[:3000]))


def test_fake_answers_as_stored():
    env = fakeapi.FakeEnv()
    env.start()
    try:
        compare(scenarios(env), stored(), "the fake API server")
    finally:
        env.stop()


def test_real_answers_as_stored():
    if envtest.missing():
        raise guard.Skip("the stored answers not compared with a real server: needs a real API server: %s"
                         % envtest.missing())
    with envtest.EnvTest() as env:
        compare(scenarios(env), stored(), "the real API server")


def record():
    gone = envtest.missing()
    if gone:
        sys.exit("test_fakeapi.py --record needs a real API server: %s; tests/fixtures/apiserver/ is unchanged" % gone)
    with envtest.EnvTest() as env:
        got = scenarios(env)
    os.makedirs(FIXTURES, exist_ok=True)
    for name, v in got.items():
        with open(os.path.join(FIXTURES, name + ".json"), "w") as f:
            json.dump(v, f, indent=1, sort_keys=True)
            f.write("\n")
    print("recorded %d answers in %s" % (len(got), FIXTURES))


if __name__ == "__main__":
    if sys.argv[1:] == ["--record"]:
        record()
    elif sys.argv[1:] == ["--write-from-fake"]:
        # For a new scenario with no real server at hand: what the fake
        # answers, to review against the API server's source before storing.
        env = fakeapi.FakeEnv()
        env.start()
        try:
            print(json.dumps(scenarios(env), indent=1, sort_keys=True))
        finally:
            env.stop()
    else:
        guard.run_tests([test_writes_answer_as_the_recorded_real_server, test_a_denial_reads_as_the_recorded_one,
                         test_match_conditions_evaluate_as_cel_does,
                         test_fake_answers_as_stored, test_real_answers_as_stored])
