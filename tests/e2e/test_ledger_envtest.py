#!/usr/bin/env python3
"""The ledger against a real kube-apiserver (tests/e2e/envtest.py), with the
guard registered as its validating webhook and every object written the way
its real writer writes it:

- the driver (a ServiceAccount user) publishes ResourceSlices;
- the kubelet (system:node:worker-1) deletes its node's slices on a restart;
- kube-scheduler (system:kube-scheduler) allocates in PreBind with an
  UpdateStatus of the claim (allocation and reservedFor in one write), then
  strategic-merge patches the Pod's status.nodeAllocatableResourceClaimStatuses,
  then binds the Pod; it clears the statuses and the reservation on Unreserve;
- the resource-claim controller deallocates released claims.

The scenarios: same- and cross-NUMA claims, a claim shared by two Pods, release
retries (the same deallocation twice, and a device reused at once), a node
restart (slices deleted and republished, the pool settling), a driver restart
with a stale writer, a duplicate device allocation, a mapping change under a
live claim, and a second driver's pool of the same name on the node. After each step GET /debug/ledger must show every node's DRA total
equal to the sum of its NUMA sub-ledgers and to what its Pods' statuses say,
and every duplicate must have been denied and counted. /debug/ledger?at=freeze
must keep the ledger of the moment a freeze began.

With DRA_GUARD_RECORD_AUDIT=DIR the API server also keeps an audit log under
tests/fixtures/replay/audit-policy.yaml, and the run leaves it in DIR/audit.log
with the guard's policy in DIR/policy.yaml: the recorded traffic `dra-guard
replay` is tested with (make replay-fixtures)."""

import copy
import json
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import envtest  # noqa: E402
import guard  # noqa: E402
from guard import check, fail  # noqa: E402

envtest.require("test_ledger_envtest", fake=True)

V1 = envtest.RESOURCE_V1
SLICES = V1 + "/resourceslices"
NS = "ledger"
NODE = "worker-1"
DRIVER = "dra.example.com"
DRIVER_SA = "system:serviceaccount:dra-system:dra-example-driver"
NIC = "nic.example.com"
NIC_SA = "system:serviceaccount:nic-system:nic-driver"
SCHEDULER = "system:kube-scheduler"
CONTROLLER = "system:serviceaccount:kube-system:resource-claim-controller"
GUARD_NS = "dra-guard"
SETTLE = 8          # ledger.settleWindow in this test's policy, seconds (room for a loaded machine)
BOUND = 10.0        # the longest any wait may take (a failure bound, not a measurement)
MAPPING_RACE_S = 5.5  # a mapping change this long after an allocation is not a race (ledger_rules.c)

POLICY = """apiVersion: dra-guard.io/v1alpha1
kind: Policy
drivers:
  dra.example.com:
    serviceAccounts: [%s]
    scope: cluster
    numaAttribute: dra.example.com/numaNode
    numaAlign: true
  nic.example.com:
    serviceAccounts: [%s]
    scope: cluster
ledger:
  settleWindow: %ds
""" % (DRIVER_SA, NIC_SA, SETTLE)

ENV = None
GUARD = None
UID_OF = {}
ALLOCATED = {}


# --- objects, written as their real writers write them ----------------------------------------------

def device(name, numa, cpu="2", mem="4Gi"):
    return {"name": name, "attributes": {DRIVER + "/numaNode": {"int": numa}},
            "nodeAllocatableResourceMappings": {"cpu": {"allocationMultiplier": cpu},
                                                "memory": {"allocationMultiplier": mem}}}


def slice_obj(name, gen, devices, node=NODE):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": gen, "resourceSliceCount": 1},
                     "devices": devices}}


DEVICES = [device("gpu-0", 0), device("gpu-1", 0), device("gpu-2", 1), device("gpu-3", 1),
           device("gpu-4", 0), device("gpu-5", 1)]
SLICE = "worker-1-dra-example-com"


def publish(name, gen, devices=DEVICES, expect=True):
    """The driver creates or updates its slice."""
    st, out = ENV.request("GET", SLICES + "/" + name)
    obj = slice_obj(name, gen, devices)
    if st == 200:
        obj["metadata"]["resourceVersion"] = out["metadata"]["resourceVersion"]
        st, out = ENV.request("PUT", SLICES + "/" + name, obj, identity="driver")
    else:
        st, out = ENV.request("POST", SLICES, obj, identity="driver")
    if expect:
        check(st in (200, 201), "the driver's slice write was refused: %s" % out)
    return st, out


def node_obj():
    ENV.must("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}},
             ok=(201, 409))
    n = ENV.get("/api/v1/nodes/" + NODE)
    n["status"] = {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                   "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"}}
    ENV.must("PUT", "/api/v1/nodes/%s/status" % NODE, n)


def claim_path(name, sub=""):
    return V1 + "/namespaces/%s/resourceclaims/%s%s" % (NS, name, sub)


def make_claim(name):
    out = ENV.create(V1 + "/namespaces/%s/resourceclaims" % NS, {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER,
                                                                        "allocationMode": "All"}}]}}})
    UID_OF[name] = out["metadata"]["uid"]


def make_pod(name, claims):
    out = ENV.create("/api/v1/namespaces/%s/pods" % NS, {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"automountServiceAccountToken": False,
                 "resourceClaims": [{"name": c, "resourceClaimName": c} for c in claims],
                 "containers": [{"name": "app", "image": "registry.example/app:1",
                                 "resources": {"requests": {"cpu": "500m", "memory": "1Gi"},
                                               "claims": [{"name": c} for c in claims]}}]}})
    UID_OF[name] = out["metadata"]["uid"]


def allocate(claim, devices, pods, expect_ok=True):
    """kube-scheduler's PreBind: the allocation and the reservation in one UpdateStatus."""
    c = ENV.get(claim_path(claim))
    c["status"] = {"allocation": {
        "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": NODE, "device": d} for d in devices]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [NODE]}]}]}},
        "reservedFor": [{"resource": "pods", "name": p, "uid": UID_OF[p]} for p in pods]}
    st, out = ENV.request("PUT", claim_path(claim, "/status"), c, identity="scheduler")
    if expect_ok:
        check(st == 200, "the scheduler's allocation of %s was refused: %s" % (claim, out))
    ALLOCATED[claim] = time.time()
    return st, out


def reserve(claim, pods):
    """The scheduler adds a consumer to an allocated claim."""
    c = ENV.get(claim_path(claim))
    c["status"]["reservedFor"] = [{"resource": "pods", "name": p, "uid": UID_OF[p]} for p in pods]
    st, out = ENV.request("PUT", claim_path(claim, "/status"), c, identity="scheduler")
    check(st == 200, "the reservation of %s was refused: %s" % (claim, out))


def deallocate(claim):
    """The resource-claim controller: reservation gone, allocation cleared."""
    c = ENV.get(claim_path(claim))
    c["status"] = {}
    st, out = ENV.request("PUT", claim_path(claim, "/status"), c, identity="controller")
    check(st == 200, "the deallocation of %s was refused: %s" % (claim, out))


def pod_status(pod, statuses, expect_ok=True):
    """kube-scheduler's PreBind patch of the Pod's node-allocatable statuses
    (strategic merge, on the status subresource); None clears them."""
    body = {"status": {"nodeAllocatableResourceClaimStatuses": statuses}}
    st, out = ENV.request("PATCH", "/api/v1/namespaces/%s/pods/%s/status" % (NS, pod), json.dumps(body),
                          identity="scheduler", ctype="application/strategic-merge-patch+json")
    if expect_ok:
        check(st == 200, "the scheduler's status of %s was refused: %s" % (pod, out))
    return st, out


def status_entry(claim, amounts):
    return {"resourceClaimName": claim, "containers": ["app"], "resources": amounts}


def bind(pod):
    ENV.must("POST", "/api/v1/namespaces/%s/pods/%s/binding" % (NS, pod),
             {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod},
              "target": {"apiVersion": "v1", "kind": "Node", "name": NODE}}, identity="scheduler")


def schedule(pod, claim, devices, amounts):
    """A Pod through the scheduler's binding cycle."""
    allocate(claim, devices, [pod])
    pod_status(pod, [status_entry(claim, amounts)])
    bind(pod)


# --- what the guard's ledger says ---------------------------------------------------------------

QTY = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "Ki": 1024, "Mi": 1024 ** 2, "Gi": 1024 ** 3,
       "Ti": 1024 ** 4}


def qty(s):
    for suf in sorted(QTY, key=len, reverse=True):
        if suf and s.endswith(suf):
            return float(s[:-len(suf)]) * QTY[suf]
    return float(s)


def ledger(at_freeze=False):
    st, body = guard.http_get(GUARD.metrics_port, "/debug/ledger?node=%s%s" % (NODE, "&at=freeze" if at_freeze else ""))
    check(st == 200, "/debug/ledger answered %d: %s" % (st, body[:300]))
    return json.loads(body)


def view_has(pred):
    """Wait until the API server's state reached the view (the ledger reads it)."""
    deadline = time.time() + BOUND
    while time.time() < deadline:
        lg = ledger()
        if pred(lg):
            return lg
        time.sleep(0.02)
    fail("the ledger did not reach the expected state in %ss: %s" % (BOUND, json.dumps(ledger())[:3000]))


def node_of(lg):
    nodes = lg["nodes"]
    check(len(nodes) == 1 and nodes[0]["name"] == NODE, "ledger nodes %s" % [n["name"] for n in nodes])
    return nodes[0]


def entries(lg):
    return sorted((e["claim"].split("/")[1], e["device"]) for e in node_of(lg)["entries"])


def claims_in(lg):
    return sorted(set(e["claim"].split("/")[1] for e in node_of(lg)["entries"]))


def balanced(lg, what):
    """Node totals = the sum of the NUMA sub-ledgers = what the Pod statuses say."""
    n = node_of(lg)
    for res, a in n["resources"].items():
        zones = sum(qty(v) for v in a["numa"].values())
        check(abs(qty(a["dra"]) - zones) < 1e-9, "%s: %s: DRA %s is not the sum of its NUMA zones %s"
              % (what, res, a["dra"], a["numa"]))
        check(abs(qty(a["dra"]) - qty(a["podStatuses"])) < 1e-9, "%s: %s: DRA %s, the Pod statuses say %s"
              % (what, res, a["dra"], a["podStatuses"]))
    check(n["balanced"], "%s: node not balanced: %s" % (what, json.dumps(n)[:2000]))
    return n


def settled(pred, what):
    """The view reached pred, and the ledger balances there."""
    lg = view_has(pred)
    return balanced(lg, what), lg


def metric(name, **labels):
    return guard.metric(GUARD.metrics(), name, **labels) or 0


def statuses_reached(lg):
    """The Pod statuses the view holds say what the claims charge: a claim
    whose Pod's status (or binding) the view has not delivered yet is
    unbound or omitted, which leaves the node balanced but not yet settled."""
    n = node_of(lg)
    return all(abs(qty(a["dra"]) - qty(a["podStatuses"])) < 1e-9 for a in n["resources"].values())


def pod_claims_settled(claims):
    return lambda lg: claims_in(lg) == sorted(claims) and node_of(lg)["balanced"] and statuses_reached(lg)


# --- scenarios ---------------------------------------------------------------------------------------

def test_same_numa_claim():
    make_claim("same")
    make_pod("pod-same", ["same"])
    schedule("pod-same", "same", ["gpu-0", "gpu-1"], {"cpu": "4", "memory": "8Gi"})
    n, lg = settled(pod_claims_settled(["same"]), "a same-NUMA claim")
    check(n["resources"]["cpu"]["numa"] == {"0": "4"}, "cpu by zone %s" % n["resources"]["cpu"]["numa"])
    check(entries(lg) == [("same", "gpu-0"), ("same", "gpu-1")], "entries %s" % entries(lg))
    check(metric("dra_guard_ledger_numa_split_total") == 0, "a same-zone claim counted as split")


def test_cross_numa_claim():
    make_claim("cross")
    make_pod("pod-cross", ["cross"])
    # gpu-4 in zone 0, gpu-5 in zone 1: the policy asks gpu claims for one
    # zone, so the allocation is warned and counted, not refused.
    schedule("pod-cross", "cross", ["gpu-4", "gpu-5"], {"cpu": "4", "memory": "8Gi"})
    n, _ = settled(pod_claims_settled(["cross", "same"]), "a cross-NUMA claim")
    check(n["resources"]["cpu"]["numa"] == {"0": "6", "1": "2"}, "cpu by zone %s" % n["resources"]["cpu"]["numa"])
    check(n["resources"]["memory"]["numa"] == {"0": "12Gi", "1": "4Gi"},
          "memory by zone %s" % n["resources"]["memory"]["numa"])
    check(metric("dra_guard_ledger_numa_split_total") == 1, "the placement across zones was not counted once")


def test_ledger_metrics_follow_the_view():
    """A scrape after a view change shows the new ledger: each scrape
    brings the kept ledger to the view of the moment by an update that
    recounts what changed, not by a whole build."""
    lg = ledger()
    want = len(node_of(lg)["entries"])
    GUARD.wait(lambda: metric("dra_guard_ledger_entries") == want,
               "the ledger's metrics to show the %d entries /debug/ledger shows" % want)
    check(metric("dra_guard_ledger_builds_total", result="built") >= 1, "no build counted")
    check(metric("dra_guard_ledger_builds_total", result="updated") >= 1,
          "the view changed since the first build, and the ledger was never updated")
    check(metric("dra_guard_ledger_update_seconds") >= 0, "the update's time is not exported")
    check(metric("dra_guard_ledger_age_seconds") >= 0, "the ledger's age is not exported")


def test_claim_shared_by_two_pods_counts_once():
    make_pod("pod-share", ["same"])
    reserve("same", ["pod-same", "pod-share"])
    pod_status("pod-share", [status_entry("same", {"cpu": "4", "memory": "8Gi"})])
    bind("pod-share")
    n, lg = settled(lambda lg: node_of(lg)["pods"] == 3 and node_of(lg)["balanced"] and statuses_reached(lg), "a claim shared by two Pods")
    check(entries(lg).count(("same", "gpu-0")) == 1, "the shared claim counted %d times"
          % entries(lg).count(("same", "gpu-0")))
    check(n["resources"]["cpu"]["dra"] == "8", "DRA cpu %s, want 8 (same 4 and cross 4, the shared one once)"
          % n["resources"]["cpu"]["dra"])


def test_release_retries_and_reuse_at_once():
    # pod-cross goes: the scheduler's statuses cleared, the Pod deleted, the
    # claim deallocated by the controller, which sends it again.
    pod_status("pod-cross", None)
    ENV.delete("/api/v1/namespaces/%s/pods/pod-cross" % NS)
    deallocate("cross")
    deallocate("cross")
    make_claim("reuse")
    make_pod("pod-reuse", ["reuse"])
    # gpu-5 is allocated again at once: a release the guard's watch has not
    # delivered yet must not become a denied duplicate.
    schedule("pod-reuse", "reuse", ["gpu-5"], {"cpu": "2", "memory": "4Gi"})
    n, lg = settled(pod_claims_settled(["reuse", "same"]), "the release, twice, and the device reused at once")
    check(n["resources"]["cpu"]["numa"] == {"0": "4", "1": "2"}, "zones %s" % n["resources"]["cpu"]["numa"])
    check(metric("dra_guard_ledger_duplicates_total") == 0, "a reuse after a release counted as a duplicate")


def test_duplicate_device_allocation_is_denied_and_counted():
    make_claim("dup")
    make_pod("pod-dup", ["dup"])
    st, out = allocate("dup", ["gpu-0"], ["pod-dup"], expect_ok=False)
    check(st >= 400 and "ledger.device.duplicate" in json.dumps(out), "a duplicate allocation answered %d: %s"
          % (st, out))
    GUARD.wait(lambda: metric("dra_guard_ledger_duplicates_total") == 1, "the duplicate to be counted")
    check(metric("dra_guard_ledger_rechecks_total", result="denied") >= 1, "the denial was not decided again")
    line = next((ln for ln in reversed(GUARD.log_lines()) if ln.get("msg") == "admission denied"
                 and "ledger.device.duplicate" in ln.get("rules", [])), None)
    check(line is not None, "no denial logged")
    check(line.get("claim_uid") == UID_OF["dup"], "the log line lacks the claim's UID: %s" % line)
    check(UID_OF["same"] in line.get("claim_uids", ""), "the log line lacks the holder's UID: %s" % line)
    settled(pod_claims_settled(["reuse", "same"]), "after the refused duplicate")


def test_mapping_change_under_a_live_claim():
    # The driver doubles gpu-5's cpu mapping (at a new generation): "reuse"
    # holds it and stays charged at the mapping it was allocated under. (A
    # change within seconds of an allocation leaves the Pod status written
    # for it undecided: the scheduler may have computed it either way; this
    # change comes later.)
    time.sleep(max(0.0, ALLOCATED["reuse"] + MAPPING_RACE_S - time.time()))
    changed = copy.deepcopy(DEVICES)
    changed[5] = device("gpu-5", 1, cpu="4")
    publish(SLICE, 2, changed)
    GUARD.wait(lambda: any("ledger.mapping.drift" in ln.get("rules", []) for ln in GUARD.log_lines()),
               "the mapping change under a live claim to be warned")
    n, lg = settled(lambda lg: lg["summary"]["claimsAtOldMapping"] == 1, "a mapping change under a live claim")
    kept = [e for e in node_of(lg)["entries"] if e["device"] == "gpu-5"]
    check(kept and kept[0]["amounts"]["cpu"] == "2" and not kept[0]["current"],
          "gpu-5 is not kept at its old mapping: %s" % kept)
    # A status for "reuse" at the new mapping is refused: the claim is charged at the old one.
    st, out = pod_status("pod-reuse", [status_entry("reuse", {"cpu": "4", "memory": "4Gi"})], expect_ok=False)
    check(st >= 400 and "ledger.pod.amounts" in json.dumps(out), "a status at the new mapping answered %d: %s"
          % (st, out))
    settled(pod_claims_settled(["reuse", "same"]), "after the refused status")


def test_node_restart_slices_deleted_and_republished():
    # The kubelet deletes its node's slices when it restarts; the driver
    # publishes again from generation 1; live claims keep their charges.
    ENV.delete(SLICES + "/" + SLICE, identity="kubelet")
    publish(SLICE, 1)
    back = time.time()
    settled(pod_claims_settled(["reuse", "same"]), "after the node's restart")
    make_claim("early")
    make_pod("pod-early", ["early"])
    st, out = allocate("early", ["gpu-2"], ["pod-early"], expect_ok=False)
    if time.time() - back < SETTLE:
        # Within the settle window the pool is not fresh: the Pod waits.
        check(st >= 400 and "ledger.pool.fresh" in json.dumps(out), "an allocation right after the restart "
              "answered %d: %s" % (st, out))
        check(metric("dra_guard_ledger_pending_total", cause="restarted") >= 1, "the wait was not counted")
        time.sleep(max(0.0, SETTLE + 0.5 - (time.time() - back)))
        allocate("early", ["gpu-2"], ["pod-early"])
    pod_status("pod-early", [status_entry("early", {"cpu": "2", "memory": "4Gi"})])
    bind("pod-early")
    settled(pod_claims_settled(["early", "reuse", "same"]), "an allocation after the pool settled")


def test_driver_restart_with_a_stale_writer():
    publish(SLICE, 5)           # the current instance is at generation 5
    view_has(lambda lg: True)
    time.sleep(0.2)
    st, out = ENV.request("POST", SLICES, slice_obj("stale-" + SLICE, 3, [device("gpu-9", 0)]), identity="driver")
    check(st >= 400 and "slice.generation.stale" in json.dumps(out), "a stale writer's slice answered %d: %s"
          % (st, out))
    # The kubelet deletes the pool; a writer from before (generation 4) is
    # still refused, the restarted driver starting again at 1 is not.
    ENV.delete(SLICES + "/" + SLICE, identity="kubelet")
    time.sleep(0.2)
    st, out = ENV.request("POST", SLICES, slice_obj("stale-" + SLICE, 4, DEVICES), identity="driver")
    check(st >= 400 and "slice.generation.stale" in json.dumps(out), "generation 4 after the pool reached 5 "
          "answered %d: %s" % (st, out))
    publish(SLICE, 1)
    settled(pod_claims_settled(["early", "reuse", "same"]), "after the driver's restart")


def test_pool_name_collision_between_drivers():
    # A second driver names its node-local pool after the node too (as the
    # kubelet plugin helper does): harmless, unless a device name is in both
    # pools, which kube-scheduler cannot tell apart.
    def nic_slice(name, dev):
        obj = slice_obj(name, 1, [dev])
        obj["spec"]["driver"] = NIC
        return obj

    st, out = ENV.request("POST", SLICES, nic_slice("worker-1-nic-a", device("gpu-0", 0)), identity="nic")
    check(st >= 400 and "slice.pool.collision" in json.dumps(out), "a device name both drivers publish in pool %s "
          "answered %d: %s" % (NODE, st, out))
    nic = {"name": "nic-0", "nodeAllocatableResourceMappings": {"cpu": {"allocationMultiplier": "1"}}}
    st, out = ENV.request("POST", SLICES, nic_slice("worker-1-nic-b", nic), identity="nic")
    check(st == 201, "the second driver's own device name was refused: %s" % out)
    ENV.delete(SLICES + "/worker-1-nic-b", identity="nic")
    settled(pod_claims_settled(["early", "reuse", "same"]), "after the second driver's slices")


def test_freeze_keeps_the_ledger_of_its_moment():
    path = "/api/v1/namespaces/%s/configmaps/dra-guard-policy" % GUARD_NS
    cm = ENV.get(path)
    cm["data"] = {"policy.yaml": POLICY, "freeze": "true", "freeze-reason": "INC-1: the ledger test"}
    ENV.must("PUT", path, cm)
    GUARD.wait(lambda: metric("dra_guard_freeze_active") == 1, "the freeze to reach the guard")
    check(claims_in(ledger(at_freeze=True)) == ["early", "reuse", "same"], "the freeze's ledger %s"
          % claims_in(ledger(at_freeze=True)))
    # Releases go on during a freeze; the freeze's ledger stays as it was.
    pod_status("pod-early", None)
    ENV.delete("/api/v1/namespaces/%s/pods/pod-early" % NS)
    deallocate("early")
    settled(pod_claims_settled(["reuse", "same"]), "a release during the freeze")
    check(claims_in(ledger(at_freeze=True)) == ["early", "reuse", "same"], "the freeze's ledger moved")
    check(metric("dra_guard_ledger_duplicates_total") == 1, "duplicates counted %d, one was attempted"
          % metric("dra_guard_ledger_duplicates_total"))


RECORD = None
DUMP_KINDS = [(V1 + "/resourceslices", "resource.k8s.io/v1", "ResourceSlice"),
              (V1 + "/resourceclaims", "resource.k8s.io/v1", "ResourceClaim"),
              ("/api/v1/pods", "v1", "Pod"), ("/api/v1/nodes", "v1", "Node"),
              ("/api/v1/namespaces/%s/configmaps" % GUARD_NS, "v1", "ConfigMap")]


def record_dump():
    """When recording: the cluster as `kubectl get ... -A -o json` prints it at
    this moment, and how many lines the audit log holds then (the replay of
    the rest from this dump must end where the whole log's replay ends)."""
    items = []
    for path, api_version, kind in DUMP_KINDS:
        for item in ENV.get(path)["items"]:
            items.append(dict(apiVersion=api_version, kind=kind, **item))
    with open(os.path.join(RECORD, "dump.json"), "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}, f,
                  indent=1, sort_keys=True)
        f.write("\n")
    with open(ENV.audit_log_path()) as f:
        n = sum(1 for _ in f)
    with open(os.path.join(RECORD, "dump-line.txt"), "w") as f:
        f.write("%d\n" % n)


def record_freeze_off():
    """When recording: the freeze ends (the rollback drill's second half)."""
    path = "/api/v1/namespaces/%s/configmaps/dra-guard-policy" % GUARD_NS
    cm = ENV.get(path)
    cm["data"] = {"policy.yaml": POLICY, "freeze": "false"}
    ENV.must("PUT", path, cm)
    GUARD.wait(lambda: metric("dra_guard_freeze_active") == 0, "the freeze to end")


def main():
    global ENV, GUARD, RECORD
    record = RECORD = os.environ.get("DRA_GUARD_RECORD_AUDIT")
    audit = False
    if record:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "replay",
                               "audit-policy.yaml")) as f:
            audit = f.read()
    ENV = envtest.EnvTest(audit=audit, identities={
        "driver": (DRIVER_SA, ["system:serviceaccounts", "system:masters"]),
        "scheduler": (SCHEDULER, ["system:masters"]),
        "controller": (CONTROLLER, ["system:serviceaccounts", "system:masters"]),
        "kubelet": ("system:node:" + NODE, ["system:nodes", "system:masters"]),
        "nic": (NIC_SA, ["system:serviceaccounts", "system:masters"]),
    })
    ENV.start()
    try:
        ENV.ensure_namespace(NS)
        ENV.ensure_namespace(GUARD_NS)
        ENV.must("POST", "/api/v1/namespaces/%s/serviceaccounts" % NS,
                 {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}, ok=(201, 409))
        ENV.create("/api/v1/namespaces/%s/configmaps" % GUARD_NS, {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dra-guard-policy"},
            "data": {"policy.yaml": POLICY, "freeze": "false"}})
        node_obj()
        ENV.create(SLICES, slice_obj(SLICE, 1, DEVICES))
        with guard.TempDir() as d:
            guard.make_certs(d)
            GUARD = guard.Server(d, args=["--kubeconfig", ENV.kubeconfig(), "--log-level", "debug"],
                                 wait_ready=False)
            try:
                GUARD.wait(lambda: GUARD.ready()[0], "the guard to sync", timeout=60)
                with open(os.path.join(d, "ca.crt")) as f:
                    ca = f.read()
                url = "https://127.0.0.1:%d/validate" % GUARD.port
                ENV.register_webhook("ledger-test", url, ca, [
                    {"apiGroups": ["resource.k8s.io"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                     "resources": ["resourceslices", "resourceclaims/status"]},
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"],
                     "resources": ["pods/status"]}])
                time.sleep(1.0)   # the API server picks the webhook configuration up
                guard.run_tests([
                    test_same_numa_claim,
                    test_cross_numa_claim,
                    test_ledger_metrics_follow_the_view,
                    test_claim_shared_by_two_pods_counts_once,
                    test_release_retries_and_reuse_at_once,
                ] + ([record_dump] if record else []) + [
                    test_duplicate_device_allocation_is_denied_and_counted,
                    test_mapping_change_under_a_live_claim,
                    test_node_restart_slices_deleted_and_republished,
                    test_driver_restart_with_a_stale_writer,
                    test_pool_name_collision_between_drivers,
                    test_freeze_keeps_the_ledger_of_its_moment,
                ] + ([record_freeze_off] if record else []))
            finally:
                GUARD.stop()
        if record:
            os.makedirs(record, exist_ok=True)
            shutil.copyfile(ENV.audit_log_path(), os.path.join(record, "audit.log"))
            with open(os.path.join(record, "policy.yaml"), "w") as f:
                f.write(POLICY)
    finally:
        ENV.stop()


if __name__ == "__main__":
    main()
