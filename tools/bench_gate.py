#!/usr/bin/env python3
"""Benchmark: how long the gate's release takes against a real kube-apiserver
(KUBE_APISERVER), beside the API server's own time for the same PATCHes.

The scenario is tests/e2e/test_gate_envtest.py's: two replicas with
--gate-release, the guard registered as the Pods' webhook, N Pods gated by a
freeze, the freeze lifted. Each round measures, in the same minute:

  baseline  N gate-removal PATCHes sent by this process over 16 keep-alive
            connections to Pods like the gated ones (what the release cannot
            beat; the same webhook judges them), before and after the
            release: their mean, as the machine's load moves within a round;
  release   from the ConfigMap write that lifts the freeze to the last
            release counted by the replicas;
  guard CPU both replicas' user+system CPU seconds during the release.

It prints the medians and the ratio release/baseline of each round, and
writes them as JSON (--out). Timing is reported, never asserted: a shared
machine moves it by a factor of two within minutes.
"""

import argparse
import http.client
import json
import os
import statistics
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))

import envtest  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def plain_release_seconds(tg, n, conns=16):
    """How long the API server takes, now, for n PATCHes removing a gate, sent
    by this process over conns keep-alive connections, GATE_RELEASE_PARALLEL's
    16 by default (a baseline: the release cannot beat the server; neither
    the patch type nor more connections made it faster on a loaded 2-core
    machine). The Pods carry another gate, so the guard ignores them."""
    hold = "test.example/hold"

    def make(i):
        p = tg.pod("base%04d" % i)
        p["spec"]["schedulingGates"] = [{"name": hold}]
        tg.ENV.create(tg.PODS, p)

    tg.parallel(make, range(n))
    body = json.dumps({"spec": {"schedulingGates": [{"$patch": "delete", "name": hold}]}})
    ctx = tg.ENV.ssl_context()
    errors = []

    def run(k):
        c = http.client.HTTPSConnection("127.0.0.1", tg.ENV.port, context=ctx, timeout=30)
        try:
            for i in range(k, n, conns):
                c.request("PATCH", "%s/base%04d" % (tg.PODS, i), body=body,
                          headers={"Content-Type": "application/strategic-merge-patch+json"})
                r = c.getresponse()
                r.read()
                if r.status != 200:
                    errors.append(r.status)
        finally:
            c.close()

    t0 = time.time()
    ts = [threading.Thread(target=run, args=(k,)) for k in range(conns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    took = time.time() - t0
    tg.check(not errors, "plain PATCHes failed: %s" % errors[:5])
    tg.delete_all_pods()
    return took


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", help="dra-guard to run (default: DRA_GUARD_BIN or build/rel/dra-guard)")
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", help="write the figures as JSON here")
    a = ap.parse_args()
    if a.bin:
        os.environ["DRA_GUARD_BIN"] = os.path.abspath(a.bin)
    if envtest.missing():
        print("SKIP gate: needs a real API server: %s" % envtest.missing())
        return 0
    import guard
    import test_gate_envtest as tg

    tg.ENV = envtest.EnvTest(identities={"alice": ("alice", ["system:masters"]),
                                         "controller": (tg.CLAIM_CONTROLLER, ["system:serviceaccounts", "system:masters"])})
    tg.ENV.start()
    rounds = []
    try:
        tg.prepare()
        with guard.TempDir() as d:
            guard.make_certs(d)
            S = tg.S
            S["a"] = tg.start_guard(d, "a")
            S["b"] = tg.start_guard(d, "b")
            try:
                tg.set_freeze(True)
                tg.wait_freeze(list(S.values()), True)
                tg.register(d, S["a"])
                for r in range(a.rounds):
                    before_s = plain_release_seconds(tg, a.pods)
                    tg.set_freeze(True)
                    tg.wait_freeze(list(S.values()), True)
                    before = {k: tg.released(s) for k, s in S.items()}
                    tg.parallel(lambda i: tg.ENV.create(tg.PODS, tg.pod("r%d-%05d" % (r, i))), range(a.pods))
                    for s in S.values():
                        s.wait(lambda s=s: (guard.metric(s.metrics(), "dra_guard_gate_pods_gated") or 0) == a.pods,
                               "the view to hold the gated Pods")
                    cpu0 = sum(cpu_seconds(s.proc.pid) for s in S.values())
                    t0 = time.time()
                    tg.set_freeze(False)
                    deadline = t0 + 120
                    while time.time() < deadline and \
                            sum(tg.released(s) - before[k] for k, s in S.items()) < a.pods:
                        time.sleep(0.02)
                    took = time.time() - t0
                    cpu = sum(cpu_seconds(s.proc.pid) for s in S.values()) - cpu0
                    by = {k: tg.released(s) - before[k] for k, s in S.items()}
                    done = sum(by.values())
                    tg.delete_all_pods()
                    after_s = plain_release_seconds(tg, a.pods)
                    baseline = (before_s + after_s) / 2
                    rounds.append({"baseline_s": baseline, "baseline_before_s": before_s,
                                   "baseline_after_s": after_s, "release_s": took, "released": done,
                                   "by_replica": by, "guard_cpu_s": cpu,
                                   "ratio": took / baseline if baseline else 0.0})
                    print("  round %d: release %.2f s (%d Pods), baseline %.2f s, %.2fx; guards' CPU %.2f s "
                          "(%.0f us a Pod); by replica %s" % (r + 1, took, done, baseline, rounds[-1]["ratio"], cpu,
                                                cpu / max(done, 1) * 1e6, by), flush=True)
            finally:
                for s in list(S.values()):
                    s.kill()
    finally:
        tg.ENV.stop()
    summary = {"pods": a.pods, "rounds": rounds,
               "median_release_s": statistics.median(x["release_s"] for x in rounds),
               "median_baseline_s": statistics.median(x["baseline_s"] for x in rounds),
               "median_ratio": statistics.median(x["ratio"] for x in rounds),
               "load": open("/proc/loadavg").read().split()[:3]}
    print("  median: release %.2f s, baseline %.2f s, ratio %.2fx (goal: %d Pods in 5 s)"
          % (summary["median_release_s"], summary["median_baseline_s"], summary["median_ratio"], a.pods))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(summary, f, indent=1)
    return 0 if all(x["released"] == a.pods for x in rounds) else 1


if __name__ == "__main__":
    sys.exit(main())
