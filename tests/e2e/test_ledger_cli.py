#!/usr/bin/env python3
"""dra-guard ledger --view DUMP and dry-run --view DUMP --now, offline, on a
recorded cluster in the shape kubectl get resourceslices,resourceclaims,pods,nodes
-A -o json prints it:

- worker-1 (16 cpus) with a one-slice pool of four devices (two per NUMA zone,
  each mapping 2 cpus and 4Gi), a claim holding gpu-0 (zone 0) and gpu-2
  (zone 1) reserved by pod-a, whose status says what the scheduler added;
- worker-2 (1 cpu) with a Pod asking for 2 cpus: overcommitted.

The ledger must balance per node (DRA = sum of the NUMA zones = the Pod
statuses), split zones by the policy's attribute, exit 1 for the overcommitted
node, filter by node; dry-run must judge allocations and slices against the
view (a held device, a stale generation) and name the view rules without one."""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import guard  # noqa: E402
from guard import check  # noqa: E402

D = "dra.example.com"
NOW = "2026-12-01T10:00:00Z"
SCHEDULER = "system:kube-scheduler"
CLAIM_UID = "11111111-1111-1111-1111-111111111111"
POLICY = """apiVersion: dra-guard.io/v1alpha1
kind: Policy
drivers:
  dra.example.com:
    numaAttribute: dra.example.com/numaNode
    numaAlign: true
"""

TMP = None


def device(name, numa):
    return {"name": name, "attributes": {D + "/numaNode": {"int": numa}},
            "nodeAllocatableResourceMappings": {"cpu": {"allocationMultiplier": "2"},
                                                "memory": {"allocationMultiplier": "4Gi"}}}


def node(name, cpu, memory):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": "node-" + name},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}}


def the_slice(gen=5):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "worker-1-dra", "uid": "slice-1", "resourceVersion": "11",
                         "creationTimestamp": "2026-12-01T08:00:00Z"},
            "spec": {"driver": D, "nodeName": "worker-1",
                     "pool": {"name": "worker-1", "generation": gen, "resourceSliceCount": 1},
                     "devices": [device("gpu-0", 0), device("gpu-1", 0), device("gpu-2", 1), device("gpu-3", 1)]}}


def claim(name, uid, devices, pod, pod_uid):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "team-a", "uid": uid, "resourceVersion": "20",
                         "creationTimestamp": "2026-12-01T09:00:00Z"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": D,
                                                                          "allocationMode": "All"}}]}},
            "status": {"allocation": {
                "devices": {"results": [{"request": "gpu", "driver": D, "pool": "worker-1", "device": d}
                                        for d in devices]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": ["worker-1"]}]}]}},
                "reservedFor": [{"resource": "pods", "name": pod, "uid": pod_uid}]}}


def pod(name, uid, node_name, cpu, claim_name=None, status=None):
    spec = {"nodeName": node_name,
            "containers": [{"name": "app", "image": "registry.example/app:1",
                            "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}
    st = {"phase": "Running"}
    if claim_name:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim_name}]
        spec["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    if status:
        st["nodeAllocatableResourceClaimStatuses"] = [{"resourceClaimName": claim_name, "containers": ["app"],
                                                       "resources": status}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "team-a", "uid": uid}, "spec": spec, "status": st}


def write(name, obj):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(obj if isinstance(obj, str) else json.dumps(obj, indent=1))
    return path


def dump():
    return write("cluster.json", {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": [
        node("worker-1", "16", "64Gi"), node("worker-2", "1", "4Gi"), the_slice(),
        claim("train", CLAIM_UID, ["gpu-0", "gpu-2"], "pod-a", "22222222-2222-2222-2222-222222222222"),
        pod("pod-a", "22222222-2222-2222-2222-222222222222", "worker-1", "500m", "train",
            {"cpu": "4", "memory": "8Gi"}),
        pod("pod-b", "33333333-3333-3333-3333-333333333333", "worker-2", "2")]})


def run(*args):
    p = subprocess.run([guard.binary()] + list(args), capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def ledger_json(*args):
    code, out, err = run("ledger", "--view", dump(), "--policy", write("policy.yaml", POLICY), "--now", NOW,
                         "--output", "json", *args)
    try:
        return code, json.loads(out), err
    except ValueError:
        guard.fail("ledger --output json printed no JSON (exit %d): %r %r" % (code, out[:300], err[:300]))


# --- dra-guard ledger --------------------------------------------------------------------------

def test_ledger_balances_and_splits_zones():
    code, lg, err = ledger_json()
    check(code == 1, "an overcommitted node must exit 1, got %d (%s)" % (code, err))
    nodes = {n["name"]: n for n in lg["nodes"]}
    check(sorted(nodes) == ["worker-1", "worker-2"], "nodes %s" % sorted(nodes))
    w1 = nodes["worker-1"]
    cpu, mem = w1["resources"]["cpu"], w1["resources"]["memory"]
    check((cpu["dra"], cpu["numa"], cpu["podStatuses"], cpu["pods"], cpu["total"]) ==
          ("4", {"0": "2", "1": "2"}, "4", "500m", "4500m"), "worker-1 cpu %s" % cpu)
    check((mem["dra"], mem["numa"], mem["podStatuses"]) == ("8Gi", {"0": "4Gi", "1": "4Gi"}, "8Gi"),
          "worker-1 memory %s" % mem)
    check(w1["balanced"] and not w1["overcommitted"], "worker-1 %s" % w1)
    entries = sorted((e["device"], e["zone"], e["uid"], e["mappingVersion"]["slice"],
                      e["mappingVersion"]["resourceVersion"]) for e in w1["entries"])
    check(entries == [("gpu-0", "0", CLAIM_UID, "worker-1-dra", "11"), ("gpu-2", "1", CLAIM_UID, "worker-1-dra", "11")],
          "entries %s" % entries)
    w2 = nodes["worker-2"]
    check(w2["overcommitted"] and w2["resources"]["cpu"]["total"] == "2", "worker-2 %s" % w2)
    check(lg["summary"]["overcommittedNodes"] == 1 and lg["summary"]["unbalancedNodes"] == 0 and
          lg["summary"]["claims"] == 1, "summary %s" % lg["summary"])


def test_ledger_one_node_and_the_table():
    code, lg, _ = ledger_json("--node", "worker-1")
    check(code == 0, "worker-1 alone is not overcommitted: exit %d" % code)
    check([n["name"] for n in lg["nodes"]] == ["worker-1"], "--node: %s" % [n["name"] for n in lg["nodes"]])
    code, out, _ = run("ledger", "--view", dump(), "--policy", write("policy.yaml", POLICY), "--now", NOW,
                       "--entries")
    check(code == 1, "table: exit %d" % code)
    rows = [ln.split() for ln in out.splitlines()]
    check(any(r[:2] == ["worker-2", "cpu"] and r[-1] == "OVERCOMMITTED" for r in rows), "table:\n%s" % out)
    check(any(r[:2] == ["worker-1", "cpu"] and "0=2,1=2" in r for r in rows), "zones in the table:\n%s" % out)
    check(sum(1 for ln in out.splitlines() if "team-a/train" in ln) == 2, "--entries:\n%s" % out)


def test_ledger_refuses_an_unusable_dump():
    code, _, err = run("ledger", "--view", write("bad.json", '{"kind":"List","items":[{"kind":'), "--now", NOW)
    check(code == 2 and "bad.json" in err, "a cut dump: exit %d, %r" % (code, err))


# --- dra-guard dry-run --view ------------------------------------------------------------------

def allocation(devices):
    new = claim("second", "44444444-4444-4444-4444-444444444444", devices, "pod-c",
                "55555555-5555-5555-5555-555555555555")
    old = json.loads(json.dumps(new))
    old["status"] = {}
    return write("old-claim.json", old), write("new-claim.json", new)


def dry_run(*args):
    code, out, err = run("dry-run", "--output", "json", "--policy", write("policy.yaml", POLICY), "--now", NOW,
                         *args)
    return code, json.loads(out), err


def test_dry_run_judges_an_allocation_against_the_view():
    old, new = allocation(["gpu-2"])
    code, doc, _ = dry_run("--user", SCHEDULER, "--subresource", "status", "--view", dump(), "--old", old, new)
    r = doc["results"][0]
    check(code == 1 and [v["rule"] for v in r["violations"]] == ["ledger.device.duplicate"],
          "gpu-2 is held by team-a/train: exit %d, %s" % (code, r["violations"]))
    check(CLAIM_UID in r["violations"][0]["message"], "the holder's UID: %s" % r["violations"][0]["message"])
    check(r["skipped"] == [], "with --user and --view every rule ran: %s" % r["skipped"])
    # gpu-1 is free and in one zone: allowed; the overcommitted node is the
    # run's warning.
    old, new = allocation(["gpu-1"])
    code, doc, _ = dry_run("--user", SCHEDULER, "--subresource", "status", "--view", dump(), "--warn-exit-code", "3",
                           "--old", old, new)
    check(code == 3 and doc["results"][0]["allowed"], "a free device: exit %d, %s" % (code, doc["results"][0]))
    check(doc["ledger"]["overcommitted"] == ["worker-2"], "the ledger's warning: %s" % doc.get("ledger"))
    # Without --view the same duplicate passes, and the result says which
    # rules did not run.
    old, new = allocation(["gpu-2"])
    code, doc, _ = dry_run("--user", SCHEDULER, "--subresource", "status", "--old", old, new)
    r = doc["results"][0]
    check(code == 0 and r["allowed"], "without a view: exit %d" % code)
    check([s["rules"] for s in r["skipped"]] == [["ledger.pool.fresh", "ledger.device.duplicate", "ledger.numa.split"]]
          and "--view" in r["skipped"][0]["reason"], "skipped %s" % r["skipped"])


def test_dry_run_finds_a_stale_writer_in_the_view():
    stale = the_slice(gen=3)
    stale["metadata"] = {"name": "worker-1-dra-old"}
    code, doc, _ = dry_run("--user", "system:serviceaccount:dra-system:dra-example-driver", "--view", dump(),
                           write("stale.json", stale))
    rules = [v["rule"] for v in doc["results"][0]["violations"]]
    check(code == 1 and "slice.generation.stale" in rules, "generation 3 of a pool at 5: exit %d, %s" % (code, rules))


def main():
    global TMP
    with guard.TempDir() as d:
        TMP = d
        guard.run_tests([
            test_ledger_balances_and_splits_zones,
            test_ledger_one_node_and_the_table,
            test_ledger_refuses_an_unusable_dump,
            test_dry_run_judges_an_allocation_against_the_view,
            test_dry_run_finds_a_stale_writer_in_the_view,
        ])


if __name__ == "__main__":
    main()
