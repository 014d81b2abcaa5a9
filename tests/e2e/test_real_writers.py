#!/usr/bin/env python3
"""The writers a cluster really has, replayed against the real server.

Each scenario sends the reviews the API server would send for what a real
component does, in the order it does it, and names where that behaviour
comes from. A false denial of any of them is an outage: the guard fails
closed. The facts:

- The ResourceSlice controller of k8s.io/dynamic-resource-allocation
  (resourceslice.Controller.syncPool) takes the highest generation among a
  pool's slices and keeps it when no slice is new and at most one changes
  ("Kept generation because at most one update API call is necessary");
  otherwise it bumps it and rewrites every slice. New slices are created
  with generateName and an ownerReference to the Node.
- The kubelet's DRA plugin manager (pkg/kubelet/cm/dra/plugin,
  wipeResourceSlices) deletes its node's slices with a DeleteCollection by
  spec.nodeName (and spec.driver) at start and when a driver's plugin stays
  unregistered; the API server sends one DELETE review per slice.
- The garbage collector (pkg/controller/garbagecollector,
  attemptToDeleteItem) deletes a slice whose owning Node is gone, and when
  orphaning patches the dependent to drop the ownerReference
  (orphanDependents), as system:serviceaccount:kube-system:generic-garbage-
  collector, or system:kube-controller-manager with shared credentials.
- kubernetes-sigs/dra-example-driver runs its binding-conditions controller
  (cmd/dra-example-controller, BindingConditionsPlugin.Reconcile) as a
  Deployment under the same ServiceAccount as its kubelet-plugin DaemonSet;
  it updates status.devices[].conditions of claims on any node. A token
  bound to a Pod carries node-name, pod-name and pod-uid
  (k8s.io/apiserver serviceaccount.ServiceAccountInfo.UserInfo): the
  controller's token names the node the controller runs on.
- kube-scheduler writes status.allocation and reservedFor, and a Pod's
  status.nodeAllocatableResourceClaimStatuses in PreBind, and clears them
  on Unreserve; the resource-claim controller removes reservedFor entries
  and deallocates.
"""

import copy
import json
import os
import subprocess
import sys
import uuid

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guard  # noqa: E402
from guard import check  # noqa: E402

SERVER = None
DRIVER = "gpu.example.com"
PLUGIN_SA = "system:serviceaccount:gpu:gpu-driver"
SPLIT_CTRL_SA = "system:serviceaccount:net:net-controller"
SPLIT_PLUGIN_SA = "system:serviceaccount:net:net-plugin"
SCHEDULER = "system:kube-scheduler"
GC_SA = "system:serviceaccount:kube-system:generic-garbage-collector"
CLAIM_CTRL = "system:serviceaccount:kube-system:resource-claim-controller"

POLICY = """apiVersion: dra-guard.io/v1alpha1
kind: Policy
enforcement:
  default: deny
  rules:
    slice.mapping.unversioned: deny
drivers:
  gpu.example.com:
    resources:
      memory: {max: 64Gi}
      hugepages-2Mi: {max: 8Gi}
    # One ServiceAccount for the kubelet-plugin DaemonSet and the controller
    # Deployment, as dra-example-driver's Helm chart deploys them.
    serviceAccounts:
    - name: system:serviceaccount:gpu:gpu-driver
      controllerPods: ["gpu-driver-controller-*"]
  net.example.com:
    serviceAccounts:
    - system:serviceaccount:net:net-plugin
    - {name: "system:serviceaccount:net:net-controller", scope: cluster}
canary:
  nodes: ["worker-*"]
"""


def token(user, node=None, pod=None, groups=()):
    """userInfo as the API server fills it for a bound ServiceAccount token."""
    extra = {"authentication.kubernetes.io/credential-id": ["JTI=" + str(uuid.uuid4())]}
    if node:
        extra["authentication.kubernetes.io/node-name"] = [node]
        extra["authentication.kubernetes.io/node-uid"] = [str(uuid.uuid5(uuid.NAMESPACE_DNS, node))]
    if pod:
        extra["authentication.kubernetes.io/pod-name"] = [pod]
        extra["authentication.kubernetes.io/pod-uid"] = [str(uuid.uuid5(uuid.NAMESPACE_DNS, pod))]
    return {"user": user, "groups": list(groups) + ["system:authenticated"], "extra": extra}


def plugin(node):
    return token(PLUGIN_SA, node, "gpu-driver-kubeletplugin-" + node[-1] + "x7k2",
                 ["system:serviceaccounts", "system:serviceaccounts:gpu"])


def controller():
    # The controller Pod runs on some node too, and its token says which.
    return token(PLUGIN_SA, "worker-3", "gpu-driver-controller-6d5f7b9c8-q2w4e",
                 ["system:serviceaccounts", "system:serviceaccounts:gpu"])


def ask(obj, op="UPDATE", old=None, who=None, endpoint="validate", **kw):
    who = who or plugin("worker-1")
    rev = guard.review_for(obj, operation=op, old=old, user=who["user"], groups=who["groups"],
                           extra=who.get("extra"), **kw)
    c = guard.Client(SERVER)
    try:
        r = c.review(rev, endpoint=endpoint)
    finally:
        c.close()
    check(r["uid"] == rev["request"]["uid"], r)
    return r


def allowed(r, what):
    check(r["allowed"] is True, "%s was refused: %s" % (what, r.get("status", {}).get("message")))


def denied(r, rule, what):
    check(r["allowed"] is False and rule in r["status"]["message"], "%s: want %s, got %s" % (what, rule, r))


def pool_slice(index, node="worker-1", generation=1, count=1, devices=None):
    """A slice as the ResourceSlice controller creates it for a node-local pool."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "%02x-gpu.example.com-%s-abc%02d" % (index, node, index),
                         "generateName": "%02x-gpu.example.com-%s-" % (index, node),
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node,
                                              "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, node)),
                                              "controller": True}]},
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": generation, "resourceSliceCount": count},
                     "devices": copy.deepcopy(devices if devices is not None else [gpu(0)])}}


def gpu(i, memory="8Gi"):
    return {"name": "gpu-%d" % i, "capacity": {"gpu.example.com/memory": {"value": "80Gi"}},
            "nodeAllocatableResourceMappings": {"memory": {"allocationMultiplier": memory}}}


def test_slice_controller_one_slice_pool_in_place():
    s0 = pool_slice(0)
    allowed(ask(s0, "CREATE"), "create")
    s1 = pool_slice(0, devices=[gpu(0), gpu(1)])
    allowed(ask(s1, old=s0), "a device added at the same generation")
    s2 = pool_slice(0, devices=[gpu(0, "4Gi"), gpu(1)])
    allowed(ask(s2, old=s1), "a mapping changed 8Gi -> 4Gi at the same generation")
    s3 = pool_slice(0, devices=[gpu(1)])
    allowed(ask(s3, old=s2), "a device withdrawn at the same generation")
    # A stale writer after a restart still cannot take the generation back.
    denied(ask(pool_slice(0, generation=0, devices=[gpu(1)]), old=s3), "slice.generation.regress", "regress")


def test_slice_controller_pool_grows_to_two_slices():
    one = pool_slice(0, devices=[gpu(0)])
    # A new slice: the controller bumps the generation and rewrites every slice.
    first = pool_slice(0, generation=2, count=2, devices=[gpu(0)])
    second = pool_slice(1, generation=2, count=2, devices=[gpu(1)])
    allowed(ask(first, old=one), "slice 0 rewritten at generation 2")
    allowed(ask(second, "CREATE"), "slice 1 created at generation 2")
    # Both change: the generation goes up with them.
    allowed(ask(pool_slice(0, generation=3, count=2, devices=[gpu(0, "4Gi")]), old=first), "bumped change")
    # Without a bump in a pool of two, a policy that names the rule deny refuses.
    denied(ask(pool_slice(0, generation=2, count=2, devices=[gpu(0, "4Gi")]), old=first),
           "slice.mapping.unversioned", "unversioned change in a pool of two")


def test_kubelet_wipes_its_node_on_start():
    kubelet = token("system:node:worker-1", groups=["system:nodes"])
    for s in (pool_slice(0, count=2, generation=2), pool_slice(1, count=2, generation=2)):
        allowed(ask(None, "DELETE", old=s, who=kubelet), "kubelet DELETE of its node's slice")
    denied(ask(None, "DELETE", old=pool_slice(0, node="worker-2"), who=kubelet), "slice.writer",
           "kubelet DELETE of another node's slice")


def test_garbage_collector_deletes_and_orphans():
    gone = pool_slice(0, node="worker-7")
    for who in (token(GC_SA, groups=["system:serviceaccounts", "system:serviceaccounts:kube-system"]),
                token("system:kube-controller-manager")):
        allowed(ask(None, "DELETE", old=gone, who=who), "GC deletes a slice of a gone Node as %s" % who["user"])
    orphaned = copy.deepcopy(gone)
    del orphaned["metadata"]["ownerReferences"]
    allowed(ask(orphaned, old=gone, who=token(GC_SA)), "GC strips ownerReferences")
    # Any metadata-only write passes for whoever RBAC let through, even on a
    # slice the policy would refuse today (worker-7's mappings vs a stricter
    # canary list are not the labeller's business).
    labelled = copy.deepcopy(gone)
    labelled["metadata"]["labels"] = {"topology.example.com/rack": "r7"}
    allowed(ask(labelled, old=gone, who=token("system:serviceaccount:ops:labeller")), "a label")
    denied(ask(None, "DELETE", old=gone, who=token("alice@example.com")), "slice.writer", "a random user's delete")


def claim(node, driver=DRIVER, conditions=None):
    c = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": "gpu-claim", "namespace": "team-a", "uid": "4a7c3e52-0d3f-4b8e-9a61-2f5c8d9e1b07"},
         "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": driver}}]}},
         "status": {"allocation": {
             "devices": {"results": [{"request": "gpu", "driver": driver, "pool": node, "device": "gpu-0",
                                      "bindingConditions": ["dra.example.com/ready"]}]},
             "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                 {"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
             "reservedFor": [{"resource": "pods", "name": "pod-a", "uid": "9b2e4f61-7c8d-4a3b-b5e6-0f1a2c3d4e5f"}]}}
    if conditions is not None:
        c["status"]["devices"] = [{"driver": driver, "pool": node, "device": "gpu-0", "conditions": conditions}]
    return c


READY = [{"type": "dra.example.com/ready", "status": "True", "reason": "Ready", "message": "Device is ready",
          "lastTransitionTime": "2026-12-01T10:00:00Z"}]
CLAIM_KIND = dict(kind=("resource.k8s.io", "v1", "ResourceClaim"), resource="resourceclaims",
                  sub_resource="status", namespace="team-a")


def test_binding_conditions_shared_service_account():
    before = claim("worker-1")
    after = claim("worker-1", conditions=READY)
    allowed(ask(after, old=before, who=controller(), **CLAIM_KIND), "the controller's condition for worker-1")
    allowed(ask(after, old=before, who=plugin("worker-1"), **CLAIM_KIND), "the plugin on the claim's node")
    denied(ask(after, old=before, who=plugin("worker-2"), **CLAIM_KIND), "status.devices.writer",
           "a plugin on another node")
    # The same ServiceAccount's plugins still write only their own node's slices.
    denied(ask(pool_slice(0, node="worker-5"), "CREATE", who=plugin("worker-2")), "slice.writer.node",
           "a plugin publishing another node's slice")


def test_binding_conditions_split_service_accounts():
    before = claim("worker-1", driver="net.example.com")
    after = claim("worker-1", driver="net.example.com", conditions=READY)
    ctrl = token(SPLIT_CTRL_SA, "worker-3", "net-controller-55d9c-abcde")
    allowed(ask(after, old=before, who=ctrl, **CLAIM_KIND), "a scope: cluster controller")
    denied(ask(after, old=before, who=token(SPLIT_PLUGIN_SA, "worker-2", "net-plugin-x1"), **CLAIM_KIND),
           "status.devices.writer", "the plugin's own ServiceAccount on another node")


def pod(statuses):
    p = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pod-a", "namespace": "team-a"},
         "spec": {"nodeName": "worker-1", "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}]},
         "status": {"phase": "Pending"}}
    if statuses is not None:
        p["status"]["nodeAllocatableResourceClaimStatuses"] = statuses
    return p


POD_KIND = dict(kind=("", "v1", "Pod"), resource="pods", sub_resource="status", namespace="team-a")


def test_scheduler_and_claim_controller():
    sched = token(SCHEDULER)
    unallocated = claim("worker-1")
    del unallocated["status"]
    allowed(ask(claim("worker-1"), old=unallocated, who=sched, **CLAIM_KIND), "scheduler allocates")
    amounts = [{"resourceClaimName": "gpu-claim", "containers": ["app"], "resources": {"memory": "8Gi"}}]
    allowed(ask(pod(amounts), old=pod(None), who=sched, **POD_KIND), "PreBind writes the amounts")
    allowed(ask(pod(None), old=pod(amounts), who=sched, **POD_KIND), "Unreserve clears them")
    released = claim("worker-1")
    released["status"]["reservedFor"] = []
    allowed(ask(released, old=claim("worker-1"), who=token(CLAIM_CTRL), **CLAIM_KIND), "reservedFor removed")
    allowed(ask(unallocated, old=released, who=token(CLAIM_CTRL), **CLAIM_KIND), "deallocated")
    kubelet = token("system:node:worker-1", groups=["system:nodes"])
    running = pod(amounts)
    running["status"]["phase"] = "Running"
    allowed(ask(running, old=pod(amounts), who=kubelet, **POD_KIND), "the kubelet's own status update")
    denied(ask(pod(None), old=pod(amounts), who=kubelet, **POD_KIND), "status.pod.writer",
           "a kubelet clearing the amounts")


def test_mutating_endpoint_never_denies():
    bad = pool_slice(0)
    bad["spec"]["devices"][0]["nodeAllocatableResourceMappings"]["pods"] = {"allocationMultiplier": "1"}
    r = ask(bad, "CREATE", who=token("alice@example.com"), endpoint="mutate")
    check(r["allowed"] is True and guard.decode_patch(r), r)
    r = ask(bad, "CREATE", who=token("alice@example.com"))
    check(r["allowed"] is False, r)
    # Audit annotation keys are bare: the API server adds "<webhook name>/".
    check(set(r.get("auditAnnotations", {})) == {"denied-rules", "policy-hash"}, r)


def test_oversized_identity_is_answered_not_failed():
    who = token("system:node:worker-1", groups=["g%d" % i for i in range(5000)] + ["system:nodes"])
    amounts = [{"resourceClaimName": "gpu-claim", "containers": ["app"], "resources": {"memory": "64Gi"}}]
    r = ask(pod(amounts), old=pod(None), who=who, **POD_KIND)
    check(r["allowed"] is False and r["status"]["code"] == 400 and "more than 4096" in r["status"]["message"], r)


def big_objects():
    labelled = pool_slice(0)
    labelled["metadata"]["labels"] = {"team.example.com/l%03d" % i: "v" for i in range(300)}
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app-config", "namespace": "team-a"},
          "data": {"key-%03d" % i: "value %d" % i for i in range(300)}}
    params = 1
    for _ in range(56):
        params = {"nested": params}
    deep = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "deep", "namespace": "team-a"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}],
                                 "config": [{"opaque": {"driver": DRIVER, "parameters": params}}]}}}
    return labelled, cm, deep


def test_limits_apply_to_what_the_guard_reads():
    labelled, cm, deep = big_objects()
    allowed(ask(labelled, "CREATE"), "a slice with 300 labels")
    delete = ask(None, "DELETE", old=labelled, who=token("system:node:worker-1", groups=["system:nodes"]))
    allowed(delete, "the kubelet deleting a slice with 300 labels")
    allowed(ask(cm, "CREATE", who=token("alice@example.com"), kind=("", "v1", "ConfigMap"), resource="configmaps",
                namespace="team-a"), "a ConfigMap with 300 keys")
    allowed(ask(deep, "CREATE", who=token("system:serviceaccount:team-a:app"),
                kind=("resource.k8s.io", "v1", "ResourceClaim"), resource="resourceclaims", namespace="team-a"),
            "a claim with opaque parameters 56 levels deep")
    # dry-run reads the same objects from files and agrees.
    with guard.TempDir() as tmp:
        paths = []
        for name, obj in zip(("labels.json", "configmap.json", "claim.json"), (labelled, cm, deep)):
            paths.append(os.path.join(tmp, name))
            with open(paths[-1], "w") as f:
                json.dump(obj, f)
        p = subprocess.run([guard.binary(), "dry-run"] + paths, capture_output=True, text=True, timeout=60)
        check(p.returncode == 0, "dry-run exited %d:\n%s%s" % (p.returncode, p.stdout, p.stderr))


def main():
    global SERVER
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        policy = os.path.join(tmp, "policy.yaml")
        with open(policy, "w") as f:
            f.write(POLICY)
        with guard.Server(certs, ["--policy", policy]) as SERVER:
            guard.run_tests([
                test_slice_controller_one_slice_pool_in_place,
                test_slice_controller_pool_grows_to_two_slices,
                test_kubelet_wipes_its_node_on_start,
                test_garbage_collector_deletes_and_orphans,
                test_binding_conditions_shared_service_account,
                test_binding_conditions_split_service_accounts,
                test_scheduler_and_claim_controller,
                test_mutating_endpoint_never_denies,
                test_oversized_identity_is_answered_not_failed,
                test_limits_apply_to_what_the_guard_reads,
            ])
            check(SERVER.stop() == 0, "server exit code")


if __name__ == "__main__":
    main()
