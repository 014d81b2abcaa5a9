#!/usr/bin/env python3
"""The golden AdmissionReview cases under tests/golden/cases/: written here, recorded
from the engine. tests/golden/README.md says how to add one.

Each case is one JSON file:
  {"name": ..., "about": ..., "policy": "tests/golden/policies/x.yaml" or null,
   "endpoint": "validate" | "mutate",
   "review": {AdmissionReview},
   "expect": {...},     the intent, written in this script by a person
   "verdict": {...}}    the whole verdict, recorded from the engine

"expect" is the human judgement: "allowed"; "rules", the exact set of rule ids
that must fire (every other rule must stay quiet); optionally "absent" (rules
the case is about that must not fire, for the reader: implied by "rules"),
"code" (the Status code of a denial, 403 unless said), "warnings" (whether
there are any), "audit" (annotation keys that must be set) and "patch" (the
JSONPatch, "*" standing for the 16-hex mapping fingerprint; no "patch" means
the answer carries none).

"verdict" is everything the engine said: {"response": the AdmissionReview
response without its uid, the patch decoded from base64; "violations": every
violation, in order, as rule, action, path and message}. tests/test_engine.c
and tests/e2e/test_golden.py (the real server) must give exactly this.

  gen.py --observer BIN   (make golden-update) write every case, let BIN
                          (test_engine --observe) judge them, and record the
                          verdicts. Refuses, writing nothing, when a verdict
                          contradicts its intent. Review `git diff` of the
                          cases: that diff is the human check of a change.
  gen.py --check          (tests/e2e/test_golden.py) the files are exactly what
                          this script writes, and every recorded verdict
                          satisfies its intent.

The objects start from the ones in tests/fixtures and are varied one field at
a time; nothing outside the repository is read. Output is a pure function of
this script and the engine.
"""

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(HERE, "cases")

STRICT = "tests/golden/policies/strict.yaml"
FROZEN = "tests/golden/policies/frozen.yaml"
FROZEN_SCOPED = "tests/golden/policies/frozen-scoped.yaml"
FROZEN_GATE = "tests/golden/policies/frozen-gate.yaml"
THAWED_GATE = "tests/golden/policies/thawed-gate.yaml"
WARN = "tests/golden/policies/warn.yaml"
DRYRUN_NAME = "tests/golden/policies/dryrun-name.yaml"

DRIVER_SA = "system:serviceaccount:dra-system:dra-example-driver"
GPU_SA = "system:serviceaccount:gpu-driver:kubelet-plugin"
CTRL_SA = "system:serviceaccount:ctrl-system:controller"
SCHEDULER = "system:kube-scheduler"
NODE_EXTRA = "authentication.kubernetes.io/node-name"


def fixture(name):
    with open(os.path.join(ROOT, "tests", "fixtures", name)) as f:
        return json.load(f)


SLICE = fixture("resourceslice-v1-node-allocatable.json")
CLAIM = fixture("resourceclaim-v1-allocated.json")
POD = fixture("pod-status-node-allocatable.json")

KINDS = {
    "ResourceSlice": ("resource.k8s.io", "resourceslices"),
    "ResourceClaim": ("resource.k8s.io", "resourceclaims"),
    "Pod": ("", "pods"),
    "ConfigMap": ("", "configmaps"),
}

cases = []


def user(name, groups=None, node=None):
    u = {"username": name, "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, name)),
         "groups": (groups or []) + ["system:authenticated"]}
    if node is not None:
        u["extra"] = {NODE_EXTRA: [node]}
    return u


def driver_sa(node="worker-1"):
    return user(DRIVER_SA, ["system:serviceaccounts", "system:serviceaccounts:dra-system"], node)


def review(name, op, obj, old=None, who=None, sub="", version=None):
    src = obj if obj is not None else old
    kind = src["kind"]
    group, plural = KINDS[kind]
    ver = version or src["apiVersion"].split("/")[-1]
    req = {
        "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, name + ".golden.dra-guard.io")),
        "kind": {"group": group, "version": ver, "kind": kind},
        "resource": {"group": group, "version": ver, "resource": plural},
        "requestKind": {"group": group, "version": ver, "kind": kind},
        "requestResource": {"group": group, "version": ver, "resource": plural},
        "name": src["metadata"]["name"],
        "operation": op,
        "userInfo": who or driver_sa(),
        "object": obj,
        "oldObject": old,
        "dryRun": False,
    }
    ns = src["metadata"].get("namespace")
    if ns:
        req["namespace"] = ns
    if sub:
        req["subResource"] = sub
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}


def case(name, about, rv, allowed, rules=(), policy=None, endpoint="validate", absent=(),
         warnings=None, audit=(), patch=None, code=None, view=None, undecided=None, ledger=None,
         gate_unreleasable=False, gate_withheld=False):
    expect = {"allowed": allowed, "rules": list(rules)}
    if absent:
        expect["absent"] = list(absent)
    if code is not None:
        expect["code"] = code
    if warnings is not None:
        expect["warnings"] = warnings
    if audit:
        expect["audit"] = list(audit)
    if patch is not None:
        expect["patch"] = patch
    if view is not None:
        # The rules that read the cluster view: what they could not decide
        # ("rule:reason", every one) and facts of the ledger's summary.
        expect["undecided"] = sorted(undecided or [])
        if ledger:
            expect["ledger"] = ledger
    if gate_unreleasable:
        # The server's /mutate when no replica could release a gated Pod:
        # whether the gate was withheld (counted by the server).
        expect["gateWithheld"] = gate_withheld
    c = {"name": name, "about": about, "policy": policy, "endpoint": endpoint, "review": rv, "expect": expect}
    if gate_unreleasable:
        c["gateUnreleasable"] = True
    if view is not None:
        c["view"] = view
    cases.append(c)


def sl(**kw):
    s = copy.deepcopy(SLICE)
    for k, v in kw.items():
        s["spec"][k] = v
    return s


def dev(s, i):
    return s["spec"]["devices"][i]


def maps(s, i):
    return dev(s, i)["nodeAllocatableResourceMappings"]


# --- slice well-formedness (built-in policy) ------------------------------------------

case("slice-fixture-create", "the shared fixture is a valid slice",
     review("slice-fixture-create", "CREATE", sl()), True, absent=["slice.mapping.name"])

s = sl(); maps(s, 0)["pods"] = {"allocationMultiplier": "1"}
case("slice-mapping-name-pods", "pods is not a node resource",
     review("slice-mapping-name-pods", "CREATE", s), False, ["slice.mapping.name"])

s = sl(); maps(s, 0)["hugepages-0"] = {"allocationMultiplier": "2Mi"}
case("slice-mapping-name-hugepages-zero", "a hugepage size must be positive",
     review("slice-mapping-name-hugepages-zero", "CREATE", s), False, ["slice.mapping.name"])

s = sl(); maps(s, 0)["hugepages-1Gi"] = {"allocationMultiplier": "2Gi"}
case("slice-mapping-name-hugepages-ok", "hugepages-1Gi in whole pages is fine",
     review("slice-mapping-name-hugepages-ok", "CREATE", s), True,
     absent=["slice.mapping.name", "slice.mapping.units"])

s = sl(); maps(s, 0)["foo"] = {"allocationMultiplier": "1"}; maps(s, 0)[""] = {"allocationMultiplier": "1"}
case("slice-mapping-name-foo-and-empty", "foo and the empty name are both reported",
     review("slice-mapping-name-foo-and-empty", "CREATE", s), False, ["slice.mapping.name"])

for tag, value in (("zero", "0"), ("negative", "-1"), ("garbage", "lots")):
    s = sl(); maps(s, 0)["cpu"] = {"allocationMultiplier": value}
    case("slice-mapping-multiplier-" + tag, "allocationMultiplier %r is refused" % value,
         review("slice-mapping-multiplier-" + tag, "CREATE", s), False, ["slice.mapping.multiplier"])

s = sl(); maps(s, 0)["cpu"] = {"allocationMultiplier": 2}
case("slice-mapping-multiplier-bare-number", "a bare JSON number is a quantity",
     review("slice-mapping-multiplier-bare-number", "CREATE", s), True)

s = sl(); maps(s, 0)["cpu"] = {"allocationMultiplier": " 2 "}
case("slice-mapping-multiplier-spaces", "spaces around a quantity string are ignored",
     review("slice-mapping-multiplier-spaces", "CREATE", s), True)

s = sl(); maps(s, 1)["cpu"] = {"capacityKey": "dra.example.com/cores"}
case("slice-mapping-capacity-key-unknown", "capacityKey must name a capacity of the device",
     review("slice-mapping-capacity-key-unknown", "CREATE", s), False, ["slice.mapping.capacity-key"])

s = sl(); maps(s, 1)["cpu"] = {"capacityKey": ""}
case("slice-mapping-capacity-key-empty", "capacityKey must not be empty",
     review("slice-mapping-capacity-key-empty", "CREATE", s), False, ["slice.mapping.capacity-key"])

s = sl(); maps(s, 0)["memory"] = {"capacityKey": "dra.example.com/memory"}
case("slice-mapping-shareable", "capacityKey on a device without allowMultipleAllocations",
     review("slice-mapping-shareable", "CREATE", s), False, ["slice.mapping.shareable"],
     absent=["slice.mapping.capacity-key"])

s = sl(); dev(s, 1)["allowMultipleAllocations"] = False
case("slice-mapping-shareable-false", "allowMultipleAllocations: false is not shareable",
     review("slice-mapping-shareable-false", "CREATE", s), False, ["slice.mapping.shareable"])

s = sl(); maps(s, 0)["memory"] = {}
case("slice-mapping-empty", "an entry with neither field warns (defaulted to 1)",
     review("slice-mapping-empty", "CREATE", s), True, ["slice.mapping.empty"], warnings=True)

for tag, res, value in (("memory-fraction", "memory", "0.5"), ("cpu-micro", "cpu", "500u"),
                        ("hugepages-partial-page", "hugepages-2Mi", "3Mi"),
                        ("ephemeral-fraction", "ephemeral-storage", "1.5")):
    s = sl(); maps(s, 0)[res] = {"allocationMultiplier": value}
    case("slice-mapping-units-" + tag, "%s %s cannot be a real amount" % (res, value),
         review("slice-mapping-units-" + tag, "CREATE", s), False,
         ["slice.mapping.units"] + (["slice.shape.future"] if res == "ephemeral-storage" else []))

s = sl(); maps(s, 0)["cpu"] = {"allocationMultiplier": "1500m"}; maps(s, 0)["hugepages-2Mi"] = {"allocationMultiplier": "4Mi"}
case("slice-mapping-units-ok", "1500m of cpu and two whole pages are real",
     review("slice-mapping-units-ok", "CREATE", s), True, absent=["slice.mapping.units"])

s = sl(); maps(s, 0)["memory"] = {"allocationMultiplier": "1E"}
case("slice-mapping-huge-quantity", "1E parses; the built-in policy has no bounds",
     review("slice-mapping-huge-quantity", "CREATE", s), True, absent=["slice.mapping.multiplier"])

s = sl(); maps(s, 0)["ephemeral-storage"] = {"allocationMultiplier": "10Gi"}
case("slice-shape-future-ephemeral", "ephemeral-storage warns: 1.37 drops it",
     review("slice-shape-future-ephemeral", "CREATE", s), True, ["slice.shape.future"], warnings=True)

s = sl(); maps(s, 0)["cpu"] = {"allocationMultiplier": "2", "quantityFrom": {"capacity": "x"}}
case("slice-mapping-schema-unknown-field", "a field the API does not define (KEP draft quantityFrom)",
     review("slice-mapping-schema-unknown-field", "CREATE", s), False, ["slice.mapping.schema"])

s = sl(); maps(s, 0)["cpu"] = None
case("slice-mapping-schema-null", "a null mapping entry",
     review("slice-mapping-schema-null", "CREATE", s), False, ["slice.mapping.schema"])

# --- API versions and the 1.37 shape -------------------------------------------------------

s = sl(); s["apiVersion"] = "resource.k8s.io/v1beta2"; maps(s, 0)["pods"] = {"allocationMultiplier": "1"}
case("slice-v1beta2-mapping-name", "v1beta2 devices are flat like v1",
     review("slice-v1beta2-mapping-name", "CREATE", s), False, ["slice.mapping.name"])

s = sl(); s["apiVersion"] = "resource.k8s.io/v1beta1"
s["spec"]["devices"] = [{"name": d["name"], "basic": {k: v for k, v in d.items() if k != "name"}}
                        for d in SLICE["spec"]["devices"]]
case("slice-v1beta1-basic-ok", "v1beta1 nests device fields under basic",
     review("slice-v1beta1-basic-ok", "CREATE", s), True)
s = copy.deepcopy(s); s["spec"]["devices"][0]["basic"]["nodeAllocatableResourceMappings"]["pods"] = {"allocationMultiplier": "1"}
case("slice-v1beta1-basic-mapping-name", "the rules see v1beta1 mappings under basic",
     review("slice-v1beta1-basic-mapping-name", "CREATE", s), False, ["slice.mapping.name"])


def v137(d, entries):
    d.pop("nodeAllocatableResourceMappings", None)
    d["nodeAllocatableResources"] = entries


s = sl()
v137(dev(s, 0), {"memory": {"mapping": {"deviceMultiplier": "8Gi"}, "overhead": {"perPod": "64Mi"}},
                 "cpu": {"mapping": {"deviceMultiplier": "2"}}})
v137(dev(s, 1), {"cpu": {"mapping": {"capacityKey": "dra.example.com/cpu", "capacityMultiplier": "1"}}})
case("slice-v137-shape-ok", "the 1.37 nodeAllocatableResources shape is understood",
     review("slice-v137-shape-ok", "CREATE", s), True)
s = copy.deepcopy(s); dev(s, 0)["nodeAllocatableResources"]["cpu"]["mapping"]["deviceMultiplier"] = "0"
case("slice-v137-multiplier-zero", "the 1.37 shape's multipliers follow the same rule",
     review("slice-v137-multiplier-zero", "CREATE", s), False, ["slice.mapping.multiplier"])
s = sl(); v137(dev(s, 0), {"cpu": {"mapping": {"deviceMultiplier": "2", "capacityKey": "dra.example.com/memory"}}})
case("slice-v137-schema-exclusive", "deviceMultiplier and capacityKey are exclusive (and acc-0 is not shareable)",
     review("slice-v137-schema-exclusive", "CREATE", s), False, ["slice.mapping.schema", "slice.mapping.shareable"])

# --- UPDATE rules ----------------------------------------------------------------------------------

old = sl(); new = sl(); new["spec"]["pool"]["generation"] = 2
case("slice-generation-regress", "pool generation 3 -> 2",
     review("slice-generation-regress", "UPDATE", new, old), False, ["slice.generation.regress"])

POOL2 = {"name": "worker-1", "generation": 3, "resourceSliceCount": 2}
old = sl(pool=POOL2); new = sl(pool=POOL2); maps(new, 0)["memory"] = {"allocationMultiplier": "16Gi"}
case("slice-mapping-unversioned", "memory 8Gi -> 16Gi without a generation bump in a pool of two slices "
     "warns (advisory: the controller keeps the generation when only this slice changes)",
     review("slice-mapping-unversioned", "UPDATE", new, old), True, ["slice.mapping.unversioned"], warnings=True)
case("slice-mapping-unversioned-deny", "named deny in the policy, the same change is refused",
     review("slice-mapping-unversioned-deny", "UPDATE", new, old), False, ["slice.mapping.unversioned"],
     policy="tests/golden/policies/unversioned-deny.yaml")

old = sl(); new = sl(); maps(new, 0)["memory"] = {"allocationMultiplier": "8192Mi"}
case("slice-mapping-respelled", "8Gi -> 8192Mi is the same amount: no change",
     review("slice-mapping-respelled", "UPDATE", new, old), True, absent=["slice.mapping.unversioned"])

old = sl(); new = sl(); maps(new, 0)["memory"] = {"allocationMultiplier": "16Gi"}; new["spec"]["pool"]["generation"] = 4
case("slice-mapping-versioned-change", "a mapping change with a generation bump",
     review("slice-mapping-versioned-change", "UPDATE", new, old), True)

old = sl(); new = sl(); dev(new, 0)["attributes"]["dra.example.com/model"] = {"string": "acc-x2"}
case("slice-update-attributes-only", "a republish that changes no mapping",
     review("slice-update-attributes-only", "UPDATE", new, old), True)

old = sl(pool=POOL2); new = sl(pool=POOL2); del maps(new, 1)["cpu"]
case("slice-mapping-removed-unversioned", "removing a mapping is a change too",
     review("slice-mapping-removed-unversioned", "UPDATE", new, old), True, ["slice.mapping.unversioned"],
     warnings=True)

s = sl()
case("slice-delete-builtin", "DELETE carries object: null and is allowed",
     review("slice-delete-builtin", "DELETE", None, s), True)

# --- enforcement modes -------------------------------------------------------------------------------

s = sl(); maps(s, 0)["pods"] = {"allocationMultiplier": "1"}
case("slice-warn-policy", "under default: warn a violation only warns",
     review("slice-warn-policy", "CREATE", s), True, ["slice.mapping.name"], policy=WARN, warnings=True)
case("slice-dryrun-rule", "a dryrun rule leaves only an audit annotation",
     review("slice-dryrun-rule", "CREATE", s), True, ["slice.mapping.name"], policy=DRYRUN_NAME,
     warnings=False, audit=["slice.mapping.name"])
case("slice-deny-audit", "a denial sets the rule ids and the policy hash as audit annotations",
     review("slice-deny-audit", "CREATE", s), False, ["slice.mapping.name"],
     audit=["denied-rules", "policy-hash"])

# --- mutation ----------------------------------------------------------------------------------------

case("slice-mutate-adds-label", "the mutating endpoint labels a slice with its mapping fingerprint",
     review("slice-mutate-adds-label", "CREATE", sl()), True, endpoint="mutate",
     patch=[{"op": "add", "path": "/metadata/labels", "value": {"dra-guard.io/mappings": "*"}}])
s = sl(); s["metadata"]["labels"] = {"team": "a"}
case("slice-mutate-adds-label-key", "an existing labels map gets one key added",
     review("slice-mutate-adds-label-key", "CREATE", s), True, endpoint="mutate",
     patch=[{"op": "add", "path": "/metadata/labels/dra-guard.io~1mappings", "value": "*"}])
s = sl(); s["metadata"]["labels"] = {"dra-guard.io/mappings": "stale"}
case("slice-mutate-replaces-stale-label", "a stale fingerprint is replaced",
     review("slice-mutate-replaces-stale-label", "CREATE", s), True, endpoint="mutate",
     patch=[{"op": "replace", "path": "/metadata/labels/dra-guard.io~1mappings", "value": "*"}])
s = sl()
for d in s["spec"]["devices"]:
    del d["nodeAllocatableResourceMappings"]
s["metadata"]["labels"] = {"dra-guard.io/mappings": "stale"}
case("slice-mutate-removes-label", "a slice without mappings loses the label",
     review("slice-mutate-removes-label", "CREATE", s), True, endpoint="mutate",
     patch=[{"op": "remove", "path": "/metadata/labels/dra-guard.io~1mappings"}])

# --- strict policy: drivers, bounds, canary ---------------------------------------------------------

case("strict-fixture-allowed", "the fixture's driver, node and amounts are all allowed",
     review("strict-fixture-allowed", "CREATE", sl()), True, policy=STRICT)

s = sl(); maps(s, 0)["memory"] = {"allocationMultiplier": "128Gi"}
case("strict-bounds-device-count", "128Gi per device is over the driver's 64Gi max",
     review("strict-bounds-device-count", "CREATE", s), False, ["slice.mapping.bounds"], policy=STRICT)

s = sl(); dev(s, 1)["capacity"]["dra.example.com/cpu"]["value"] = "128"
case("strict-bounds-capacity", "a whole 128-core capacity x 1 is over the cpu max of 64",
     review("strict-bounds-capacity", "CREATE", s), False, ["slice.mapping.bounds"], policy=STRICT)

s = sl(driver="other.example.com")
case("strict-driver-unlisted", "a driver the policy does not list may not map",
     review("strict-driver-unlisted", "CREATE", s, who=user("system:serviceaccount:other:driver")),
     False, ["slice.driver"], policy=STRICT)

s = sl(driver="gpu.example.com")
case("strict-driver-resource-not-allowed", "gpu.example.com may map memory but not cpu",
     review("strict-driver-resource-not-allowed", "CREATE", s,
            who=user(GPU_SA, node="worker-1")), False, ["slice.driver"], policy=STRICT)

s = sl(nodeName="worker-9", pool={"name": "worker-9", "generation": 3, "resourceSliceCount": 1})
case("strict-canary-other-node", "worker-9 is not a canary node",
     review("strict-canary-other-node", "CREATE", s, who=driver_sa("worker-9")), False, ["slice.canary"],
     policy=STRICT)

s = sl(nodeName="gpu-canary-3", pool={"name": "gpu-canary-3", "generation": 3, "resourceSliceCount": 1})
case("strict-canary-glob", "gpu-canary-3 matches gpu-canary-*",
     review("strict-canary-glob", "CREATE", s, who=driver_sa("gpu-canary-3")), True, policy=STRICT)

s = sl(); del s["spec"]["nodeName"]; s["spec"]["allNodes"] = True
case("strict-canary-all-nodes", "an allNodes pool with mappings is not on a canary node (and the controller is not the driver's writer)",
     review("strict-canary-all-nodes", "CREATE", s, who=user(CTRL_SA)), False, ["slice.canary", "slice.writer"],
     policy=STRICT)

s = sl(nodeName="worker-9", pool={"name": "worker-9", "generation": 3, "resourceSliceCount": 1})
for d in s["spec"]["devices"]:
    del d["nodeAllocatableResourceMappings"]
case("strict-canary-no-mappings", "a slice without mappings may live on any node",
     review("strict-canary-no-mappings", "CREATE", s, who=driver_sa("worker-9")), True, policy=STRICT)

# --- least privilege: slice writers ------------------------------------------------------------------

case("writer-own-sa-own-node", "the driver's ServiceAccount on the slice's node",
     review("writer-own-sa-own-node", "CREATE", sl(), who=driver_sa("worker-1")), True, policy=STRICT)
case("writer-own-sa-other-node", "the driver's ServiceAccount on another node",
     review("writer-own-sa-other-node", "CREATE", sl(), who=driver_sa("worker-2")), False,
     ["slice.writer.node"], policy=STRICT)
case("writer-own-sa-no-node-extra", "a token without node-name (not bound to a Pod)",
     review("writer-own-sa-no-node-extra", "CREATE", sl(), who=driver_sa(None)), False,
     ["slice.writer.node"], policy=STRICT)
def republished():
    """The fixture slice with one attribute changed: an UPDATE beyond metadata."""
    s = sl()
    dev(s, 0)["attributes"]["dra.example.com/model"] = {"string": "acc-x2"}
    return s


case("writer-other-driver-sa", "another driver's ServiceAccount",
     review("writer-other-driver-sa", "UPDATE", republished(), sl(), who=user(GPU_SA, node="worker-1")), False,
     ["slice.writer"], policy=STRICT)
case("writer-kubelet-delete-own-node", "the node's kubelet deletes its slices",
     review("writer-kubelet-delete-own-node", "DELETE", None, sl(),
            who=user("system:node:worker-1", ["system:nodes"])), True, policy=STRICT)
case("writer-kubelet-delete-other-node", "another node's kubelet may not",
     review("writer-kubelet-delete-other-node", "DELETE", None, sl(),
            who=user("system:node:worker-2", ["system:nodes"])), False, ["slice.writer"], policy=STRICT)
case("writer-kubelet-create", "a kubelet does not create a driver's slices",
     review("writer-kubelet-create", "CREATE", sl(),
            who=user("system:node:worker-1", ["system:nodes"])), False, ["slice.writer"], policy=STRICT)
case("writer-random-user", "a user with RBAC but no business writing slices",
     review("writer-random-user", "CREATE", sl(), who=user("alice@example.com")), False,
     ["slice.writer"], policy=STRICT)
case("writer-admin-break-glass", "writers.admins may write, and the bypass is recorded",
     review("writer-admin-break-glass", "UPDATE", republished(), sl(),
            who=user("bob@example.com", ["dra-guard:slice-admins"])), True, policy=STRICT,
     audit=["break-glass"])
s = sl(driver="ctrl.example.com", nodeName="worker-9", pool={"name": "worker-9", "generation": 1, "resourceSliceCount": 1})
for d in s["spec"]["devices"]:
    del d["nodeAllocatableResourceMappings"]
case("writer-cluster-scope-any-node", "a scope: cluster controller writes any node's slices",
     review("writer-cluster-scope-any-node", "CREATE", s, who=user(CTRL_SA)), True, policy=STRICT)
s = sl(); del s["spec"]["nodeName"]; s["spec"]["allNodes"] = True
for d in s["spec"]["devices"]:
    del d["nodeAllocatableResourceMappings"]
case("writer-node-scope-all-nodes", "a node-scoped driver may not write an allNodes pool",
     review("writer-node-scope-all-nodes", "CREATE", s, who=driver_sa("worker-1")), False,
     ["slice.writer.node"], policy=STRICT)
case("writer-delete-other-node", "the driver's ServiceAccount may not delete another node's slice",
     review("writer-delete-other-node", "DELETE", None, sl(), who=driver_sa("worker-2")), False,
     ["slice.writer.node"], policy=STRICT)

# --- least privilege: claim status --------------------------------------------------------------------


def claim(**status):
    c = copy.deepcopy(CLAIM)
    for k, v in status.items():
        if v is None:
            c["status"].pop(k, None)
        else:
            c["status"][k] = v
    return c


unallocated = claim(allocation=None, reservedFor=None, devices=None)
case("claim-status-scheduler-allocates", "the scheduler writes an allocation",
     review("claim-status-scheduler-allocates", "UPDATE", claim(devices=None), unallocated,
            who=user(SCHEDULER), sub="status"), True, policy=STRICT)
case("claim-status-user-allocates", "anyone else may not",
     review("claim-status-user-allocates", "UPDATE", claim(devices=None), unallocated,
            who=user("alice@example.com"), sub="status"), False, ["status.allocation.writer"], policy=STRICT)
case("claim-status-kubelet-reserves", "a kubelet may not add itself to reservedFor",
     review("claim-status-kubelet-reserves", "UPDATE",
            claim(reservedFor=CLAIM["status"]["reservedFor"] + [{"resource": "pods", "name": "x", "uid": "1"}]),
            claim(), who=user("system:node:worker-1", ["system:nodes"]), sub="status"),
     False, ["status.allocation.writer"], policy=STRICT)
case("claim-status-controller-releases", "the resourceclaim controller clears reservedFor (default allocators)",
     review("claim-status-controller-releases", "UPDATE", claim(reservedFor=[]), claim(),
            who=user("system:serviceaccount:kube-system:resource-claim-controller"), sub="status"),
     True, policy=STRICT)

claim_d = copy.deepcopy(CLAIM)
for part in ("results",):
    for r in claim_d["status"]["allocation"]["devices"][part]:
        r["driver"] = "dra.example.com"
dev_old = copy.deepcopy(claim_d); dev_old["status"].pop("devices")
case("claim-status-driver-own-node", "the driver writes its device status on the claim's node",
     review("claim-status-driver-own-node", "UPDATE", claim_d, dev_old, who=driver_sa("worker-1"),
            sub="status"), True, policy=STRICT)
case("claim-status-driver-other-node", "not from another node",
     review("claim-status-driver-other-node", "UPDATE", claim_d, dev_old, who=driver_sa("worker-2"),
            sub="status"), False, ["status.devices.writer"], policy=STRICT)
case("claim-status-other-driver", "another driver may not touch this driver's entries",
     review("claim-status-other-driver", "UPDATE", claim_d, dev_old, who=user(GPU_SA, node="worker-1"),
            sub="status"), False, ["status.devices.writer"], policy=STRICT)
case("claim-status-driver-no-node-extra", "a token without node-name, for a node-scoped driver",
     review("claim-status-driver-no-node-extra", "UPDATE", claim_d, dev_old, who=driver_sa(None),
            sub="status"), False, ["status.devices.writer"], policy=STRICT)

# --- least privilege: Pod node-allocatable status -----------------------------------------------------


def pod(statuses="keep", phase="Pending"):
    p = copy.deepcopy(POD)
    p["status"]["phase"] = phase
    if statuses is None:
        p["status"].pop("nodeAllocatableResourceClaimStatuses")
    elif statuses != "keep":
        p["status"]["nodeAllocatableResourceClaimStatuses"] = statuses
    return p


KUBELET = user("system:node:worker-1", ["system:nodes"])
case("pod-status-scheduler-writes", "kube-scheduler writes the amounts in PreBind",
     review("pod-status-scheduler-writes", "UPDATE", pod(), pod(None), who=user(SCHEDULER), sub="status"),
     True, policy=STRICT)
case("pod-status-scheduler-clears", "and clears them on Unreserve",
     review("pod-status-scheduler-clears", "UPDATE", pod(None), pod(), who=user(SCHEDULER), sub="status"),
     True, policy=STRICT)
case("pod-status-kubelet-changes", "a kubelet may not rewrite the amounts",
     review("pod-status-kubelet-changes", "UPDATE",
            pod([{"resourceClaimName": "cpu-claim", "containers": ["app"], "resources": {"cpu": "1"}}]),
            pod(), who=KUBELET, sub="status"), False, ["status.pod.writer"], policy=STRICT)
case("pod-status-kubelet-clears", "nor clear them",
     review("pod-status-kubelet-clears", "UPDATE", pod(None), pod(), who=KUBELET, sub="status"),
     False, ["status.pod.writer"], policy=STRICT)
case("pod-status-kubelet-other-fields", "a kubelet updating the phase passes untouched",
     review("pod-status-kubelet-other-fields", "UPDATE", pod(phase="Running"), pod(), who=KUBELET,
            sub="status"), True, policy=STRICT)
case("pod-status-user-adds", "a random user may not add amounts",
     review("pod-status-user-adds", "UPDATE", pod(), pod(None), who=user("alice@example.com"), sub="status"),
     False, ["status.pod.writer"])
two = [POD["status"]["nodeAllocatableResourceClaimStatuses"][0],
       {"resourceClaimName": "mem-claim", "containers": ["app"], "resources": {"memory": "1Gi"}}]
case("pod-status-reorder", "reordering the entries is a change too",
     review("pod-status-reorder", "UPDATE", pod(list(reversed(two))), pod(two), who=KUBELET, sub="status"),
     False, ["status.pod.writer"])

# --- the rollback freeze -------------------------------------------------------------------------------

new_claim = copy.deepcopy(CLAIM); new_claim.pop("status")
new_claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "accel.example.com"
case("freeze-off-create", "no freeze: a new claim passes",
     review("freeze-off-create", "CREATE", new_claim, who=user("system:serviceaccount:team-a:app")), True,
     policy=STRICT)
case("freeze-create", "frozen: a new claim is refused, with the reason",
     review("freeze-create", "CREATE", new_claim, who=user("system:serviceaccount:team-a:app")), False,
     ["claim.freeze.create"], policy=FROZEN)
case("freeze-create-from-template", "also when the resourceclaim controller makes it from a template",
     review("freeze-create-from-template", "CREATE", new_claim,
            who=user("system:serviceaccount:kube-system:resource-claim-controller")), False,
     ["claim.freeze.create"], policy=FROZEN)
case("freeze-allocate", "frozen: a new allocation is refused",
     review("freeze-allocate", "UPDATE", claim(devices=None), unallocated, who=user(SCHEDULER), sub="status"),
     False, ["claim.freeze.allocate"], policy=FROZEN)
case("freeze-deallocate", "frozen: deallocation passes",
     review("freeze-deallocate", "UPDATE", unallocated, claim(devices=None), who=user(SCHEDULER), sub="status"),
     True, policy=FROZEN)
case("freeze-release-reservation", "frozen: removal from reservedFor passes",
     review("freeze-release-reservation", "UPDATE", claim(reservedFor=[]), claim(),
            who=user("system:serviceaccount:kube-system:resource-claim-controller"), sub="status"),
     True, policy=FROZEN)
case("freeze-add-consumer", "frozen: a consumer added to an allocated shared claim passes",
     review("freeze-add-consumer", "UPDATE",
            claim(reservedFor=CLAIM["status"]["reservedFor"] + [{"resource": "pods", "name": "pod-b", "uid": "2"}]),
            claim(), who=user(SCHEDULER), sub="status"), True, policy=FROZEN)
case("freeze-device-status", "frozen: a driver's device status update passes",
     review("freeze-device-status", "UPDATE", claim_d, dev_old, who=driver_sa("worker-1"), sub="status"),
     True, policy=FROZEN)
case("freeze-delete-claim", "frozen: deleting a claim passes",
     review("freeze-delete-claim", "DELETE", None, claim(), who=user("alice@example.com")), True, policy=FROZEN)
case("freeze-slice-write", "frozen: slice writes stay allowed (operators repair mappings)",
     review("freeze-slice-write", "UPDATE", sl(), sl()), True, policy=FROZEN)
case("freeze-break-glass-group", "a freeze.breakGlass group creates claims, and the bypass is recorded",
     review("freeze-break-glass-group", "CREATE", new_claim, who=user("carol@example.com", ["dra-guard:freeze-breakers"])),
     True, policy=FROZEN, audit=["break-glass"])
case("freeze-break-glass-user", "a freeze.breakGlass user too",
     review("freeze-break-glass-user", "CREATE", new_claim, who=user("oncall@example.com")),
     True, policy=FROZEN, audit=["break-glass"])

scoped = copy.deepcopy(new_claim); scoped["metadata"]["namespace"] = "team-frozen"
case("freeze-scope-namespace-in", "scope: a claim in a frozen namespace is refused",
     review("freeze-scope-namespace-in", "CREATE", scoped, who=user("system:serviceaccount:team-frozen:app")),
     False, ["claim.freeze.create"], policy=FROZEN_SCOPED)
case("freeze-scope-namespace-out", "scope: a claim elsewhere passes",
     review("freeze-scope-namespace-out", "CREATE", new_claim, who=user("system:serviceaccount:team-a:app")),
     True, policy=FROZEN_SCOPED)
fpga = copy.deepcopy(new_claim); fpga["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "fpga.example.com"
case("freeze-scope-device-class", "scope: a request for a frozen device class is refused",
     review("freeze-scope-device-class", "CREATE", fpga, who=user("system:serviceaccount:team-a:app")),
     False, ["claim.freeze.create"], policy=FROZEN_SCOPED)
mig = copy.deepcopy(new_claim); mig["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "mig.gpu.example.com"
case("freeze-scope-driver-class", "scope: a class the frozen driver serves is refused",
     review("freeze-scope-driver-class", "CREATE", mig, who=user("system:serviceaccount:team-a:app")),
     False, ["claim.freeze.create"], policy=FROZEN_SCOPED)
gpu_alloc = claim(devices=None)
gpu_alloc["status"]["allocation"]["devices"]["results"][0]["driver"] = "gpu.example.com"
case("freeze-scope-driver-allocation", "scope: an allocation from the frozen driver is refused",
     review("freeze-scope-driver-allocation", "UPDATE", gpu_alloc, unallocated, who=user(SCHEDULER),
            sub="status"), False, ["claim.freeze.allocate"], policy=FROZEN_SCOPED)
case("freeze-scope-driver-other-allocation", "scope: another driver's allocation passes",
     review("freeze-scope-driver-other-allocation", "UPDATE", claim(devices=None), unallocated,
            who=user(SCHEDULER), sub="status"), True, policy=FROZEN_SCOPED)

# --- the freeze's scheduling gate (freeze.gatePods) ----------------------------------------------------

GATE = {"name": "dra-guard.io/freeze"}


def new_pod(gates=None, claims=True, annotations=None, node=None):
    p = copy.deepcopy(POD)
    p["spec"].pop("nodeName")
    p["status"] = {"phase": "Pending"}
    if node:
        p["spec"]["nodeName"] = node
    if not claims:
        p["spec"].pop("resourceClaims")
        p["spec"]["containers"][0]["resources"].pop("claims")
    if gates is not None:
        p["spec"]["schedulingGates"] = gates
    if annotations is not None:
        p["metadata"]["annotations"] = annotations
    return p


APP = user("system:serviceaccount:team-a:app")
REASON = "INC-4211: hugepage mapping regression on gpu.example.com"
case("gate-pod-create", "frozen with gatePods: a new Pod with claims gets the gate and the reason",
     review("gate-pod-create", "CREATE", new_pod(), who=APP), True, policy=FROZEN_GATE, endpoint="mutate",
     patch=[{"op": "add", "path": "/spec/schedulingGates", "value": [GATE]},
            {"op": "add", "path": "/metadata/annotations", "value": {"dra-guard.io/freeze-reason": REASON}}])
case("gate-pod-create-other-gates", "the gate goes after the Pod's own gates; other annotations stay",
     review("gate-pod-create-other-gates", "CREATE", new_pod([{"name": "example.com/quota"}], annotations={"a": "b"}),
            who=APP), True, policy=FROZEN_GATE, endpoint="mutate",
     patch=[{"op": "add", "path": "/spec/schedulingGates/-", "value": GATE},
            {"op": "add", "path": "/metadata/annotations/dra-guard.io~1freeze-reason", "value": REASON}])
case("gate-pod-create-no-claims", "a Pod without claims is not gated",
     review("gate-pod-create-no-claims", "CREATE", new_pod(claims=False), who=APP), True, policy=FROZEN_GATE,
     endpoint="mutate")
case("gate-pod-create-bound", "a Pod created with spec.nodeName bypasses the scheduler: not gated",
     review("gate-pod-create-bound", "CREATE", new_pod(node="worker-1"), who=APP), True, policy=FROZEN_GATE,
     endpoint="mutate")
case("gate-pod-create-gated", "a Pod that already carries the gate is left as it is",
     review("gate-pod-create-gated", "CREATE", new_pod([GATE]), who=APP), True, policy=FROZEN_GATE,
     endpoint="mutate")
case("gate-pod-create-no-gate-pods", "frozen without gatePods: no gate (the claims are refused as before)",
     review("gate-pod-create-no-gate-pods", "CREATE", new_pod(), who=APP), True, policy=FROZEN, endpoint="mutate")
case("gate-pod-create-thawed", "gatePods but no freeze: no gate",
     review("gate-pod-create-thawed", "CREATE", new_pod(), who=APP), True, policy=THAWED_GATE, endpoint="mutate")
case("gate-pod-create-unreleasable", "frozen with gatePods, but no replica could release the gate (none runs "
     "--gate-release, or its Lease has no live holder): the gate is withheld, so the Pod is never held for good",
     review("gate-pod-create-unreleasable", "CREATE", new_pod(), who=APP), True, policy=FROZEN_GATE,
     endpoint="mutate", gate_unreleasable=True, gate_withheld=True)
case("gate-pod-create-thawed-unreleasable", "no freeze and no replica to release: nothing withheld",
     review("gate-pod-create-thawed-unreleasable", "CREATE", new_pod(), who=APP), True, policy=THAWED_GATE,
     endpoint="mutate", gate_unreleasable=True, gate_withheld=False)
case("gate-pod-create-validate", "the validating endpoint has nothing to say about a new Pod",
     review("gate-pod-create-validate", "CREATE", new_pod(), who=APP), True, policy=FROZEN_GATE)

gated = new_pod([{"name": "example.com/quota"}, GATE], annotations={"dra-guard.io/freeze-reason": REASON})
ungated = new_pod([{"name": "example.com/quota"}], annotations={"dra-guard.io/freeze-reason": REASON})
case("gate-remove-user", "frozen: a user may not remove the gate",
     review("gate-remove-user", "UPDATE", ungated, gated, who=user("alice@example.com")), False,
     ["claim.freeze.gate"], policy=FROZEN_GATE)
case("gate-remove-all-gates", "nor all gates at once",
     review("gate-remove-all-gates", "UPDATE", new_pod([]), gated, who=user("alice@example.com")), False,
     ["claim.freeze.gate"], policy=FROZEN_GATE)
case("gate-remove-without-gate-pods", "the gate is the freeze's whatever gatePods says now",
     review("gate-remove-without-gate-pods", "UPDATE", ungated, gated, who=user("alice@example.com")), False,
     ["claim.freeze.gate"], policy=FROZEN)
case("gate-remove-break-glass", "a freeze.breakGlass group may, and the bypass is recorded",
     review("gate-remove-break-glass", "UPDATE", ungated, gated,
            who=user("carol@example.com", ["dra-guard:freeze-breakers"])), True, policy=FROZEN_GATE,
     audit=["break-glass"])
case("gate-remove-thawed", "after the freeze anyone RBAC lets through may",
     review("gate-remove-thawed", "UPDATE", ungated, gated, who=user("alice@example.com")), True,
     policy=THAWED_GATE)
case("gate-remove-other-gate", "removing another gate keeps the freeze's: allowed",
     review("gate-remove-other-gate", "UPDATE", new_pod([GATE]), gated, who=user("alice@example.com")), True,
     policy=FROZEN_GATE)
case("gate-keep-label-change", "an update that keeps the gate passes",
     review("gate-keep-label-change", "UPDATE", new_pod([{"name": "example.com/quota"}, GATE], annotations={"x": "y"}),
            gated, who=user("alice@example.com")), True, policy=FROZEN_GATE)
case("gate-pod-status", "the Pod's status is not the gate",
     review("gate-pod-status", "UPDATE", ungated, gated, who=user("alice@example.com"), sub="status"), True,
     policy=FROZEN_GATE)

POD_UID = POD["metadata"]["uid"]
tmpl_claim = copy.deepcopy(new_claim)
tmpl_claim["metadata"] = {"generateName": "pod-a-cpus-", "name": "pod-a-cpus-x7k2p", "namespace": "team-a",
                          "annotations": {"resource.kubernetes.io/pod-claim-name": "cpus"},
                          "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "pod-a", "uid": POD_UID,
                                               "controller": True, "blockOwnerDeletion": True}],
                          "finalizers": ["resource.kubernetes.io/delete-protection"]}
CLAIM_CONTROLLER = user("system:serviceaccount:kube-system:resource-claim-controller")
GC_SA_NAME = "system:serviceaccount:kube-system:generic-garbage-collector"


def gate_view(*pods):
    return {"now": 1796119200, "heard": 0,
            "events": [{"at": 1796119100, "type": "ADDED", "object": p} for p in pods]}


case("gate-claim-for-gated-pod", "frozen with gatePods: the controller makes a gated Pod's claim from its template",
     review("gate-claim-for-gated-pod", "CREATE", tmpl_claim, who=CLAIM_CONTROLLER), True, policy=FROZEN_GATE,
     view=gate_view(new_pod([GATE])))
bound_pod = new_pod(node="worker-1")
case("gate-claim-for-ungated-pod", "a Pod the view holds without the gate (bound) gets no claim",
     review("gate-claim-for-ungated-pod", "CREATE", tmpl_claim, who=CLAIM_CONTROLLER), False,
     ["claim.freeze.create"], policy=FROZEN_GATE, view=gate_view(bound_pod))
case("gate-claim-pod-unseen", "a Pod the view has not seen: refused (and decided again on a newer view)",
     review("gate-claim-pod-unseen", "CREATE", tmpl_claim, who=CLAIM_CONTROLLER), False,
     ["claim.freeze.create"], policy=FROZEN_GATE, view=gate_view())
other_uid = new_pod([GATE]); other_uid["metadata"]["uid"] = "00000000-0000-4000-8000-000000000001"
case("gate-claim-pod-other-uid", "a gated Pod of that name but another UID is not the owner",
     review("gate-claim-pod-other-uid", "CREATE", tmpl_claim, who=CLAIM_CONTROLLER), False,
     ["claim.freeze.create"], policy=FROZEN_GATE, view=gate_view(other_uid))
no_owner = copy.deepcopy(tmpl_claim); no_owner["metadata"].pop("ownerReferences")
case("gate-claim-no-owner", "a claim naming no Pod as its controller is refused as before",
     review("gate-claim-no-owner", "CREATE", no_owner, who=CLAIM_CONTROLLER), False,
     ["claim.freeze.create"], policy=FROZEN_GATE, view=gate_view(new_pod([GATE])))
no_ann = copy.deepcopy(tmpl_claim); no_ann["metadata"].pop("annotations")
case("gate-claim-not-from-template", "a claim without the pod-claim-name annotation is refused as before",
     review("gate-claim-not-from-template", "CREATE", no_ann, who=APP), False,
     ["claim.freeze.create"], policy=FROZEN_GATE, view=gate_view(new_pod([GATE])))
case("gate-claim-forged-by-tenant", "the annotation and ownerReference written by a tenant, not the "
     "resource-claim controller: refused though the view shows the Pod gated",
     review("gate-claim-forged-by-tenant", "CREATE", tmpl_claim, who=APP), False,
     ["claim.freeze.create"], policy=FROZEN_GATE, view=gate_view(new_pod([GATE])))
case("gate-claim-by-controller-manager", "kube-controller-manager without --use-service-account-credentials "
     "makes the claim as itself: the exception holds",
     review("gate-claim-by-controller-manager", "CREATE", tmpl_claim, who=user("system:kube-controller-manager")),
     True, policy=FROZEN_GATE, view=gate_view(new_pod([GATE])))
case("gate-claim-without-gate-pods", "without gatePods a gated Pod's claim is refused",
     review("gate-claim-without-gate-pods", "CREATE", tmpl_claim, who=CLAIM_CONTROLLER), False,
     ["claim.freeze.create"], policy=FROZEN, view=gate_view(new_pod([GATE])))
case("gate-claim-no-view", "without a cluster view the guard cannot tell: refused as before",
     review("gate-claim-no-view", "CREATE", tmpl_claim, who=CLAIM_CONTROLLER), False,
     ["claim.freeze.create"], policy=FROZEN_GATE)
case("freeze-create-names-held-pods",
     "frozen: a claim made by hand is refused; the Pending Pod that names it (resourceClaimName) is named, and "
     "its Event goes to that Pod",
     review("freeze-create-names-held-pods", "CREATE", new_claim, who=APP), False, ["claim.freeze.create"],
     policy=FROZEN, view=gate_view(new_pod()))
# Metadata updates during a freeze: what makes a claim a Pod's must not
# change but by the resource-claim controller or the garbage collector.
labelled = copy.deepcopy(tmpl_claim); labelled["metadata"]["labels"] = {"team": "a"}
case("claim-adopt-by-tenant-frozen", "a tenant adds a gated Pod's ownerReference to a claim during a freeze",
     review("claim-adopt-by-tenant-frozen", "UPDATE", tmpl_claim, no_owner, who=APP), False,
     ["claim.freeze.create"], policy=FROZEN_GATE)
case("claim-orphan-by-tenant-frozen", "a tenant takes the ownerReference off a gated Pod's claim during a "
     "freeze: it would become a claim of its own",
     review("claim-orphan-by-tenant-frozen", "UPDATE", no_owner, tmpl_claim, who=APP), False,
     ["claim.freeze.create"], policy=FROZEN_GATE)
case("claim-annotation-removed-frozen", "a tenant removes the pod-claim-name annotation during a freeze",
     review("claim-annotation-removed-frozen", "UPDATE", no_ann, tmpl_claim, who=APP), False,
     ["claim.freeze.create"], policy=FROZEN)
case("claim-orphan-by-gc", "the garbage collector orphans a claim when its Pod is deleted with "
     "propagationPolicy Orphan: allowed in a freeze",
     review("claim-orphan-by-gc", "UPDATE", no_owner, tmpl_claim, who=user(GC_SA_NAME)), True, policy=FROZEN_GATE)
case("claim-label-frozen", "a label on a Pod's claim changes nothing the freeze reads",
     review("claim-label-frozen", "UPDATE", labelled, tmpl_claim, who=APP), True, policy=FROZEN_GATE)
case("claim-orphan-thawed", "without a freeze the ownerReference may go",
     review("claim-orphan-thawed", "UPDATE", no_owner, tmpl_claim, who=APP), True)
gated_alloc = claim(devices=None)
case("gate-allocate", "frozen with gatePods: new allocations are still refused",
     review("gate-allocate", "UPDATE", gated_alloc, unallocated, who=user(SCHEDULER), sub="status"),
     False, ["claim.freeze.allocate"], policy=FROZEN_GATE)

# --- policy.invalid --------------------------------------------------------------------------------------


def configmap(name, policy_text, freeze="false"):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "dra-guard"},
            "data": {"policy.yaml": policy_text, "freeze": freeze}}


GOOD = "apiVersion: dra-guard.io/v1alpha1\nkind: Policy\nenforcement:\n  default: deny\n"
BAD = "apiVersion: dra-guard.io/v1alpha1\nkind: Policy\nenforcement:\n  default: deny\ncanary:\n  nodez: [a]\n"
ADMIN = user("kubernetes-admin", ["system:masters"])
case("policy-configmap-valid", "the guard's own ConfigMap with a valid policy",
     review("policy-configmap-valid", "UPDATE", configmap("dra-guard-policy", GOOD),
            configmap("dra-guard-policy", GOOD), who=ADMIN), True)
case("policy-configmap-invalid", "a typo in the guard's own policy is refused with line and path",
     review("policy-configmap-invalid", "UPDATE", configmap("dra-guard-policy", BAD),
            configmap("dra-guard-policy", GOOD), who=ADMIN), False, ["policy.invalid"])
case("policy-configmap-bad-freeze", "freeze must be true or false",
     review("policy-configmap-bad-freeze", "UPDATE", configmap("dra-guard-policy", GOOD, "yes"),
            configmap("dra-guard-policy", GOOD), who=ADMIN), False, ["policy.invalid"])
case("policy-configmap-other", "other ConfigMaps are not the guard's business",
     review("policy-configmap-other", "CREATE", configmap("something-else", BAD), who=ADMIN), True)


# --- every offence is reported, not only the first ---------------------------------------------
# A rule that can fire more than once in a request must report each offence: these
# kill the mutants that keep only a rule's first violation (make mutation-check).

s = sl(); maps(s, 0)["cpu"] = {"allocationMultiplier": "0"}; maps(s, 1)["memory"] = {"allocationMultiplier": "-1Gi"}
case("slice-every-multiplier", "a bad multiplier on each device: both reported",
     review("slice-every-multiplier", "CREATE", s), False, ["slice.mapping.multiplier"])

s = sl(); maps(s, 1)["cpu"] = {"capacityKey": "dra.example.com/cores"}; maps(s, 1)["memory"] = {"capacityKey": ""}
case("slice-every-capacity-key", "an unknown and an empty capacityKey: both reported",
     review("slice-every-capacity-key", "CREATE", s), False, ["slice.mapping.capacity-key"])

s = sl(); maps(s, 0)["memory"] = {}; maps(s, 1)["memory"] = {}
case("slice-every-empty", "an empty entry on each device: two warnings",
     review("slice-every-empty", "CREATE", s), True, ["slice.mapping.empty"], warnings=True)

s = sl(); maps(s, 0)["cpu"] = {"allocationMultiplier": "2", "quantityFrom": {"capacity": "x"}}; maps(s, 1)["cpu"] = None
case("slice-every-schema", "an unknown field on one device, a null entry on the other: both reported",
     review("slice-every-schema", "CREATE", s), False, ["slice.mapping.schema"])

s = sl(); maps(s, 0)["memory"] = {"capacityKey": "dra.example.com/memory"}
maps(s, 0)["cpu"] = {"capacityKey": "dra.example.com/memory"}
case("slice-every-shareable", "two capacityKeys on a device that is not shareable: both reported",
     review("slice-every-shareable", "CREATE", s), False, ["slice.mapping.shareable"])

s = sl(); maps(s, 0)["memory"] = {"allocationMultiplier": "0.5"}; maps(s, 0)["cpu"] = {"allocationMultiplier": "500u"}
case("slice-every-units", "a memory fraction and a micro-cpu: both reported",
     review("slice-every-units", "CREATE", s), False, ["slice.mapping.units"])

s = sl(); maps(s, 0)["memory"] = {"allocationMultiplier": "128Gi"}; maps(s, 0)["cpu"] = {"allocationMultiplier": "128"}
case("strict-every-bounds", "memory and cpu both over the driver's max: both reported",
     review("strict-every-bounds", "CREATE", s), False, ["slice.mapping.bounds"], policy=STRICT)

s = sl(); del s["spec"]["nodeName"]; s["spec"]["perDeviceNodeSelection"] = True
dev(s, 0)["nodeName"] = "worker-8"; dev(s, 1)["nodeName"] = "worker-9"
case("strict-every-canary-device", "per-device nodes, neither a canary: both devices reported (an admin writes)",
     review("strict-every-canary-device", "CREATE", s, who=user("bob@example.com", ["dra-guard:slice-admins"])),
     False, ["slice.canary"], policy=STRICT, audit=["break-glass"])

old = sl(pool=POOL2); new = sl(pool=POOL2); maps(new, 0)["memory"] = {"allocationMultiplier": "16Gi"}
maps(new, 1)["cpu"] = {"capacityKey": "dra.example.com/cpu", "allocationMultiplier": "2"}
case("slice-every-unversioned", "both devices' mappings change without a generation bump: both reported",
     review("slice-every-unversioned", "UPDATE", new, old), False, ["slice.mapping.unversioned"],
     policy="tests/golden/policies/unversioned-deny.yaml")

s = sl(); maps(s, 0)["ephemeral-storage"] = {"allocationMultiplier": "10Gi"}
maps(s, 1)["ephemeral-storage"] = {"allocationMultiplier": "1Gi"}
case("slice-every-shape-future", "ephemeral-storage on each device: two warnings",
     review("slice-every-shape-future", "CREATE", s), True, ["slice.shape.future"], warnings=True)

new = sl(nodeName="gpu-canary-3")
case("writer-every-node-update-moves", "a driver on worker-2 moves worker-1's slice to gpu-canary-3: both nodes reported",
     review("writer-every-node-update-moves", "UPDATE", new, sl(), who=driver_sa("worker-2")), False,
     ["slice.writer.node"], policy=STRICT)

two_entries = copy.deepcopy(claim_d)
second = copy.deepcopy(two_entries["status"]["devices"][0])
second["device"] = "accel-0"; second.pop("shareID"); second["data"] = {"cpuset": "8-11"}
two_entries["status"]["devices"].append(second)
case("claim-status-every-devices-entry", "a user writes two of a driver's entries: each entry reported",
     review("claim-status-every-devices-entry", "UPDATE", two_entries, dev_old, who=user("alice@example.com"),
            sub="status"), False, ["status.devices.writer"], policy=STRICT)

# --- real writers ----------------------------------------------------------------------------------------
#
# How the components that really write these objects write them. A false
# denial of any of these is an outage; each case says where the behaviour
# comes from.

BINDING = "tests/golden/policies/binding.yaml"

# The ResourceSlice controller every kubelet-plugin driver runs
# (k8s.io/dynamic-resource-allocation/resourceslice, Controller.syncPool)
# keeps spec.pool.generation when no slice is new and at most one slice
# changes ("Kept generation because at most one update API call is
# necessary"), and updates that slice in place. In the usual one-slice pool
# of a node-local driver, devices come and go and mappings change at the
# same generation.
old = sl(); new = sl()
new["spec"]["devices"].append({"name": "accel-1", "capacity": {"dra.example.com/memory": {"value": "80Gi"}},
                               "nodeAllocatableResourceMappings": {"memory": {"allocationMultiplier": "8Gi"}}})
case("slice-controller-one-slice-device-added", "a device with mappings added in place at the same generation",
     review("slice-controller-one-slice-device-added", "UPDATE", new, old), True,
     absent=["slice.mapping.unversioned"], warnings=False)
old = sl(); new = sl(); del new["spec"]["devices"][0]
case("slice-controller-one-slice-device-withdrawn", "a device withdrawn in place at the same generation",
     review("slice-controller-one-slice-device-withdrawn", "UPDATE", new, old), True,
     absent=["slice.mapping.unversioned"], warnings=False)
old = sl(); new = sl(); maps(new, 0)["memory"] = {"allocationMultiplier": "4Gi"}
case("slice-controller-one-slice-mapping-changed", "a mapping changed 8Gi -> 4Gi in place at the same generation",
     review("slice-controller-one-slice-mapping-changed", "UPDATE", new, old), True,
     absent=["slice.mapping.unversioned"], warnings=False)
case("slice-controller-one-slice-mapping-changed-strict", "the same under a deny-by-default policy",
     review("slice-controller-one-slice-mapping-changed-strict", "UPDATE", new, old), True,
     absent=["slice.mapping.unversioned"], policy="tests/golden/policies/unversioned-deny.yaml")
# With more than one slice changing the controller bumps the generation
# (numNewSlices > 0 or more than one changed slice): every slice of the pool
# is rewritten at generation + 1.
old = sl(pool=POOL2); new = sl(pool=dict(POOL2, generation=4)); maps(new, 0)["memory"] = {"allocationMultiplier": "4Gi"}
case("slice-controller-multi-slice-bumped", "a pool of two slices changes its mappings with a generation bump",
     review("slice-controller-multi-slice-bumped", "UPDATE", new, old), True,
     absent=["slice.mapping.unversioned"], warnings=False, policy="tests/golden/policies/unversioned-deny.yaml")

# Capacity mode: the scheduler adds consumedCapacity x multiplier, and a
# claim consumes only what the capacity's requestPolicy allows (the
# structured allocator's calculateConsumedCapacity: default, validValues,
# validRange min + k*step; no policy: what was asked for, or the whole
# value when nothing was asked).


def shared_dev(s, cap, mapping):
    """Device 1 (socket-0, allowMultipleAllocations) with one capacity and one mapping."""
    d = dev(s, 1)
    d["capacity"] = cap
    d["nodeAllocatableResourceMappings"] = mapping
    return s


s = shared_dev(sl(), {"dra.example.com/hugepages": {"value": "1Gi", "requestPolicy": {
    "default": "2Mi", "validRange": {"min": "2Mi", "step": "2Mi"}}}},
    {"hugepages-2Mi": {"capacityKey": "dra.example.com/hugepages", "allocationMultiplier": "1"}})
case("capacity-hugepages-step-2mi", "hugepages-2Mi x1 of a capacity with step 2Mi: every amount is whole pages",
     review("capacity-hugepages-step-2mi", "CREATE", s), True,
     absent=["slice.mapping.units", "slice.mapping.units.open"], warnings=False)
s = shared_dev(sl(), {"dra.example.com/memory": {"value": "64Gi", "requestPolicy": {
    "default": "1Gi", "validRange": {"min": "1Mi", "step": "1Mi"}}}},
    {"memory": {"capacityKey": "dra.example.com/memory", "allocationMultiplier": "0.5"}})
case("capacity-memory-half-step-1mi", "memory x0.5 of a capacity with step 1Mi: half of a whole Mi is whole bytes",
     review("capacity-memory-half-step-1mi", "CREATE", s), True,
     absent=["slice.mapping.units", "slice.mapping.units.open"], warnings=False)
s = shared_dev(sl(), {"dra.example.com/memory": {"value": "64Gi", "requestPolicy": {
    "default": "2", "validRange": {"min": "2", "step": "1"}}}},
    {"memory": {"capacityKey": "dra.example.com/memory", "allocationMultiplier": "0.5"}})
case("capacity-memory-half-step-1-byte", "memory x0.5 of a capacity with step 1: min + step = 3 maps 1.5 bytes",
     review("capacity-memory-half-step-1-byte", "CREATE", s), False, ["slice.mapping.units"])
s = shared_dev(sl(), {"dra.example.com/memory": {"value": "64Gi", "requestPolicy": {
    "default": "1Gi", "validValues": ["1Gi", "3"]}}},
    {"memory": {"capacityKey": "dra.example.com/memory", "allocationMultiplier": "0.5"}})
case("capacity-memory-valid-value-odd", "memory x0.5 with validValues 1Gi and 3: 3 maps 1.5 bytes",
     review("capacity-memory-valid-value-odd", "CREATE", s), False, ["slice.mapping.units"])
s = shared_dev(sl(), {"dra.example.com/memory": {"value": "64Gi"}},
               {"memory": {"capacityKey": "dra.example.com/memory", "allocationMultiplier": "0.5"}})
case("capacity-memory-half-no-policy", "memory x0.5 with no requestPolicy: whole value fine, one unit is half a "
     "byte; a guess about what claims ask for, so it warns",
     review("capacity-memory-half-no-policy", "CREATE", s), True, ["slice.mapping.units.open"],
     absent=["slice.mapping.units"], warnings=True)
s = shared_dev(sl(), {"dra.example.com/memory": {"value": "64Gi"}, "dra.example.com/hugepages": {"value": "1Gi"}},
               {"memory": {"capacityKey": "dra.example.com/memory", "allocationMultiplier": "0.5"},
                "hugepages-2Mi": {"capacityKey": "dra.example.com/hugepages"}})
case("capacity-every-units-open", "two capacities with no step, each unit a fraction of what it maps: both warned",
     review("capacity-every-units-open", "CREATE", s), True, ["slice.mapping.units.open"], warnings=True)
s = shared_dev(sl(), {"dra.example.com/memory": {"value": "80Gi", "requestPolicy": {
    "default": "1Gi", "validRange": {"min": "1Gi", "max": "16Gi", "step": "1Gi"}}}},
    {"memory": {"capacityKey": "dra.example.com/memory"}})
case("capacity-bound-is-range-max", "the bound is validRange.max (16Gi), not the 80Gi capacity",
     review("capacity-bound-is-range-max", "CREATE", s), True, absent=["slice.mapping.bounds"], policy=STRICT)
s = shared_dev(sl(), {"dra.example.com/memory": {"value": "70Gi", "requestPolicy": {
    "default": "8Gi", "validRange": {"min": "8Gi", "step": "8Gi"}}}},
    {"memory": {"capacityKey": "dra.example.com/memory"}})
case("capacity-bound-is-last-step", "min 8Gi step 8Gi under a 70Gi value: at most 64Gi, not 70Gi",
     review("capacity-bound-is-last-step", "CREATE", s), True, absent=["slice.mapping.bounds"], policy=STRICT)
s = shared_dev(sl(), {"dra.example.com/memory": {"value": "128Gi", "requestPolicy": {
    "default": "8Gi", "validValues": ["8Gi", "96Gi"]}}},
    {"memory": {"capacityKey": "dra.example.com/memory"}})
case("capacity-bound-largest-valid-value", "the largest validValues entry, 96Gi, is over the 64Gi max",
     review("capacity-bound-largest-valid-value", "CREATE", s), False, ["slice.mapping.bounds"], policy=STRICT)

# The garbage collector deletes the slices of a Node that is gone (they are
# owned by their Node; attemptToDeleteItem in
# pkg/controller/garbagecollector) as its own ServiceAccount, or as the
# controller manager when controllers share credentials.
GC_SA = "system:serviceaccount:kube-system:generic-garbage-collector"
case("gc-deletes-slice-of-gone-node", "the garbage collector deletes a node's slice",
     review("gc-deletes-slice-of-gone-node", "DELETE", None, sl(),
            who=user(GC_SA, ["system:serviceaccounts", "system:serviceaccounts:kube-system"])),
     True, policy=STRICT)
case("gc-deletes-as-controller-manager", "the same with shared controller credentials",
     review("gc-deletes-as-controller-manager", "DELETE", None, sl(), who=user("system:kube-controller-manager")),
     True, policy=STRICT)
case("writer-random-user-delete", "a user with RBAC but no business deleting slices",
     review("writer-random-user-delete", "DELETE", None, sl(), who=user("alice@example.com")), False,
     ["slice.writer"], policy=STRICT)
# When orphaning, it patches the dependent to drop the owner's reference
# (orphanDependents): an UPDATE that changes only metadata.
owned = sl(); owned["metadata"]["ownerReferences"] = [
    {"apiVersion": "v1", "kind": "Node", "name": "worker-1", "uid": "8f4e2d1c-0000-4000-8000-000000000001",
     "controller": True}]
case("gc-orphans-slice", "the garbage collector strips ownerReferences (metadata only)",
     review("gc-orphans-slice", "UPDATE", sl(), owned,
            who=user(GC_SA, ["system:serviceaccounts", "system:serviceaccounts:kube-system"])),
     True, policy=STRICT)
off = sl(nodeName="worker-9", pool={"name": "worker-9", "generation": 3, "resourceSliceCount": 1})
off_labelled = copy.deepcopy(off); off_labelled["metadata"]["labels"] = {"team": "gpu"}
case("metadata-only-update-passes", "any RBAC-allowed writer may change labels of a slice whose mappings the "
     "policy would refuse today",
     review("metadata-only-update-passes", "UPDATE", off_labelled, off, who=user("alice@example.com")),
     True, absent=["slice.canary", "slice.writer"], policy=STRICT)
s = copy.deepcopy(off); s["spec"]["devices"][0]["attributes"]["dra.example.com/model"] = {"string": "acc-y"}
case("spec-update-still-judged", "a change outside metadata by the same user is judged as before",
     review("spec-update-still-judged", "UPDATE", s, off, who=user("alice@example.com")),
     False, ["slice.writer", "slice.canary"], policy=STRICT)
case("policy-configmap-metadata-only", "labels of the guard's own ConfigMap change while its policy does not load",
     review("policy-configmap-metadata-only", "UPDATE",
            dict(configmap("dra-guard-policy", BAD), metadata={"name": "dra-guard-policy", "namespace": "dra-guard",
                                                             "labels": {"app": "dra-guard"}}),
            configmap("dra-guard-policy", BAD), who=ADMIN), True, absent=["policy.invalid"])

# The mutating endpoint only labels: every denial is the validating one's.
s = sl(); maps(s, 0)["pods"] = {"allocationMultiplier": "1"}
case("slice-mutate-never-denies", "a slice the validating endpoint refuses is still labelled on /mutate",
     review("slice-mutate-never-denies", "CREATE", s), True, endpoint="mutate", absent=["slice.mapping.name"],
     patch=[{"op": "add", "path": "/metadata/labels", "value": {"dra-guard.io/mappings": "*"}}])
case("slice-mutate-never-denies-strict", "nor under a strict policy, for a writer it would refuse",
     review("slice-mutate-never-denies-strict", "CREATE", s, who=user("alice@example.com")), True,
     endpoint="mutate", policy=STRICT,
     patch=[{"op": "add", "path": "/metadata/labels", "value": {"dra-guard.io/mappings": "*"}}])

# Binding conditions (DRADeviceBindingConditions, beta in 1.36): a driver's
# controller sets status.devices[].conditions on claims allocated on any
# node. kubernetes-sigs/dra-example-driver runs that controller
# (cmd/dra-example-controller, BindingConditionsPlugin.Reconcile:
# Status().Update) as a Deployment under the same ServiceAccount as the
# kubelet-plugin DaemonSet. Every token bound to a Pod carries the Pod's
# node, the controller's too (k8s.io/apiserver serviceaccount
# ServiceAccountInfo.UserInfo: node-name, pod-name, pod-uid), so only the
# Pod's name tells the controller from a plugin.


def sa_token(name, node, pod):
    u = user(name, ["system:serviceaccounts", "system:serviceaccounts:" + name.split(":")[2]], node)
    u["extra"]["authentication.kubernetes.io/pod-name"] = [pod]
    u["extra"]["authentication.kubernetes.io/pod-uid"] = [str(uuid.uuid5(uuid.NAMESPACE_URL, pod))]
    return u


def binding_claim(driver):
    c = copy.deepcopy(CLAIM)
    for r in c["status"]["allocation"]["devices"]["results"]:
        r["driver"] = driver
    for d in c["status"]["devices"]:
        d["driver"] = driver
    before = copy.deepcopy(c); before["status"].pop("devices")
    return c, before


SHARED_SA = "system:serviceaccount:dra-example:dra-example-driver"
c, before = binding_claim("shared.example.com")
case("binding-shared-sa-controller-any-node", "the controller Pod (on worker-9) sets a condition for a claim on worker-1",
     review("binding-shared-sa-controller-any-node", "UPDATE", c, before,
            who=sa_token(SHARED_SA, "worker-9", "dra-example-driver-controller-7d9f8c6b5-x2x4q"), sub="status"),
     True, absent=["status.devices.writer"], policy=BINDING)
case("binding-shared-sa-plugin-own-node", "the plugin Pod on worker-1 writes its own node's claim",
     review("binding-shared-sa-plugin-own-node", "UPDATE", c, before,
            who=sa_token(SHARED_SA, "worker-1", "dra-example-driver-kubeletplugin-9k2lp"), sub="status"),
     True, policy=BINDING)
case("binding-shared-sa-plugin-other-node", "a plugin Pod on worker-2 may not write worker-1's claim",
     review("binding-shared-sa-plugin-other-node", "UPDATE", c, before,
            who=sa_token(SHARED_SA, "worker-2", "dra-example-driver-kubeletplugin-7hbq2"), sub="status"),
     False, ["status.devices.writer"], policy=BINDING)
case("binding-shared-sa-no-pod-name", "a token not bound to a Pod gets node scope",
     review("binding-shared-sa-no-pod-name", "UPDATE", c, before, who=user(SHARED_SA, node="worker-9"),
            sub="status"), False, ["status.devices.writer"], policy=BINDING)
c, before = binding_claim("split.example.com")
case("binding-split-sa-controller", "a controller with its own scope: cluster ServiceAccount",
     review("binding-split-sa-controller", "UPDATE", c, before,
            who=sa_token("system:serviceaccount:split:controller", "worker-9", "split-controller-5c7d-abcde"),
            sub="status"), True, policy=BINDING)
case("binding-split-sa-plugin-other-node", "the plugin's own ServiceAccount stays node-scoped",
     review("binding-split-sa-plugin-other-node", "UPDATE", c, before,
            who=sa_token("system:serviceaccount:split:kubelet-plugin", "worker-2", "split-plugin-q8x7z"),
            sub="status"), False, ["status.devices.writer"], policy=BINDING)
c, before = binding_claim("legacy.example.com")
case("binding-legacy-policy-refuses-controller", "a policy of the earlier form (one scope per driver) still "
     "loads, and refuses the controller as it did",
     review("binding-legacy-policy-refuses-controller", "UPDATE", c, before,
            who=sa_token("system:serviceaccount:legacy:driver", "worker-9", "legacy-controller-1-abcde"),
            sub="status"), False, ["status.devices.writer"], policy=BINDING)
s = sl(driver="shared.example.com", nodeName="worker-5", pool={"name": "worker-5", "generation": 1, "resourceSliceCount": 1})
case("binding-shared-sa-controller-writes-any-slice", "the controller's cluster scope covers slices too",
     review("binding-shared-sa-controller-writes-any-slice", "CREATE", s,
            who=sa_token(SHARED_SA, "worker-9", "dra-example-driver-controller-7d9f8c6b5-x2x4q")),
     True, policy=BINDING)
case("binding-shared-sa-plugin-other-node-slice", "a plugin Pod may not publish another node's slice",
     review("binding-shared-sa-plugin-other-node-slice", "CREATE", s,
            who=sa_token(SHARED_SA, "worker-9", "dra-example-driver-kubeletplugin-9k2lp")),
     False, ["slice.writer.node"], policy=BINDING)

# Limits apply to what the guard reads: Kubernetes sets no count limit on
# labels or ConfigMap keys, and a claim's opaque parameters nest as deep as
# the API server's JSON decoder allows.
s = sl(); s["metadata"]["labels"] = {"team.example.com/l%03d" % i: "v" for i in range(300)}
case("limits-slice-300-labels", "a slice with 300 labels decodes and is judged",
     review("limits-slice-300-labels", "CREATE", s), True)
deep = 1
for _ in range(80):
    deep = {"a": deep}
claim_deep = copy.deepcopy(new_claim)
claim_deep["spec"]["devices"]["config"] = [{"opaque": {"driver": "dra.example.com", "parameters": deep}}]
case("limits-claim-deep-opaque-parameters", "a claim whose opaque parameters nest 80 levels deep",
     review("limits-claim-deep-opaque-parameters", "CREATE", claim_deep, who=user("system:serviceaccount:team-a:app")),
     True, policy=STRICT)
cm = configmap("something-else", GOOD); cm["data"] = {"key-%d" % i: "v" for i in range(300)}
case("limits-configmap-300-keys", "an unrelated ConfigMap with 300 keys",
     review("limits-configmap-300-keys", "CREATE", cm, who=ADMIN), True)

# A driver republishes its slice after the policy tightened (canary nodes
# narrowed, a bound lowered): what the stored slice already holds and this
# write leaves as it was is warned, not denied. Denying it would leave the
# mapping in place and block every other change of the slice, such as
# withdrawing a failed device.
s = copy.deepcopy(off); dev(s, 1)["attributes"]["dra.example.com/health"] = {"string": "degraded"}
case("ratchet-canary-republish", "a slice with mappings on a node canary.nodes no longer lists is republished "
     "unchanged in its mappings: warned",
     review("ratchet-canary-republish", "UPDATE", s, off, who=driver_sa("worker-9")), True, ["slice.canary"],
     warnings=True, policy=STRICT)
big = sl(); maps(big, 0)["memory"] = {"allocationMultiplier": "128Gi"}
s = copy.deepcopy(big); dev(s, 1)["attributes"]["dra.example.com/health"] = {"string": "degraded"}
case("ratchet-bounds-unchanged", "a mapping over a lowered max, unchanged by the write: warned",
     review("ratchet-bounds-unchanged", "UPDATE", s, big), True, ["slice.mapping.bounds"], warnings=True,
     policy=STRICT)
s = copy.deepcopy(big); del s["spec"]["devices"][1]
case("ratchet-device-withdrawn", "withdrawing another device of that slice passes",
     review("ratchet-device-withdrawn", "UPDATE", s, big), True, ["slice.mapping.bounds"], warnings=True,
     policy=STRICT)
s = copy.deepcopy(big); maps(s, 0)["memory"] = {"allocationMultiplier": "256Gi"}
case("ratchet-bounds-raised", "raising the mapping further is this write's doing: denied",
     review("ratchet-bounds-raised", "UPDATE", s, big), False, ["slice.mapping.bounds"], policy=STRICT)
s = copy.deepcopy(big)
s["spec"]["devices"].append({"name": "accel-9", "capacity": {"dra.example.com/memory": {"value": "80Gi"}},
                             "nodeAllocatableResourceMappings": {"memory": {"allocationMultiplier": "128Gi"}}})
case("ratchet-new-device", "a new device with the same excess: denied",
     review("ratchet-new-device", "UPDATE", s, big), False, ["slice.mapping.bounds"], policy=STRICT)


# --- the rules that read the cluster view, each with its view (ledger_cases.py) -------------------

sys.path.insert(0, HERE)
import ledger_cases  # noqa: E402

ledger_cases.define(sys.modules[__name__])


FINGERPRINT = set("0123456789abcdef")


def patch_problems(want, got):
    """want is the intent ("*" for the fingerprint), got the recorded patch."""
    if want is None:
        return [] if got is None else ["a patch the intent does not expect: %s" % json.dumps(got)]
    if not isinstance(got, list) or len(got) != len(want):
        return ["patch %s, intent %s" % (json.dumps(got), json.dumps(want))]
    out = []
    for g, w in zip(got, want):
        wv, gv = w.get("value"), g.get("value")
        if isinstance(wv, dict) and isinstance(gv, dict) and set(wv) == set(gv):
            wv, gv = wv.get("dra-guard.io/mappings"), gv.get("dra-guard.io/mappings")
        fp_ok = (wv == "*" and isinstance(gv, str) and len(gv) == 16 and set(gv) <= FINGERPRINT) or wv == gv
        if g.get("op") != w["op"] or g.get("path") != w["path"] or set(g) != set(w) or not fp_ok:
            out.append("patch operation %s, intent %s" % (json.dumps(g), json.dumps(w)))
    return out


def intent_problems(c, verdict):
    """Where a recorded verdict contradicts the case's hand-written intent."""
    e, out = c["expect"], []
    keys = {"response", "violations"} | ({"undecided", "ledger"} if "view" in c else set())
    keys |= {"gateWithheld"} if c.get("gateUnreleasable") else set()
    if not isinstance(verdict, dict) or set(verdict) != keys:
        return ["no recorded verdict"]
    if c.get("gateUnreleasable") and verdict["gateWithheld"] is not e["gateWithheld"]:
        out.append("gateWithheld %s, intent %s" % (verdict["gateWithheld"], e["gateWithheld"]))
    if "view" in c:
        got = sorted("%s:%s" % (u["rule"], u["reason"]) for u in verdict["undecided"])
        if got != e["undecided"]:
            out.append("undecided %s, intent %s" % (got, e["undecided"]))
        summary = verdict["ledger"].get("summary", {})
        out += ["ledger %s is %s, intent %s" % (k, summary.get(k), v)
                for k, v in e.get("ledger", {}).items() if summary.get(k) != v]
    r, fired = verdict["response"], [v["rule"] for v in verdict["violations"]]
    if r.get("allowed") is not e["allowed"]:
        out.append("allowed is %s, intent %s" % (r.get("allowed"), e["allowed"]))
    if set(fired) != set(e["rules"]):
        out.append("rules fired %s, intent exactly %s" % (sorted(set(fired)), sorted(set(e["rules"]))))
    out += ["rule %s fired, intent absent" % rule for rule in e.get("absent", []) if rule in fired]
    status = r.get("status")
    if e["allowed"] and status is not None:
        out.append("an allowed answer with a status: %s" % json.dumps(status))
    if not e["allowed"] and (not isinstance(status, dict) or status.get("code") != e.get("code", 403) or
                             "dra-guard" not in status.get("message", "")):
        out.append("status %s, intent code %d naming dra-guard" % (json.dumps(status), e.get("code", 403)))
    warnings = r.get("warnings", [])
    if "warnings" in e and bool(warnings) != e["warnings"]:
        out.append("warnings %s, intent %s" % (warnings, "some" if e["warnings"] else "none"))
    out += ["warning of %d characters (Kubernetes shows under 120): %r" % (len(w), w)
            for w in warnings if len(w) >= 120]
    out += ["audit annotation %s missing" % k for k in e.get("audit", []) if k not in r.get("auditAnnotations", {})]
    out += patch_problems(e.get("patch"), r.get("patch"))
    return out


def generated():
    names = set()
    for c in cases:
        assert c["name"] not in names, "two cases named " + c["name"]
        names.add(c["name"])
    return cases


def write_case(path, c):
    with open(path, "w") as f:
        json.dump(c, f, indent=1, sort_keys=False)
        f.write("\n")


def record(observer):
    with tempfile.TemporaryDirectory(prefix="dra-guard-golden-") as tmp:
        for c in generated():
            write_case(os.path.join(tmp, c["name"] + ".json"), c)
        env = dict(os.environ, DRA_GUARD_ROOT=ROOT)
        run = subprocess.run([observer, "--observe", tmp], env=env, stdout=subprocess.PIPE)
        if run.returncode != 0:
            print("gen.py: %s --observe failed (exit %d); nothing recorded" % (observer, run.returncode))
            return 1
        observed = json.loads(run.stdout)
    problems = []
    for c in cases:
        problems += ["%s: %s" % (c["name"], p) for p in intent_problems(c, observed.get(c["name"]))]
    if problems:
        print("gen.py: these verdicts contradict their intent; nothing recorded:")
        print("\n".join("  " + p for p in problems))
        return 1
    os.makedirs(OUT, exist_ok=True)
    for old in os.listdir(OUT):
        if old.endswith(".json") and old[:-5] not in observed:
            os.remove(os.path.join(OUT, old))
    for c in cases:
        write_case(os.path.join(OUT, c["name"] + ".json"), dict(c, verdict=observed[c["name"]]))
    print("%d cases recorded in %s; review `git diff %s`" % (len(cases), os.path.relpath(OUT, ROOT),
                                                             os.path.relpath(OUT, ROOT)))
    return 0


def check():
    """Problems with the files on disk, as a list of lines."""
    problems = []
    want = {c["name"]: c for c in generated()}
    have = sorted(f[:-5] for f in os.listdir(OUT) if f.endswith(".json"))
    problems += ["%s.json: gen.py does not write it" % n for n in have if n not in want]
    for name, c in sorted(want.items()):
        path = os.path.join(OUT, name + ".json")
        if not os.path.exists(path):
            problems.append("%s.json: missing" % name)
            continue
        with open(path) as f:
            on_disk = json.load(f)
        verdict = on_disk.pop("verdict", None)
        if on_disk != c:
            problems.append("%s.json: differs from what gen.py writes" % name)
        problems += ["%s: %s" % (name, p) for p in intent_problems(c, verdict)]
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--observer", help="test_engine, to record the verdicts with (make golden-update)")
    ap.add_argument("--check", action="store_true", help="check the files and their recorded verdicts")
    args = ap.parse_args()
    if args.check == bool(args.observer):
        ap.error("give --observer BIN or --check")
    if args.observer:
        return record(args.observer)
    problems = check()
    if problems:
        print("\n".join(problems))
        print("gen.py --check: %d problems (make golden-update records the cases again)" % len(problems))
        return 1
    print("%d cases match gen.py and their intent" % len(cases))
    return 0


if __name__ == "__main__":
    sys.exit(main())
