"""Shared helpers for the end-to-end tests: certificates, the server process,
HTTPS clients (Python's ssl/http.client and curl), AdmissionReviews, a strict
Prometheus text parser and a kubelet-style ConfigMap directory.

Standard library only. Every test starts the real binary on loopback with
port 0 and reads the bound ports from its "serving" log line, so tests never
race for ports.
"""

import base64
import hashlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("DRA_GUARD_ROOT") or os.path.dirname(os.path.dirname(HERE))
MAKE_CERTS = os.path.join(ROOT, "certs", "make-certs.sh")
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "resourceslice-v1-node-allocatable.json")

# Upper bounds for things that happen quickly: waiting this long is a
# failure, never a measurement.
START_TIMEOUT = 30.0
EVENT_TIMEOUT = 20.0


def binary(asan=False):
    var = "DRA_GUARD_ASAN_BIN" if asan else "DRA_GUARD_BIN"
    path = os.environ.get(var) or os.path.join(ROOT, "build", "asan" if asan else "rel", "dra-guard")
    if not os.access(path, os.X_OK):
        fail("%s: no executable at %s (set %s)" % (var, path, var))
    return path


def fail(msg):
    raise AssertionError(msg)


def check(cond, msg):
    if not cond:
        fail(msg)


# --- certificates -------------------------------------------------------------------


def make_certs(directory):
    """A dev CA and serving pair in directory, made by certs/make-certs.sh."""
    subprocess.run([MAKE_CERTS, "dev", directory], check=True, stdout=subprocess.DEVNULL)
    return directory


def fake_api_server(handler, certs):
    """An HTTPS server of handler (an http.server handler class) on a free
    loopback port, with certs' tls.crt and a kubeconfig (certs/kc.yaml) that
    points the guard at it with a bearer token. (server, kubeconfig path);
    server.shutdown() stops it."""
    import http.server
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(os.path.join(certs, "tls.crt"), os.path.join(certs, "tls.key"))
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    kc = os.path.join(certs, "kc.yaml")
    with open(kc, "w") as f:
        f.write("apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster:\n"
                "    server: https://localhost:%d\n    certificate-authority: %s\n"
                "users:\n- name: u\n  user:\n    token: t0k3n\n"
                "contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n"
                % (srv.server_address[1], os.path.join(certs, "ca.crt")))
    return srv, kc


# What an API server with the WatchList feature off answers a streaming
# list (a WATCH with sendInitialEvents=true): the guard then lists in pages.
NO_STREAMING_LIST = json.dumps({
    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": "Invalid", "code": 422,
    "message": 'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is '
               "forbidden for watch unless the WatchList feature gate is enabled"}).encode()


def refuse_streaming_list(handler):
    """In a hand-written fake API server's do_GET: answer a streaming list as
    a server without the WatchList feature does (422), so the guard lists in
    pages, which such a server scripts. True when it answered."""
    if "sendInitialEvents=true" not in handler.path:
        return False
    handler.send_response(422)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(NO_STREAMING_LIST)))
    handler.end_headers()
    handler.wfile.write(NO_STREAMING_LIST)
    return True


def new_serving_cert(directory):
    """A fresh serving pair from the same CA (the script keeps a valid one)."""
    for name in ("tls.crt", "tls.key"):
        os.unlink(os.path.join(directory, name))
    make_certs(directory)


def fingerprint_file(cert_path):
    der = ssl.PEM_cert_to_DER_cert(open(cert_path).read().split("-----END CERTIFICATE-----")[0]
                                   + "-----END CERTIFICATE-----\n")
    return hashlib.sha256(der).hexdigest()


def served_fingerprint(port, ca):
    ctx = ssl.create_default_context(cafile=ca)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as s:
            return hashlib.sha256(s.getpeercert(binary_form=True)).hexdigest()


# --- the server ------------------------------------------------------------------------


class Server:
    """dra-guard serve as a child process on loopback."""

    def __init__(self, certs, args=(), asan=False, env=None, wait_ready=True, cert=None, key=None,
                 metrics_token=None):
        """metrics_token: the bearer token ready() and metrics() send when the
        metrics port checks requests (--metrics-auth=kubernetes: HTTPS)."""
        self.certs = certs
        self.metrics_token = metrics_token
        self.metrics_tls = False
        self.ca = os.path.join(certs, "ca.crt")
        self.log_path = tempfile.mktemp(prefix="dra-guard-e2e-", suffix=".log")
        self.log_file = open(self.log_path, "wb")
        cmd = [binary(asan), "serve", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
               "--tls-cert", cert or os.path.join(certs, "tls.crt"),
               "--tls-key", key or os.path.join(certs, "tls.key")] + list(args)
        e = dict(os.environ)
        e.update(env or {})
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.log_file, env=e)
        self.port = self.metrics_port = self.probe_port = None
        deadline = time.time() + START_TIMEOUT
        while time.time() < deadline:
            line = self.find_log("serving")
            if line:
                self.port = int(line["listen"].rsplit(":", 1)[1])
                self.metrics_port = int(line["metrics_listen"].rsplit(":", 1)[1])
                self.metrics_tls = line.get("metrics_auth") == "kubernetes"
                if line.get("probe_listen", "off") != "off":
                    self.probe_port = int(line["probe_listen"].rsplit(":", 1)[1])
                break
            if self.proc.poll() is not None:
                fail("server exited with %s while starting:\n%s" % (self.proc.returncode, self.log()))
            time.sleep(0.02)
        else:
            self.kill()
            fail("server did not start within %ss:\n%s" % (START_TIMEOUT, self.log()))
        if wait_ready:
            self.wait(lambda: self.ready()[0], "the server to be ready")

    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def log_lines(self):
        out = []
        for raw in self.log().splitlines():
            try:
                out.append(json.loads(raw))
            except ValueError:
                out.append({"msg": "(not JSON)", "raw": raw})
        return out

    def find_log(self, msg, **fields):
        for line in self.log_lines():
            if line.get("msg") == msg and all(line.get(k) == v for k, v in fields.items()):
                return line
        return None

    def count_log(self, msg):
        return sum(1 for line in self.log_lines() if line.get("msg") == msg)

    def wait(self, cond, what, timeout=EVENT_TIMEOUT):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if cond():
                return
            if self.proc.poll() is not None:
                fail("server exited (%s) while waiting for %s:\n%s" % (self.proc.returncode, what, self.log()))
            time.sleep(0.02)
        fail("timed out waiting for %s; log:\n%s" % (what, self.log()[-4000:]))

    def metrics_get(self, path, token=None, headers=None):
        """GET path on the metrics port: (status, body, headers); HTTPS with
        token (default: metrics_token) when the port checks requests."""
        if not self.metrics_tls:
            return http_get(self.metrics_port, path, headers=headers, with_headers=True)
        tok = self.metrics_token if token is None else token
        return https_get(self.metrics_port, path, self.ca, tok or None, headers=headers)

    def ready(self):
        # A checked port's /readyz says ready or not; /debug/readyz says what serves.
        status, body, _ = self.metrics_get("/debug/readyz" if self.metrics_tls else "/readyz")
        return status == 200, json.loads(body)

    def metrics(self):
        status, body, _ = self.metrics_get("/metrics")
        check(status == 200, "/metrics answered %d" % status)
        return parse_prometheus(body.decode())

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, timeout=30):
        """SIGTERM; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            fail("server ignored SIGTERM for %ss:\n%s" % (timeout, self.log()[-4000:]))
        self.log_file.close()
        return code

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def cleanup(self):
        self.kill()
        try:
            os.unlink(self.log_path)
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()
        if exc[0] is not None:
            sys.stderr.write("--- server log (%s) ---\n%s\n" % (self.log_path, self.log()[-8000:]))
        else:
            self.cleanup()
        return False


# --- clients ------------------------------------------------------------------------------


def tls_context(ca, minimum=None, maximum=None, alpn=None):
    ctx = ssl.create_default_context(cafile=ca)
    if minimum:
        ctx.minimum_version = minimum
    if maximum:
        ctx.maximum_version = maximum
    if alpn:
        ctx.set_alpn_protocols(alpn)
    return ctx


class Client:
    """One keep-alive HTTPS connection (http.client over Python's ssl)."""

    def __init__(self, server, ctx=None, timeout=30):
        self.conn = http.client.HTTPSConnection("localhost", server.port, timeout=timeout,
                                                context=ctx or tls_context(server.ca))

    def request(self, method, path, body=None, headers=None):
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        if body is not None and not isinstance(body, (bytes, bytearray)):
            body = json.dumps(body).encode()
        self.conn.request(method, path, body=body, headers=h)
        r = self.conn.getresponse()
        data = r.read()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data

    def review(self, review, endpoint="validate"):
        status, headers, data = self.request("POST", "/%s?timeout=10s" % endpoint, review)
        check(status == 200, "POST /%s: HTTP %d %s" % (endpoint, status, data[:300]))
        check(headers.get("content-type", "").startswith("application/json"), "content type %r" % headers)
        return json.loads(data)["response"]

    def sock(self):
        return self.conn.sock

    def close(self):
        self.conn.close()


def curl(server, path, body=None, headers=(), extra=()):
    """curl with the CA checked; returns (status, body bytes, stderr)."""
    cmd = ["curl", "-sS", "--cacert", server.ca, "-o", "-", "-w", "\n%{http_code} %{http_version}",
           "--max-time", "30"] + list(extra)
    for h in headers:
        cmd += ["-H", h]
    if body is not None:
        cmd += ["--data-binary", "@-"]
        if not isinstance(body, (bytes, bytearray)):
            body = json.dumps(body).encode()
    cmd.append("https://localhost:%d%s" % (server.port, path))
    p = subprocess.run(cmd, input=body, capture_output=True)
    out, _, tail = p.stdout.rpartition(b"\n")
    code, _, version = tail.decode().partition(" ")
    return int(code or 0), out, version, p.stderr.decode()


def http_get(port, path, headers=None, with_headers=False):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("GET", path, headers=headers or {})
        r = c.getresponse()
        body = r.read()
        return (r.status, body, dict(r.getheaders())) if with_headers else (r.status, body)
    finally:
        c.close()


def https_get(port, path, ca, token=None, headers=None, timeout=10):
    """GET over HTTPS (the serving certificate's CA), with a bearer token
    when given: (status, body, headers)."""
    h = dict(headers or {})
    if token:
        h["Authorization"] = "Bearer " + token
    c = http.client.HTTPSConnection("127.0.0.1", port, timeout=timeout, context=tls_context(ca))
    try:
        c.request("GET", path, headers=h)
        r = c.getresponse()
        return r.status, r.read(), dict(r.getheaders())
    finally:
        c.close()


# --- reviews --------------------------------------------------------------------------------


def slice_object():
    with open(FIXTURE) as f:
        return json.load(f)


def review_for(obj, operation="CREATE", old=None, user="system:serviceaccount:dra-system:dra-example-driver",
               uid=None, kind=("resource.k8s.io", "v1", "ResourceSlice"), resource="resourceslices",
               groups=None, extra=None, sub_resource=None, namespace=None):
    group, version, k = kind
    req = {
        "uid": uid or str(uuid.uuid4()),
        "kind": {"group": group, "version": version, "kind": k},
        "resource": {"group": group, "version": version, "resource": resource},
        "requestKind": {"group": group, "version": version, "kind": k},
        "requestResource": {"group": group, "version": version, "resource": resource},
        "name": (obj or old or {}).get("metadata", {}).get("name", ""),
        "operation": operation,
        "userInfo": {"username": user, "groups": groups or ["system:authenticated"]},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
        "options": None,
    }
    if extra:
        req["userInfo"]["extra"] = extra
    if sub_resource:
        req["subResource"] = sub_resource
    if namespace:
        req["namespace"] = namespace
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}


def slice_review(mutate=None, **kw):
    obj = slice_object()
    if mutate:
        mutate(obj)
    return review_for(obj, **kw)


def claim_create_review(name="claim-1", namespace="default"):
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "dra.example.com"}}]}},
    }
    return review_for(claim, operation="CREATE", user="system:serviceaccount:default:app",
                      kind=("resource.k8s.io", "v1", "ResourceClaim"), resource="resourceclaims",
                      namespace=namespace)


def decode_patch(resp):
    check(resp.get("patchType") == "JSONPatch", "patchType %r" % resp.get("patchType"))
    return json.loads(base64.b64decode(resp["patch"]))


# --- Prometheus text format 0.0.4 -------------------------------------------------------

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
_VALUE = r"(?:[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]Inf|NaN)"
_SAMPLE = re.compile(r"^(%s)(?:\{(.*)\})? (%s)(?: -?[0-9]+)?$" % (_NAME, _VALUE))
_PAIR = re.compile(r'(%s)="((?:[^"\\\n]|\\\\|\\"|\\n)*)"(,|$)' % _LABEL)


def _unescape(v):
    return re.sub(r'\\(\\|"|n)', lambda m: {"\\": "\\", '"': '"', "n": "\n"}[m.group(1)], v)


def parse_prometheus(text):
    """Strict parse: {(name, frozenset(labels)): value}. Raises on anything the
    format does not allow: a sample before its TYPE, a family declared twice,
    bad label syntax, duplicate series, histogram buckets out of order."""
    check(text.endswith("\n"), "exposition does not end with a newline")
    types, helps, samples, order = {}, {}, {}, []
    for n, line in enumerate(text[:-1].split("\n"), 1):
        where = "line %d: %r" % (n, line)
        check(line != "", "empty line at %s" % where)
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                check(re.match("^%s$" % _NAME, parts[2]), "bad name in %s" % where)
                if parts[1] == "TYPE":
                    check(len(parts) == 4 and parts[3] in ("counter", "gauge", "histogram", "summary", "untyped"),
                          "bad TYPE %s" % where)
                    check(parts[2] not in types, "TYPE twice %s" % where)
                    check(not any(s[0] == parts[2] or s[0].startswith(parts[2] + "_") for s in samples),
                          "TYPE after samples %s" % where)
                    types[parts[2]] = parts[3]
                else:
                    check(parts[2] not in helps, "HELP twice %s" % where)
                    helps[parts[2]] = parts[3] if len(parts) == 4 else ""
            continue
        m = _SAMPLE.match(line)
        check(m, "not a sample: %s" % where)
        name, labels_text, value = m.group(1), m.group(2), m.group(3)
        labels = []
        if labels_text:
            pos = 0
            while pos < len(labels_text):
                lm = _PAIR.match(labels_text, pos)
                check(lm, "bad labels at %s" % where)
                labels.append((lm.group(1), _unescape(lm.group(2))))
                pos = lm.end()
            check(len(set(k for k, _ in labels)) == len(labels), "label twice in %s" % where)
        family = name
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix) and types.get(name[: -len(suffix)]) == "histogram":
                family = name[: -len(suffix)]
        check(family in types, "sample before its TYPE: %s" % where)
        if types[family] == "counter":
            check(name.endswith("_total"), "counter without _total: %s" % where)
        key = (name, frozenset(labels))
        check(key not in samples, "duplicate series %s" % where)
        samples[key] = float(value)
        order.append(key)
    # Histograms: buckets cumulative and ending with +Inf == _count.
    for fam, t in types.items():
        if t != "histogram":
            continue
        groups = {}
        for (name, labels) in order:
            if name == fam + "_bucket":
                rest = frozenset(kv for kv in labels if kv[0] != "le")
                le = dict(labels)["le"]
                groups.setdefault(rest, []).append((float(le), samples[(name, labels)]))
        for rest, buckets in groups.items():
            check(buckets == sorted(buckets), "%s buckets out of order" % fam)
            counts = [c for _, c in buckets]
            check(counts == sorted(counts), "%s buckets not cumulative" % fam)
            check(buckets[-1][0] == float("inf"), "%s has no +Inf bucket" % fam)
            check(samples.get((fam + "_count", rest)) == buckets[-1][1], "%s _count != +Inf bucket" % fam)
            check((fam + "_sum", rest) in samples, "%s without _sum" % fam)
    return samples


def metric(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)


# --- a ConfigMap directory laid out the kubelet's way --------------------------------------


class ConfigMapDir:
    """keys as symlinks through ..data -> ..<timestamp>; publish() swaps ..data
    atomically (rename of a temporary symlink) and removes the old version."""

    def __init__(self, path):
        self.path = path
        os.makedirs(path, exist_ok=True)
        self.version = None
        self.n = 0

    def publish(self, data):
        self.n += 1
        t = time.gmtime()
        name = "..%s.%09d" % (time.strftime("%Y_%m_%d_%H_%M_%S", t), self.n)
        vdir = os.path.join(self.path, name)
        os.mkdir(vdir)
        for k, v in data.items():
            with open(os.path.join(vdir, k), "w") as f:
                f.write(v)
        tmp = os.path.join(self.path, "..data_tmp")
        os.symlink(name, tmp)
        os.rename(tmp, os.path.join(self.path, "..data"))
        for k in data:
            link = os.path.join(self.path, k)
            if not os.path.islink(link):
                os.symlink(os.path.join("..data", k), link)
        # Keys of the old version that the new one lacks go away too.
        for entry in os.listdir(self.path):
            link = os.path.join(self.path, entry)
            if not entry.startswith("..") and os.path.islink(link) and entry not in data:
                os.unlink(link)
        if self.version:
            shutil.rmtree(os.path.join(self.path, self.version))
        self.version = name
        return time.time()


def policy_text(path="examples/policy-configmap.yaml"):
    """data["policy.yaml"] of the example ConfigMap, read without a YAML
    library: the block scalar under it, dedented."""
    lines = open(os.path.join(ROOT, path)).read().split("\n")
    start = next(i for i, l in enumerate(lines) if l.strip().startswith("policy.yaml: |"))
    indent = len(lines[start]) - len(lines[start].lstrip())
    body = []
    for l in lines[start + 1:]:
        if l.strip() and len(l) - len(l.lstrip()) <= indent:
            break
        body.append(l)
    pad = min(len(l) - len(l.lstrip()) for l in body if l.strip())
    return "\n".join(l[pad:] for l in body).strip() + "\n"


# --- running tests ----------------------------------------------------------------------------


class Skip(Exception):
    """Raised by a test that cannot run here (say why: the one line is all the user sees)."""


def run_tests(tests):
    """Run test functions in order; print a line each ("ok", "FAIL" or "SKIP",
    which tools/run_tests.py counts); exit 1 on any failure. Names given on
    the command line run only those tests (`python3 tests/e2e/test_x.py
    test_a test_b`)."""
    wanted = set(sys.argv[1:])
    if wanted:
        unknown = wanted - set(t.__name__ for t in tests)
        if unknown:
            sys.exit("no such test: %s" % ", ".join(sorted(unknown)))
        tests = [t for t in tests if t.__name__ in wanted]
    failed = 0
    for t in tests:
        t0 = time.time()
        try:
            t()
            print("ok   %-58s %6.2fs" % (t.__name__, time.time() - t0), flush=True)
        except Skip as e:
            print("SKIP %-58s %s" % (t.__name__, e), flush=True)
        except Exception as e:  # noqa: BLE001 - report every kind of failure
            failed += 1
            print("FAIL %-58s %6.2fs\n     %s: %s" % (t.__name__, time.time() - t0, type(e).__name__, e),
                  flush=True)
    if failed:
        print("%d of %d failed" % (failed, len(tests)))
        sys.exit(1)


class TempDir:
    def __init__(self):
        self.path = tempfile.mkdtemp(prefix="dra-guard-e2e-")

    def __enter__(self):
        return self.path

    def __exit__(self, *exc):
        shutil.rmtree(self.path, ignore_errors=True)
        return False
