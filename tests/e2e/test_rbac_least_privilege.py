#!/usr/bin/env python3
"""The manifests grant the guard exactly what it uses.

The guard runs as its ServiceAccount with only the RBAC of manifests/base and
manifests/gate-pods, and does everything it does in a cluster: the cluster
view syncs (slices, claims, Pods, Nodes, its policy ConfigMap; as streaming
lists and, in a second run, in pages), a freeze
refuses a claim (an Event created, then patched as its series grows), Pods
are gated and, when the freeze ends, released (the gate Lease created, read
and renewed, the Pods patched), and its metrics port is read with a token
(a TokenReview, then a SubjectAccessReview). Every request the guard made is recorded by
the API server (the fake one's request log, or the real one's audit log
where KUBE_APISERVER is set), and:

- every request was allowed (a missing grant fails the test);
- every verb of every rule the manifests grant was used at least once, on a
  resource and name the rule names (an unused grant fails the test).
"""

import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import envtest  # noqa: E402
import guard  # noqa: E402
from guard import check, fail  # noqa: E402

GUARD_NS = "dra-guard"
GUARD_USER = "system:serviceaccount:dra-guard:dra-guard"
CM = "dra-guard-policy"
NS = "rbac-test"
GATE = "dra-guard.io/freeze"
BOUND = 30.0
RBAC_FILES = [os.path.join(guard.ROOT, "manifests", "base", "rbac.yaml"),
              os.path.join(guard.ROOT, "manifests", "base", "metrics-rbac.yaml"),
              os.path.join(guard.ROOT, "manifests", "gate-pods", "rbac.yaml")]


def objects(path):
    with open(path) as f:
        out = subprocess.run([guard.binary(), "convert", "-"], input=f.read().encode(), stdout=subprocess.PIPE,
                             check=True).stdout.decode()
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def granted():
    """(kind/name of the role, rule index, verb, group, resource, resourceNames) of every grant."""
    out = []
    for path in RBAC_FILES:
        for o in objects(path):
            if o["kind"] not in ("Role", "ClusterRole"):
                continue
            for i, r in enumerate(o.get("rules") or []):
                for v in r.get("verbs") or []:
                    for g in r.get("apiGroups") or []:
                        for res in r.get("resources") or []:
                            out.append(("%s/%s" % (o["kind"], o["metadata"]["name"]), i, v, g, res,
                                        tuple(r.get("resourceNames") or ())))
    return out


def policy_cm(freeze):
    with open(os.path.join(guard.ROOT, "examples", "policy-configmap.yaml")) as f:
        text = f.read()
    out = subprocess.run([guard.binary(), "convert", "-"], input=text.encode(), stdout=subprocess.PIPE,
                         check=True).stdout.decode().splitlines()
    cm = json.loads(out[0])
    cm["metadata"] = {"name": CM, "namespace": GUARD_NS}
    cm["data"]["policy.yaml"] = cm["data"]["policy.yaml"].replace("\nfreeze:\n", "\nfreeze:\n  gatePods: true\n")
    check("gatePods: true" in cm["data"]["policy.yaml"], "the example policy has a freeze section")
    cm["data"]["freeze"] = "true" if freeze else "false"
    cm["data"]["freeze-reason"] = "INC-9: rbac drill" if freeze else ""
    return cm


def guard_requests(env):
    """(verb, group, resource, subresource, namespace, name, code) of every
    request the guard's ServiceAccount made."""
    out = []
    if getattr(env, "real", False):
        for ev in env.audit_events():
            if ev.get("user", {}).get("username") != GUARD_USER or ev.get("stage") != "ResponseComplete":
                continue
            ref = ev.get("objectRef") or {}
            if not ref.get("resource"):
                continue
            out.append((ev["verb"], ref.get("apiGroup", ""), ref["resource"], ref.get("subresource"),
                        ref.get("namespace"), ref.get("name"), ev["responseStatus"]["code"]))
    else:
        with env.lock:
            for verb, group, plural, sub, ns, name, user, code in env.requests:
                if user == GUARD_USER and plural:
                    out.append((verb, group, plural, sub, ns, name, code))
    return out


def register(env, certs, s):
    import base64
    with open(os.path.join(certs, "ca.crt")) as f:
        bundle = base64.b64encode(f.read().encode()).decode()
    url = "https://127.0.0.1:%d" % s.port
    common = {"admissionReviewVersions": ["v1"], "sideEffects": "NoneOnDryRun", "matchPolicy": "Equivalent",
              "timeoutSeconds": 10}
    env.create("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "rbac-test"},
        "webhooks": [dict(common, name="pods.mutate.dra-guard.io", failurePolicy="Fail",
                          clientConfig={"url": url + "/mutate", "caBundle": bundle},
                          rules=[{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                  "resources": ["pods"], "scope": "Namespaced"}])]})
    env.create("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "rbac-test"},
        "webhooks": [dict(common, name="resourceclaims.validate.dra-guard.io", failurePolicy="Fail",
                          clientConfig={"url": url + "/validate", "caBundle": bundle},
                          rules=[{"apiGroups": ["resource.k8s.io"], "apiVersions": ["v1"],
                                  "operations": ["CREATE"], "resources": ["resourceclaims"],
                                  "scope": "Namespaced"},
                                 {"apiGroups": ["resource.k8s.io"], "apiVersions": ["v1"],
                                  "operations": ["UPDATE"], "resources": ["resourceclaims/status"],
                                  "scope": "Namespaced"}])]})


def claim(name):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}


def pod(name, claim_name):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": claim_name}],
                     "containers": [{"name": "c", "image": "registry.example/app:1",
                                     "resources": {"claims": [{"name": "gpu"}]}}]}}


def metric(s, name, **labels):
    return guard.metric(s.metrics(), name, **labels) or 0


def test_every_request_is_granted_and_every_grant_used():
    env = envtest.EnvTest(audit=True, identities={"scheduler": ("system:kube-scheduler", ["system:masters"])})
    env.start()
    try:
        env.ensure_namespace(GUARD_NS)
        env.ensure_namespace(NS)
        for path in RBAC_FILES:
            env.apply_objects([o for o in objects(path)])
        env.create("/api/v1/namespaces/%s/configmaps" % GUARD_NS, policy_cm(freeze=False))
        env.must("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}},
                 ok=(201, 409))
        token = env.sa_token(GUARD_NS, "dra-guard")
        # Who reads the metrics port: bound to both readers' roles, as an
        # operator's scraper would be.
        reader = env.sa_token("monitoring", "prometheus")
        for role in ("dra-guard-metrics-reader", "dra-guard-debug-reader"):
            env.create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": role}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                        "kind": "ClusterRole", "name": role},
                "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"}]})
        with guard.TempDir() as d:
            certs = guard.make_certs(d)
            kc = env.kubeconfig(token=token, path=os.path.join(d, "kc.yaml"))
            s = guard.Server(certs, args=["--kubeconfig", kc, "--policy-configmap", "%s/%s" % (GUARD_NS, CM),
                                          "--gate-release", "--gate-lease", "%s/dra-guard-gate" % GUARD_NS,
                                          "--gate-lease-duration", "3s", "--self-user", GUARD_USER,
                                          "--metrics-auth=kubernetes"],
                             wait_ready=False, metrics_token=reader)
            try:
                s.wait(lambda: s.ready()[0], "the guard to sync and be ready", timeout=BOUND)
                check(s.metrics_tls, "the metrics port is not checked")
                check(metric(s, "dra_guard_metrics_auth_total", result="allowed") >= 1, "no scrape allowed")
                register(env, certs, s)
                claims = envtest.RESOURCE_V1 + "/namespaces/%s/resourceclaims" % NS
                made_claim = env.create(claims, claim("held"))
                waiting = env.create("/api/v1/namespaces/%s/pods" % NS, pod("waiting-pod", "held"))
                env.patch("/api/v1/namespaces/%s/configmaps/%s" % (GUARD_NS, CM),
                          {"data": {"freeze": "true", "freeze-reason": "INC-9: rbac drill"}})
                s.wait(lambda: s.ready()[1]["policy"]["freeze"] is True, "the freeze from the ConfigMap",
                       timeout=BOUND)
                # A Pod created in the freeze is gated (the guard's /mutate).
                made = env.create("/api/v1/namespaces/%s/pods" % NS, pod("gated-pod", "other"))
                check(GATE in [g["name"] for g in made["spec"].get("schedulingGates") or []],
                      "the Pod was not gated: %s" % made["spec"])
                # A new claim is refused (an Event on the claim), and so is
                # the scheduler's allocation of an existing one, again and
                # again (an Event on its Pod, then its series patched).
                st, out = env.request("POST", claims, claim("new"))
                check(st == 403, "the claim in a freeze: %d %s" % (st, out))
                del made_claim

                def allocate():
                    c = env.get(claims + "/held")
                    c["status"] = {"allocation": {"devices": {"results": [
                        {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}]}},
                        "reservedFor": [{"resource": "pods", "name": "waiting-pod",
                                         "uid": waiting["metadata"]["uid"]}]}
                    st, out = env.request("PUT", claims + "/held/status", c, identity="scheduler")
                    check(st == 403, "the allocation in a freeze: %d %s" % (st, out))

                allocate()
                s.wait(lambda: any(r[0] == "create" and r[2] == "events" for r in guard_requests(env)),
                       "the Event to be created", timeout=BOUND)

                def patched():
                    allocate()
                    return any(r[0] == "patch" and r[2] == "events" for r in guard_requests(env))
                s.wait(patched, "the Event's series to be patched (every 10 s at most)", timeout=BOUND)
                # The freeze ends: the Lease, then the Pod released.
                env.patch("/api/v1/namespaces/%s/configmaps/%s" % (GUARD_NS, CM),
                          {"data": {"freeze": "false", "freeze-reason": ""}})

                def released():
                    p = env.get("/api/v1/namespaces/%s/pods/gated-pod" % NS)
                    return GATE not in [g["name"] for g in p["spec"].get("schedulingGates") or []]
                s.wait(released, "the gated Pod to be released", timeout=BOUND)
                # The holder renews its Lease (a get and an update every lease/5).
                s.wait(lambda: sum(1 for r in guard_requests(env) if r[0] == "update" and r[2] == "leases") >= 1,
                       "the Lease to be renewed", timeout=BOUND)
            finally:
                s.stop()
            # The other way to list: in pages (an API server that serves no
            # streaming list, or --list-mode pages).
            with guard.Server(certs, args=["--kubeconfig", kc, "--policy-configmap", "%s/%s" % (GUARD_NS, CM),
                                           "--list-mode", "pages"], wait_ready=False) as p:
                p.wait(lambda: p.ready()[0], "the guard listing in pages to sync", timeout=BOUND)
        reqs = guard_requests(env)
    finally:
        env.stop()

    refused = sorted(set(r for r in reqs if r[6] == 403))
    check(not refused, "requests of the guard the manifests' RBAC refused (a missing grant): %s" % refused)

    def uses(grant, r):
        _, _, verb, group, res, names = grant
        full = r[2] + ("/" + r[3] if r[3] else "")
        return r[0] == verb and r[1] == group and full == res and (not names or r[5] in names)

    unused = [g for g in granted() if not any(uses(g, r) for r in reqs)]
    check(not unused, "grants the guard never used (least privilege: remove them or say why): %s"
          % ["%s rule %d: %s %s %s%s" % (g[0], g[1], g[2], g[3] or "core", g[4],
                                          " %s" % list(g[5]) if g[5] else "") for g in unused])
    print("     %d requests by the guard, %d grants, all used and none missing"
          % (len(reqs), len(granted())))


if __name__ == "__main__":
    envtest.require("test_rbac_least_privilege", fake=True)
    guard.run_tests([test_every_request_is_granted_and_every_grant_used])
