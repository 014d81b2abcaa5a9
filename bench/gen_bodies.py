#!/usr/bin/env python3
"""Deterministic AdmissionReview bodies for `make bench`.

slice-{1,8,32,128}[-deny].json come from ../shared/bench/gen.py (ResourceSlice UPDATE
reviews, the same bodies the side-by-side harness sends to the Go peers, but for one
thing: the harness's -deny variant carries its `pods` mapping in the stored object
too, and dra-guard lets an UPDATE through with a warning when its only fault was
already stored (the stored-object ratchet, docs/rules.md), so the harness's check that
a webhook denies it would stop every run; here the mapping is new in the update, and
every webhook denies it); this adds
claim-status.json (kube-scheduler allocating a ResourceClaim: resourceclaims/status
UPDATE) and pod-status.json (kube-scheduler writing a Pod's
status.nodeAllocatableResourceClaimStatuses in PreBind: pods/status UPDATE).
worst-*.json are the worst shape of each rule's input, at the decoder's caps, to
be judged under worst-policy.yaml (bench_engine -w): every list a rule compares is
as long as it may be and ordered so that no shortcut applies. Output is a pure
function of --seed.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.environ.get("DRA_GUARD_SHARED", os.path.join(HERE, "..", "..", "shared"))


def det_uuid(rng):
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def review(rng, kind, group, plural, obj, old, user, sub):
    return {
        "kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
        "request": {
            "uid": det_uuid(rng),
            "kind": {"group": group, "version": "v1", "kind": kind},
            "resource": {"group": group, "version": "v1", "resource": plural},
            "subResource": sub,
            "requestKind": {"group": group, "version": "v1", "kind": kind},
            "requestResource": {"group": group, "version": "v1", "resource": plural},
            "requestSubResource": sub,
            "name": obj["metadata"]["name"], "namespace": obj["metadata"]["namespace"],
            "operation": "UPDATE",
            "userInfo": {"username": user, "groups": ["system:authenticated"]},
            "object": obj, "oldObject": old, "dryRun": False,
            "options": {"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1"},
        },
    }


def claim_status(rng):
    devices = 4
    results = [{"request": "gpus", "driver": "dra.example.com", "pool": "worker-1",
                "device": "acc-%d" % i} for i in range(devices)]
    claim = {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "train-%05d-gpus" % rng.randint(0, 99999), "namespace": "team-a",
                     "uid": det_uuid(rng), "resourceVersion": str(rng.randint(10 ** 5, 10 ** 7)),
                     "finalizers": ["resource.kubernetes.io/delete-protection"],
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "train-0",
                                          "uid": det_uuid(rng), "controller": True}]},
        "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {
            "deviceClassName": "accel.example.com", "allocationMode": "ExactCount", "count": devices}}]}},
        "status": {},
    }
    new = json.loads(json.dumps(claim))
    new["status"] = {
        "allocation": {
            "devices": {"results": results},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["worker-1"]}]}]},
        },
        "reservedFor": [{"resource": "pods", "name": "train-0", "uid": det_uuid(rng)}],
    }
    return review(rng, "ResourceClaim", "resource.k8s.io", "resourceclaims", new, claim,
                  "system:kube-scheduler", "status")


def pod_status(rng):
    containers = [{"name": "c%d" % i, "image": "registry.example/app:1.%d" % i,
                   "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "claims": [{"name": "gpus"}]}}
                  for i in range(3)]
    pod = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "train-0", "namespace": "team-a", "uid": det_uuid(rng),
                     "labels": {"app": "train"}},
        "spec": {"nodeName": "worker-1", "containers": containers,
                 "resourceClaims": [{"name": "gpus", "resourceClaimName": "train-gpus"}]},
        "status": {"phase": "Pending", "qosClass": "Burstable",
                   "conditions": [{"type": "PodScheduled", "status": "True",
                                   "lastTransitionTime": "2026-11-28T17:40:51Z"}]},
    }
    new = json.loads(json.dumps(pod))
    new["status"]["nodeAllocatableResourceClaimStatuses"] = [
        {"resourceClaimName": "train-gpus", "containers": ["c0", "c1", "c2"],
         "resources": {"cpu": "8", "memory": "32Gi", "hugepages-2Mi": "1Gi"}}]
    return review(rng, "Pod", "", "pods", new, pod, "system:kube-scheduler", "status")


# --- the worst shape of each rule's input ---------------------------------------------------

WORST_DRIVER = "dra.example.com"
WORST_SA = "system:serviceaccount:dra-system:dra-example-driver"
LIST_MAX = 4096       # the decoder's cap on a list (groups, device statuses, classes, ...)
MAP_MAX = 256         # its cap on a map (capacity, mappings)
DEVICES_MAX = 128     # the API server's cap on devices in a slice


def worst_review(rng, kind, group, plural, obj, old, user, sub="", op="UPDATE", groups=None, node=None):
    r = review(rng, kind, group, plural, obj, old, user, sub)
    r["request"]["operation"] = op
    if op == "CREATE":
        r["request"]["options"] = {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
    if groups is not None:
        r["request"]["userInfo"]["groups"] = groups
    if node:
        r["request"]["userInfo"]["extra"] = {"authentication.kubernetes.io/node-name": [node]}
    return r


def worst_device_statuses(rng):
    """status.devices: 4096 entries before and after, keys of one length, the
    new list in reverse order (a scan per entry compared every pair)."""
    entries = [{"driver": WORST_DRIVER, "pool": "worker-1", "device": "acc-%05d" % i,
                "conditions": [{"type": "Ready", "status": "True", "reason": "Prepared", "message": "",
                                "lastTransitionTime": "2026-11-28T17:40:51Z"}]} for i in range(LIST_MAX)]
    old = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
           "metadata": {"name": "wide", "namespace": "team-a", "uid": det_uuid(rng)},
           "spec": {"devices": {"requests": [{"name": "all", "exactly": {"deviceClassName": WORST_DRIVER,
                                                                         "allocationMode": "All"}}]}},
           "status": {"allocation": {"devices": {"results": []}, "nodeSelector": {"nodeSelectorTerms": [
               {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["worker-1"]}]}]}},
               "devices": entries}}
    new = json.loads(json.dumps(old))
    new["status"]["devices"] = list(reversed(entries))
    return worst_review(rng, "ResourceClaim", "resource.k8s.io", "resourceclaims", new, old, WORST_SA,
                        "status", node="worker-1")


def worst_slice(rng):
    """128 devices of 256 capacities and 256 capacity-mode mappings each, in a
    pool of two slices at one generation, the devices in reverse order in the
    new object: every device is looked up by name, every mapping's capacity
    by key, and every device's mappings compared with the old ones (5.6 MB,
    under the server's 8 MiB --max-body)."""
    def device(i):
        # One unit of each capacity maps one page: every rule passes, so the
        # verdict is the work of the comparisons alone.
        caps = {"c%03d" % k: {"value": "%d" % (k + 1)} for k in reversed(range(MAP_MAX))}
        maps = {"hugepages-%dKi" % (k + 1): {"capacityKey": "c%03d" % k, "allocationMultiplier": "%dKi" % (k + 1)}
                for k in reversed(range(MAP_MAX))}
        return {"name": "dev-%03d" % i, "allowMultipleAllocations": True, "capacity": caps,
                "nodeAllocatableResourceMappings": maps}
    devs = [device(i) for i in range(DEVICES_MAX)]
    old = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
           "metadata": {"name": "canary-0000-a-dra.example.com-x", "namespace": ""},
           "spec": {"driver": WORST_DRIVER, "nodeName": "canary-0000-a",
                    "pool": {"name": "canary-0000-a", "generation": 1, "resourceSliceCount": 2},
                    "devices": devs}}
    new = json.loads(json.dumps(old))
    new["spec"]["devices"] = list(reversed(devs))
    return worst_review(rng, "ResourceSlice", "resource.k8s.io", "resourceslices", new, old, WORST_SA,
                        node="canary-0000-a")


def worst_groups(rng):
    """A writer in 4096 groups, none of them an admin group of the 4096 the
    policy lists (a slice write by someone else than the driver)."""
    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
           "metadata": {"name": "s", "namespace": ""},
           "spec": {"driver": WORST_DRIVER, "nodeName": "canary-0000-a",
                    "pool": {"name": "canary-0000-a", "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": "d"}]}}
    old = json.loads(json.dumps(obj))
    old["spec"]["devices"][0]["name"] = "e"
    groups = ["team-%04d.example.com" % i for i in range(LIST_MAX)]
    return worst_review(rng, "ResourceSlice", "resource.k8s.io", "resourceslices", obj, old,
                        "someone@example.com", groups=groups)


def worst_freeze_classes(rng):
    """A claim CREATE during a freeze scoped to 4096 drivers, naming 4096
    device classes, none of them frozen."""
    first = [{"name": "s%04d" % i, "deviceClassName": "class-%04d.example.org" % i} for i in range(LIST_MAX)]
    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
           "metadata": {"name": "many-classes", "namespace": "team-a"},
           "spec": {"devices": {"requests": [{"name": "r", "firstAvailable": first}]}}}
    return worst_review(rng, "ResourceClaim", "resource.k8s.io", "resourceclaims", obj, None,
                        "system:serviceaccount:team-a:app", op="CREATE")


def worst_canary(rng):
    """perDeviceNodeSelection: 128 devices with mappings on 128 nodes, none a
    canary node, against 4096 canary patterns."""
    devs = [{"name": "dev-%03d" % i, "nodeName": "worker-%03d" % i,
             "nodeAllocatableResourceMappings": {"memory": {"allocationMultiplier": "1Gi"}}}
            for i in range(DEVICES_MAX)]
    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s", "namespace": ""},
           "spec": {"driver": "ctrl.example.com", "perDeviceNodeSelection": True,
                    "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}, "devices": devs}}
    return worst_review(rng, "ResourceSlice", "resource.k8s.io", "resourceslices", obj, None,
                        "system:serviceaccount:ctrl:controller", op="CREATE")


def worst_pod_statuses(rng):
    """4096 node-allocatable claim statuses rewritten by the scheduler."""
    def pod(amount):
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team-a"},
                "spec": {"nodeName": "worker-1"},
                "status": {"nodeAllocatableResourceClaimStatuses": [
                    {"resourceClaimName": "c%04d" % i, "containers": ["app"], "resources": {"memory": amount}}
                    for i in range(LIST_MAX)]}}
    return worst_review(rng, "Pod", "", "pods", pod("2Gi"), pod("1Gi"), "system:kube-scheduler", "status")


def worst_policy_configmap(rng):
    """The guard's own ConfigMap holding a 1 MiB YAML flow sequence: the
    policy.invalid check parses it on every write."""
    text = "apiVersion: dra-guard.io/v1alpha1\nkind: Policy\ncanary:\n  nodes: [" + \
        ", ".join(["a"] * 349000) + "]\n"
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "dra-guard-policy", "namespace": "dra-guard"},
          "data": {"policy.yaml": text, "freeze": "false"}}
    old = json.loads(json.dumps(cm))
    old["data"]["freeze"] = "true"
    return worst_review(rng, "ConfigMap", "", "configmaps", cm, old, "kubernetes-admin",
                        groups=["system:masters"])


def worst_policy():
    """4096 drivers, admin groups, canary patterns and frozen drivers, the
    freeze on: every policy list as long as the loader takes."""
    lines = ["apiVersion: dra-guard.io/v1alpha1", "kind: Policy", "enforcement: {default: deny}",
             "writers:", "  admins:"]
    lines += ["  - admin-%04d.example.com" % i for i in range(LIST_MAX)]
    lines += ["drivers:",
              "  %s:" % WORST_DRIVER,
              "    serviceAccounts: [%s]" % WORST_SA,
              "  ctrl.example.com:",
              "    serviceAccounts: [system:serviceaccount:ctrl:controller]",
              "    scope: cluster"]
    lines += ["  d%04d.example.com: {deviceClasses: [dc%04d.example.com]}" % (i, i) for i in range(LIST_MAX - 2)]
    lines += ["canary:", "  nodes:"]
    lines += ["  - \"canary-%04d-*\"" % i for i in range(LIST_MAX)]
    lines += ["freeze:", "  scope:", "    drivers:"]
    lines += ["    - d%04d.example.com" % i for i in range(LIST_MAX - 2)]
    # A ConfigMap manifest, so the freeze is on.
    doc = "\n".join("    " + ln for ln in lines)
    return ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dra-guard-policy, namespace: dra-guard}\n"
            "data:\n  freeze: \"true\"\n  freeze-reason: worst shapes\n  policy.yaml: |\n" + doc + "\n")


WORST = (("worst-device-statuses.json", worst_device_statuses), ("worst-slice.json", worst_slice),
         ("worst-groups.json", worst_groups), ("worst-freeze-classes.json", worst_freeze_classes),
         ("worst-canary.json", worst_canary), ("worst-pod-statuses.json", worst_pod_statuses),
         ("worst-policy-configmap.json", worst_policy_configmap))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    subprocess.run([sys.executable, os.path.join(SHARED, "bench", "gen.py"), "--seed", str(args.seed),
                    "--out", args.out], check=True, stdout=subprocess.DEVNULL)
    for n in (1, 8, 32, 128):
        path = os.path.join(args.out, "slice-%d-deny.json" % n)
        if not os.path.exists(path):
            continue
        with open(path) as f:
            body = json.load(f)
        old = body["request"].get("oldObject")
        if old:
            old["spec"]["devices"][-1].get("nodeAllocatableResourceMappings", {}).pop("pods", None)
        with open(path, "w") as f:
            f.write(json.dumps(body, separators=(",", ":")) + "\n")
    rng = random.Random(args.seed)
    for name, body in (("claim-status.json", claim_status(rng)), ("pod-status.json", pod_status(rng))):
        with open(os.path.join(args.out, name), "w") as f:
            f.write(json.dumps(body, separators=(",", ":")) + "\n")
    for name, make in WORST:
        with open(os.path.join(args.out, name), "w") as f:
            f.write(json.dumps(make(rng), separators=(",", ":")) + "\n")
    with open(os.path.join(args.out, "worst-policy.yaml"), "w") as f:
        f.write(worst_policy())


if __name__ == "__main__":
    main()
