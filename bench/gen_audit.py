#!/usr/bin/env python3
"""An audit log for the replay benchmark (bench/bench_replay.c, make bench).

The guarded writes are those of tests/fixtures/replay/audit.log (recorded by
the real API server), repeated COPIES times with their node, pool and namespace
renamed per copy (so the cluster grows to COPIES times the recorded one and the view
works as it would) and their times moved on by a minute per copy. Between
them, OTHER events the replay skips for every guarded write, shaped as a
busy cluster's log at Metadata level writes them: kubelet lease renewals,
Event creates, and list responses at RequestResponse with a 40 KB body.

  gen_audit.py --copies N --other K [--gzip] [--same-cluster] OUT"""

import argparse
import gzip
import json
import os
import random
import re

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "replay", "audit.log")
TS = re.compile(r'"(requestReceivedTimestamp|stageTimestamp)":"2026-12-01T(\d\d):(\d\d):(\d\d)\.(\d{6})Z"')


def shift(line, secs):
    def sub(m):
        t = int(m.group(2)) * 3600 + int(m.group(3)) * 60 + int(m.group(4)) + secs
        day, t = divmod(t, 86400)
        return '"%s":"2026-12-%02dT%02d:%02d:%02d.%sZ"' % (m.group(1), 1 + day, t // 3600, t // 60 % 60, t % 60,
                                                          m.group(5))
    return TS.sub(sub, line)


def rename(line, copy):
    """The copy's own node, pool and namespace (claims and Pods keep their names in it)."""
    return (line.replace("worker-1", "worker-1-c%d" % copy)
            .replace('"namespace":"ledger"', '"namespace":"ledger-c%d"' % copy)
            .replace("/namespaces/ledger/", "/namespaces/ledger-c%d/" % copy))


def other(rng, stamp, n):
    node = "node-%d" % rng.randrange(5000)
    kind = rng.random()
    head = {"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata",
            "auditID": "%032x" % rng.getrandbits(128), "stage": "ResponseComplete"}
    if kind < 0.6:
        ev = dict(head, requestURI="/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/" + node,
                  verb="update", user={"username": "system:node:" + node, "groups": ["system:nodes",
                                                                                   "system:authenticated"]},
                  sourceIPs=["10.0.%d.%d" % (n % 250, n % 200)], userAgent="kubelet/v1.36.2 (linux/amd64) kubernetes/abc",
                  objectRef={"resource": "leases", "namespace": "kube-node-lease", "name": node,
                             "apiGroup": "coordination.k8s.io", "apiVersion": "v1"},
                  responseStatus={"metadata": {}, "code": 200})
    elif kind < 0.95:
        ev = dict(head, requestURI="/api/v1/namespaces/default/events", verb="create",
                  user={"username": "system:serviceaccount:kube-system:replicaset-controller",
                        "groups": ["system:serviceaccounts", "system:authenticated"]},
                  sourceIPs=["10.0.0.1"], userAgent="kube-controller-manager/v1.36.2",
                  objectRef={"resource": "events", "namespace": "default", "name": "e%d" % n, "apiVersion": "v1"},
                  responseStatus={"metadata": {}, "code": 201})
    else:
        ev = dict(head, level="RequestResponse", requestURI="/api/v1/configmaps?limit=500", verb="list",
                  user={"username": "system:serviceaccount:monitoring:exporter", "groups": ["system:authenticated"]},
                  sourceIPs=["10.0.0.9"], userAgent="exporter/1.0",
                  objectRef={"resource": "configmaps", "apiVersion": "v1"},
                  responseStatus={"metadata": {}, "code": 200},
                  responseObject={"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {},
                                  "items": [{"metadata": {"name": "cm-%d" % i, "namespace": "default"},
                                             "data": {"config": "x" * 300}} for i in range(100)]})
    ev["requestReceivedTimestamp"] = ev["stageTimestamp"] = stamp
    return json.dumps(ev, separators=(",", ":")) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=100)
    ap.add_argument("--other", type=int, default=0, help="skipped events per guarded write")
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--same-cluster", action="store_true",
                    help="do not rename: every copy replays the same objects (the log grows, the cluster does not)")
    ap.add_argument("out")
    a = ap.parse_args()
    rng = random.Random(1)
    with open(FIXTURE) as f:
        base = f.read().splitlines(True)
    opener = gzip.open if a.gzip else open
    n = 0
    with opener(a.out, "wt") as out:
        for c in range(a.copies):
            for line in base:
                line = shift(line if a.same_cluster else rename(line, c), 60 * c)
                stamp = json.loads(line)["stageTimestamp"]
                for _ in range(a.other):
                    out.write(other(rng, stamp, n))
                    n += 1
                out.write(line)


if __name__ == "__main__":
    main()
