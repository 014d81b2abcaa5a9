#!/usr/bin/env python3
"""Events and pending time against a real kube-apiserver (tests/e2e/envtest.py).

The guard (the ASan+UBSan build) runs as its ServiceAccount with only the manifests' RBAC
(manifests/base/rbac.yaml), registered as the validating webhook for claim
creation, claim status and Pod status with sideEffects: NoneOnDryRun, and
kube-scheduler, the driver and the resource-claim controller write as they do
(see tests/e2e/test_ledger_envtest.py). Then:

- each ledger refusal (ledger.pool.fresh, ledger.device.duplicate,
  ledger.numa.split, ledger.pod.amounts) and each freeze hold
  (claim.freeze.allocate, claim.freeze.create) gives one Event series on its
  object, found with a field selector on regarding.name, with the rule id in
  CamelCase as reason, a note saying what to do, reportingController
  dra-guard.io/guard and the replica's name;
- a dryRun request is refused but emits nothing;
- 1,000 refusals of one claim are one Event whose series count is 1,000;
- /debug/pending lists a claim held back by a freeze with its reason, since
  when and its Pod, and drops it once the view shows it allocated, which
  dra_guard_pending_seconds counts;
- the ServiceAccount may create and patch Events and write nothing else
  (SelfSubjectAccessReview and SelfSubjectRulesReview with its own token).
"""

import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import envtest  # noqa: E402
import guard  # noqa: E402
from guard import check, fail  # noqa: E402

envtest.require("test_events_envtest", fake=True)

V1 = envtest.RESOURCE_V1
SLICES = V1 + "/resourceslices"
NS = "team-a"
NODE = "worker-1"
DRIVER = "dra.example.com"
DRIVER_SA = "system:serviceaccount:dra-system:dra-example-driver"
SCHEDULER = "system:kube-scheduler"
CONTROLLER = "system:serviceaccount:kube-system:resource-claim-controller"
GUARD_NS = "dra-guard"
CM = "dra-guard-policy"
REPLICA = "dra-guard-test-0"
BOUND = 60.0        # the longest any wait may take (a failure bound, not a measurement)
BURST = 1000

POLICY = """apiVersion: dra-guard.io/v1alpha1
kind: Policy
enforcement:
  rules:
    ledger.numa.split: deny   # advisory by default; an operator may make it refuse
drivers:
  dra.example.com:
    serviceAccounts: [%s]
    scope: cluster
    numaAttribute: dra.example.com/numaNode
    numaAlign: true
ledger:
  settleWindow: 8s
""" % DRIVER_SA

ENV = None
GUARD = None
TOKEN = None
UID_OF = {}


# --- objects, written as their real writers write them ----------------------------------------------

def device(name, numa, cpu="2", mem="4Gi"):
    return {"name": name, "attributes": {DRIVER + "/numaNode": {"int": numa}},
            "nodeAllocatableResourceMappings": {"cpu": {"allocationMultiplier": cpu},
                                                "memory": {"allocationMultiplier": mem}}}


def slice_obj(name, pool, count, devices):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": DRIVER, "nodeName": NODE,
                     "pool": {"name": pool, "generation": 1, "resourceSliceCount": count},
                     "devices": devices}}


def claim_path(name, sub=""):
    return V1 + "/namespaces/%s/resourceclaims/%s%s" % (NS, name, sub)


def claim_obj(name):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER,
                                                                            "allocationMode": "All"}}]}}}


def make_claim(name):
    out = ENV.create(V1 + "/namespaces/%s/resourceclaims" % NS, claim_obj(name), identity="controller")
    UID_OF[name] = out["metadata"]["uid"]


def make_pod(name, claim):
    out = ENV.create("/api/v1/namespaces/%s/pods" % NS, {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"automountServiceAccountToken": False,
                 "resourceClaims": [{"name": claim, "resourceClaimName": claim}],
                 "containers": [{"name": "app", "image": "registry.example/app:1",
                                 "resources": {"requests": {"cpu": "500m", "memory": "1Gi"},
                                               "claims": [{"name": claim}]}}]}})
    UID_OF[name] = out["metadata"]["uid"]


def allocation_body(claim, pod, devices, pool=NODE):
    c = ENV.get(claim_path(claim))
    c["status"] = {"allocation": {
        "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": pool, "device": d} for d in devices]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [NODE]}]}]}},
        "reservedFor": [{"resource": "pods", "name": pod, "uid": UID_OF[pod]}]}
    return c


def allocate(claim, pod, devices, pool=NODE, dry_run=False):
    """kube-scheduler's PreBind: the allocation and the reservation in one UpdateStatus."""
    path = claim_path(claim, "/status") + ("?dryRun=All" if dry_run else "")
    return ENV.request("PUT", path, allocation_body(claim, pod, devices, pool), identity="scheduler")


def pod_status(pod, claim, amounts):
    body = {"status": {"nodeAllocatableResourceClaimStatuses": [
        {"resourceClaimName": claim, "containers": ["app"], "resources": amounts}]}}
    return ENV.request("PATCH", "/api/v1/namespaces/%s/pods/%s/status" % (NS, pod), json.dumps(body),
                       identity="scheduler", ctype="application/strategic-merge-patch+json")


def pod_and_claim(name):
    make_claim(name)
    make_pod(name + "-pod", name)
    return name, name + "-pod"


# --- what the API server and the guard say ---------------------------------------------------------

def events_of(name, ns=NS):
    """kubectl get events --field-selector regarding.name=NAME, through events.k8s.io/v1."""
    q = urllib.parse.quote("regarding.name=%s" % name)
    out = ENV.get("/apis/events.k8s.io/v1/namespaces/%s/events?fieldSelector=%s" % (ns, q))
    return out["items"]


def count_of(ev):
    return (ev.get("series") or {}).get("count", 1)


def wait_series(name, reason, at_least=1, kind="Pod"):
    """The one Event series on name with reason, once its count reached at_least."""
    deadline = time.time() + BOUND
    evs = []
    while time.time() < deadline:
        evs = [e for e in events_of(name) if e.get("reason") == reason]
        if evs and count_of(evs[0]) >= at_least:
            break
        time.sleep(0.1)
    else:
        fail("no %s Event on %s with count >= %d within %ss: %s\nguard log:\n%s"
             % (reason, name, at_least, BOUND, json.dumps(evs)[:2000], GUARD.log()[-3000:]))
    check(len(evs) == 1, "%d Events with reason %s on %s, want one series: %s" % (len(evs), reason, name,
                                                                                  json.dumps(evs)[:2000]))
    e = evs[0]
    check(e["regarding"]["kind"] == kind and e["regarding"]["name"] == name and e["regarding"]["namespace"] == NS,
          "regarding %s" % e["regarding"])
    check(e["reportingController"] == "dra-guard.io/guard", "reportingController %r" % e["reportingController"])
    check(e["reportingInstance"] == REPLICA, "reportingInstance %r" % e["reportingInstance"])
    check(e["type"] == "Warning", "type %r" % e["type"])
    check(len(e["note"]) <= 1024 and e["note"], "note %r" % e["note"])
    return e


def metric(name, **labels):
    return guard.metric(GUARD.metrics(), name, **labels) or 0


def pending():
    st, body = guard.http_get(GUARD.metrics_port, "/debug/pending")
    check(st == 200, "/debug/pending answered %d: %s" % (st, body[:300]))
    return json.loads(body)


def wait_view_allocated(claim):
    """Until this replica's view holds claim allocated and reserved: a Pod
    status judged before that is undecided (allowed), as the rule must be
    while its view lags, and an allowed status is then stored and never
    judged again."""
    def seen():
        st, body = guard.http_get(GUARD.metrics_port, "/debug/view")
        if st != 200:
            return False
        return any(c["name"] == claim and c["allocated"] and c["reservedFor"] > 0
                   for c in json.loads(body).get("resourceclaims", []))
    GUARD.wait(seen, "the view to hold %s allocated" % claim, timeout=BOUND)


def set_freeze(on):
    ENV.patch("/api/v1/namespaces/%s/configmaps/%s" % (GUARD_NS, CM),
              {"data": {"freeze": "true" if on else "false", "freeze-reason": "INC-7: mapping rollback" if on else ""}})
    GUARD.wait(lambda: GUARD.ready()[1]["policy"]["freeze"] is on, "the freeze to be %s" % on, timeout=BOUND)


# --- scenarios ---------------------------------------------------------------------------------------

def test_pool_fresh_refusals_are_one_series_on_the_pod():
    claim, pod = pod_and_claim("fresh")
    for _ in range(3):
        st, out = allocate(claim, pod, ["r-0"], pool="rebuilding")
        check(st == 403 and "ledger.pool.fresh" in json.dumps(out), "allocation from an incomplete pool: %d %s"
              % (st, out))
    e = wait_series(pod, "LedgerPoolFresh", at_least=3)
    check(count_of(e) == 3, "series count %d, want 3" % count_of(e))
    check(e["related"]["kind"] == "ResourceClaim" and e["related"]["name"] == claim
          and e["related"]["uid"] == UID_OF[claim], "related %s" % e.get("related"))
    check(e["regarding"]["uid"] == UID_OF[pod], "regarding uid")
    check(e["action"] == "Allocate", "action %r" % e["action"])
    check("incomplete" in e["note"] and "clears when all are" in e["note"] and "the scheduler retries" in e["note"],
          "the note says what is wrong, when it clears and what to do: %r" % e["note"])
    check(e["series"]["lastObservedTime"] >= e["eventTime"], "series lastObservedTime %s" % e["series"])


def test_duplicate_device_refusal():
    a, pa = pod_and_claim("dup-a")
    b, pb = pod_and_claim("dup-b")
    st, out = allocate(a, pa, ["gpu-0"])
    check(st == 200, "the first allocation of gpu-0 was refused: %s" % out)
    wait_view_allocated(a)
    deadline = time.time() + BOUND
    while time.time() < deadline:
        st, out = allocate(b, pb, ["gpu-0"])
        if st == 403:
            break
        check(st != 200, "a second allocation of gpu-0 was allowed")
        time.sleep(0.1)
    check("ledger.device.duplicate" in json.dumps(out), "refused by %s" % out)
    e = wait_series(pb, "LedgerDeviceDuplicate")
    check(e["related"]["name"] == b, "related %s" % e["related"])
    check(not events_of(pa), "an Event on the Pod whose allocation was allowed: %s" % events_of(pa))


def test_numa_split_refusal():
    claim, pod = pod_and_claim("numa")
    st, out = allocate(claim, pod, ["gpu-4", "gpu-5"])
    check(st == 403 and "ledger.numa.split" in json.dumps(out), "a cross-NUMA allocation: %d %s" % (st, out))
    e = wait_series(pod, "LedgerNumaSplit")
    check("numaAlign" in e["note"], "note %r" % e["note"])


def test_pod_amounts_refusal():
    claim, pod = pod_and_claim("amounts")
    st, out = allocate(claim, pod, ["gpu-1"])
    check(st == 200, "allocation refused: %s" % out)
    wait_view_allocated(claim)
    deadline = time.time() + BOUND
    while time.time() < deadline:
        st, out = pod_status(pod, claim, {"cpu": "7", "memory": "4Gi"})
        if st == 403:
            break
        check(st != 200, "a Pod status with amounts the mappings do not give was allowed")
        time.sleep(0.1)
    check("ledger.pod.amounts" in json.dumps(out), "refused by %s" % out)
    e = wait_series(pod, "LedgerPodAmounts")
    check(e["action"] == "UpdatePodStatus", "action %r" % e["action"])
    check(not [c for c in pending()["claims"] if c["name"] == claim], "a Pod status refusal is not a pending claim")


def test_freeze_holds_are_events_and_pending_time():
    claim, pod = pod_and_claim("frozen")
    before = metric("dra_guard_pending_seconds_count", reason="ClaimFreezeAllocate")
    set_freeze(True)
    try:
        st, out = ENV.request("POST", V1 + "/namespaces/%s/resourceclaims" % NS, claim_obj("frozen-new"),
                              identity="controller")
        check(st == 403 and "claim.freeze.create" in json.dumps(out), "claim creation in a freeze: %d %s" % (st, out))
        e = wait_series("frozen-new", "ClaimFreezeCreate", kind="ResourceClaim")
        check("INC-7: mapping rollback" in e["note"] and "ends the freeze" in e["note"], "note %r" % e["note"])
        t0 = time.time()
        st, out = allocate(claim, pod, ["gpu-2"])
        check(st == 403 and "claim.freeze.allocate" in json.dumps(out), "allocation in a freeze: %d %s" % (st, out))
        e = wait_series(pod, "ClaimFreezeAllocate")
        check(e["related"]["name"] == claim, "related %s" % e["related"])
        held = [c for c in pending()["claims"] if c["name"] == claim]
        check(len(held) == 1, "/debug/pending: %s" % pending())
        h = held[0]
        check(h["namespace"] == NS and h["pod"] == pod and h["reason"] == "ClaimFreezeAllocate"
              and h["rule"] == "claim.freeze.allocate" and h["uid"] == UID_OF[claim] and h["refusals"] == 1,
              "/debug/pending entry %s" % h)
        check(pending()["instance"] == REPLICA, "instance")
        # The CLI reads the same list from the running guard.
        out = subprocess.run([guard.binary(), "pending", "--url", "http://127.0.0.1:%d" % GUARD.metrics_port],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
        check(out.returncode == 0, "dra-guard pending: %s" % out.stderr.decode())
        text = out.stdout.decode()
        check("%s/%s" % (NS, claim) in text and pod in text and "ClaimFreezeAllocate" in text,
              "dra-guard pending printed:\n%s" % text)
        time.sleep(1.0)
    finally:
        set_freeze(False)
    st, out = allocate(claim, pod, ["gpu-2"])
    check(st == 200, "allocation after the freeze refused: %s" % out)
    waited = time.time() - t0
    GUARD.wait(lambda: not [c for c in pending()["claims"] if c["name"] == claim],
               "/debug/pending to drop the allocated claim", timeout=BOUND)
    GUARD.wait(lambda: metric("dra_guard_pending_seconds_count", reason="ClaimFreezeAllocate") == before + 1,
               "dra_guard_pending_seconds to count the claim", timeout=BOUND)
    total = metric("dra_guard_pending_seconds_sum", reason="ClaimFreezeAllocate")
    check(1.0 <= total <= waited + 5, "pending seconds %.3f for a claim held about %.1fs" % (total, waited))


def test_dry_run_refusal_emits_nothing():
    claim, pod = pod_and_claim("dry")
    ctl, ctl_pod = pod_and_claim("dry-control")
    refusals = metric("dra_guard_events_refusals_total", reason="LedgerPoolFresh")
    st, out = allocate(claim, pod, ["r-0"], pool="rebuilding", dry_run=True)
    check(st == 403 and "ledger.pool.fresh" in json.dumps(out), "the dry-run request was not refused: %d %s" % (st, out))
    # A real refusal after it: the worker handles them in order, so once the
    # second one's Event is there the first would have been too.
    st, out = allocate(ctl, ctl_pod, ["r-0"], pool="rebuilding")
    check(st == 403, "the control refusal: %d %s" % (st, out))
    wait_series(ctl_pod, "LedgerPoolFresh")
    check(events_of(pod) == [], "a dryRun request emitted an Event: %s" % events_of(pod))
    check(metric("dra_guard_events_refusals_total", reason="LedgerPoolFresh") == refusals + 1,
          "the dry-run refusal was counted for an Event")
    check(not [c for c in pending()["claims"] if c["name"] == claim], "a dry-run refusal is pending")


def test_a_thousand_refusals_are_one_series_of_a_thousand():
    claim, pod = pod_and_claim("burst")
    body = allocation_body(claim, pod, ["r-0"], pool="rebuilding")
    path = claim_path(claim, "/status")
    created = metric("dra_guard_events_sent_total", request="create")
    codes = {}
    lock = threading.Lock()

    def worker(n):
        for _ in range(n):
            st, _ = ENV.request("PUT", path, body, identity="scheduler")
            with lock:
                codes[st] = codes.get(st, 0) + 1

    t0 = time.time()
    threads = [threading.Thread(target=worker, args=(BURST // 8,)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.time() - t0
    print("     %d refusals sent in %.1fs" % (BURST, took), flush=True)
    check(codes == {403: BURST}, "answers %s, want %d refusals" % (codes, BURST))
    e = wait_series(pod, "LedgerPoolFresh", at_least=BURST)
    check(count_of(e) == BURST, "series count %d, want %d" % (count_of(e), BURST))
    check(metric("dra_guard_events_sent_total", request="create") == created + 1,
          "%d Events created for one series" % (metric("dra_guard_events_sent_total", request="create") - created))
    check(metric("dra_guard_events_dropped_total", cause="queue_full") == 0, "Events dropped: the queue was full")
    held = [c for c in pending()["claims"] if c["name"] == claim]
    check(len(held) == 1 and held[0]["refusals"] == BURST, "/debug/pending %s" % held)


def test_service_account_may_create_and_patch_events_and_nothing_more():
    def allowed(verb, group, resource, ns=NS, sub=""):
        out = ENV.create("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"namespace": ns, "verb": verb, "group": group, "resource": resource,
                                            "subresource": sub}}}, token=TOKEN)
        return out["status"].get("allowed", False)

    for verb in ("create", "patch"):
        check(allowed(verb, "events.k8s.io", "events"), "the guard may not %s events.k8s.io Events" % verb)
        check(allowed(verb, "events.k8s.io", "events", ns="other"), "%s Events in another namespace" % verb)
    for verb, group, resource, sub in (("get", "events.k8s.io", "events", ""), ("list", "events.k8s.io", "events", ""),
                                       ("update", "events.k8s.io", "events", ""),
                                       ("delete", "events.k8s.io", "events", ""),
                                       ("deletecollection", "events.k8s.io", "events", ""),
                                       ("create", "", "events", ""), ("patch", "", "events", ""),
                                       ("create", "", "pods", ""), ("patch", "", "pods", "status"),
                                       ("update", "resource.k8s.io", "resourceclaims", "status"),
                                       ("create", "resource.k8s.io", "resourceslices", ""),
                                       ("delete", "", "pods", ""), ("create", "", "configmaps", "")):
        check(not allowed(verb, group, resource, sub=sub), "the guard may %s %s/%s%s" % (
            verb, group or "core", resource, "/" + sub if sub else ""))
    # Every rule that grants more than reading, in this namespace: only Events
    # (and the self-reviews every authenticated user may make).
    out = ENV.create("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": NS}},
        token=TOKEN)
    writes = set()
    for r in out["status"]["resourceRules"]:
        for v in r["verbs"]:
            if v in ("get", "list", "watch"):
                continue
            for g in r.get("apiGroups", []):
                for res in r.get("resources", []):
                    writes.add((g, res, v))
    self_reviews = {("authorization.k8s.io", "selfsubjectaccessreviews", "create"),
                    ("authorization.k8s.io", "selfsubjectrulesreviews", "create"),
                    ("authentication.k8s.io", "selfsubjectreviews", "create")}
    # The metrics port's checks (--metrics-auth=kubernetes) create reviews,
    # which store nothing: they ask the API server a question.
    metrics_checks = {("authentication.k8s.io", "tokenreviews", "create"),
                      ("authorization.k8s.io", "subjectaccessreviews", "create")}
    check(writes - self_reviews - metrics_checks == {("events.k8s.io", "events", "create"),
                                                     ("events.k8s.io", "events", "patch")},
          "the guard's ServiceAccount may write %s" % sorted(writes - self_reviews))


def main():
    global ENV, GUARD, TOKEN
    ENV = envtest.EnvTest(identities={
        "driver": (DRIVER_SA, ["system:serviceaccounts", "system:masters"]),
        "scheduler": (SCHEDULER, ["system:masters"]),
        "controller": (CONTROLLER, ["system:serviceaccounts", "system:masters"]),
    })
    ENV.start()
    try:
        ENV.ensure_namespace(NS)
        ENV.ensure_namespace(GUARD_NS)
        ENV.must("POST", "/api/v1/namespaces/%s/serviceaccounts" % NS,
                 {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}, ok=(201, 409))
        ENV.create("/api/v1/namespaces/%s/configmaps" % GUARD_NS, {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CM},
            "data": {"policy.yaml": POLICY, "freeze": "false"}})
        ENV.must("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}},
                 ok=(201, 409))
        ENV.create(SLICES, slice_obj("worker-1-gpus", NODE, 1,
                                     [device("gpu-0", 0), device("gpu-1", 0), device("gpu-2", 1),
                                      device("gpu-3", 1), device("gpu-4", 0), device("gpu-5", 1)]))
        # A pool of two slices of which one is published: rebuilding.
        ENV.create(SLICES, slice_obj("worker-1-rebuilding-0", "rebuilding", 2, [device("r-0", 0)]))
        rbac = os.path.join(guard.ROOT, "manifests", "base", "rbac.yaml")
        with open(rbac) as f:
            objs = subprocess.run([guard.binary(), "convert", "-"], input=f.read().encode(), stdout=subprocess.PIPE,
                                  check=True).stdout.decode().splitlines()
        ENV.apply_objects([json.loads(line) for line in objs if line.strip()])
        TOKEN = ENV.sa_token(GUARD_NS, "dra-guard")
        with guard.TempDir() as d:
            guard.make_certs(d)
            kc = ENV.kubeconfig(token=TOKEN, path=os.path.join(d, "kc.yaml"))
            # --view-recheck 0: a refusal of an incomplete pool would otherwise
            # wait for a newer view first, and the burst of 1,000 would take minutes.
            GUARD = guard.Server(d, args=["--kubeconfig", kc, "--policy-configmap", "%s/%s" % (GUARD_NS, CM),
                                          "--replica-name", REPLICA, "--view-recheck", "0", "--threads", "8"],
                                 asan=True, wait_ready=False)
            try:
                GUARD.wait(lambda: GUARD.ready()[0], "the guard to sync", timeout=BOUND)
                GUARD.wait(lambda: GUARD.ready()[1]["policy"]["source"] == "api", "the policy from the API")
                with open(os.path.join(d, "ca.crt")) as f:
                    ca = f.read()
                url = "https://127.0.0.1:%d/validate" % GUARD.port
                ENV.register_webhook("events-test", url, ca, [
                    {"apiGroups": ["resource.k8s.io"], "apiVersions": ["v1"], "operations": ["CREATE"],
                     "resources": ["resourceclaims"]},
                    {"apiGroups": ["resource.k8s.io"], "apiVersions": ["v1"], "operations": ["UPDATE"],
                     "resources": ["resourceclaims/status"]},
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"],
                     "resources": ["pods/status"]}], side_effects="NoneOnDryRun")
                time.sleep(1.0)   # the API server picks the webhook configuration up
                guard.run_tests([
                    test_pool_fresh_refusals_are_one_series_on_the_pod,
                    test_duplicate_device_refusal,
                    test_numa_split_refusal,
                    test_pod_amounts_refusal,
                    test_freeze_holds_are_events_and_pending_time,
                    test_dry_run_refusal_emits_nothing,
                    test_a_thousand_refusals_are_one_series_of_a_thousand,
                    test_service_account_may_create_and_patch_events_and_nothing_more,
                ])
                check(GUARD.find_log("event not created") is None and GUARD.find_log("event series not patched") is None,
                      "an Event write failed:\n%s" % GUARD.log()[-3000:])
                # Under ASan and UBSan: the worker, the queue and the series
                # leave no report, and SIGTERM stops the worker cleanly.
                code = GUARD.stop()
                log = GUARD.log()
                check(code == 0 and "AddressSanitizer" not in log and "LeakSanitizer" not in log
                      and "runtime error" not in log, "exit %d, sanitizer report:\n%s" % (code, log[-4000:]))
            finally:
                GUARD.stop()
    finally:
        ENV.stop()


if __name__ == "__main__":
    main()
