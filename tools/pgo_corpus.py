#!/usr/bin/env python3
"""Training inputs for the profile-guided release build (make's pgo flavour).

Writes AdmissionReview bodies into OUT: every golden case's review (all kinds,
operations and verdicts the rules know), and ResourceSlice UPDATE reviews of
1, 8, 32 and 128 devices shaped like a driver's republish (attributes,
capacities, two or three mappings per device, one changed attribute), which
is where a server spends its time. Self-contained and deterministic: the
profile, and so the binary, depend only on the repository.
"""

import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DRIVER = "dra.example.com"


def device(rng, i):
    shareable = i % 4 == 3
    attrs = {
        DRIVER + "/model": {"string": rng.choice(["a100", "h100", "l4"])},
        DRIVER + "/numaNode": {"int": i % 2},
        DRIVER + "/driverVersion": {"version": "1.%d.0" % rng.randint(0, 9)},
        "resource.kubernetes.io/pcieRoot": {"string": "pci0000:%02x" % (16 + i % 8)},
    }
    d = {"name": "dev-%d" % i, "attributes": attrs}
    if shareable:
        d["allowMultipleAllocations"] = True
        d["capacity"] = {
            DRIVER + "/cores": {"value": "64", "requestPolicy": {"default": "1", "validRange": {"min": "1", "step": "1"}}},
            DRIVER + "/memory": {"value": "96Gi"},
        }
        d["nodeAllocatableResourceMappings"] = {
            "cpu": {"capacityKey": DRIVER + "/cores"},
            "memory": {"capacityKey": DRIVER + "/memory", "allocationMultiplier": "1"},
        }
    else:
        d["capacity"] = {DRIVER + "/memory": {"value": "80Gi"}}
        d["nodeAllocatableResourceMappings"] = {
            "memory": {"allocationMultiplier": rng.choice(["8Gi", "16Gi"])},
            "cpu": {"allocationMultiplier": rng.choice(["2", "500m"])},
            "hugepages-2Mi": {"allocationMultiplier": "1Gi"},
        }
    return d


def slice_review(n, seed):
    rng = random.Random(seed)
    obj = {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": "worker-1-%s-%d" % (DRIVER, n), "uid": "u-%d" % n, "resourceVersion": "1",
                     "managedFields": [{"manager": DRIVER, "operation": "Update", "fieldsType": "FieldsV1",
                                        "fieldsV1": {"f:spec": {"f:devices": {}, "f:pool": {}}}}]},
        "spec": {"driver": DRIVER, "nodeName": "worker-1",
                 "pool": {"name": "worker-1", "generation": 3, "resourceSliceCount": 1},
                 "devices": [device(rng, i) for i in range(n)]},
    }
    old = json.loads(json.dumps(obj))
    obj["spec"]["devices"][n // 2]["attributes"][DRIVER + "/firmware"] = {"version": "3.0.1"}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "pgo-%d" % n,
        "kind": {"group": "resource.k8s.io", "version": "v1", "kind": "ResourceSlice"},
        "resource": {"group": "resource.k8s.io", "version": "v1", "resource": "resourceslices"},
        "name": obj["metadata"]["name"], "operation": "UPDATE",
        "userInfo": {"username": "system:serviceaccount:dra-system:dra-example-driver",
                     "groups": ["system:serviceaccounts", "system:authenticated"],
                     "extra": {"authentication.kubernetes.io/node-name": ["worker-1"]}},
        "object": obj, "oldObject": old, "dryRun": False}}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: pgo_corpus.py OUT")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    cases = os.path.join(ROOT, "tests", "golden", "cases")
    for name in sorted(os.listdir(cases)):
        with open(os.path.join(cases, name)) as f:
            review = json.load(f)["review"]
        with open(os.path.join(out, "golden-" + name), "w") as f:
            json.dump(review, f, separators=(",", ":"))
    for n in (1, 8, 32, 128):
        with open(os.path.join(out, "slice-%d.json" % n), "w") as f:
            json.dump(slice_review(n, n), f, separators=(",", ":"))


if __name__ == "__main__":
    main()
