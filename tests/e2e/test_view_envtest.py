#!/usr/bin/env python3
"""The cluster view against a real kube-apiserver (tests/e2e/envtest.py):
initial sync, events within a second, a watch resumed after a dropped
connection with nothing lost or doubled, a relist after a 410, the API
server restarted under the guard with nothing served half built, a freeze
through the ConfigMap reaching two replicas within 2 s, and the guard's own
ServiceAccount with only the manifests' RBAC."""

import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import envtest  # noqa: E402
import guard  # noqa: E402
from guard import check, fail  # noqa: E402

envtest.require("test_view_envtest", fake=True)

SLICES = envtest.RESOURCE_V1 + "/resourceslices"
DRIVER = "gpu.example.com"
NS = "view-test"
GUARD_NS = "dra-guard"
CM = "dra-guard-policy"
# Bounds the issue sets for seeing a change, and for a freeze on every replica.
EVENT_BOUND = 1.0
FREEZE_BOUND = 2.0

ENV = None


def slice_obj(i, gen=1, ndev=2):
    node = "node-%04d" % i
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": node + "-gpu"},
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": gen, "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-%d" % k,
                                  "attributes": {DRIVER + "/numaNode": {"int": k % 2}},
                                  "capacity": {DRIVER + "/memory": {"value": "80Gi"}},
                                  "nodeAllocatableResourceMappings": {
                                      "cpu": {"allocationMultiplier": "4"}}} for k in range(ndev)]}}


def claim_path(name=None, ns=NS):
    p = envtest.RESOURCE_V1 + "/namespaces/%s/resourceclaims" % ns
    return p + "/" + name if name else p


def make_claim(i, allocate=True):
    name = "claim-%05d" % i
    ENV.create(claim_path(), {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                              "metadata": {"name": name},
                              "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                                  "deviceClassName": DRIVER, "count": 1}}]}}})
    if allocate:
        node = "node-%04d" % (i % 50)
        ENV.patch(claim_path(name) + "/status", {"status": {
            "allocation": {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": node,
                                                    "device": "gpu-0"}]},
                           "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                               {"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
            "reservedFor": [{"resource": "pods", "name": "pod-%d" % i,
                             "uid": "00000000-0000-4000-8000-%012d" % i}]}})


def parallel(fn, items, workers=4):
    errors = []

    def run(k):
        for i in items[k::workers]:
            try:
                fn(i)
            except Exception as e:  # noqa: BLE001 - collected and reported
                errors.append((i, e))

    ths = [threading.Thread(target=run, args=(k,)) for k in range(workers)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    if errors:
        fail("%d requests failed, first: %s" % (len(errors), errors[0]))


def api_state():
    """{kind: {key: resourceVersion}} as the API server has it now."""
    slices = ENV.get(SLICES)["items"]
    claims = ENV.get(envtest.RESOURCE_V1 + "/resourceclaims")["items"]
    return {"slices": {s["metadata"]["name"]: s["metadata"]["resourceVersion"] for s in slices},
            "claims": {(c["metadata"]["namespace"], c["metadata"]["name"]): c["metadata"]["resourceVersion"]
                       for c in claims}}


def view_state(server):
    st, body = guard.http_get(server.metrics_port, "/debug/view")
    if st != 200:
        return None
    v = json.loads(body)
    return {"seq": v["seq"],
            "slices": {s["name"]: s["resourceVersion"] for s in v["resourceslices"]},
            "claims": {(c["namespace"], c["name"]): c["resourceVersion"] for c in v["resourceclaims"]},
            "pools": {(p["driver"], p["name"]): p for p in v["pools"]}}


def diff(want, got):
    out = []
    for kind in ("slices", "claims"):
        w, g = want[kind], (got or {}).get(kind, {})
        missing = [k for k in w if k not in g]
        extra = [k for k in g if k not in w]
        stale = [(k, g[k], w[k]) for k in w if k in g and g[k] != w[k]]
        if missing or extra or stale:
            out.append("%s: missing %s, extra %s, stale (key, view, api) %s"
                       % (kind, missing[:5], extra[:5], stale[:5]))
    return "; ".join(out)


def wait_view_matches(server, timeout=guard.EVENT_TIMEOUT):
    want = api_state()
    last = [None]

    def same():
        got = view_state(server)
        last[0] = got
        return got is not None and got["slices"] == want["slices"] and got["claims"] == want["claims"]

    deadline = time.time() + timeout
    while time.time() < deadline:
        if same():
            return want
        time.sleep(0.02)
    fail("the view does not equal the API server's objects after %ss: %s\n%s"
         % (timeout, diff(want, last[0]), server.log()[-3000:]))


def metric(server, name, **labels):
    return guard.metric(server.metrics(), name, **labels) or 0


def events(server, resource):
    m = server.metrics()
    return {t: guard.metric(m, "dra_guard_watch_events_total", resource=resource, type=t) or 0
            for t in ("ADDED", "MODIFIED", "DELETED")}


def start_guard(certs, kubeconfig, *extra, asan=False):
    s = guard.Server(certs, args=["--kubeconfig", kubeconfig] + list(extra), asan=asan, wait_ready=False)
    s.wait(lambda: s.ready()[0], "the guard to sync and be ready", timeout=60)
    return s


# --- tests --------------------------------------------------------------------------------


def test_initial_sync_of_hundreds_of_slices_and_claims():
    ENV.ensure_namespace(NS)
    parallel(lambda i: ENV.create(SLICES, slice_obj(i)), list(range(300)))
    parallel(make_claim, list(range(300)))
    with guard.TempDir() as d:
        guard.make_certs(d)
        # Small pages: the LIST takes several, with continue tokens.
        with start_guard(d, ENV.kubeconfig(), "--watch-page-size", "40", "--list-mode", "pages") as s:
            want = wait_view_matches(s, timeout=10)
            check(len(want["slices"]) == 300 and len(want["claims"]) == 300, "setup: %d slices, %d claims"
                  % (len(want["slices"]), len(want["claims"])))
            v = view_state(s)
            p = v["pools"][(DRIVER, "node-0007")]
            check(p["generation"] == 1 and p["slices"] == 1 and p["resourceSliceCount"] == 1, "pool %s" % p)
            ready = s.ready()[1]
            check(ready["clusterView"]["resources"]["resourceclaims"]["objects"] == 300, "readyz %s" % ready)
            check(metric(s, "dra_guard_watch_synced", resource="resourceslices") == 1, "synced gauge")
            check(metric(s, "dra_guard_ready") == 1, "dra_guard_ready 0 while /readyz answers ready")
            check(metric(s, "dra_guard_view_objects", resource="resourceclaims") == 300, "objects gauge")
            check(metric(s, "dra_guard_watch_relists_total", resource="resourceclaims", reason="start") == 1,
                  "one LIST (paged) for the claims")
            check(metric(s, "dra_guard_watch_bytes_total", resource="resourceclaims") > 300 * 500,
                  "bytes decoded counted")
            check(metric(s, "dra_guard_watch_lists_total", resource="resourceclaims", mode="pages") == 1,
                  "the claims were not listed in pages")


def test_initial_sync_as_a_streaming_list():
    """The same objects through a streaming list (a WATCH with
    sendInitialEvents, the initial events ended by a bookmark), the
    default; then changes on the same WATCH."""
    with guard.TempDir() as d:
        guard.make_certs(d)
        with start_guard(d, ENV.kubeconfig()) as s:
            want = wait_view_matches(s, timeout=10)
            check(len(want["claims"]) >= 300, "setup: %d claims" % len(want["claims"]))
            for res in ("resourceslices", "resourceclaims", "pods", "nodes"):
                check(metric(s, "dra_guard_watch_lists_total", resource=res, mode="stream") == 1 and
                      metric(s, "dra_guard_watch_lists_total", resource=res, mode="pages") == 0,
                      "%s: not one streaming list" % res)
            # The initial events are the LIST, not watch events.
            check(metric(s, "dra_guard_watch_events_total", resource="resourceclaims", type="ADDED") == 0,
                  "initial events counted as watch events")
            make_claim(990, allocate=False)
            wait_view_matches(s)
            check(metric(s, "dra_guard_watch_events_total", resource="resourceclaims", type="ADDED") == 1,
                  "a claim created after the list is one ADDED event")
            check(metric(s, "dra_guard_watch_relists_total", resource="resourceclaims", reason="start") == 1,
                  "more than the first list")


def test_a_server_without_streaming_lists_is_listed_in_pages():
    """An API server with the WatchList feature off refuses
    sendInitialEvents (422): the guard lists in pages, at once."""
    if getattr(ENV, "real", False):
        raise guard.Skip("needs the fake API server: a real one's WatchList feature is not switched here")
    ENV.watch_list = False
    try:
        with guard.TempDir() as d:
            guard.make_certs(d)
            with start_guard(d, ENV.kubeconfig()) as s:
                wait_view_matches(s, timeout=10)
                for res in ("resourceslices", "resourceclaims", "pods", "nodes"):
                    check(metric(s, "dra_guard_watch_lists_total", resource=res, mode="pages") == 1 and
                          metric(s, "dra_guard_watch_lists_total", resource=res, mode="stream") == 0,
                          "%s: not listed in pages" % res)
                check(s.find_log("cluster view: no streaming list; listing in pages") is not None,
                      "the fallback was not logged")
    finally:
        ENV.watch_list = True


def test_create_update_delete_seen_within_a_second():
    with guard.TempDir() as d:
        guard.make_certs(d)
        with start_guard(d, ENV.kubeconfig()) as s:
            def seen(pred, what):
                t0 = time.time()
                while time.time() - t0 < EVENT_BOUND:
                    v = view_state(s)
                    if v and pred(v):
                        return time.time() - t0
                    time.sleep(0.005)
                fail("%s not in the view within %.1fs" % (what, EVENT_BOUND))

            made = ENV.create(SLICES, slice_obj(900))
            seen(lambda v: v["slices"].get("node-0900-gpu") == made["metadata"]["resourceVersion"], "a create")
            made["spec"]["pool"]["generation"] = 2
            upd = ENV.must("PUT", SLICES + "/node-0900-gpu", made)
            seen(lambda v: v["slices"].get("node-0900-gpu") == upd["metadata"]["resourceVersion"] and
                 v["pools"][(DRIVER, "node-0900")]["generation"] == 2, "an update")
            ENV.delete(SLICES + "/node-0900-gpu")
            seen(lambda v: "node-0900-gpu" not in v["slices"] and
                 v["pools"][(DRIVER, "node-0900")]["slices"] == 0 and
                 v["pools"][(DRIVER, "node-0900")]["maxGeneration"] == 2, "a delete (pool kept at generation 2)")
            make_claim(901)
            seen(lambda v: (NS, "claim-00901") in v["claims"], "a claim")


def test_a_watch_event_larger_than_the_watch_buffer_arrives_whole():
    # A WATCH reads through curl's 16 KiB buffer (the LIST's is 256 KiB):
    # a slice of 128 devices, the most a slice holds, is more than that.
    big = slice_obj(910, ndev=128)
    for k, dev in enumerate(big["spec"]["devices"]):
        dev["attributes"][DRIVER + "/serial"] = {"string": ("%04d" % k) * 16}
    check(len(json.dumps(big)) > 2 * 16384, "the slice is not past the watch buffer")
    with guard.TempDir() as d:
        guard.make_certs(d)
        with start_guard(d, ENV.kubeconfig()) as s:
            made = ENV.create(SLICES, big)
            t0 = time.time()
            while time.time() - t0 < EVENT_BOUND:
                v = view_state(s)
                if v and v["slices"].get("node-0910-gpu") == made["metadata"]["resourceVersion"]:
                    break
                time.sleep(0.005)
            else:
                fail("a 128-device slice not in the view within %.1fs:\n%s" % (EVENT_BOUND, s.log()[-2000:]))
            st, body = guard.http_get(s.metrics_port, "/debug/view")
            got = [x for x in json.loads(body)["resourceslices"] if x["name"] == "node-0910-gpu"]
            check(st == 200 and len(got) == 1 and got[0]["devices"] == 128,
                  "the slice in the view: %s" % got)
            check(s.find_log("cluster view: request failed") is None, "a watch request failed")
            ENV.delete(SLICES + "/node-0910-gpu")


def test_watch_resumes_after_a_dropped_connection_without_loss_or_doubles():
    proxy = ENV.proxy()
    with guard.TempDir() as d:
        guard.make_certs(d)
        kc = ENV.kubeconfig(server="https://127.0.0.1:%d" % proxy.port, path=os.path.join(d, "kc.yaml"))
        with start_guard(d, kc) as s:
            wait_view_matches(s)
            before = events(s, "resourceslices")
            relists = metric(s, "dra_guard_watch_relists_total", resource="resourceslices", reason="expired")
            proxy.pause()
            for i in range(910, 915):
                ENV.create(SLICES, slice_obj(i))
            for i in (910, 911):
                ENV.patch(SLICES + "/node-%04d-gpu" % i, {"metadata": {"labels": {"x": "y"}}})
            ENV.delete(SLICES + "/node-0912-gpu")
            proxy.resume()
            wait_view_matches(s)
            after = events(s, "resourceslices")
            delta = {k: after[k] - before[k] for k in after}
            check(delta == {"ADDED": 5, "MODIFIED": 2, "DELETED": 1},
                  "events after the drop: %s, want exactly 5 ADDED, 2 MODIFIED, 1 DELETED" % delta)
            check(metric(s, "dra_guard_watch_relists_total", resource="resourceslices", reason="expired") == relists,
                  "the watch resumed from its resourceVersion; it did not relist")
            check(s.find_log("cluster view: request failed") is not None, "the drop was logged")
    proxy.close()


def test_relist_after_410_and_api_server_restart_serve_nothing_half_built():
    proxy = ENV.proxy()
    stop = threading.Event()
    seen_counts = set()
    with guard.TempDir() as d:
        guard.make_certs(d)
        kc = ENV.kubeconfig(server="https://127.0.0.1:%d" % proxy.port, path=os.path.join(d, "kc.yaml"))
        with start_guard(d, kc, "--watch-page-size", "25") as s:
            old = wait_view_matches(s)

            def watch_counts():
                while not stop.is_set():
                    v = view_state(s)
                    if v is not None:
                        seen_counts.add(len(v["claims"]))
                    ok, _ = s.ready()
                    if not ok:
                        seen_counts.add("unready")

            t = threading.Thread(target=watch_counts, daemon=True)
            t.start()
            relists = metric(s, "dra_guard_watch_relists_total", resource="resourceclaims", reason="expired")
            # The guard cannot reach the server while claims change and
            # etcd is compacted: the resourceVersion it resumes from is gone.
            proxy.pause()
            for i in range(950, 960):
                make_claim(i, allocate=False)
            ENV.compact()
            ENV.restart_apiserver()
            for i in range(960, 965):
                make_claim(i, allocate=False)
            proxy.resume()
            new = wait_view_matches(s, timeout=30)
            stop.set()
            t.join()
            check(metric(s, "dra_guard_watch_relists_total", resource="resourceclaims", reason="expired") > relists,
                  "a 410 made the claims relist")
            allowed = {len(old["claims"]), len(old["claims"]) + 10, len(new["claims"])}
            check(seen_counts <= allowed,
                  "the view served %s claims; only whole LISTs %s may be seen (never unready after a sync)"
                  % (sorted(seen_counts, key=str), sorted(allowed)))
    proxy.close()


def policy_cm(freeze="false", reason=""):
    with open(os.path.join(guard.ROOT, "examples", "policy-configmap.yaml")) as f:
        text = f.read()
    out = subprocess.run([guard.binary(), "convert", "-"], input=text.encode(), stdout=subprocess.PIPE,
                         check=True).stdout.decode().splitlines()
    cm = json.loads(out[0])
    cm["metadata"] = {"name": CM, "namespace": GUARD_NS}
    cm["data"]["freeze"] = freeze
    cm["data"]["freeze-reason"] = reason
    return cm


def test_freeze_through_the_configmap_reaches_two_replicas_within_2s():
    ENV.ensure_namespace(GUARD_NS)
    ENV.create("/api/v1/namespaces/%s/configmaps" % GUARD_NS, policy_cm())
    with guard.TempDir() as d:
        guard.make_certs(d)
        with start_guard(d, ENV.kubeconfig()) as a, start_guard(d, ENV.kubeconfig()) as b:
            for s in (a, b):
                s.wait(lambda: s.ready()[1]["policy"]["source"] == "api", "the policy to come from the API")
                check(metric(s, "dra_guard_policy_source", source="api") == 1, "policy source metric")
            t0 = time.time()
            ENV.patch("/api/v1/namespaces/%s/configmaps/%s" % (GUARD_NS, CM),
                      {"data": {"freeze": "true", "freeze-reason": "INC-1: rollback"}})
            pending = {a, b}
            while pending and time.time() - t0 < FREEZE_BOUND:
                for s in list(pending):
                    pol = s.ready()[1]["policy"]
                    if pol["freeze"] and pol.get("freezeReason") == "INC-1: rollback":
                        pending.discard(s)
                time.sleep(0.01)
            check(not pending, "%d replica(s) not frozen within %.1fs of the patch" % (len(pending), FREEZE_BOUND))
            # A broken policy through the API keeps the last good one.
            ENV.patch("/api/v1/namespaces/%s/configmaps/%s" % (GUARD_NS, CM), {"data": {"freeze": "maybe"}})
            a.wait(lambda: metric(a, "dra_guard_policy_reload_total", result="error") >= 1, "the bad policy refused")
            check(a.ready()[1]["policy"]["freeze"] is True, "the last good policy (frozen) still serves")
            # Deleted: the last good policy (frozen) stays, and says so.
            ENV.delete("/api/v1/namespaces/%s/configmaps/%s" % (GUARD_NS, CM))
            a.wait(lambda: metric(a, "dra_guard_policy_input_missing") == 1, "the deleted ConfigMap noticed")
            pol = a.ready()[1]["policy"]
            check(pol["freeze"] is True and pol["source"] == "api",
                  "the freeze did not survive the ConfigMap's deletion: %s" % pol)


def test_guard_service_account_with_only_the_manifest_rbac():
    rbac = os.path.join(guard.ROOT, "manifests", "base", "rbac.yaml")
    with open(rbac) as f:
        out = subprocess.run([guard.binary(), "convert", "-"], input=f.read().encode(), stdout=subprocess.PIPE,
                             check=True).stdout.decode().splitlines()
    ENV.ensure_namespace(GUARD_NS)
    ENV.apply_objects([json.loads(line) for line in out if line.strip()])
    token = ENV.sa_token(GUARD_NS, "dra-guard")
    with guard.TempDir() as d:
        guard.make_certs(d)
        kc = ENV.kubeconfig(token=token, path=os.path.join(d, "kc.yaml"))
        with start_guard(d, kc, "--policy-configmap", "%s/%s" % (GUARD_NS, CM)) as s:
            wait_view_matches(s)
            check(s.find_log("cluster view: request failed") is None, "a request was refused:\n" + s.log()[-2000:])
    # The same token reads Pods and Nodes (the ledger), and nothing else,
    # and writes nothing.
    for path in ("/api/v1/pods", "/api/v1/nodes"):
        st, _ = ENV.request("GET", path, token=token)
        check(st == 200, "the guard's ServiceAccount may not list %s (HTTP %d)" % (path, st))
    for path in ("/api/v1/secrets", "/api/v1/namespaces/%s/configmaps" % NS, "/apis/apps/v1/deployments"):
        st, _ = ENV.request("GET", path, token=token)
        check(st == 403, "the guard's ServiceAccount may list %s (HTTP %d)" % (path, st))
    st, _ = ENV.request("POST", "/api/v1/namespaces/%s/pods" % NS, {"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": "x"}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
                        token=token)
    check(st == 403, "the guard's ServiceAccount may create Pods (HTTP %d)" % st)


def main():
    global ENV
    ENV = envtest.EnvTest()
    ENV.start()
    try:
        guard.run_tests([
            test_initial_sync_of_hundreds_of_slices_and_claims,
            test_initial_sync_as_a_streaming_list,
            test_a_server_without_streaming_lists_is_listed_in_pages,
            test_create_update_delete_seen_within_a_second,
            test_a_watch_event_larger_than_the_watch_buffer_arrives_whole,
            test_watch_resumes_after_a_dropped_connection_without_loss_or_doubles,
            test_relist_after_410_and_api_server_restart_serve_nothing_half_built,
            test_freeze_through_the_configmap_reaches_two_replicas_within_2s,
            test_guard_service_account_with_only_the_manifest_rbac,
        ])
    finally:
        ENV.stop()


if __name__ == "__main__":
    main()
