#!/usr/bin/env python3
"""The audit annotations dra-guard returns reach the real API server's audit log.

The API server puts "<webhook name>/" in front of every key a webhook
returns in auditAnnotations and keeps the key only when the result is a
qualified name with one '/' (checkKeyFormat in k8s.io/apiserver's
admission attributes); a key that already held a '/' is dropped with a
warning in the server's own log. So dra-guard returns bare keys
("denied-rules"), and this test registers the guard with a real
kube-apiserver (tests/e2e/envtest.py, KUBE_APISERVER) and finds them in
its audit log as "resourceslices.validate.dra-guard.io/denied-rules".
Without kube-apiserver or etcd it says SKIP in one line and passes.
"""

import os
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import envtest  # noqa: E402
import guard  # noqa: E402
from guard import check  # noqa: E402

WEBHOOK = "resourceslices.validate.dra-guard.io"
SLICES = envtest.RESOURCE_V1 + "/resourceslices"

POLICY = """apiVersion: dra-guard.io/v1alpha1
kind: Policy
enforcement:
  default: deny
  rules:
    slice.mapping.name: dryrun
canary:
  nodes: [worker-1]
"""


def slice_obj(name, node, mappings):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": "dra.example.com", "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "accel-0", "nodeAllocatableResourceMappings": mappings}]}}


def create_annotations(env, name):
    """The annotations of the ResponseComplete audit event of name's create."""
    for ev in env.audit_events():
        ref = ev.get("objectRef", {})
        if (ev.get("verb") == "create" and ref.get("resource") == "resourceslices" and ref.get("name") == name
                and ev.get("stage") == "ResponseComplete"):
            return ev.get("annotations", {})
    return None


def test_audit_annotations_reach_the_audit_log():
    with guard.TempDir() as tmp, envtest.EnvTest(audit=True) as env:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        policy = os.path.join(tmp, "policy.yaml")
        with open(policy, "w") as f:
            f.write(POLICY)
        with guard.Server(certs, ["--policy", policy]) as server:
            env.register_webhook("resourceslices.validate", "https://127.0.0.1:%d/validate" % server.port,
                                 open(os.path.join(certs, "ca.crt")).read(),
                                 [{"apiGroups": ["resource.k8s.io"], "apiVersions": ["v1"],
                                   "operations": ["CREATE"], "resources": ["resourceslices"]}], timeout=5)
            # The API server picks the configuration up from its own watch:
            # wait until a create reaches the guard (a dry run stores nothing).
            probe = slice_obj("probe", "worker-1", {"memory": {"allocationMultiplier": "1Gi"}})

            def called():
                env.request("POST", SLICES + "?dryRun=All", probe)
                return guard.metric(server.metrics(), "dra_guard_requests_total", endpoint="validate",
                                    resource="resourceslices", operation="CREATE", result="allowed") > 0
            server.wait(called, "the API server to call the guard", timeout=envtest.READY_TIMEOUT)

            # A dryrun rule: allowed, and the finding is only in the audit log.
            env.create(SLICES, slice_obj("named", "worker-1", {"pods": {"allocationMultiplier": "1"}}))
            # A denial: slice.canary at deny.
            st, body = env.request("POST", SLICES, slice_obj("off-canary", "worker-9",
                                                             {"memory": {"allocationMultiplier": "1Gi"}}))
            check(st == 403 and "slice.canary" in str(body), "the off-canary slice: %d %s" % (st, body))

            deadline = time.time() + envtest.READY_TIMEOUT
            while time.time() < deadline and (create_annotations(env, "named") is None or
                                              create_annotations(env, "off-canary") is None):
                time.sleep(0.2)
            named, denied = create_annotations(env, "named"), create_annotations(env, "off-canary")
            check(named is not None and denied is not None, "no audit events for the two creates")
            key = WEBHOOK + "/slice.mapping.name"
            check(key in named and "pods" in named[key], "%s missing from %s" % (key, named))
            for k in ("denied-rules", "policy-hash"):
                check(WEBHOOK + "/" + k in denied, "%s/%s missing from %s" % (WEBHOOK, k, denied))
            check(denied[WEBHOOK + "/denied-rules"] == "slice.canary", denied)
            check(len(denied[WEBHOOK + "/policy-hash"]) == 64, denied)
            # None of dra-guard's keys was refused by checkKeyFormat.
            check("annotation key has invalid format" not in env.log(), "the API server refused a key")


if __name__ == "__main__":
    envtest.require("test_apiserver_audit", fake=True)
    guard.run_tests([test_audit_annotations_reach_the_audit_log])
