#!/usr/bin/env python3
"""The audit annotations dra-guard returns reach the real API server's audit log.

The API server puts "<webhook name>/" in front of every key a webhook
returns in auditAnnotations and keeps the key only when the result is a
qualified name with one '/' (checkKeyFormat in k8s.io/apiserver's
admission attributes); a key that already held a '/' is dropped with a
warning in the server's own log. So dra-guard returns bare keys
("denied-rules"), and this test registers the guard with a real
kube-apiserver (../shared/envtest) and finds them in its audit log as
"resourceslices.validate.dra-guard.io/denied-rules".

The API server and etcd are started here with the few flags the test needs
(a self-contained harness: certificates with the openssl CLI, an admin
client certificate, an audit policy at Metadata for ResourceSlices). When
kube-apiserver or etcd is missing the test says so in one line and passes;
CI always has them.
"""

import base64
import http.client
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guard  # noqa: E402
from guard import check  # noqa: E402

SHARED = os.environ.get("DRA_GUARD_SHARED") or os.path.join(os.path.dirname(guard.ROOT), "shared")
WEBHOOK = "resourceslices.validate.dra-guard.io"
READY_TIMEOUT = 90.0     # a failure bound, never a measurement

POLICY = """apiVersion: dra-guard.io/v1alpha1
kind: Policy
enforcement:
  default: deny
  rules:
    slice.mapping.name: dryrun
canary:
  nodes: [worker-1]
"""

AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
  resources:
  - group: resource.k8s.io
    resources: [resourceslices]
- level: None
"""


def find_binaries():
    apiserver = os.environ.get("KUBE_APISERVER") or os.path.join(SHARED, "envtest", "kube-apiserver")
    etcd = os.environ.get("ETCD") or shutil.which("etcd") or "/usr/bin/etcd"
    missing = [n for n, p in (("kube-apiserver (KUBE_APISERVER)", apiserver), ("etcd", etcd))
               if not os.access(p, os.X_OK)]
    return apiserver, etcd, missing


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def openssl(cwd, *args):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def make_pki(d):
    """CA, serving pair for 127.0.0.1, admin client (system:masters), SA keys."""
    openssl(d, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=envtest-ca")
    for name, subj, ext in (("apiserver", "/CN=kube-apiserver", "subjectAltName=IP:127.0.0.1,DNS:localhost"),
                            ("admin", "/CN=admin/O=system:masters", "extendedKeyUsage=clientAuth")):
        openssl(d, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", name + ".key", "-out", name + ".csr", "-subj", subj)
        with open(os.path.join(d, name + ".ext"), "w") as f:
            f.write(ext + "\n")
        openssl(d, "x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", name + ".crt", "-days", "2", "-extfile", name + ".ext")
    openssl(d, "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "sa.key")
    openssl(d, "pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub")


class ApiServer:
    """etcd and kube-apiserver on loopback, with an audit log."""

    def __init__(self, apiserver, etcd, d):
        self.d = d
        self.procs = []
        make_pki(d)
        with open(os.path.join(d, "audit-policy.yaml"), "w") as f:
            f.write(AUDIT_POLICY)
        self.audit_log = os.path.join(d, "audit.log")
        eport, pport, self.port = free_port(), free_port(), free_port()
        self.etcd_log = open(os.path.join(d, "etcd.log"), "wb")
        self.procs.append(subprocess.Popen(
            [etcd, "--name", "t", "--data-dir", os.path.join(d, "etcd"),
             "--listen-client-urls", "http://127.0.0.1:%d" % eport,
             "--advertise-client-urls", "http://127.0.0.1:%d" % eport,
             "--listen-peer-urls", "http://127.0.0.1:%d" % pport,
             "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % pport,
             "--initial-cluster", "t=http://127.0.0.1:%d" % pport, "--initial-cluster-state", "new"],
            stdout=self.etcd_log, stderr=subprocess.STDOUT))
        self.log_path = os.path.join(d, "apiserver.log")
        self.log = open(self.log_path, "wb")
        self.procs.append(subprocess.Popen(
            [apiserver, "--etcd-servers=http://127.0.0.1:%d" % eport, "--bind-address=127.0.0.1",
             "--advertise-address=127.0.0.1", "--secure-port=%d" % self.port,
             "--tls-cert-file=" + os.path.join(d, "apiserver.crt"),
             "--tls-private-key-file=" + os.path.join(d, "apiserver.key"),
             "--client-ca-file=" + os.path.join(d, "ca.crt"),
             "--service-account-key-file=" + os.path.join(d, "sa.pub"),
             "--service-account-signing-key-file=" + os.path.join(d, "sa.key"),
             "--service-account-issuer=https://kubernetes.default.svc",
             "--service-cluster-ip-range=10.0.0.0/24", "--authorization-mode=RBAC",
             "--feature-gates=DRANodeAllocatableResources=true",
             "--runtime-config=resource.k8s.io/v1=true",
             "--audit-log-path=" + self.audit_log,
             "--audit-policy-file=" + os.path.join(d, "audit-policy.yaml")],
            stdout=self.log, stderr=subprocess.STDOUT))
        self.ctx = ssl.create_default_context(cafile=os.path.join(d, "ca.crt"))
        self.ctx.load_cert_chain(os.path.join(d, "admin.crt"), os.path.join(d, "admin.key"))
        deadline = time.time() + READY_TIMEOUT
        while time.time() < deadline:
            for p in self.procs:
                check(p.poll() is None, "etcd or kube-apiserver exited: %s" % self.tail())
            try:
                status, body = self.request("GET", "/readyz")
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        guard.fail("kube-apiserver not ready within %ss: %s" % (READY_TIMEOUT, self.tail()))

    def tail(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")[-3000:]

    def request(self, method, path, body=None):
        c = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=30)
        try:
            data = json.dumps(body).encode() if body is not None else None
            c.request(method, path, data, {"Content-Type": "application/json"} if data else {})
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def audit_events(self):
        if not os.path.exists(self.audit_log):
            return []
        with open(self.audit_log) as f:
            return [json.loads(line) for line in f if line.strip()]

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.log.close()
        self.etcd_log.close()


def slice_obj(name, node, mappings):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": "dra.example.com", "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "accel-0", "nodeAllocatableResourceMappings": mappings}]}}


def test_audit_annotations_reach_the_audit_log():
    apiserver, etcd, missing = find_binaries()
    if missing:
        msg = "no %s" % " and no ".join(missing)
        check(not os.environ.get("CI"), "CI has ../shared/envtest, but here: " + msg)
        raise guard.Skip(msg)
    tmp = tempfile.mkdtemp(prefix="dra-guard-audit-")
    api = server = None
    try:
        api = ApiServer(apiserver, etcd, tmp)
        certs = guard.make_certs(os.path.join(tmp, "guard-certs"))
        policy = os.path.join(tmp, "policy.yaml")
        with open(policy, "w") as f:
            f.write(POLICY)
        server = guard.Server(certs, ["--policy", policy])
        ca_bundle = base64.b64encode(open(os.path.join(certs, "ca.crt"), "rb").read()).decode()
        hook = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": "dra-guard"},
                "webhooks": [{"name": WEBHOOK, "admissionReviewVersions": ["v1"], "sideEffects": "None",
                              "failurePolicy": "Fail", "timeoutSeconds": 5,
                              "clientConfig": {"url": "https://127.0.0.1:%d/validate" % server.port,
                                               "caBundle": ca_bundle},
                              "rules": [{"apiGroups": ["resource.k8s.io"], "apiVersions": ["v1"],
                                         "operations": ["CREATE"], "resources": ["resourceslices"]}]}]}
        status, body = api.request("POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
                                   hook)
        check(status == 201, "registering the webhook: %d %s" % (status, body[:300]))

        # The API server picks the configuration up from its own watch: wait
        # until a create is seen by the guard (a dry run stores nothing).
        probe = slice_obj("probe", "worker-1", {"memory": {"allocationMultiplier": "1Gi"}})
        deadline = time.time() + READY_TIMEOUT
        while time.time() < deadline:
            status, body = api.request("POST", "/apis/resource.k8s.io/v1/resourceslices?dryRun=All", probe)
            if server.metrics() and guard.metric(server.metrics(), "dra_guard_requests_total", endpoint="validate",
                                                 resource="resourceslices", operation="CREATE",
                                                 result="allowed") > 0:
                break
            time.sleep(0.2)
        else:
            guard.fail("the API server never called the guard; last answer %d %s" % (status, body[:300]))

        # A dryrun rule: allowed, and the finding is only in the audit log.
        status, body = api.request("POST", "/apis/resource.k8s.io/v1/resourceslices",
                                   slice_obj("named", "worker-1", {"pods": {"allocationMultiplier": "1"}}))
        check(status == 201, "the dryrun-rule slice: %d %s" % (status, body[:300]))
        # A denial: slice.canary at deny.
        status, body = api.request("POST", "/apis/resource.k8s.io/v1/resourceslices",
                                   slice_obj("off-canary", "worker-9", {"memory": {"allocationMultiplier": "1Gi"}}))
        check(status == 403 and b"slice.canary" in body, "the off-canary slice: %d %s" % (status, body[:300]))

        def annotations(name):
            for ev in api.audit_events():
                ref = ev.get("objectRef", {})
                if (ev.get("verb") == "create" and ref.get("resource") == "resourceslices"
                        and ref.get("name") == name and ev.get("stage") == "ResponseComplete"):
                    return ev.get("annotations", {})
            return None

        deadline = time.time() + READY_TIMEOUT
        while time.time() < deadline and (annotations("named") is None or annotations("off-canary") is None):
            time.sleep(0.2)
        named, denied = annotations("named"), annotations("off-canary")
        check(named is not None and denied is not None, "no audit events for the two creates")
        key = WEBHOOK + "/slice.mapping.name"
        check(key in named and "pods" in named[key], "%s missing from %s" % (key, named))
        for k in ("denied-rules", "policy-hash"):
            check(WEBHOOK + "/" + k in denied, "%s/%s missing from %s" % (WEBHOOK, k, denied))
        check(denied[WEBHOOK + "/denied-rules"] == "slice.canary", denied)
        check(len(denied[WEBHOOK + "/policy-hash"]) == 64, denied)
        # None of dra-guard's keys was refused by checkKeyFormat.
        with open(api.log_path, "rb") as f:
            check(b"annotation key has invalid format" not in f.read(), "the API server refused a key")
    finally:
        if server:
            server.stop()
            server.cleanup()
        if api:
            api.stop()
        if os.environ.get("KEEP_ENVTEST"):
            print("kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    guard.run_tests([test_audit_annotations_reach_the_audit_log])
