#!/usr/bin/env python3
"""The deployment manifests, rendered and read back the way the guard reads YAML.

Every kustomization under manifests/ is rendered with `kubectl kustomize`
(the self-signed overlay after its own gen-certs.sh has run, in a temporary
copy) and parsed with `dra-guard convert`, the project's own loader. Then:
the webhook rules cover exactly what the server handles (the expected set is
written out here, not read from the manifests), each entry sets its safety
fields, the failurePolicy of each concern is the one docs/operations.md argues
for, no fail-closed webhook can lock the guard out of its own namespace, the
Deployment passes Pod Security "restricted" and mounts its policy and
certificate as directories, the Service and probes reach the ports the binary
listens on, the binary starts with the Deployment's own arguments, the policy
ConfigMap lints, and both certificate overlays give the API server a CA that
verifies the serving certificate. Also certs/make-certs.sh cluster mode, and
the samples (NetworkPolicy, driver RBAC).
"""

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import manifests_lib as ml  # noqa: E402
from manifests_lib import check, fail  # noqa: E402

GUARD_NS = "dra-guard"
MAKE_CERTS = os.path.join(ml.ROOT, "certs", "make-certs.sh")

# What the server handles (DESIGN, issues 3-5): written out here so the test
# can disagree with the manifests.
DRA = "resource.k8s.io"
DRA_VERSIONS = ("v1", "v1beta2", "v1beta1")


def _tuples(group, versions, resource, operations):
    return {(group, v, resource, op) for v in versions for op in operations}


VALIDATE_CONCERNS = {
    "resourceslices": _tuples(DRA, DRA_VERSIONS, "resourceslices", ("CREATE", "UPDATE", "DELETE")),
    "resourceclaims": _tuples(DRA, DRA_VERSIONS, "resourceclaims", ("CREATE", "UPDATE")),
    "resourceclaim-status": _tuples(DRA, DRA_VERSIONS, "resourceclaims/status", ("UPDATE",)),
    "pod-status": _tuples("", ("v1",), "pods/status", ("UPDATE",)),
    "policy-configmap": _tuples("", ("v1",), "configmaps", ("CREATE", "UPDATE")),
}
MUTATE_CONCERNS = {
    "resourceslices": _tuples(DRA, DRA_VERSIONS, "resourceslices", ("CREATE", "UPDATE")),
}
# The failurePolicy each concern must have, and why (docs/operations.md has the long form):
# slices, claims and claim status fail closed (overcommit, the freeze, who
# writes allocations); Pod status and the policy ConfigMap fail open (kubelets
# must keep reporting; the policy must stay editable); the label is advisory.
FAILURE_POLICY = {
    ("validate", "resourceslices"): "Fail",
    ("validate", "resourceclaims"): "Fail",
    ("validate", "resourceclaim-status"): "Fail",
    ("validate", "pod-status"): "Ignore",
    ("validate", "policy-configmap"): "Ignore",
    ("mutate", "resourceslices"): "Ignore",
}
CLUSTER_SCOPED = {"resourceslices"}

# Pod Security "restricted" (v1.36), the parts a Deployment can get wrong.
RESTRICTED_SECCOMP = ("RuntimeDefault", "Localhost")

# Kinds allowed outside a namespace; the ClusterRole is checked to read only
# what the cluster view watches.
CLUSTER_KINDS = {"Namespace", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
                 "ClusterRole", "ClusterRoleBinding"}

# kustomize v2.0.3 (Debian 12's kubectl) knows these kustomization fields and
# reads directories only from `bases`.
KUSTOMIZE_V2_FIELDS = {"resources", "bases", "images", "generatorOptions", "secretGenerator",
                       "configMapGenerator", "patchesStrategicMerge", "apiVersion", "kind"}

START_TIMEOUT = 30.0


# --- rendering, once ----------------------------------------------------------------

_state = {}


def _once(name, make):
    """make() the first time; its value (or its failure) after that."""
    if name not in _state:
        try:
            _state[name] = (True, make())
        except AssertionError as e:
            _state[name] = (False, e)
    ok, value = _state[name]
    if not ok:
        raise AssertionError("(as before) %s" % value)
    return value


def workspace():
    """A copy of manifests/ and certs/ where gen-certs.sh has run."""
    def make():
        ws = ml.overlay_workspace()
        _state["cleanup"] = ws
        overlay = os.path.join(ws, "manifests", "overlays", "self-signed")
        # Before gen-certs.sh the overlay does not render, and kustomize's
        # own error says what to do.
        _, _, err = ml.run([ml.kubectl(), "kustomize", overlay], ok=None)
        _state["before-gen-certs"] = err
        _, _, err = ml.run([os.path.join(overlay, "gen-certs.sh")], cwd=ws)
        _state["gen-certs"] = err
        return ws
    return _once("ws", make)


def test_self_signed_overlay_says_run_gen_certs_first_and_gen_certs_the_two_steps():
    workspace()
    err = _state["before-gen-certs"]
    check("run-gen-certs.sh-first.yaml" in err and "no such file" in err,
          "rendering before gen-certs.sh: %s" % err[-500:])
    # gen-certs.sh ends with the install of docs/operations.md: the webhook
    # configurations last, never a bare apply -k of everything first.
    lines = [l.strip() for l in _state["gen-certs"].splitlines()]
    steps = [l for l in lines if l.startswith("kubectl ")]
    overlay = "manifests/overlays/self-signed"
    check(steps == ["kubectl apply -k %s -l 'app.kubernetes.io/component!=admission-webhook'" % overlay,
                    "kubectl -n dra-guard rollout status deployment/dra-guard --timeout=5m",
                    "kubectl apply -k %s" % overlay], "gen-certs.sh prints %s" % steps)
    with open(os.path.join(ml.ROOT, "docs", "operations.md")) as f:
        ops = f.read()
    for step in steps:
        check(step.replace(overlay, "$OVERLAY") in ops, "docs/operations.md does not give %r" % step)


# Add-ons hold no guard of their own: they are rendered next to an overlay
# (manifests/monitoring, tests/e2e/test_monitoring.py checks it;
# manifests/gate-pods, test_gate_pods_addon_fits_the_guard below;
# manifests/vap, tests/e2e/test_vap_envtest.py).
ADDONS = {"monitoring", "gate-pods", "vap"}


def kustomizations(addons=False):
    """Every directory under manifests/ with a kustomization, relative to it;
    the add-ons only when asked."""
    out = []
    for d, _, files in os.walk(ml.MANIFESTS):
        rel = os.path.relpath(d, ml.MANIFESTS)
        if "kustomization.yaml" in files and (addons or rel not in ADDONS):
            out.append(rel)
    return sorted(out)


def renders():
    def make():
        ws = workspace()
        return {k: ml.render(os.path.join(ws, "manifests", k)) for k in kustomizations()}
    return _once("renders", make)


def overlays():
    """Renders of the kustomizations meant to be applied (all but the base)."""
    return {k: v for k, v in renders().items() if k != "base"}


def deployment_parts(objs):
    d = ml.one(objs, "Deployment")
    pod = d["spec"]["template"]["spec"]
    containers = pod["containers"]
    check(len(containers) == 1, "the guard Pod has %d containers" % len(containers))
    c = containers[0]
    args = c.get("args") or []
    check(args[:1] == ["serve"], "container args start with %r, not serve" % args[:1])
    return d, pod, c, ml.flag_values(args[1:])


def container_port(c, ref):
    """The number a probe or Service port reference (name or number) resolves to."""
    for p in c.get("ports") or []:
        if ref == p.get("name") or ref == p["containerPort"]:
            return p["containerPort"]
    fail("port %r is not a port of container %s" % (ref, c["name"]))


def listen_port(addr):
    m = re.fullmatch(r"(.*):(\d+)", addr)
    check(m is not None, "listen address %r" % addr)
    return m.group(1), int(m.group(2))


def serve_help():
    if "help" not in _state:
        _, out, err = ml.run([ml.binary(), "serve", "--help"])
        _state["help"] = out + err
    return _state["help"]


def binary_default(flag):
    # The flag where the help names it first on a line, not where another
    # flag's text mentions it.
    m = re.search(r"^\s*--%s[ \t].*?\n\s*\[\$\w+; default: ([^\]]+)\]" % re.escape(flag), serve_help(),
                  re.S | re.M)
    check(m is not None, "serve --help shows no default for --%s" % flag)
    return m.group(1).strip()


def webhook_entries(objs):
    """(side, configuration, entry) for every webhook of every configuration."""
    out = []
    for kind, side in (("ValidatingWebhookConfiguration", "validate"), ("MutatingWebhookConfiguration", "mutate")):
        for cfg in ml.of_kind(objs, kind):
            for w in cfg.get("webhooks") or []:
                out.append((side, cfg, w))
    return out


def expand_rules(w):
    out = set()
    for r in w.get("rules") or []:
        for field in ("apiGroups", "apiVersions", "resources", "operations"):
            vals = r.get(field) or []
            check(vals, "%s: a rule without %s" % (w["name"], field))
            check(not any("*" in v for v in vals), "%s: wildcard in %s: %s" % (w["name"], field, vals))
        for g in r["apiGroups"]:
            for v in r["apiVersions"]:
                for res in r["resources"]:
                    for op in r["operations"]:
                        out.add((g, v, res, op))
    return out


def concern_of(side, w):
    table = VALIDATE_CONCERNS if side == "validate" else MUTATE_CONCERNS
    got = expand_rules(w)
    for name, want in table.items():
        if got == want:
            return name
    fail("%s (%s): its rules %s match no single concern the server handles" % (w["name"], side, sorted(got)))


def guard_namespace_labels(objs):
    ns = ml.one(objs, "Namespace", GUARD_NS)
    labels = dict(ns["metadata"].get("labels") or {})
    # The API server sets this label on every namespace.
    labels["kubernetes.io/metadata.name"] = GUARD_NS
    return labels


# --- rendering and parsing ------------------------------------------------------------


def test_convert_prints_each_document_as_the_guard_reads_it():
    # What the checks below rely on: one JSON line per document, read the way
    # Kubernetes reads YAML (1.1 booleans, octal), and hostile YAML refused.
    docs = ml.convert("a: yes\nb: 0444\nc: '0444'\n---\n- x\n---\n", "two documents")
    check(docs == [{"a": True, "b": 292, "c": "0444"}, ["x"]], "convert gave %s" % docs)
    check(ml.convert("", "empty") == [], "an empty stream is no documents")
    for bad, why in (("a: 1\na: 2\n", "duplicate key"), ("a: &x 1\nb: *x\n", "anchor"),
                     ("a: !!binary aGk=\n", "tag"), ('{"a": 1, "a": 2}', "duplicate JSON key")):
        code, out, err = ml.run([ml.binary(), "convert", "-"], stdin=bad, ok=None)
        check(code == 2 and out == "" and err.strip(), "convert accepted a %s: %r %r" % (why, out, err))


def test_kustomizations_stay_within_kustomize_v2():
    for k in kustomizations(addons=True):
        path = os.path.join(ml.MANIFESTS, k, "kustomization.yaml")
        (doc,) = ml.load_file(path)
        extra = set(doc) - KUSTOMIZE_V2_FIELDS
        check(not extra, "%s: fields kustomize v2.0.3 does not know: %s" % (path, sorted(extra)))
        # In the workspace: the self-signed overlay lists a file gen-certs.sh writes.
        for r in doc.get("resources") or []:
            check(os.path.isfile(os.path.join(workspace(), "manifests", k, r)),
                  "%s: resources entry %r is not a file (kustomize v2.0.3 takes directories only "
                  "under bases)" % (path, r))
    check({"base", "overlays/self-signed", "overlays/cert-manager"} <= set(kustomizations()),
          "kustomizations found: %s" % kustomizations())
    check(ADDONS <= set(kustomizations(addons=True)), "add-ons found: %s" % kustomizations(addons=True))


def test_every_kustomization_renders_and_parses():
    print("     kubectl %s, kustomize %s" % (ml.kubectl(), ml.kustomize_version(ml.kubectl())))
    for name, objs in renders().items():
        check(objs, "%s rendered no objects" % name)
        for o in objs:
            check(isinstance(o, dict) and o.get("apiVersion") and o.get("kind"),
                  "%s: a document that is not an object: %.200s" % (name, json.dumps(o)))
            check((o.get("metadata") or {}).get("name"), "%s: %s without a name" % (name, o["kind"]))
        ml.index(objs)
        base = {ml.key(o) for o in renders()["base"]}
        check(base <= {ml.key(o) for o in objs}, "%s lacks objects of the base" % name)


def test_objects_stay_in_the_guard_namespace_and_nothing_is_cluster_wide():
    for name, objs in renders().items():
        for o in objs:
            kind, ns, obj_name = ml.key(o)
            if kind in CLUSTER_KINDS:
                check(ns == "", "%s: %s/%s has a namespace" % (name, kind, obj_name))
            else:
                check(ns == GUARD_NS, "%s: %s/%s is in namespace %r, not %s" % (name, kind, obj_name, ns, GUARD_NS))
        ns = ml.one(objs, "Namespace", GUARD_NS)
        check(ns["metadata"]["labels"].get("pod-security.kubernetes.io/enforce") == "restricted",
              "%s: the namespace does not enforce Pod Security restricted" % name)


def test_role_reads_only_the_policy_configmap():
    for name, objs in renders().items():
        _, pod, _, flags = deployment_parts(objs)
        cm_ns, cm_name = flags.get("policy-configmap", binary_default("policy-configmap")).split("/")
        role = ml.one(objs, "Role")
        want = [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [cm_name]}]
        got = [{k: r[k] for k in ("apiGroups", "resources", "resourceNames") if k in r} for r in role["rules"]]
        check(got == want, "%s: Role rules %s, want only %s" % (name, role["rules"], want))
        verbs = set(role["rules"][0]["verbs"])
        check(verbs and verbs <= {"get", "list", "watch"}, "%s: Role verbs %s" % (name, sorted(verbs)))
        check(role["metadata"]["namespace"] == cm_ns, "%s: Role not in the ConfigMap's namespace" % name)
        rb = ml.one(objs, "RoleBinding")
        check(rb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                "name": role["metadata"]["name"]}, "%s: RoleBinding roleRef %s" % (name, rb["roleRef"]))
        sa = pod.get("serviceAccountName")
        check(rb["subjects"] == [{"kind": "ServiceAccount", "name": sa, "namespace": GUARD_NS}],
              "%s: RoleBinding subjects %s, want the Pod's ServiceAccount %s" % (name, rb["subjects"], sa))
        ml.one(objs, "ServiceAccount", sa)


def test_cluster_role_only_reads_slices_claims_pods_and_nodes_and_writes_events():
    for name, objs in renders().items():
        _, pod, _, _ = deployment_parts(objs)
        role = ml.one(objs, "ClusterRole", "dra-guard")
        rules = [(tuple(r.get("apiGroups", [])), tuple(sorted(r.get("resources", []))),
                  tuple(sorted(r.get("verbs", []))), tuple(r.get("resourceNames", [])))
                 for r in role["rules"]]
        # The two reviews are the metrics port's checks (--metrics-auth=kubernetes):
        # create only, what system:auth-delegator grants.
        want = [(("resource.k8s.io",), ("resourceclaims", "resourceslices"), ("list", "watch"), ()),
                (("",), ("nodes", "pods"), ("list", "watch"), ()),
                (("events.k8s.io",), ("events",), ("create", "patch"), ()),
                (("authentication.k8s.io",), ("tokenreviews",), ("create",), ()),
                (("authorization.k8s.io",), ("subjectaccessreviews",), ("create",), ())]
        check(rules == want, "%s: ClusterRole rules %s, want only %s" % (name, rules, want))
        # The readers' roles grant non-resource URLs (the metrics port's
        # paths) and nothing else, and the base binds them to nobody.
        readers = {"dra-guard-metrics-reader": ["/metrics"],
                   "dra-guard-debug-reader": ["/debug/readyz", "/debug/view", "/debug/ledger", "/debug/pending"]}
        for rname, urls in readers.items():
            r = ml.one(objs, "ClusterRole", rname)
            check(r["rules"] == [{"nonResourceURLs": urls, "verbs": ["get"]}], "%s: %s rules %s"
                  % (name, rname, r["rules"]))
        check(sorted(o["metadata"]["name"] for o in objs if o["kind"] == "ClusterRole")
              == sorted(["dra-guard"] + list(readers)), "%s: other ClusterRoles" % name)
        crb = ml.one(objs, "ClusterRoleBinding")
        check(crb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                 "name": role["metadata"]["name"]}, "%s: ClusterRoleBinding roleRef" % name)
        sa = pod.get("serviceAccountName")
        check(crb["subjects"] == [{"kind": "ServiceAccount", "name": sa, "namespace": GUARD_NS}],
              "%s: ClusterRoleBinding subjects %s" % (name, crb["subjects"]))
        check(pod.get("automountServiceAccountToken") is not False,
              "%s: the Pod mounts no token, so the cluster view cannot authenticate" % name)


# --- the Deployment -------------------------------------------------------------------


def test_deployment_is_pod_security_restricted():
    for name, objs in renders().items():
        _, pod, c, _ = deployment_parts(objs)
        psc = pod.get("securityContext") or {}
        csc = c.get("securityContext") or {}

        def eff(field):
            return csc[field] if field in csc else psc.get(field)

        for f in ("hostNetwork", "hostPID", "hostIPC"):
            check(not pod.get(f), "%s: %s set" % (name, f))
        check(eff("runAsNonRoot") is True, "%s: runAsNonRoot is not true" % name)
        uid = eff("runAsUser")
        check(isinstance(uid, int) and uid > 0, "%s: runAsUser %r is not a non-zero uid" % (name, uid))
        check(csc.get("readOnlyRootFilesystem") is True, "%s: readOnlyRootFilesystem is not true" % name)
        check(csc.get("allowPrivilegeEscalation") is False, "%s: allowPrivilegeEscalation is not false" % name)
        check(not csc.get("privileged"), "%s: privileged" % name)
        caps = csc.get("capabilities") or {}
        check("ALL" in (caps.get("drop") or []), "%s: capabilities do not drop ALL" % name)
        check(not caps.get("add"), "%s: capabilities added: %s" % (name, caps.get("add")))
        seccomp = (csc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
        check(seccomp in RESTRICTED_SECCOMP, "%s: seccompProfile %r" % (name, seccomp))
        for v in pod.get("volumes") or []:
            check("hostPath" not in v, "%s: hostPath volume %s" % (name, v["name"]))
        for p in c.get("ports") or []:
            check("hostPort" not in p, "%s: hostPort %s" % (name, p))
        res = c.get("resources") or {}
        check({"cpu", "memory"} <= set(res.get("requests") or {}), "%s: requests %s" % (name, res.get("requests")))
        check("memory" in (res.get("limits") or {}), "%s: no memory limit" % name)


def test_deployment_spreads_three_replicas_and_keeps_two_through_disruptions():
    for name, objs in renders().items():
        d, pod, _, _ = deployment_parts(objs)
        labels = d["spec"]["template"]["metadata"]["labels"]
        check(d["spec"]["replicas"] == 3, "%s: replicas %s" % (name, d["spec"]["replicas"]))
        check(pod.get("priorityClassName") == "system-cluster-critical",
              "%s: priorityClassName %r" % (name, pod.get("priorityClassName")))
        spread = [t for t in pod.get("topologySpreadConstraints") or []
                  if t["topologyKey"] == "kubernetes.io/hostname" and t["whenUnsatisfiable"] == "DoNotSchedule"
                  and t["maxSkew"] == 1 and ml.selector_matches(t["labelSelector"], labels)]
        anti = [t for t in ((pod.get("affinity") or {}).get("podAntiAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or []
                if t["topologyKey"] == "kubernetes.io/hostname" and ml.selector_matches(t["labelSelector"], labels)]
        check(spread or anti, "%s: nothing keeps the replicas on different nodes" % name)
        pdb = ml.one(objs, "PodDisruptionBudget")
        check(ml.selector_matches(pdb["spec"]["selector"], labels), "%s: the PDB does not select the Pods" % name)
        check(pdb["spec"].get("minAvailable") == 2, "%s: PDB minAvailable %r" % (name, pdb["spec"].get("minAvailable")))
        check(pdb["spec"].get("unhealthyPodEvictionPolicy") == "AlwaysAllow",
              "%s: unhealthy guard Pods could block node drains" % name)
        strategy = d["spec"].get("strategy", {}).get("rollingUpdate", {})
        check(strategy.get("maxUnavailable") == 0, "%s: a rollout may take Ready replicas away" % name)


def test_probes_use_a_plain_port_of_their_own():
    for name, objs in renders().items():
        _, _, c, flags = deployment_parts(objs)
        host, port = listen_port(flags.get("probe-listen", binary_default("probe-listen")))
        check(host in ("0.0.0.0", "", "[::]", "::"),
              "%s: --probe-listen on %r: kubelet probes cannot reach it" % (name, host))
        _, metrics = listen_port(flags.get("metrics-listen", binary_default("metrics-listen")))
        check(port != metrics, "%s: probes share the metrics port's connection slots" % name)
        for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
            p = c.get(probe)
            check(p and "httpGet" in p, "%s: no %s httpGet" % (name, probe))
            g = p["httpGet"]
            check(g.get("path") == path, "%s: %s path %r, want %s" % (name, probe, g.get("path"), path))
            check(g.get("scheme", "HTTP") == "HTTP", "%s: %s scheme %s" % (name, probe, g.get("scheme")))
            check(container_port(c, g["port"]) == port,
                  "%s: %s on port %r, the probe port is %d" % (name, probe, g["port"], port))


_UNITS = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "k": 1000, "K": 1000, "M": 10 ** 6, "G": 10 ** 9, "": 1}


def _bytes(text):
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi|k|K|M|G|)", str(text))
    check(m is not None, "size %r" % text)
    return int(m.group(1)) * _UNITS[m.group(2)]


# The worst case the Limits section writes out, term by term.
SIZING_PROCESS = 16 << 20           # binary, libraries, TLS state, two policy snapshots
SIZING_PER_CONNECTION = 132 << 10   # 32 KiB library pool, 64 KiB read-ahead, TLS session, 4 KiB body prefix
SIZING_POOL = 2 * 32 * (256 << 10)  # the buffer pool: 32 bodies and 32 answers of 256 KiB
SIZING_PLAIN_PORTS = 16 << 20       # 80 plain-HTTP connections and one /metrics text
# The cluster view of the 5,000-node reference cluster (40,000 devices,
# 100,000 claims, 150,000 Pods with the Nodes, at 150, 180 and 100 bytes
# each: 36.7 MiB measured over a guard without a view, rounded up).
SIZING_ONE_VIEW = 40000 * 150 + 100000 * 180 + 150000 * 100
# Three at worst: a relist builds a new table beside the one serving, and a
# freeze keeps the view of its start.
SIZING_VIEW = 3 * SIZING_ONE_VIEW
# The ledger of that view (32 MiB, measured): the one kept and one built for
# ?at=freeze; the /debug texts (41.8 MB of /debug/ledger) are
# --debug-memory-budget, added from the flag.
SIZING_ONE_LEDGER = 32 << 20
SIZING_LEDGER = 2 * SIZING_ONE_LEDGER
SIZING_ALLOCATOR = 1.15             # fragmentation left to the allocator


def test_memory_limit_is_sized_from_the_budget():
    """limit >= (process + budget + threads x (arena + answer) + connections x
    per-connection + pool + plain ports + 3 x cluster view + ledgers) x
    allocator slack, with the flags the Deployment gives: the sizing the
    Limits section writes down. The request holds the budget, one view and
    its ledger."""
    for name, objs in renders().items():
        _, _, c, flags = deployment_parts(objs)
        check("threads" in flags, "%s: --threads not set: the default is the node's CPU count" % name)
        threads = int(flags["threads"])
        max_body = _bytes(flags.get("max-body", binary_default("max-body")))
        budget = _bytes(flags.get("memory-budget", binary_default("memory-budget")))
        conns = int(flags.get("max-connections", binary_default("max-connections")))
        arena = 4 * max_body + (16 << 20)
        answer = max_body + (4 << 20)
        has_view = flags.get("cluster-view", binary_default("cluster-view")) != "off"
        debug = _bytes(flags.get("debug-memory-budget", binary_default("debug-memory-budget")))
        check(debug >= 48 << 20, "%s: --debug-memory-budget %d MiB cannot hold /debug/ledger at 5,000 nodes"
              % (name, debug >> 20))
        view = SIZING_VIEW + SIZING_LEDGER + debug if has_view else 0
        held = SIZING_ONE_VIEW + SIZING_ONE_LEDGER if has_view else 0
        worst = (SIZING_PROCESS + budget + threads * (arena + answer) + conns * SIZING_PER_CONNECTION +
                 SIZING_POOL + SIZING_PLAIN_PORTS + view)
        limit = _bytes(c["resources"]["limits"]["memory"])
        request = _bytes(c["resources"]["requests"]["memory"])
        check(limit >= worst * SIZING_ALLOCATOR, "%s: memory limit %d MiB, the sizing needs %.0f MiB" % (
            name, limit >> 20, worst * SIZING_ALLOCATOR / (1 << 20)))
        check(request >= budget + held, "%s: memory request %d MiB below the budget, the view and its "
              "ledger, %d MiB" % (name, request >> 20, (budget + held) >> 20))


def test_policy_and_certificate_are_mounted_as_directories():
    for name, objs in renders().items():
        _, pod, c, flags = deployment_parts(objs)
        volumes = {v["name"]: v for v in pod.get("volumes") or []}
        mounts = c.get("volumeMounts") or []
        for m in mounts:
            check("subPath" not in m and "subPathExpr" not in m,
                  "%s: volume %s mounted with subPath: it would never update" % (name, m["name"]))

        def mount_at(directory):
            found = [m for m in mounts if m["mountPath"].rstrip("/") == directory.rstrip("/")]
            check(len(found) == 1, "%s: nothing mounted at %s" % (name, directory))
            return volumes[found[0]["name"]]

        cm_name = flags.get("policy-configmap", binary_default("policy-configmap")).split("/")[1]
        check("policy-dir" in flags, "%s: no --policy-dir" % name)
        pv = mount_at(flags["policy-dir"])
        check((pv.get("configMap") or {}).get("name") == cm_name and not pv["configMap"].get("items"),
              "%s: --policy-dir holds %s, not the whole ConfigMap %s" % (name, pv, cm_name))
        cert, key = flags.get("tls-cert", binary_default("tls-cert")), flags.get("tls-key", binary_default("tls-key"))
        check(os.path.dirname(cert) == os.path.dirname(key), "%s: certificate and key in different directories" % name)
        check((os.path.basename(cert), os.path.basename(key)) == ("tls.crt", "tls.key"),
              "%s: %s, %s are not the keys of a kubernetes.io/tls Secret" % (name, cert, key))
        tv = mount_at(os.path.dirname(cert))
        check("secret" in tv and not tv["secret"].get("items"), "%s: the TLS volume %s is not a whole Secret" % (name, tv))


def test_grace_period_outlasts_the_drain():
    for name, objs in renders().items():
        _, pod, c, flags = deployment_parts(objs)
        drain = ml.parse_duration(flags.get("shutdown-timeout", binary_default("shutdown-timeout")))
        pre = ((c.get("lifecycle") or {}).get("preStop") or {}).get("sleep", {}).get("seconds", 0)
        grace = pod.get("terminationGracePeriodSeconds", 30)
        check(grace > drain + pre, "%s: terminationGracePeriodSeconds %d <= preStop %d + --shutdown-timeout %d"
              % (name, grace, pre, drain))


def test_service_targets_the_port_the_binary_listens_on():
    for name, objs in renders().items():
        _, _, c, flags = deployment_parts(objs)
        _, port = listen_port(flags.get("listen", binary_default("listen")))
        svc = ml.one(objs, "Service")
        d = ml.one(objs, "Deployment")
        check(ml.selector_matches({"matchLabels": svc["spec"]["selector"]}, d["spec"]["template"]["metadata"]["labels"]),
              "%s: the Service does not select the guard's Pods" % name)
        https = [p for p in svc["spec"]["ports"] if p["port"] == 443]
        check(len(https) == 1, "%s: the Service has no port 443" % name)
        check(container_port(c, https[0].get("targetPort", 443)) == port,
              "%s: Service 443 -> %r, but the server listens on %d" % (name, https[0].get("targetPort"), port))
        check(flags.get("service-name") == "%s.%s.svc" % (svc["metadata"]["name"], GUARD_NS),
              "%s: --service-name %r is not the Service's name" % (name, flags.get("service-name")))


def test_deployment_flags_are_flags_of_serve():
    for name, objs in renders().items():
        _, _, _, flags = deployment_parts(objs)
        for f in flags:
            check(re.search(r"^\s*--%s\b" % re.escape(f), serve_help(), re.M),
                  "%s: --%s is not a flag of dra-guard serve" % (name, f))


def _policy_dir(root, data):
    """A ConfigMap volume laid out the kubelet's way: ..data -> a version
    directory, each key a symlink through ..data."""
    version = os.path.join(root, "..2026_01_01_00_00_00.000000001")
    os.makedirs(version)
    for k, v in data.items():
        with open(os.path.join(version, k), "w") as f:
            f.write(v)
    os.symlink(os.path.basename(version), os.path.join(root, "..data"))
    for k in data:
        os.symlink(os.path.join("..data", k), os.path.join(root, k))


def _get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_server_starts_with_the_deployment_arguments():
    # Run the container's own arguments, with only the paths and addresses
    # moved into a temporary directory and onto loopback: every flag the
    # Deployment passes must parse and the replica must become ready.
    objs = renders()["overlays/self-signed"]
    _, _, c, flags = deployment_parts(objs)
    cm_name = flags["policy-configmap"].split("/")[1]
    cm = ml.one(objs, "ConfigMap", cm_name)
    tmp = tempfile.mkdtemp(prefix="dra-guard-deploy-")
    log_path = os.path.join(tmp, "serve.log")
    proc = None
    try:
        tls = os.path.join(tmp, "tls")
        ml.run([MAKE_CERTS, "dev", tls])
        policy = os.path.join(tmp, "policy")
        os.makedirs(policy)
        _policy_dir(policy, cm["data"])
        # No API server here to review tokens: the metrics port unchecked on
        # loopback (tests/e2e/test_metrics_auth.py runs it checked).
        check(flags.get("metrics-auth") == "kubernetes", "the Deployment's metrics port is not checked")
        moved = {"listen": "127.0.0.1:0", "metrics-listen": "127.0.0.1:0", "probe-listen": "127.0.0.1:0",
                 "metrics-auth": "none",
                 "tls-cert": os.path.join(tls, "tls.crt"), "tls-key": os.path.join(tls, "tls.key"),
                 "policy-dir": policy}
        argv = [ml.binary(), "serve"]
        for f, v in flags.items():
            argv.append("--%s=%s" % (f, moved.get(f, v)))
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log)
        serving = None
        deadline = time.time() + START_TIMEOUT
        while serving is None and time.time() < deadline:
            check(proc.poll() is None, "serve exited %s with the Deployment's arguments:\n%s"
                  % (proc.returncode, open(log_path).read()[-3000:]))
            for line in open(log_path).read().splitlines():
                if '"msg":"serving"' in line.replace(" ", ""):
                    serving = json.loads(line)
            time.sleep(0.02)
        check(serving is not None, "serve did not start:\n%s" % open(log_path).read()[-3000:])
        check(serving.get("threads") == int(flags["threads"]), "threads %s" % serving.get("threads"))
        metrics = "http://127.0.0.1:%d" % listen_port(serving["metrics_listen"])[1]
        status = None
        while time.time() < deadline:
            status, body = _get(metrics + "/readyz")
            if status == 200 or '"no valid policy' in open(log_path).read():
                break
            time.sleep(0.05)
        check(status == 200, "/readyz never became 200 (last %s):\n%s" % (status, open(log_path).read()[-3000:]))
        check(_get(metrics + "/healthz")[0] == 200, "/healthz")
        probes = "http://127.0.0.1:%d" % listen_port(serving["probe_listen"])[1]
        check(_get(probes + "/healthz")[0] == 200 and _get(probes + "/readyz")[0] == 200,
              "the probe port does not answer the kubelet's probes")
        check(_get(probes + "/metrics")[0] == 404, "the probe port serves /metrics")
        # The freeze runbook compares `policy lint` of the ConfigMap with what
        # each replica reports serving; the two hashes must be the same.
        cm_path = os.path.join(tmp, "cm.json")
        with open(cm_path, "w") as f:
            json.dump(cm, f)
        lint = re.search(r"policy hash ([0-9a-f]+)", ml.run([ml.binary(), "policy", "lint", cm_path])[1])
        served = re.search(r'^dra_guard_policy_info\{hash="([0-9a-f]+)"\} 1$', _get(metrics + "/metrics")[1], re.M)
        check(lint and served and served.group(1).startswith(lint.group(1)),
              "policy lint hash %s, served %s" % (lint and lint.group(1), served and served.group(1)))
        log = open(log_path).read()
        check('"level":"error"' not in log.replace(" ", ""), "errors logged at start:\n%s" % log[-3000:])
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=START_TIMEOUT)
        proc = None
        check(code == 0, "exit %d after SIGTERM" % code)
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


# --- webhook configurations -------------------------------------------------------------


def test_webhook_rules_cover_exactly_what_the_server_handles():
    for name, objs in renders().items():
        ml.one(objs, "ValidatingWebhookConfiguration")
        ml.one(objs, "MutatingWebhookConfiguration")
        seen = {}
        for side, _, w in webhook_entries(objs):
            c = concern_of(side, w)
            check((side, c) not in seen, "%s: %s and %s both cover %s %s" % (name, seen.get((side, c)), w["name"], side, c))
            seen[(side, c)] = w["name"]
            for r in w["rules"]:
                want = "Cluster" if c in CLUSTER_SCOPED else "Namespaced"
                check(r.get("scope") == want, "%s: %s scope %r, want %s" % (name, w["name"], r.get("scope"), want))
        want = {("validate", c) for c in VALIDATE_CONCERNS} | {("mutate", c) for c in MUTATE_CONCERNS}
        check(set(seen) == want, "%s: concerns covered %s, want %s" % (name, sorted(seen), sorted(want)))


def test_every_webhook_entry_sets_its_safety_fields():
    for name, objs in renders().items():
        svc = ml.one(objs, "Service")
        names = set()
        for side, _, w in webhook_entries(objs):
            n = w["name"]
            check(n not in names and n.count(".") >= 2, "%s: webhook name %r (unique, fully qualified)" % (name, n))
            names.add(n)
            check(isinstance(w.get("timeoutSeconds"), int) and 2 <= w["timeoutSeconds"] <= 5,
                  "%s: %s timeoutSeconds %r (want 2-5)" % (name, n, w.get("timeoutSeconds")))
            check(w.get("failurePolicy") in ("Fail", "Ignore"), "%s: %s failurePolicy %r" % (name, n, w.get("failurePolicy")))
            # /validate emits Events on refusals, never for a dryRun request; /mutate emits nothing.
            want = "NoneOnDryRun" if side == "validate" else "None"
            check(w.get("sideEffects") == want, "%s: %s sideEffects %r, want %s" % (name, n, w.get("sideEffects"), want))
            check(w.get("matchPolicy") == "Equivalent", "%s: %s matchPolicy %r" % (name, n, w.get("matchPolicy")))
            check(w.get("admissionReviewVersions") == ["v1"],
                  "%s: %s admissionReviewVersions %r" % (name, n, w.get("admissionReviewVersions")))
            cc = w.get("clientConfig") or {}
            check("url" not in cc, "%s: %s calls a URL, not the Service" % (name, n))
            s = cc.get("service") or {}
            check(s.get("name") == svc["metadata"]["name"] and s.get("namespace") == GUARD_NS,
                  "%s: %s calls service %s" % (name, n, s))
            check(s.get("port", 443) in [p["port"] for p in svc["spec"]["ports"]], "%s: %s port %s" % (name, n, s.get("port")))
            want = "/validate" if side == "validate" else "/mutate"
            check(s.get("path") == want, "%s: %s path %r, want %s" % (name, n, s.get("path"), want))
            conds = w.get("matchConditions") or []
            check(len(conds) <= 64 and len({m["name"] for m in conds}) == len(conds),
                  "%s: %s matchConditions names" % (name, n))
            for m in conds:
                check(m.get("expression", "").strip(), "%s: %s empty matchCondition" % (name, n))


def test_failure_policy_per_concern_is_the_documented_one():
    source = {}
    for side, fname in (("validate", "validating-webhook.yaml"), ("mutate", "mutating-webhook.yaml")):
        source[side] = open(os.path.join(ml.MANIFESTS, "base", fname)).read().split("\n")
    for name, objs in renders().items():
        for side, _, w in webhook_entries(objs):
            c = concern_of(side, w)
            want = FAILURE_POLICY[(side, c)]
            check(w["failurePolicy"] == want, "%s: %s failurePolicy %s, want %s" % (name, w["name"], w["failurePolicy"], want))
    # The reason sits in a comment right above each entry in the base.
    for side, _, w in webhook_entries(renders()["base"]):
        lines = source[side]
        i = lines.index("- name: " + w["name"])
        comment = []
        while i > 0 and lines[i - 1].startswith("#"):
            i -= 1
            comment.append(lines[i])
        check(any("failurePolicy %s" % w["failurePolicy"] in l for l in comment),
              "base: %s has no comment saying why failurePolicy %s" % (w["name"], w["failurePolicy"]))


def test_no_fail_closed_webhook_can_lock_out_the_guard_namespace():
    for name, objs in renders().items():
        labels = guard_namespace_labels(objs)
        for side, _, w in webhook_entries(objs):
            namespaced = any(r.get("scope") == "Namespaced" for r in w["rules"])
            if not namespaced or w.get("objectSelector"):
                continue
            if ml.selector_matches(w.get("namespaceSelector"), labels):
                check(w["failurePolicy"] == "Ignore",
                      "%s: %s (failurePolicy Fail) also matches namespace %s: a guard that is down would "
                      "block its own recovery" % (name, w["name"], GUARD_NS))
        # And the guard's policy ConfigMap is the one namespaced entry that must reach it.
        _, _, _, flags = deployment_parts(objs)
        cm_ns = flags["policy-configmap"].split("/")[0]
        pol = [w for side, _, w in webhook_entries(objs) if concern_of(side, w) == "policy-configmap"]
        check(ml.selector_matches(pol[0].get("namespaceSelector"), labels) and cm_ns == GUARD_NS,
              "%s: the policy ConfigMap webhook does not reach namespace %s" % (name, GUARD_NS))
        other = dict(labels, **{"kubernetes.io/metadata.name": "default"})
        check(not ml.selector_matches(pol[0].get("namespaceSelector"), other),
              "%s: the policy ConfigMap webhook sees every namespace's ConfigMaps" % name)


def test_match_conditions_keep_routine_traffic_away():
    for name, objs in renders().items():
        _, _, _, flags = deployment_parts(objs)
        cm_ns, cm_name = flags["policy-configmap"].split("/")
        by_concern = {(side, concern_of(side, w)): w for side, _, w in webhook_entries(objs)}

        def exprs(side, concern):
            return [m["expression"] for m in by_concern[(side, concern)].get("matchConditions") or []]

        # Pod status: only a change of the node-allocatable claim statuses.
        pod = " ".join(exprs("validate", "pod-status"))
        for needle in ("object.status.nodeAllocatableResourceClaimStatuses",
                       "oldObject.status.nodeAllocatableResourceClaimStatuses", "!="):
            check(needle in pod, "%s: the pods/status condition does not compare %s" % (name, needle))
        # ConfigMaps: only the guard's own, by name and namespace.
        cm = " ".join(exprs("validate", "policy-configmap"))
        check("'%s'" % cm_name in cm and "'%s'" % cm_ns in cm and "request.name" in cm and "request.namespace" in cm,
              "%s: the ConfigMap condition %r does not pin %s/%s" % (name, cm, cm_ns, cm_name))
        # Claim status: only requests that change the status.
        # Claims: every CREATE, and the UPDATEs that change what makes a
        # claim a Pod's (claim.freeze.create).
        cl = " ".join(exprs("validate", "resourceclaims"))
        for needle in ("request.operation == 'CREATE'", "object.metadata.ownerReferences",
                       "oldObject.metadata.ownerReferences", "'resource.kubernetes.io/pod-claim-name'"):
            check(needle in cl, "%s: the claims condition does not hold %s: %r" % (name, needle, cl))
        st = " ".join(exprs("validate", "resourceclaim-status"))
        check("object.status != oldObject.status" in st, "%s: claim status condition %r" % (name, st))


def test_gate_pods_addon_fits_the_guard():
    """manifests/gate-pods (freeze.gatePods): the Pod webhook entries call the
    overlay's Service, fail open and send only what the server judges; the
    RBAC adds patch on Pods and the guard's own Lease, to the guard's
    ServiceAccount, nothing else; a ValidatingAdmissionPolicy narrows that
    patch to the release (tests/e2e/test_gate_pods_policy.py)."""
    gate = ml.render(os.path.join(workspace(), "manifests", "gate-pods"))
    kinds = sorted(o["kind"] for o in gate)
    check(kinds == ["ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration", "Role", "RoleBinding",
                    "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
                    "ValidatingWebhookConfiguration"], "gate-pods renders %s" % kinds)
    for overlay in ("overlays/self-signed", "overlays/cert-manager"):
        objs = renders()[overlay]
        svc = ml.one(objs, "Service")
        d, pod, _, _ = deployment_parts(objs)
        sa = pod.get("serviceAccountName")
        labels = guard_namespace_labels(objs)
        other = dict(labels, **{"kubernetes.io/metadata.name": "team-a"})
        entries = webhook_entries(gate)
        check(sorted((side, w["name"]) for side, _, w in entries) ==
              [("mutate", "pods.mutate.dra-guard.io"), ("validate", "pod-gate.validate.dra-guard.io")],
              "gate-pods webhook entries: %s" % [(s, w["name"]) for s, _, w in entries])
        for side, cfg, w in entries:
            n = w["name"]
            check(cfg["metadata"]["name"] not in ("dra-guard",), "%s: replaces the base's configuration" % n)
            check(cfg["metadata"].get("annotations", {}).get("cert-manager.io/inject-ca-from") ==
                  "%s/dra-guard-tls" % GUARD_NS, "%s: no cert-manager CA injection" % n)
            # Pod writes must never wait on the guard (docs/operations.md).
            check(w.get("failurePolicy") == "Ignore", "%s: failurePolicy %r, want Ignore" % (n, w.get("failurePolicy")))
            check(isinstance(w.get("timeoutSeconds"), int) and 2 <= w["timeoutSeconds"] <= 5, "%s timeout" % n)
            # /validate may emit Events (never for a dryRun request); /mutate emits nothing.
            check(w.get("sideEffects") == ("NoneOnDryRun" if side == "validate" else "None") and
                  w.get("matchPolicy") == "Equivalent" and
                  w.get("admissionReviewVersions") == ["v1"], "%s: safety fields" % n)
            s = (w.get("clientConfig") or {}).get("service") or {}
            check(s.get("name") == svc["metadata"]["name"] and s.get("namespace") == GUARD_NS and
                  s.get("port", 443) in [p["port"] for p in svc["spec"]["ports"]] and
                  s.get("path") == ("/validate" if side == "validate" else "/mutate"),
                  "%s (%s): calls %s" % (n, overlay, s))
            want = {("", "v1", "pods", "CREATE" if side == "mutate" else "UPDATE")}
            check(expand_rules(w) == want and all(r.get("scope") == "Namespaced" for r in w["rules"]),
                  "%s: rules %s, want %s" % (n, sorted(expand_rules(w)), sorted(want)))
            check(not ml.selector_matches(w.get("namespaceSelector"), labels),
                  "%s: reaches the guard's own namespace" % n)
            check(ml.selector_matches(w.get("namespaceSelector"), other), "%s: misses other namespaces" % n)
            conds = " ".join(m["expression"] for m in w.get("matchConditions") or [])
            if side == "mutate":
                check("object.spec.resourceClaims" in conds, "%s: every Pod reaches the guard: %r" % (n, conds))
            else:
                for needle in ("oldObject.spec.schedulingGates", "object.spec.schedulingGates", "'dra-guard.io/freeze'",
                               "request.userInfo.username != '%s'" % binary_default("self-user")):
                    check(needle in conds, "%s: the condition does not hold %s: %r" % (n, needle, conds))
                check(binary_default("self-user") == "system:serviceaccount:%s:%s" % (GUARD_NS, sa),
                      "--self-user's default is not the Deployment's ServiceAccount %s" % sa)
    # RBAC: patch on Pods cluster-wide; the Lease: create, and get/update of its one name.
    lease_ns, lease_name = binary_default("gate-lease").split("/")
    cr = ml.one(gate, "ClusterRole")
    check(cr["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["patch"]}],
          "the gate's ClusterRole grants %s" % cr["rules"])
    role = ml.one(gate, "Role")
    check(role["metadata"]["namespace"] == lease_ns == GUARD_NS, "the Lease Role's namespace")
    grants = sorted((tuple(r["apiGroups"]), tuple(r["resources"]), tuple(r.get("resourceNames") or ()),
                     tuple(sorted(r["verbs"]))) for r in role["rules"])
    check(grants == [(("coordination.k8s.io",), ("leases",), (), ("create",)),
                     (("coordination.k8s.io",), ("leases",), (lease_name,), ("get", "update"))],
          "the Lease Role grants %s" % grants)
    _, pod, _, _ = deployment_parts(renders()["overlays/self-signed"])
    for kind, ref in (("ClusterRoleBinding", cr), ("RoleBinding", role)):
        b = ml.one(gate, kind)
        check(b["roleRef"]["kind"] == ref["kind"] and b["roleRef"]["name"] == ref["metadata"]["name"],
              "%s binds %s" % (kind, b["roleRef"]))
        check(b["subjects"] == [{"kind": "ServiceAccount", "name": pod["serviceAccountName"], "namespace": GUARD_NS}],
              "%s binds %s" % (kind, b["subjects"]))


def test_cert_manager_overlay_injects_the_ca_of_the_serving_certificate():
    objs = renders()["overlays/cert-manager"]
    _, pod, _, flags = deployment_parts(objs)
    tls_dir = os.path.dirname(flags["tls-cert"])
    vol = [v for v in pod["volumes"] if v.get("secret")
           and any(m["mountPath"] == tls_dir and m["name"] == v["name"] for m in pod["containers"][0]["volumeMounts"])]
    secret = vol[0]["secret"]["secretName"]
    certs = {c["metadata"]["name"]: c for c in ml.of_kind(objs, "Certificate")}
    issuers = {i["metadata"]["name"]: i for i in ml.of_kind(objs, "Issuer")}
    serving = [c for c in certs.values() if c["spec"]["secretName"] == secret]
    check(len(serving) == 1, "no Certificate writes the Secret %s the Deployment mounts" % secret)
    s = serving[0]["spec"]
    svc = flags["service-name"]
    check({svc, svc + ".cluster.local"} <= set(s.get("dnsNames") or []), "dnsNames %s" % s.get("dnsNames"))
    check(not s.get("isCA"), "the serving certificate is a CA")
    ca_issuer = issuers.get(s["issuerRef"]["name"])
    check(ca_issuer and "ca" in ca_issuer["spec"], "the serving certificate's issuer is not a CA issuer")
    ca_cert = [c for c in certs.values() if c["spec"]["secretName"] == ca_issuer["spec"]["ca"]["secretName"]]
    check(len(ca_cert) == 1 and ca_cert[0]["spec"].get("isCA") is True, "no CA Certificate behind the CA issuer")
    check(ca_cert[0]["spec"]["issuerRef"]["name"] in issuers, "the CA's issuer is missing")

    def hours(d):
        return ml.parse_duration(d) / 3600.0

    check(hours(s["renewBefore"]) > 30 * 24 and hours(s["renewBefore"]) < hours(s["duration"]),
          "renewBefore %s: renew before the server's 30-day expiry warning" % s["renewBefore"])
    want = "%s/%s" % (GUARD_NS, serving[0]["metadata"]["name"])
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        cfg = ml.one(objs, kind)
        got = (cfg["metadata"].get("annotations") or {}).get("cert-manager.io/inject-ca-from")
        check(got == want, "%s: inject-ca-from %r, want %s" % (kind, got, want))
        for w in cfg["webhooks"]:
            check("caBundle" not in w["clientConfig"], "%s: %s has a caBundle cainjector would fight" % (kind, w["name"]))


def _openssl(*args, stdin=None):
    return ml.run(["openssl"] + list(args), stdin=stdin)[1]


def test_self_signed_overlay_ca_bundle_verifies_the_serving_certificate():
    objs = renders()["overlays/self-signed"]
    _, _, _, flags = deployment_parts(objs)
    secret = ml.one(objs, "Secret", "dra-guard-tls")
    check(secret.get("type") == "kubernetes.io/tls", "Secret type %r" % secret.get("type"))
    data = {k: ml.b64decode(v).decode() for k, v in secret["data"].items()}
    check({"tls.crt", "tls.key"} <= set(data), "Secret keys %s" % sorted(data))
    bundles = set()
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        cfg = ml.one(objs, kind)
        check("cert-manager.io/inject-ca-from" not in (cfg["metadata"].get("annotations") or {}), kind)
        for w in cfg["webhooks"]:
            check(w["clientConfig"].get("caBundle"), "%s: %s has no caBundle" % (kind, w["name"]))
            bundles.add(w["clientConfig"]["caBundle"])
    check(len(bundles) == 1, "the webhooks carry %d different caBundles" % len(bundles))
    bundle = ml.b64decode(bundles.pop()).decode()
    check(bundle.count("-----BEGIN CERTIFICATE-----") >= 1 and "PRIVATE KEY" not in bundle, "caBundle is not a CA bundle")
    tmp = tempfile.mkdtemp(prefix="dra-guard-ca-")
    try:
        for k, v in (("ca.pem", bundle), ("tls.crt", data["tls.crt"]), ("tls.key", data["tls.key"])):
            with open(os.path.join(tmp, k), "w") as f:
                f.write(v)
        out = _openssl("verify", "-purpose", "sslserver", "-CAfile", os.path.join(tmp, "ca.pem"),
                       os.path.join(tmp, "tls.crt"))
        check(out.strip().endswith("OK"), "openssl verify: %s" % out)
        san = _openssl("x509", "-noout", "-ext", "subjectAltName", "-in", os.path.join(tmp, "tls.crt"))
        svc = flags["service-name"]
        for n in (svc, svc + ".cluster.local"):
            check("DNS:%s," % n in san.replace("\n", ",").replace(" ", "") + ",", "SAN %s missing: %s" % (n, san))
        pub_cert = _openssl("x509", "-noout", "-pubkey", "-in", os.path.join(tmp, "tls.crt"))
        pub_key = _openssl("pkey", "-pubout", "-in", os.path.join(tmp, "tls.key"))
        check(pub_cert == pub_key, "tls.key does not belong to tls.crt")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --- the policy ConfigMap ----------------------------------------------------------------


def test_policy_configmap_is_the_example_and_lints():
    (example,) = ml.load_file(ml.EXAMPLE_POLICY)
    base_file = os.path.join(ml.MANIFESTS, "base", "policy-configmap.yaml")
    ml.run([ml.binary(), "policy", "lint", base_file])
    tmp = tempfile.mkdtemp(prefix="dra-guard-lint-")
    try:
        for name, objs in renders().items():
            _, _, _, flags = deployment_parts(objs)
            cm_ns, cm_name = flags["policy-configmap"].split("/")
            cm = ml.one(objs, "ConfigMap", cm_name)
            check(cm["metadata"]["namespace"] == cm_ns, "%s: ConfigMap namespace" % name)
            check(cm["data"] == example["data"], "%s: the deployed policy differs from %s" % (name, ml.EXAMPLE_POLICY))
            path = os.path.join(tmp, name.replace("/", "_") + ".json")
            with open(path, "w") as f:
                json.dump(cm, f)
            _, out, _ = ml.run([ml.binary(), "policy", "lint", path])
            check("valid" in out, "%s: lint said %r" % (name, out))
        # And lint is not a rubber stamp: a typo in the deployed ConfigMap fails.
        broken = dict(cm, data=dict(cm["data"], freze="true"))
        path = os.path.join(tmp, "broken.json")
        with open(path, "w") as f:
            json.dump(broken, f)
        code, _, err = ml.run([ml.binary(), "policy", "lint", path], ok=(2,))
        check("freze" in err, "lint of a misspelt key: %r" % err)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --- certs/make-certs.sh cluster ----------------------------------------------------------


def _fingerprint(path):
    return _openssl("x509", "-noout", "-fingerprint", "-sha256", "-in", path).strip()


def _san(path):
    return _openssl("x509", "-noout", "-ext", "subjectAltName", "-in", path).split("\n", 1)[1].strip()


def _certs_cluster(d, *extra, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return ml.run([MAKE_CERTS, "cluster", d] + list(extra), env=e)


def test_certs_cluster_mode_makes_and_keeps_a_serving_pair():
    tmp = tempfile.mkdtemp(prefix="dra-guard-certs-")
    try:
        d = os.path.join(tmp, "c")
        _, out, _ = _certs_cluster(d)
        check(out == "", "cluster mode printed on stdout without --print-ca-bundle: %r" % out)
        for f in ("ca.crt", "ca.key", "ca-bundle.crt", "tls.crt", "tls.key"):
            check(os.path.getsize(os.path.join(d, f)) > 0, "%s missing" % f)
        for f in ("ca.key", "tls.key"):
            check(os.stat(os.path.join(d, f)).st_mode & 0o077 == 0, "%s is readable by others" % f)
        check(_san(os.path.join(d, "tls.crt")) == "DNS:dra-guard.dra-guard.svc, DNS:dra-guard.dra-guard.svc.cluster.local",
              "SANs: %s" % _san(os.path.join(d, "tls.crt")))
        out = _openssl("verify", "-purpose", "sslserver", "-CAfile", os.path.join(d, "ca-bundle.crt"),
                       os.path.join(d, "tls.crt"))
        check(out.strip().endswith("OK"), out)
        before = {f: _fingerprint(os.path.join(d, f)) for f in ("ca.crt", "tls.crt")}
        _, bundle, _ = _certs_cluster(d, "--print-ca-bundle")
        check(bundle.endswith("\n") and "\n" not in bundle[:-1], "the bundle is not one line")
        check(ml.b64decode(bundle) == open(os.path.join(d, "ca-bundle.crt"), "rb").read(),
              "--print-ca-bundle is not base64 of ca-bundle.crt")
        after = {f: _fingerprint(os.path.join(d, f)) for f in ("ca.crt", "tls.crt")}
        check(before == after, "a second run replaced valid certificates")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_certs_cluster_mode_renews_the_serving_pair_when_names_change():
    tmp = tempfile.mkdtemp(prefix="dra-guard-certs-")
    try:
        d = os.path.join(tmp, "c")
        _certs_cluster(d)
        ca, tls = _fingerprint(os.path.join(d, "ca.crt")), _fingerprint(os.path.join(d, "tls.crt"))
        _certs_cluster(d, env={"NAMESPACE": "guard-system", "SERVICE": "guard"})
        check(_san(os.path.join(d, "tls.crt")) == "DNS:guard.guard-system.svc, DNS:guard.guard-system.svc.cluster.local",
              "SANs after the change: %s" % _san(os.path.join(d, "tls.crt")))
        check(_fingerprint(os.path.join(d, "tls.crt")) != tls, "serving certificate not renewed")
        check(_fingerprint(os.path.join(d, "ca.crt")) == ca, "the CA was replaced for a name change")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_certs_cluster_mode_renews_near_expiry_and_bundles_the_previous_ca():
    tmp = tempfile.mkdtemp(prefix="dra-guard-certs-")
    try:
        d = os.path.join(tmp, "c")
        _certs_cluster(d, env={"CA_DAYS": "20", "CERT_DAYS": "10", "RENEW_DAYS": "5"})
        old_ca, old_tls = _fingerprint(os.path.join(d, "ca.crt")), _fingerprint(os.path.join(d, "tls.crt"))
        # Serving certificate within RENEW_DAYS of expiry: renewed, same CA.
        _certs_cluster(d, env={"CA_DAYS": "20", "CERT_DAYS": "10", "RENEW_DAYS": "15"})
        check(_fingerprint(os.path.join(d, "tls.crt")) != old_tls, "serving certificate not renewed near expiry")
        check(_fingerprint(os.path.join(d, "ca.crt")) == old_ca, "CA replaced while valid for more than RENEW_DAYS")
        old_pem = open(os.path.join(d, "ca.crt")).read()
        # CA within RENEW_DAYS of expiry: a new CA and serving pair, and the
        # bundle trusts both CAs, so the API server accepts whichever pair a
        # replica serves while the Secret volume catches up.
        _certs_cluster(d, env={"RENEW_DAYS": "30"})
        new_pem = open(os.path.join(d, "ca.crt")).read()
        check(new_pem != old_pem, "CA not renewed near expiry")
        bundle = open(os.path.join(d, "ca-bundle.crt")).read()
        check(new_pem.strip() in bundle and old_pem.strip() in bundle, "the bundle does not hold both CAs")
        check(bundle.count("BEGIN CERTIFICATE") == 2, "bundle holds %d certificates" % bundle.count("BEGIN CERTIFICATE"))
        check(open(os.path.join(d, "ca-previous.crt")).read() == old_pem, "ca-previous.crt is not the old CA")
        # Another run keeps both while the old CA is valid.
        _certs_cluster(d, env={"RENEW_DAYS": "1"})
        check(open(os.path.join(d, "ca-bundle.crt")).read() == bundle, "the bundle changed on a run that renewed nothing")
        out = _openssl("verify", "-CAfile", os.path.join(d, "ca.crt"), os.path.join(d, "tls.crt"))
        check(out.strip().endswith("OK"), "new serving certificate not signed by the new CA: %s" % out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _expired_certificate(tmp):
    """A self-signed certificate that expired long ago (openssl ca can set the
    dates; openssl req cannot make one in the past)."""
    ca = os.path.join(tmp, "expired")
    os.makedirs(ca)
    with open(os.path.join(ca, "ca.cnf"), "w") as f:
        f.write("[ca]\ndefault_ca = d\n[d]\ndatabase = %s/index.txt\nnew_certs_dir = %s\n"
                "serial = %s/serial\ndefault_md = sha256\npolicy = p\n[p]\ncommonName = supplied\n"
                % (ca, ca, ca))
    open(os.path.join(ca, "index.txt"), "w").close()
    with open(os.path.join(ca, "serial"), "w") as f:
        f.write("01\n")
    key, csr, crt = (os.path.join(ca, n) for n in ("old.key", "old.csr", "old.crt"))
    ml.run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", key, "-subj", "/CN=old dra-guard CA", "-out", csr])
    ml.run(["openssl", "ca", "-batch", "-config", os.path.join(ca, "ca.cnf"), "-selfsign", "-keyfile", key,
            "-in", csr, "-out", crt, "-notext", "-startdate", "20000101000000Z", "-enddate", "20000102000000Z"])
    return crt


def test_certs_cluster_mode_drops_an_expired_previous_ca():
    tmp = tempfile.mkdtemp(prefix="dra-guard-certs-")
    try:
        d = os.path.join(tmp, "c")
        _certs_cluster(d)
        shutil.copy(_expired_certificate(tmp), os.path.join(d, "ca-previous.crt"))
        _certs_cluster(d)
        bundle = open(os.path.join(d, "ca-bundle.crt")).read()
        check(bundle.strip() == open(os.path.join(d, "ca.crt")).read().strip(), "the expired CA stayed in the bundle")
        check(not os.path.exists(os.path.join(d, "ca-previous.crt")), "the expired previous CA was kept")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --- samples ---------------------------------------------------------------------------------


def test_network_policy_sample_admits_the_webhook_and_metrics_ports_only():
    (np,) = ml.load_file(os.path.join(ml.MANIFESTS, "samples", "networkpolicy.yaml"))
    objs = renders()["base"]
    d, _, c, flags = deployment_parts(objs)
    check(np["kind"] == "NetworkPolicy" and np["metadata"]["namespace"] == GUARD_NS, "kind/namespace")
    check(ml.selector_matches(np["spec"]["podSelector"], d["spec"]["template"]["metadata"]["labels"]),
          "the NetworkPolicy does not select the guard's Pods")
    ports = {p["port"] for rule in np["spec"]["ingress"] for p in rule["ports"]}
    want = {listen_port(flags["listen"])[1], listen_port(flags["metrics-listen"])[1]}
    check(ports == want, "ingress ports %s, want the container ports %s" % (ports, want))
    # No Pod may reach the probe port: only kubelet probes, from the node.
    check(listen_port(flags["probe-listen"])[1] not in ports, "the probe port is admitted")
    check(np["spec"]["policyTypes"] == ["Ingress"], "policyTypes %s" % np["spec"]["policyTypes"])


def _readme_driver_rules():
    """The driver ClusterRole rules in docs/rules.md's Least privilege section."""
    text = open(os.path.join(ml.ROOT, "docs", "rules.md")).read()
    section = text.split("## Least privilege", 1)
    check(len(section) == 2, "docs/rules.md has no Least privilege section")
    for block in re.findall(r"```yaml\n(.*?)```", section[1], re.S):
        for doc in ml.convert(block, "docs/rules.md yaml block"):
            if isinstance(doc, dict) and doc.get("kind") == "ClusterRole":
                return doc["rules"]
    fail("no driver ClusterRole in docs/rules.md's Least privilege section")


def test_driver_rbac_sample_fits_the_least_privilege_rules():
    docs = ml.load_file(os.path.join(ml.MANIFESTS, "samples", "driver-rbac.yaml"))
    role = ml.one(docs, "ClusterRole")
    binding = ml.one(docs, "ClusterRoleBinding")
    sa = ml.one(docs, "ServiceAccount")
    (example,) = ml.load_file(ml.EXAMPLE_POLICY)
    (policy,) = ml.convert(example["data"]["policy.yaml"], "the example policy")
    user = "system:serviceaccount:%s:%s" % (sa["metadata"]["namespace"], sa["metadata"]["name"])
    drivers = [d for d, spec in policy["drivers"].items() if user in spec.get("serviceAccounts", [])]
    check(len(drivers) == 1, "the sample's ServiceAccount %s is no driver's in the example policy" % user)
    driver = drivers[0]
    check(policy["drivers"][driver].get("scope", "node") == "node", "the sample is for a node-local driver")
    check(binding["roleRef"]["name"] == role["metadata"]["name"] and binding["subjects"] == [
        {"kind": "ServiceAccount", "name": sa["metadata"]["name"], "namespace": sa["metadata"]["namespace"]}],
        "the binding does not tie the role to the ServiceAccount")
    grants = set()
    for r in role["rules"]:
        for field in ("apiGroups", "resources", "verbs"):
            check("*" not in r[field], "wildcard %s in %s" % (field, r))
        for g in r["apiGroups"]:
            for res in r["resources"]:
                for v in r["verbs"]:
                    grants.add((g, res, v, tuple(r.get("resourceNames") or ())))
    check(not any(res.startswith("pods") for _, res, _, _ in grants), "a driver must not write Pods or pods/status")
    check(not any(v.startswith("arbitrary-node:") for _, _, v, _ in grants), "arbitrary-node verbs for a node driver")
    for v in ("associated-node:update", "associated-node:patch"):
        check((DRA, "resourceclaims/driver", v, (driver,)) in grants, "missing %s on resourceclaims/driver [%s]" % (v, driver))
    for v in ("update", "patch"):
        check((DRA, "resourceclaims/status", v, ()) in grants, "missing %s on resourceclaims/status" % v)
    for v in ("create", "update", "patch", "delete"):
        check((DRA, "resourceslices", v, ()) in grants, "missing %s on resourceslices" % v)
    for r in _readme_driver_rules():
        names = tuple(r.get("resourceNames") or ())
        names = (driver,) if names else ()
        for g in r["apiGroups"]:
            for res in r["resources"]:
                for v in r["verbs"]:
                    check((g, res, v, names) in grants, "docs/rules.md grants %s %s %s; the sample does not" % (g, res, v))


def main():
    tests = [
        test_convert_prints_each_document_as_the_guard_reads_it,
        test_kustomizations_stay_within_kustomize_v2,
        test_every_kustomization_renders_and_parses,
        test_objects_stay_in_the_guard_namespace_and_nothing_is_cluster_wide,
        test_role_reads_only_the_policy_configmap,
        test_deployment_is_pod_security_restricted,
        test_deployment_spreads_three_replicas_and_keeps_two_through_disruptions,
        test_probes_use_a_plain_port_of_their_own,
        test_memory_limit_is_sized_from_the_budget,
        test_policy_and_certificate_are_mounted_as_directories,
        test_grace_period_outlasts_the_drain,
        test_service_targets_the_port_the_binary_listens_on,
        test_deployment_flags_are_flags_of_serve,
        test_server_starts_with_the_deployment_arguments,
        test_webhook_rules_cover_exactly_what_the_server_handles,
        test_every_webhook_entry_sets_its_safety_fields,
        test_failure_policy_per_concern_is_the_documented_one,
        test_no_fail_closed_webhook_can_lock_out_the_guard_namespace,
        test_match_conditions_keep_routine_traffic_away,
        test_gate_pods_addon_fits_the_guard,
        test_cert_manager_overlay_injects_the_ca_of_the_serving_certificate,
        test_self_signed_overlay_ca_bundle_verifies_the_serving_certificate,
        test_self_signed_overlay_says_run_gen_certs_first_and_gen_certs_the_two_steps,
        test_policy_configmap_is_the_example_and_lints,
        test_certs_cluster_mode_makes_and_keeps_a_serving_pair,
        test_certs_cluster_mode_renews_the_serving_pair_when_names_change,
        test_certs_cluster_mode_renews_near_expiry_and_bundles_the_previous_ca,
        test_certs_cluster_mode_drops_an_expired_previous_ca,
        test_network_policy_sample_admits_the_webhook_and_metrics_ports_only,
        test_driver_rbac_sample_fits_the_least_privilege_rules,
        test_cluster_role_only_reads_slices_claims_pods_and_nodes_and_writes_events,
    ]
    try:
        ml.run_tests(tests)
    finally:
        if "cleanup" in _state:
            shutil.rmtree(_state["cleanup"], ignore_errors=True)


if __name__ == "__main__":
    main()
