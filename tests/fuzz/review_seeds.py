#!/usr/bin/env python3
"""Seed inputs for fuzz_review, written into a corpus directory.

  tests/fuzz/review_seeds.py CORPUS_DIR

- every golden case's AdmissionReview (tests/golden/cases/*.json, "review"),
  which between them reach every rule;
- the objects in tests/fixtures/ (ResourceSlices, ResourceClaims, Pods in
  every API version, and the refused ones) wrapped in AdmissionReviews as
  CREATE, as an UPDATE against themselves, and as a status UPDATE by the
  scheduler; the AdmissionReviews and AdmissionRequests there as they are.

Compact JSON, named after a hash of the content, so running it again adds
nothing and a file never changes name. Standard library only.
"""

import glob
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("DRA_GUARD_ROOT") or os.path.dirname(os.path.dirname(HERE))
MAX_SEED = 256 * 1024

KINDS = {
    "ResourceSlice": ("resource.k8s.io", "resourceslices"),
    "ResourceClaim": ("resource.k8s.io", "resourceclaims"),
    "Pod": ("", "pods"),
}


def review(obj, operation, old=None, sub=None, user="system:serviceaccount:dra-system:dra-example-driver"):
    kind = obj.get("kind", "ResourceSlice")
    group, plural = KINDS.get(kind, ("resource.k8s.io", "resourceslices"))
    api = obj.get("apiVersion", "v1")
    version = api.rsplit("/", 1)[-1]
    meta = obj.get("metadata") or {}
    req = {
        "uid": "00000000-0000-4000-8000-%012d" % (int(hashlib.sha1(json.dumps(obj).encode()).hexdigest(), 16) % 10 ** 12),
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": plural},
        "name": meta.get("name", ""),
        "operation": operation,
        "userInfo": {"username": user, "groups": ["system:authenticated"],
                     "extra": {"authentication.kubernetes.io/node-name": ["worker-1"]}},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
    }
    if meta.get("namespace"):
        req["namespace"] = meta["namespace"]
    if sub:
        req["subResource"] = sub
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}


def paths(patterns):
    return [p for pattern in patterns for p in sorted(glob.glob(pattern, recursive=True))]


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except ValueError:
        return None


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seeds = []
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "golden", "cases", "*.json"))):
        with open(path) as f:
            case = json.load(f)
        if "review" in case:
            seeds.append(case["review"])
    own = os.path.join(ROOT, "tests", "fixtures")
    objects = [os.path.join(own, "*.json")] + [os.path.join(own, d, "*.json") for d in ("versions", "refused")]
    reviews = [os.path.join(own, "admissionreviews", "*.json")]
    requests = [os.path.join(own, "admissionreviews", "requests", "*.json")]
    for path in paths(objects):
        obj = load(path)
        if not isinstance(obj, dict):
            continue
        seeds.append(review(obj, "CREATE"))
        seeds.append(review(obj, "UPDATE", old=obj))
        seeds.append(review(obj, "UPDATE", old=obj, sub="status", user="system:kube-scheduler"))
    for path in paths(reviews):
        obj = load(path)
        if obj is not None:
            seeds.append(obj)
    for path in paths(requests):
        obj = load(path)
        if obj is not None:
            seeds.append({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": obj})
    n = 0
    for s in seeds:
        text = json.dumps(s, separators=(",", ":")).encode()
        if len(text) > MAX_SEED:
            continue
        name = os.path.join(out, "seed-review-" + hashlib.sha256(text).hexdigest()[:16])
        if not os.path.exists(name):
            with open(name, "wb") as f:
                f.write(text)
            n += 1
    print("review_seeds: %d seeds, %d new, in %s" % (len(seeds), n, out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
