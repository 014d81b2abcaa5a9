"""A real kube-apiserver and etcd on loopback, for end-to-end tests.

Standard library only. The API server binary comes from $KUBE_APISERVER
(a kube-apiserver v1.36.x the machine has; none ships with the project);
etcd is Debian's etcd-server (/usr/bin/etcd, or $ETCD). When either is
missing, require() prints one line saying the test is skipped and why, and
exits 0, under CI too.

    import envtest
    envtest.require()                      # one SKIP line and exit 0 without the binaries
    with envtest.EnvTest(identities={"driver": ("system:node:n1", ["system:nodes"])},
                         tokens={"sched-token": ("system:kube-scheduler", [])}) as env:
        env.create("/apis/resource.k8s.io/v1/resourceslices", obj)
        st, body = env.request("GET", "/api/v1/namespaces", identity="driver")
        kc = env.kubeconfig("admin")       # a kubeconfig file for a client
        tok = env.sa_token("dra-guard", "dra-guard")
        env.register_webhook("guard", "https://127.0.0.1:8443/validate", ca_pem, rules)
        env.restart_apiserver()            # etcd keeps its data
        proxy = env.proxy()                # a TCP proxy to cut connections through

The API server runs with RBAC, the DRANodeAllocatableResources gate and every
resource.k8s.io version on; certificates are made with the openssl CLI: a
CA, the serving pair (127.0.0.1, localhost), an admin client certificate
(O=system:masters), one client certificate per extra identity, and the
ServiceAccount signing key. audit=True adds an audit log of every request
(env.audit_events()). Everything lives in one temporary directory, removed
by stop() unless KEEP_ENVTEST is set.
"""

import base64
import http.client
import json
import os
import select
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("DRA_GUARD_ROOT") or os.path.dirname(os.path.dirname(HERE))
SHARED = os.environ.get("DRA_GUARD_SHARED") or os.path.join(os.path.dirname(ROOT), "shared")

# Bounds for waiting: a failure when passed, never a measurement.
READY_TIMEOUT = 90.0

RESOURCE_V1 = "/apis/resource.k8s.io/v1"


def apiserver_path():
    """The kube-apiserver binary, or None."""
    p = os.environ.get("KUBE_APISERVER")
    return p if p and os.access(p, os.X_OK) else None


def etcd_path():
    p = os.environ.get("ETCD") or shutil.which("etcd") or "/usr/bin/etcd"
    return p if os.access(p, os.X_OK) else None


def missing():
    """What is missing to run the API server, as one phrase ("" when nothing is)."""
    out = []
    if not apiserver_path():
        out.append("kube-apiserver (KUBE_APISERVER is %s)" % (
            "unset" if not os.environ.get("KUBE_APISERVER") else "not executable"))
    if not etcd_path():
        out.append("etcd (apt-get install etcd-server)")
    return "no " + " and no ".join(out) if out else ""


FAKE = False   # True once require(fake=True) chose the fake API server


def require(what="this test", fake=False):
    """With a real API server (KUBE_APISERVER and etcd) return at once.
    Without one: with fake=True, make EnvTest the fake API server of
    tests/e2e/fakeapi.py and say so in one line; else print one "SKIP ..."
    line and exit 0 (CI included: no machine has a real API server unless
    one is built on it)."""
    global EnvTest, FAKE
    gone = missing()
    if not gone:
        return
    if fake:
        import fakeapi
        EnvTest = fakeapi.FakeEnv
        FAKE = True
        print("# %s: against the fake API server (tests/e2e/fakeapi.py): %s" % (what, gone), flush=True)
        return
    print("SKIP %s: needs a real API server: %s" % (what, gone), flush=True)
    sys.exit(0)


def real_only(what):
    """Raise guard.Skip, with the reason, for a check only a real API server
    can make (its own validation, CEL, RBAC bootstrap roles) when the fake
    one is serving."""
    if FAKE:
        import guard
        raise guard.Skip("%s: needs a real API server: %s" % (what, missing()))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class Proxy:
    """A TCP proxy on loopback to the API server: cut() drops every connection
    through it, pause() also refuses new ones until resume()."""

    def __init__(self, target_port):
        self.target = target_port
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.lock = threading.Lock()
        self.paused = False
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            if self.paused:
                c.close()
                continue
            try:
                u = socket.create_connection(("127.0.0.1", self.target), timeout=5)
            except OSError:
                c.close()
                continue
            with self.lock:
                self.conns.append((c, u))
            threading.Thread(target=self._pump, args=(c, u), daemon=True).start()

    def _pump(self, a, b):
        socks = [a, b]
        try:
            while True:
                r, _, _ = select.select(socks, [], [], 1.0)
                for s in r:
                    data = s.recv(65536)
                    if not data:
                        raise OSError("closed")
                    (b if s is a else a).sendall(data)
        except OSError:
            pass
        finally:
            for s in socks:
                try:
                    s.close()
                except OSError:
                    pass

    def cut(self):
        with self.lock:
            conns, self.conns = self.conns, []
        for a, b in conns:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        return len(conns)

    def pause(self):
        self.paused = True
        self.cut()

    def resume(self):
        self.paused = False

    def close(self):
        self.closed = True
        self.cut()
        self.sock.close()


class Client:
    """The client side of a test API server, real or fake (EnvTest, and
    fakeapi.FakeEnv): requests as any identity or token, kubeconfigs,
    ServiceAccount tokens, webhook registrations, the audit log. Needs
    self.port, self.url, self.proxies and self.path()."""


    def identity(self, name="admin"):
        """(cert, key) paths of a client-certificate identity."""
        return self.path(name + ".crt"), self.path(name + ".key")

    def ssl_context(self, identity="admin"):
        ctx = ssl.create_default_context(cafile=self.path("ca.crt"))
        if identity:
            ctx.load_cert_chain(*self.identity(identity))
        return ctx

    def request(self, method, path, body=None, identity="admin", token=None,
                ctype="application/json", raw=False, timeout=30):
        """One request; returns (status, parsed JSON body) or (status, bytes) with raw."""
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout,
                                           context=self.ssl_context(None if token else identity))
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = body if isinstance(body, (bytes, str)) else json.dumps(body)
            headers["Content-Type"] = ctype
        if token:
            headers["Authorization"] = "Bearer " + token
        try:
            conn.request(method, path, body=data, headers=headers)
            r = conn.getresponse()
            payload = r.read()
        finally:
            conn.close()
        if raw:
            return r.status, payload
        try:
            return r.status, json.loads(payload) if payload else None
        except ValueError:
            return r.status, payload

    def must(self, method, path, body=None, ok=(200, 201), **kw):
        st, out = self.request(method, path, body, **kw)
        if st not in ok:
            raise AssertionError("%s %s: HTTP %d: %s" % (method, path, st, out))
        return out

    def create(self, path, obj, **kw):
        return self.must("POST", path, obj, **kw)

    def get(self, path, **kw):
        return self.must("GET", path, **kw)

    def delete(self, path, **kw):
        return self.must("DELETE", path, ok=(200, 202), **kw)

    def patch(self, path, patch, kind="merge", **kw):
        ctype = {"merge": "application/merge-patch+json", "json": "application/json-patch+json",
                 "strategic": "application/strategic-merge-patch+json"}[kind]
        return self.must("PATCH", path, patch, ctype=ctype, **kw)

    def ensure_namespace(self, name):
        st, out = self.request("POST", "/api/v1/namespaces",
                               {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        if st not in (201, 409):
            raise AssertionError("namespace %s: HTTP %d: %s" % (name, st, out))

    def apply_objects(self, objs):
        """Create each object (409 AlreadyExists counts as done)."""
        for o in objs:
            path = object_collection(o)
            st, out = self.request("POST", path, o)
            if st not in (200, 201, 409):
                raise AssertionError("create %s %s: HTTP %d: %s" % (o["kind"], o["metadata"]["name"], st, out))

    def sa_token(self, namespace, name, seconds=3600):
        """A bound token for the ServiceAccount (made if missing), by TokenRequest."""
        self.ensure_namespace(namespace)
        st, out = self.request("POST", "/api/v1/namespaces/%s/serviceaccounts" % namespace,
                               {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
        if st not in (201, 409):
            raise AssertionError("serviceaccount: HTTP %d: %s" % (st, out))
        out = self.create("/api/v1/namespaces/%s/serviceaccounts/%s/token" % (namespace, name),
                          {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                           "spec": {"expirationSeconds": seconds}})
        return out["status"]["token"]

    def kubeconfig(self, identity="admin", token=None, server=None, path=None):
        """A kubeconfig file for a client-certificate identity, or a token."""
        path = path or self.path("kubeconfig-%s.yaml" % (identity if not token else "token-%d" % len(self.proxies)))
        if token:
            user = '    token: "%s"\n' % token
        else:
            crt, key = self.identity(identity)
            user = "    client-certificate: %s\n    client-key: %s\n" % (crt, key)
        with open(path, "w") as f:
            f.write("apiVersion: v1\nkind: Config\ncurrent-context: envtest\n"
                    "clusters:\n- name: envtest\n  cluster:\n    server: %s\n    certificate-authority: %s\n"
                    "users:\n- name: u\n  user:\n%s"
                    "contexts:\n- name: envtest\n  context:\n    cluster: envtest\n    user: u\n"
                    % (server or self.url, self.path("ca.crt"), user))
        return path

    def proxy(self):
        """A Proxy to the API server; use its port in a kubeconfig's server."""
        p = Proxy(self.port)
        self.proxies.append(p)
        return p

    def register_webhook(self, name, url, ca_pem, rules, validating=True, failure_policy="Fail",
                         timeout=10, match_policy="Equivalent", side_effects="None"):
        """A Validating- or MutatingWebhookConfiguration calling url."""
        kind = "ValidatingWebhookConfiguration" if validating else "MutatingWebhookConfiguration"
        plural = kind.lower() + "s"
        obj = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
               "webhooks": [{"name": name + ".dra-guard.io", "admissionReviewVersions": ["v1"],
                             "sideEffects": side_effects, "failurePolicy": failure_policy,
                             "timeoutSeconds": timeout, "matchPolicy": match_policy,
                             "clientConfig": {"url": url,
                                              "caBundle": base64.b64encode(ca_pem.encode()).decode()},
                             "rules": rules}]}
        return self.create("/apis/admissionregistration.k8s.io/v1/" + plural, obj)

    def audit_log_path(self):
        return self.path("audit.log")

    def audit_events(self):
        out = []
        try:
            with open(self.path("audit.log")) as f:
                for line in f:
                    out.append(json.loads(line))
        except FileNotFoundError:
            pass
        return out


class EnvTest(Client):
    """etcd + kube-apiserver on loopback ports, with certificates and identities.
    (After require(fake=True) without a real server, the name is
    fakeapi.FakeEnv, which has the same interface.)

    identities: {name: (user, [groups])} client certificates (env.identity(name)).
    tokens: {token: (user, [groups])} bearer tokens (--token-auth-file).
    audit: keep an audit log (env.audit_events()): True for Metadata level on
        everything, or the text of an audit.k8s.io/v1 Policy.
    extra_args: more kube-apiserver flags.
    etcd_dir: etcd's data directory, kept by stop() (reuse a loaded data set).
    """

    def __init__(self, identities=None, tokens=None, audit=False, extra_args=(), etcd_quota=None,
                 etcd_dir=None):
        self.real = True
        self.dir = tempfile.mkdtemp(prefix="dra-guard-envtest-")
        self.identities = dict(identities or {})
        self.tokens = dict(tokens or {})
        self.audit = audit
        self.extra_args = list(extra_args)
        self.etcd_quota = etcd_quota
        self.etcd_dir = etcd_dir          # kept across runs when given (not removed by stop())
        self.etcd = self.apiserver = None
        self.proxies = []
        self.etcd_port = free_port()
        self.peer_port = free_port()
        self.port = free_port()
        self.url = "https://127.0.0.1:%d" % self.port
        self._certs()

    # --- setup ---------------------------------------------------------------------------

    def path(self, name):
        return os.path.join(self.dir, name)

    def _client_cert(self, name, user, groups):
        subj = "/CN=%s" % user + "".join("/O=%s" % g for g in groups)
        _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                 "-keyout", name + ".key", "-subj", subj, "-out", name + ".csr", cwd=self.dir)
        _openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "2", "-out", name + ".crt", cwd=self.dir)

    def _certs(self):
        d = self.dir
        _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                 "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=envtest-ca", cwd=d)
        with open(self.path("san.ext"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
        _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                 "-keyout", "apiserver.key", "-subj", "/CN=kube-apiserver", "-out", "apiserver.csr", cwd=d)
        _openssl("x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "2", "-extfile", "san.ext", "-out", "apiserver.crt", cwd=d)
        _openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "sa.key", cwd=d)
        _openssl("pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=d)
        self._client_cert("admin", "envtest-admin", ["system:masters"])
        for name, (user, groups) in self.identities.items():
            self._client_cert(name, user, groups)
        with open(self.path("tokens.csv"), "w") as f:
            for i, (tok, (user, groups)) in enumerate(sorted(self.tokens.items())):
                f.write('%s,%s,uid-%d,"%s"\n' % (tok, user, i, ",".join(groups)))
        if self.audit:
            with open(self.path("audit-policy.yaml"), "w") as f:
                f.write(self.audit if isinstance(self.audit, str)
                        else "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n")
        with open(self.path("ca.crt")) as f:
            self.ca_pem = f.read()

    def start(self):
        self._start_etcd()
        self._start_apiserver()
        return self

    def _start_etcd(self):
        args = [etcd_path(), "--name", "envtest", "--data-dir", self.etcd_dir or self.path("etcd"),
                "--listen-client-urls", "http://127.0.0.1:%d" % self.etcd_port,
                "--advertise-client-urls", "http://127.0.0.1:%d" % self.etcd_port,
                "--listen-peer-urls", "http://127.0.0.1:%d" % self.peer_port,
                "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % self.peer_port,
                "--initial-cluster", "envtest=http://127.0.0.1:%d" % self.peer_port,
                "--initial-cluster-state", "new", "--log-level", "error"]
        if self.etcd_quota:
            args += ["--quota-backend-bytes", str(self.etcd_quota)]
        self.etcd_log = open(self.path("etcd.log"), "ab")
        self.etcd = subprocess.Popen(args, stdout=self.etcd_log, stderr=self.etcd_log)

    def _start_apiserver(self):
        args = [apiserver_path(), "--etcd-servers=http://127.0.0.1:%d" % self.etcd_port,
                "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
                "--secure-port=%d" % self.port,
                "--tls-cert-file=" + self.path("apiserver.crt"),
                "--tls-private-key-file=" + self.path("apiserver.key"),
                "--client-ca-file=" + self.path("ca.crt"),
                "--service-account-key-file=" + self.path("sa.pub"),
                "--service-account-signing-key-file=" + self.path("sa.key"),
                "--service-account-issuer=https://kubernetes.default.svc",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--authorization-mode=RBAC",
                "--token-auth-file=" + self.path("tokens.csv"),
                "--feature-gates=DRANodeAllocatableResources=true",
                "--runtime-config=resource.k8s.io/v1=true,resource.k8s.io/v1beta1=true,"
                "resource.k8s.io/v1beta2=true"]
        if self.audit:
            args += ["--audit-policy-file=" + self.path("audit-policy.yaml"),
                     "--audit-log-path=" + self.path("audit.log"), "--audit-log-format=json"]
        args += self.extra_args
        self.api_log = open(self.path("apiserver.log"), "ab")
        self.apiserver = subprocess.Popen(args, stdout=self.api_log, stderr=self.api_log)
        deadline = time.time() + READY_TIMEOUT
        while time.time() < deadline:
            if self.apiserver.poll() is not None:
                raise AssertionError("kube-apiserver exited (%s):\n%s" % (self.apiserver.returncode,
                                                                         self.log()[-4000:]))
            try:
                st, body = self.request("GET", "/readyz", raw=True, timeout=2)
                if st == 200:
                    return
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.2)
        raise AssertionError("kube-apiserver not ready in %ss:\n%s" % (READY_TIMEOUT, self.log()[-4000:]))

    def log(self):
        with open(self.path("apiserver.log"), "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stop_apiserver(self):
        if self.apiserver and self.apiserver.poll() is None:
            self.apiserver.terminate()
            try:
                self.apiserver.wait(30)
            except subprocess.TimeoutExpired:
                self.apiserver.kill()
                self.apiserver.wait()

    def restart_apiserver(self, down_seconds=0.0):
        """Stop the API server (etcd keeps the data) and start it again."""
        self.stop_apiserver()
        time.sleep(down_seconds)
        self._start_apiserver()

    def compact(self):
        """Compact etcd at its current revision: older resourceVersions are gone."""
        conn = http.client.HTTPConnection("127.0.0.1", self.etcd_port, timeout=10)
        conn.request("POST", "/v3/kv/range", body=json.dumps({"key": base64.b64encode(b"/").decode()}))
        rev = int(json.loads(conn.getresponse().read())["header"]["revision"])
        conn.request("POST", "/v3/kv/compaction", body=json.dumps({"revision": rev, "physical": True}))
        conn.getresponse().read()
        conn.close()
        return rev

    def stop(self):
        for p in self.proxies:
            p.close()
        self.stop_apiserver()
        if self.etcd and self.etcd.poll() is None:
            self.etcd.terminate()
            try:
                self.etcd.wait(30)
            except subprocess.TimeoutExpired:
                self.etcd.kill()
                self.etcd.wait()
        if not os.environ.get("KEEP_ENVTEST"):
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        if exc[0] is not None:
            sys.stderr.write("--- kube-apiserver log (tail) ---\n%s\n" % self.log()[-3000:])
        self.stop()
        return False





def object_collection(o):
    """The collection path an object is created in."""
    api = o["apiVersion"]
    kind = o["kind"]
    ns = o.get("metadata", {}).get("namespace")
    plural = {"ResourceSlice": "resourceslices", "ResourceClaim": "resourceclaims", "DeviceClass": "deviceclasses",
              "ConfigMap": "configmaps", "Namespace": "namespaces", "ServiceAccount": "serviceaccounts",
              "Pod": "pods", "Node": "nodes", "Role": "roles", "RoleBinding": "rolebindings",
              "ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings",
              "Secret": "secrets"}.get(kind) or kind.lower() + "s"
    prefix = "/api/" + api if "/" not in api else "/apis/" + api
    if ns and kind not in ("Namespace", "ClusterRole", "ClusterRoleBinding", "ResourceSlice", "DeviceClass", "Node"):
        return "%s/namespaces/%s/%s" % (prefix, ns, plural)
    return "%s/%s" % (prefix, plural)
