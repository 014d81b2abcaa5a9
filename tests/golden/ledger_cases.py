"""Golden cases of the rules that read the cluster view (slice.generation.stale,
slice.pool.collision, ledger.*), each with the view it is judged against.

A case's "view" is what the watch delivered before the request:
{"now": seconds since the epoch, "heard": seconds before now the watch last
proved alive (0: just now), "events": [{"at": seconds relative to now, "type":
ADDED|MODIFIED|DELETED, "object": {...}}]}. test_engine applies the events in
order at their times, publishes, judges the review at "now", and records, besides
the verdict, what the rules could not decide ("undecided") and the ledger the
view gives ("ledger", as GET /debug/ledger shows it). The intent may say which
undecided reasons and which ledger facts it expects.

Written by gen.py's define() hook; the helpers come from gen.py.
"""

import copy
import uuid

NOW = 1796119200            # 2026-12-01T10:00:00Z
LEDGER = "tests/golden/policies/ledger.yaml"
UNDECIDED_DENY = "tests/golden/policies/ledger-undecided-deny.yaml"
DRA = "dra.example.com"
NIC = "nic.example.com"
DRA_SA = "system:serviceaccount:dra-system:dra-example-driver"
NIC_SA = "system:serviceaccount:nic-system:nic-driver"


def uid(name):
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "ledger-golden/" + name))


def ev(at, obj, typ="ADDED"):
    return {"at": at, "type": typ, "object": obj}


def view(events, heard=0):
    return {"now": NOW, "heard": heard, "events": events}


def define(g):
    case, review, user = g.case, g.review, g.user
    sched = user(g.SCHEDULER)

    def sl(name="worker-1-dra", gen=3, count=1, node="worker-1", pool="worker-1", driver=DRA, devices=None):
        s = copy.deepcopy(g.SLICE)
        s["metadata"] = {"name": name, "resourceVersion": "10%d" % gen, "uid": uid("slice/" + name)}
        s["spec"]["driver"] = driver
        s["spec"]["nodeName"] = node
        s["spec"]["pool"] = {"name": pool, "generation": gen, "resourceSliceCount": count}
        if devices is not None:
            s["spec"]["devices"] = devices
        return s

    def accel(name, numa, mem="8Gi", cpu="2", driver=DRA):
        return {"name": name, "attributes": {driver + "/numaNode": {"int": numa}},
                "nodeAllocatableResourceMappings": {"memory": {"allocationMultiplier": mem},
                                                    "cpu": {"allocationMultiplier": cpu}}}

    def claim(name, results=None, ns="team-a", node="worker-1", pod="pod-a", cls="accel.example.com",
              allocated=True):
        c = copy.deepcopy(g.CLAIM)
        c["metadata"] = {"name": name, "namespace": ns, "uid": uid("claim/%s/%s" % (ns, name)),
                         "resourceVersion": "200"}
        c["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = cls
        c["status"].pop("devices", None)
        if not allocated:
            c["status"] = {}
            return c
        if results is not None:
            c["status"]["allocation"]["devices"]["results"] = results
        c["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] = [node]
        c["status"]["reservedFor"] = [{"resource": "pods", "name": pod, "uid": uid("pod/%s/%s" % (ns, pod))}]
        return c

    def result(device, request="cpus", consumed=None, share=None, pool="worker-1", driver=DRA):
        r = {"request": request, "driver": driver, "pool": pool, "device": device}
        if share:
            r["shareID"] = share
        if consumed:
            r["consumedCapacity"] = consumed
        return r

    def pod(name="pod-a", ns="team-a", node="worker-1", claim_name="cpu-claim", status=None, cpu="500m"):
        p = copy.deepcopy(g.POD)
        p["metadata"] = {"name": name, "namespace": ns, "uid": uid("pod/%s/%s" % (ns, name)),
                         "resourceVersion": "300"}
        p["spec"]["nodeName"] = node
        p["spec"]["resourceClaims"] = [{"name": "cpus", "resourceClaimName": claim_name}]
        p["spec"]["containers"][0]["resources"]["requests"] = {"cpu": cpu, "memory": "1Gi"}
        p["status"] = {"phase": "Running"}
        if status is not None:
            p["status"]["nodeAllocatableResourceClaimStatuses"] = [
                {"resourceClaimName": claim_name, "containers": ["app"], "resources": status}]
        return p

    def node(name="worker-1", cpu="16", memory="64Gi"):
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": uid("node/" + name)},
                "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110",
                                           "hugepages-2Mi": "0"}}}

    def claim_case(name, about, new, events, allowed, rules=(), policy=LEDGER, heard=0, **kw):
        old = copy.deepcopy(new)
        old["status"] = {}
        case(name, about, review(name, "UPDATE", new, old, who=sched, sub="status"), allowed, rules,
             policy=policy, view=view(events, heard), **kw)

    driver = user(DRA_SA, ["system:serviceaccounts", "system:serviceaccounts:dra-system"], "worker-1")
    nic_driver = user(NIC_SA, ["system:serviceaccounts", "system:serviceaccounts:nic-system"], "worker-1")

    # --- slice.generation.stale ---------------------------------------------------------------

    a, b = sl("worker-1-dra-a", 3, 2), sl("worker-1-dra-b", 3, 2)
    new = sl("worker-1-dra-c", 2, 2)
    case("ledger-slice-stale-below-live", "a CREATE at generation 2 while the pool's live slices are at 3",
         review("ledger-slice-stale-below-live", "CREATE", new, who=driver), False,
         ["slice.generation.stale"], policy=LEDGER, view=view([ev(-3600, a), ev(-3600, b)]))

    old5 = sl("worker-1-dra", 5)
    new3 = sl("worker-1-dra-new", 3)
    case("ledger-slice-stale-after-delete",
         "generation 3 after the pool, last at 5, was deleted: a writer from before the restart",
         review("ledger-slice-stale-after-delete", "CREATE", new3, who=driver), False,
         ["slice.generation.stale"], policy=LEDGER,
         view=view([ev(-3600, old5), ev(-300, old5, "DELETED")]))

    case("ledger-slice-restart-at-one",
         "generation 1 after the kubelet deleted the pool: what a restarted resourceslice controller writes",
         review("ledger-slice-restart-at-one", "CREATE", sl("worker-1-dra-new", 1), who=driver), True,
         policy=LEDGER, absent=["slice.generation.stale"],
         view=view([ev(-3600, old5), ev(-300, old5, "DELETED")]))

    up = sl("worker-1-dra", 4)
    case("ledger-slice-generation-up", "an UPDATE to a higher generation",
         review("ledger-slice-generation-up", "UPDATE", up, sl("worker-1-dra", 3), who=driver), True,
         policy=LEDGER, absent=["slice.generation.stale"], view=view([ev(-3600, sl("worker-1-dra", 3))]))

    # --- slice.pool.collision --------------------------------------------------------------------

    nic_same = sl("worker-1-nic", 1, driver=NIC, devices=[accel("accel-0", 0, driver=NIC)])
    case("ledger-slice-pool-collision",
         "another driver's pool of the same name on the node has a device accel-0 too",
         review("ledger-slice-pool-collision", "CREATE", sl(), who=driver), False, ["slice.pool.collision"],
         policy=LEDGER, view=view([ev(-3600, nic_same)]))

    # kube-scheduler 1.36 looks the device up among every slice it lists, not
    # the node's: the same names on another node, or in a nodeSelector or
    # allNodes pool, shadow each other too.
    nic_elsewhere = sl("worker-2-nic", 1, node="worker-2", pool="worker-1", driver=NIC,
                       devices=[accel("accel-0", 0, driver=NIC)])
    case("ledger-slice-pool-collision-other-node",
         "another driver's pool named worker-1, on worker-2, has a device accel-0 too",
         review("ledger-slice-pool-collision-other-node", "CREATE", sl(), who=driver), False,
         ["slice.pool.collision"], policy=LEDGER, view=view([ev(-3600, nic_elsewhere)]))

    def fabric(name, driver, devices):
        f = sl(name, 1, pool="fabric", driver=driver, devices=devices)
        del f["spec"]["nodeName"]
        f["spec"]["allNodes"] = True
        return f

    nic_fabric = fabric("nic-fabric", NIC, [accel("link-0", 0, driver=NIC)])
    case("ledger-slice-pool-collision-all-nodes",
         "a node-local pool named fabric with a device link-0 that carries mappings; another driver's allNodes "
         "pool fabric has a link-0 too",
         review("ledger-slice-pool-collision-all-nodes", "CREATE",
                sl("worker-1-fabric", 1, pool="fabric", devices=[accel("link-0", 0)]), who=driver), False,
         ["slice.pool.collision"], policy=LEDGER, view=view([ev(-3600, nic_fabric)]))

    plain_fabric = fabric("nic-fabric", NIC, [{"name": "link-0"}])
    case("ledger-slice-pool-same-names-no-mappings",
         "the same pool and device names without a mapping on either side: nothing to charge wrongly",
         review("ledger-slice-pool-same-names-no-mappings", "CREATE",
                sl("worker-1-fabric", 1, pool="fabric", devices=[{"name": "link-0"}]), who=driver), True,
         absent=["slice.pool.collision"], policy=LEDGER, view=view([ev(-3600, plain_fabric)]))

    nic_other = sl("worker-1-nic", 1, driver=NIC, devices=[accel("nic-0", 0, driver=NIC)])
    case("ledger-slice-pool-same-name-other-devices",
         "two node-local drivers name their pools after the node (the kubelet plugin helper's way): no shared device",
         review("ledger-slice-pool-same-name-other-devices", "CREATE", sl(), who=driver), True, policy=LEDGER,
         absent=["slice.pool.collision"], view=view([ev(-3600, nic_other)]))

    # --- ledger.mapping.drift ---------------------------------------------------------------------

    base = sl("worker-1-dra", 3)
    held = claim("accel-claim", [result("accel-0", "accels")])
    changed = sl("worker-1-dra", 4)
    changed["spec"]["devices"][0]["nodeAllocatableResourceMappings"]["memory"]["allocationMultiplier"] = "16Gi"
    case("ledger-mapping-drift-live-claim",
         "a generation bump that doubles accel-0's memory while a claim holds it: warned, the claim stays at 8Gi",
         review("ledger-mapping-drift-live-claim", "UPDATE", changed, base, who=driver), True,
         ["ledger.mapping.drift"], policy=LEDGER, warnings=True,
         view=view([ev(-3600, base), ev(-1800, held)]))

    free = sl("worker-1-dra", 4)
    free["spec"]["devices"][1]["nodeAllocatableResourceMappings"]["cpu"]["allocationMultiplier"] = "2"
    case("ledger-mapping-change-no-claims", "a mapping change of a device no claim holds",
         review("ledger-mapping-change-no-claims", "UPDATE", free, base, who=driver), True, policy=LEDGER,
         absent=["ledger.mapping.drift"], view=view([ev(-3600, base), ev(-1800, held)]))

    # --- ledger.pool.fresh -----------------------------------------------------------------------

    settled = [ev(-3600, sl())]
    claim_case("ledger-fresh-ok", "an allocation from a settled, complete pool",
               claim("accel-claim", [result("accel-0", "accels")]), settled, True,
               absent=["ledger.pool.fresh", "ledger.device.duplicate"])

    claim_case("ledger-fresh-incomplete", "one of the pool's two slices is published",
               claim("accel-claim", [result("accel-0", "accels")]), [ev(-3600, sl(count=2))], False,
               ["ledger.pool.fresh"])

    restart = [ev(-7200, sl(gen=4)), ev(-120, sl(gen=4), "DELETED"), ev(-60, sl(gen=1))]
    claim_case("ledger-fresh-restarted",
               "the pool came back a minute ago (driver restart): allocations wait the 5m settle window",
               claim("accel-claim", [result("accel-0", "accels")]), restart, False, ["ledger.pool.fresh"])

    settled_restart = [ev(-7200, sl(gen=4)), ev(-720, sl(gen=4), "DELETED"), ev(-600, sl(gen=1))]
    claim_case("ledger-fresh-settled-after-restart", "the pool came back ten minutes ago: settled",
               claim("accel-claim", [result("accel-0", "accels")]), settled_restart, True,
               absent=["ledger.pool.fresh"])

    claim_case("ledger-fresh-device-missing", "accel-9 is in none of the pool's slices",
               claim("accel-claim", [result("accel-9", "accels")]), settled, False, ["ledger.pool.fresh"])

    claim_case("ledger-fresh-pool-unseen",
               "a pool the view has not seen (published a moment ago): allowed, counted as undecided",
               claim("accel-claim", [result("accel-0", "accels")]), [], True, undecided=["ledger.pool.fresh:pool-unseen"])

    claim_case("ledger-fresh-pool-unseen-undecided-deny", "the same under ledger.undecided: deny",
               claim("accel-claim", [result("accel-0", "accels")]), [], False, ["ledger.pool.fresh"],
               policy=UNDECIDED_DENY)

    claim_case("ledger-fresh-view-stale",
               "the guard last heard from the API server 10 minutes ago (maxAge 5m): allowed, undecided",
               claim("accel-claim", [result("accel-0", "accels")]), settled, True, heard=600,
               undecided=["ledger.pool.fresh:view-stale"])

    claim_case("ledger-fresh-mapping-uncharged",
               "socket-0 maps cpu from its capacity but the result carries no consumedCapacity",
               claim("cpu-claim", [result("socket-0", share="0b6f2c1d-8e4a-4f3b-a2c9-1d7e5f6a8b90")],
                     cls="cpu.example.com"), settled, False, ["ledger.pool.fresh"])

    # --- ledger.device.duplicate ---------------------------------------------------------------------

    holder = claim("old-claim", [result("accel-0", "accels")], pod="pod-old")
    claim_case("ledger-duplicate-device", "accel-0 is held by another live claim and cannot be shared",
               claim("accel-claim", [result("accel-0", "accels")]), settled + [ev(-1800, holder)], False,
               ["ledger.device.duplicate"])

    released = copy.deepcopy(holder)
    released["status"] = {}
    claim_case("ledger-duplicate-after-release", "the other claim was deallocated ten seconds ago",
               claim("accel-claim", [result("accel-0", "accels")]),
               settled + [ev(-1800, holder), ev(-10, released, "MODIFIED")], True,
               absent=["ledger.device.duplicate"])

    shared = claim("cpu-claim-1", [result("socket-0", consumed={DRA + "/cpu": "4"}, share=uid("share-1"))],
                   cls="cpu.example.com", pod="pod-b")
    claim_case("ledger-duplicate-shared-within-capacity",
               "socket-0 allows several allocations: 4 held + 8 asked of 64",
               claim("cpu-claim", [result("socket-0", consumed={DRA + "/cpu": "8"}, share=uid("share-2"))],
                     cls="cpu.example.com"), settled + [ev(-1800, shared)], True,
               absent=["ledger.device.duplicate"])

    big = claim("cpu-claim-1", [result("socket-0", consumed={DRA + "/cpu": "60"}, share=uid("share-1"))],
                cls="cpu.example.com", pod="pod-b")
    claim_case("ledger-duplicate-shared-over-capacity", "60 held + 8 asked of socket-0's 64",
               claim("cpu-claim", [result("socket-0", consumed={DRA + "/cpu": "8"}, share=uid("share-2"))],
                     cls="cpu.example.com"), settled + [ev(-1800, big)], False, ["ledger.device.duplicate"])

    # --- ledger.numa.split ---------------------------------------------------------------------------

    two_zones = sl(devices=[accel("accel-0", 0), accel("accel-1", 1), accel("accel-2", 0)])
    claim_case("ledger-numa-split", "accel-0 (zone 0) and accel-1 (zone 1) for a driver that asks for one zone",
               claim("accel-claim", [result("accel-0", "accels"), result("accel-1", "accels")]),
               [ev(-3600, two_zones)], True, ["ledger.numa.split"], warnings=True)

    claim_case("ledger-numa-aligned", "accel-0 and accel-2, both in zone 0",
               claim("accel-claim", [result("accel-0", "accels"), result("accel-2", "accels")]),
               [ev(-3600, two_zones)], True, absent=["ledger.numa.split"])

    # --- ledger.pod.amounts ---------------------------------------------------------------------------

    cpu_claim = claim("cpu-claim", [result("socket-0", consumed={DRA + "/cpu": "4"}, share=uid("share-3"))],
                      cls="cpu.example.com")
    world = [ev(-7200, node()), ev(-3600, sl()), ev(-1800, cpu_claim)]

    def pod_case(name, about, status, events, allowed, rules=(), **kw):
        new = pod(status=status)
        old = pod()
        case(name, about, review(name, "UPDATE", new, old, who=sched, sub="status"), allowed, rules,
             policy=LEDGER, view=view(events), **kw)

    pod_case("ledger-pod-amounts-match", "the scheduler's PreBind status: cpu 4 for 4 cores of socket-0",
             {"cpu": "4"}, world + [ev(-1790, pod())], True, absent=["ledger.pod.amounts"])

    pod_case("ledger-pod-amounts-differ", "a status of cpu 8 for a claim the ledger charges cpu 4",
             {"cpu": "8"}, world + [ev(-1790, pod())], False, ["ledger.pod.amounts"])

    pod_case("ledger-pod-amounts-claim-unseen",
             "the claim's allocation has not reached the view (the status right after it): allowed, undecided",
             {"cpu": "4"}, [ev(-7200, node()), ev(-3600, sl())], True,
             undecided=["ledger.pod.amounts:claim-unseen"])

    accel_claim = claim("cpu-claim", [result("accel-0", "accels")])
    doubled = sl(gen=4)
    doubled["spec"]["devices"][0]["nodeAllocatableResourceMappings"]["memory"]["allocationMultiplier"] = "16Gi"
    drift = [ev(-7200, node()), ev(-3600, sl()), ev(-1800, accel_claim), ev(-300, doubled, "MODIFIED")]
    pod_case("ledger-pod-amounts-old-mapping",
             "the mapping doubled after the claim was allocated: the claim stays charged at 8Gi",
             {"cpu": "2", "memory": "8Gi"}, drift, True, absent=["ledger.pod.amounts"])

    pod_case("ledger-pod-amounts-new-mapping-on-old-claim",
             "a status at the new mapping for a claim charged at the old one",
             {"cpu": "2", "memory": "16Gi"}, drift, False, ["ledger.pod.amounts"])

    # The scheduler works the amounts out in its scheduling cycle and writes
    # them in PreBind right after the allocation; the slice's and the claim's
    # watch events may reach the guard in either order.
    racing = [ev(-7200, node()), ev(-3600, sl()), ev(-3, doubled, "MODIFIED"), ev(-2, accel_claim)]
    pod_case("ledger-pod-amounts-mapping-changing",
             "the mapping doubled a second before the view saw the allocation; the PreBind status at the old "
             "mapping: allowed, undecided",
             {"cpu": "2", "memory": "8Gi"}, racing, True, absent=["ledger.pod.amounts"],
             undecided=["ledger.pod.amounts:mapping-changing"])

    later = [ev(-7200, node()), ev(-3600, sl()), ev(-41, doubled, "MODIFIED"), ev(-40, accel_claim)]
    pod_case("ledger-pod-amounts-mapping-changed-status-later",
             "the same change and allocation 40s ago; a status written now is not the PreBind write: decided",
             {"cpu": "2", "memory": "8Gi"}, later, False, ["ledger.pod.amounts"])

    # kube-scheduler 1.36 finds a device by pool and device name alone (the
    # first listed slice of any driver, node or generation): where another
    # device answers to the same names, the status it writes may carry that
    # device's mapping. Such a status is allowed with a warning.
    nic_twin = sl("worker-1-nic", 1, driver=NIC, devices=[accel("accel-0", 0, mem="4Gi", cpu="1", driver=NIC)])
    pod_case("ledger-pod-amounts-other-driver-same-names",
             "driver nic.example.com also has pool worker-1 with a device accel-0 (cpu 1, memory 4Gi); the "
             "status carries its mapping: what the scheduler can compute, allowed with a warning",
             {"cpu": "1", "memory": "4Gi"}, [ev(-7200, node()), ev(-3600, sl()), ev(-3500, nic_twin),
                                             ev(-1800, accel_claim), ev(-1790, pod())], True,
             ["ledger.pod.amounts"], warnings=True)

    pod_case("ledger-pod-amounts-other-driver-other-amounts",
             "the same two devices; a status neither mapping gives is refused",
             {"cpu": "3", "memory": "4Gi"}, [ev(-7200, node()), ev(-3600, sl()), ev(-3500, nic_twin),
                                             ev(-1800, accel_claim), ev(-1790, pod())], False,
             ["ledger.pod.amounts"])

    old_gen = sl("worker-1-dra-old", 2, count=2)
    old_gen["spec"]["devices"][0]["nodeAllocatableResourceMappings"]["memory"]["allocationMultiplier"] = "16Gi"
    new_gen = sl(gen=3, count=1)
    pod_case("ledger-pod-amounts-older-generation-listed",
             "a slice of the pool's previous generation (accel-0 at 16Gi) is still listed; the status at its "
             "mapping is what the scheduler can compute: allowed with a warning",
             {"cpu": "2", "memory": "16Gi"}, [ev(-7200, node()), ev(-3600, old_gen), ev(-3000, new_gen),
                                              ev(-1800, accel_claim), ev(-1790, pod())], True,
             ["ledger.pod.amounts"], warnings=True)

    # --- ledger.pod.omitted ---------------------------------------------------------------------------
    # kube-scheduler 1.36 puts in the status only the claims it allocated in
    # the cycle that binds the Pod: gpu-claim, allocated in an earlier cycle
    # (the guard refused the second claim then; Unreserve kept the
    # allocation), is left out. Warned, never denied: a denial would not
    # change what the next cycle computes.

    gpu_ref = {"name": "gpus", "resourceClaimName": "gpu-claim"}

    def two_claims(status, claim_name="cpu-claim"):
        p = pod(status=status, claim_name=claim_name)
        p["spec"]["resourceClaims"].append(copy.deepcopy(gpu_ref))
        return p

    earlier = claim("gpu-claim", [result("accel-0", "accels")])
    case("ledger-pod-omitted-earlier-claim",
         "gpu-claim (accel-0: cpu 2, memory 8Gi) is reserved for the Pod but not in its status: allowed, warned",
         review("ledger-pod-omitted-earlier-claim", "UPDATE", two_claims({"cpu": "4"}), two_claims(None),
                who=sched, sub="status"), True, ["ledger.pod.omitted"], policy=LEDGER, warnings=True,
         absent=["ledger.pod.amounts"],
         view=view(world + [ev(-1800, earlier), ev(-1790, two_claims(None))]))

    both_listed = two_claims({"cpu": "4"})
    both_listed["status"]["nodeAllocatableResourceClaimStatuses"].append(
        {"resourceClaimName": "gpu-claim", "containers": ["app"], "resources": {"cpu": "2", "memory": "8Gi"}})
    case("ledger-pod-omitted-none",
         "both claims in the status (allocated in the same cycle): nothing left out",
         review("ledger-pod-omitted-none", "UPDATE", both_listed, two_claims(None), who=sched, sub="status"),
         True, absent=["ledger.pod.omitted", "ledger.pod.amounts"], policy=LEDGER,
         view=view(world + [ev(-1800, earlier), ev(-1790, two_claims(None))]))

    no_mapping = sl(devices=[{"name": "plain-0"}])
    no_mapping["metadata"]["name"] = "worker-1-plain"
    no_mapping["spec"]["pool"]["name"] = "worker-1-plain"
    plain = claim("gpu-claim", [result("plain-0", "accels", pool="worker-1-plain")])
    case("ledger-pod-omitted-no-mapping",
         "the left-out claim's device maps nothing: the scheduler rightly leaves it out",
         review("ledger-pod-omitted-no-mapping", "UPDATE", two_claims({"cpu": "4"}), two_claims(None),
                who=sched, sub="status"), True, absent=["ledger.pod.omitted"], policy=LEDGER,
         view=view(world + [ev(-3600, no_mapping), ev(-1800, plain), ev(-1790, two_claims(None))]))

    # The ledger after that write: gpu-claim is committed on worker-1 and no
    # Pod status names it. Not "unbalanced" (every status agrees with its
    # claim): "undercounted", with the claim's entry marked omitted.
    written = two_claims({"cpu": "4"})
    case("ledger-node-undercounted-omitted-claim",
         "the node after the status that leaves gpu-claim out: undercounted (omitted), not unbalanced",
         review("ledger-node-undercounted-omitted-claim", "UPDATE", written, written, who=sched, sub="status"),
         True, absent=["ledger.pod.omitted", "ledger.pod.amounts"], policy=LEDGER,
         ledger={"undercountedNodes": 1, "unbalancedNodes": 0},
         view=view(world + [ev(-1800, earlier), ev(-1790, written)]))

    # A claim on network-attached devices (its nodeSelector names two
    # nodes), reserved by pod-a on worker-1 (whose status names it) and by
    # pod-b on worker-2: 1.36 computes pod-b's status without it (it was
    # allocated before pod-b's cycle), so worker-2 is committed the claim
    # and counts nothing. Undercounted there, not unbalanced.
    shared = claim("cpu-claim", [result("socket-0", consumed={DRA + "/cpu": "4"}, share=uid("share-3"))],
                   cls="cpu.example.com")
    shared["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] = [
        "worker-1", "worker-2"]
    shared["status"]["reservedFor"].append({"resource": "pods", "name": "pod-b",
                                            "uid": uid("pod/team-a/pod-b")})
    pod_b = pod(name="pod-b", node="worker-2")
    case("ledger-node-undercounted-second-pod",
         "a multi-node claim reserved by a second Pod on worker-2, in no status there: undercounted, not unbalanced",
         review("ledger-node-undercounted-second-pod", "UPDATE", pod(status={"cpu": "4"}), pod(status={"cpu": "4"}),
                who=sched, sub="status"), True, absent=["ledger.pod.amounts"], policy=LEDGER,
         ledger={"undercountedNodes": 1, "unbalancedNodes": 0},
         view=view([ev(-7200, node()), ev(-7200, node("worker-2")), ev(-3600, sl()), ev(-1800, shared),
                    ev(-1790, pod(status={"cpu": "4"})), ev(-1700, pod_b)]))

    # --- ledger.node.overcommit (the ledger's, not an admission rule) -----------------------------------

    small = node(cpu="4", memory="16Gi")
    busy = [ev(-7200, small), ev(-3600, sl()), ev(-1800, cpu_claim),
            ev(-1700, pod(status={"cpu": "4"}, cpu="1500m"))]
    pod_case("ledger-node-overcommit",
             "worker-1 has 4 cpus: 1.5 requested by the Pod and 4 by its claim; the write passes, the ledger shows it",
             {"cpu": "4"}, busy, True, absent=["ledger.pod.amounts"],
             ledger={"overcommittedNodes": 1, "unbalancedNodes": 0})

    pod_case("ledger-node-balanced",
             "worker-1 with room: ledger and Pod statuses agree, nothing overcommitted",
             {"cpu": "4"}, world + [ev(-1700, pod(status={"cpu": "4"}))], True,
             ledger={"overcommittedNodes": 0, "unbalancedNodes": 0})

    # --- every offence is reported, not only the first -----------------------------------------------

    three = sl(devices=[accel("accel-0", 0), accel("accel-1", 0), accel("accel-2", 0)])
    three_pod = pod(status={"cpu": "2", "memory": "8Gi"}, claim_name="a-claim")
    three_pod["spec"]["resourceClaims"] += [{"name": "b", "resourceClaimName": "b-claim"},
                                            {"name": "c", "resourceClaimName": "c-claim"}]
    three_old = copy.deepcopy(three_pod)
    three_old["status"].pop("nodeAllocatableResourceClaimStatuses")
    case("ledger-every-pod-omitted", "two claims reserved for the Pod, both left out of its status: both reported",
         review("ledger-every-pod-omitted", "UPDATE", three_pod, three_old, who=sched, sub="status"), True,
         ["ledger.pod.omitted"], policy=LEDGER, warnings=True,
         view=view([ev(-7200, node()), ev(-3600, three), ev(-1800, claim("a-claim", [result("accel-0", "accels")])),
                    ev(-1800, claim("b-claim", [result("accel-1", "accels")])),
                    ev(-1800, claim("c-claim", [result("accel-2", "accels")])), ev(-1790, three_old)]))

    nic_two = sl("worker-1-nic", 1, driver=NIC, devices=[accel("accel-0", 0, driver=NIC),
                                                         accel("socket-0", 0, driver=NIC)])
    case("ledger-every-pool-collision", "both of the slice's devices are also in the other driver's pool",
         review("ledger-every-pool-collision", "CREATE", sl(), who=driver), False, ["slice.pool.collision"],
         policy=LEDGER, view=view([ev(-3600, nic_two)]))

    claim_case("ledger-every-pool-fresh", "two results, neither device in the pool: both reported",
               claim("accel-claim", [result("accel-8", "accels"), result("accel-9", "accels")]), settled, False,
               ["ledger.pool.fresh"])

    two_held = sl(devices=[accel("accel-0", 0), accel("accel-1", 0)])
    holder2 = claim("old-claim", [result("accel-0", "accels"), result("accel-1", "accels")], pod="pod-old")
    claim_case("ledger-every-device-duplicate", "both devices are held by another claim: both reported",
               claim("accel-claim", [result("accel-0", "accels"), result("accel-1", "accels")]),
               [ev(-3600, two_held), ev(-1800, holder2)], False, ["ledger.device.duplicate"])

    both = copy.deepcopy(two_held)
    both["spec"]["pool"]["generation"] = 4
    for d in both["spec"]["devices"]:
        d["nodeAllocatableResourceMappings"]["cpu"]["allocationMultiplier"] = "3"
    case("ledger-every-mapping-drift", "both held devices change their cpu mapping: two warnings",
         review("ledger-every-mapping-drift", "UPDATE", both, two_held, who=driver), True,
         ["ledger.mapping.drift"], policy=LEDGER, warnings=True,
         view=view([ev(-3600, two_held), ev(-1800, holder2)]))

    other_claim = claim("gpu-claim", [result("accel-0", "accels")], pod="pod-a")
    two_status = pod(status={"cpu": "8"})
    two_status["spec"]["resourceClaims"].append({"name": "gpus", "resourceClaimName": "gpu-claim"})
    two_status["status"]["nodeAllocatableResourceClaimStatuses"].append(
        {"resourceClaimName": "gpu-claim", "containers": ["app"], "resources": {"cpu": "2", "memory": "1Gi"}})
    case("ledger-every-pod-amounts", "both claim statuses disagree with the ledger: both reported",
         review("ledger-every-pod-amounts", "UPDATE", two_status, pod(), who=sched, sub="status"), False,
         ["ledger.pod.amounts"], policy=LEDGER,
         view=view(world + [ev(-1800, other_claim), ev(-1790, pod())]))
