#!/usr/bin/env python3
"""Deterministic AdmissionReview bodies for `make bench`.

slice-{1,8,32,128}[-deny].json come from ../shared/bench/gen.py (ResourceSlice UPDATE
reviews, the same bodies the side-by-side harness sends to the Go peers); this adds
claim-status.json (kube-scheduler allocating a ResourceClaim: resourceclaims/status
UPDATE) and pod-status.json (kube-scheduler writing a Pod's
status.nodeAllocatableResourceClaimStatuses in PreBind: pods/status UPDATE).
Output is a pure function of --seed.
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    subprocess.run([sys.executable, os.path.join(SHARED, "bench", "gen.py"), "--seed", str(args.seed),
                    "--out", args.out], check=True, stdout=subprocess.DEVNULL)
    rng = random.Random(args.seed)
    for name, body in (("claim-status.json", claim_status(rng)), ("pod-status.json", pod_status(rng))):
        with open(os.path.join(args.out, name), "w") as f:
            f.write(json.dumps(body, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
