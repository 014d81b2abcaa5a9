#!/usr/bin/env python3
"""The metrics port checks who reads it (--metrics-auth=kubernetes), as
Kubernetes components do: HTTPS with the serving certificate, a bearer
token reviewed by the API server (TokenReview), then get on the path asked
of RBAC (SubjectAccessReview, nonResourceAttributes).

The guard runs as its ServiceAccount with the manifests' RBAC
(manifests/base/rbac.yaml, metrics-rbac.yaml) against the API server (the
fake one of tests/e2e/fakeapi.py without KUBE_APISERVER), and:

- no token, an unknown token, a malformed header: 401 with WWW-Authenticate;
- a token whose user has no grant: 403 naming the user and the path;
- Prometheus' ServiceAccount bound to dra-guard-metrics-reader: 200 on
  /metrics, 403 on /debug/*; an operator bound to dra-guard-debug-reader:
  200 on /debug/view;
- a second scrape within the cache's life asks the API server nothing and
  counts a cache hit;
- the API server down: denied (503), counted as an error, logged;
- plain HTTP is not served on the checked port;
- the probe port, and /readyz on the checked port (every authenticated
  user may get /readyz by Kubernetes' default RBAC), answer ready or not
  and nothing more; /debug/readyz says what serves.
"""

import http.client
import json
import os
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import envtest  # noqa: E402
import guard  # noqa: E402
from guard import check  # noqa: E402

GUARD_NS = "dra-guard"
GUARD_USER = "system:serviceaccount:dra-guard:dra-guard"
MON_NS = "monitoring"
BOUND = 30.0
RBAC_FILES = [os.path.join(guard.ROOT, "manifests", "base", "rbac.yaml"),
              os.path.join(guard.ROOT, "manifests", "base", "metrics-rbac.yaml")]


def objects(path):
    with open(path) as f:
        out = subprocess.run([guard.binary(), "convert", "-"], input=f.read().encode(), stdout=subprocess.PIPE,
                             check=True).stdout.decode()
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def bind(env, name, role, sa_ns, sa_name):
    env.create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": sa_name, "namespace": sa_ns}]})


def reviews(env):
    """(tokenreviews, subjectaccessreviews) the guard has asked so far."""
    with env.lock:
        made = [r for r in env.requests if r[6] == GUARD_USER]
    return (sum(1 for r in made if r[2] == "tokenreviews"), sum(1 for r in made if r[2] == "subjectaccessreviews"))


def metric(text, name, **labels):
    for (n, lab), v in guard.parse_prometheus(text).items():
        if n == name and all(dict(lab).get(k) == w for k, w in labels.items()):
            return v
    return None


def status_of(body):
    doc = json.loads(body)
    check(doc.get("kind") == "Status", "not a Status: %s" % body[:300])
    return doc


def test_metrics_port_checks_tokens_and_rbac():
    env = envtest.EnvTest()
    env.start()
    try:
        env.ensure_namespace(GUARD_NS)
        env.ensure_namespace(MON_NS)
        for path in RBAC_FILES:
            env.apply_objects(objects(path))
        guard_token = env.sa_token(GUARD_NS, "dra-guard")
        prom = env.sa_token(MON_NS, "prometheus")
        nobody = env.sa_token(MON_NS, "nobody")
        operator = env.sa_token(MON_NS, "operator")
        bind(env, "prometheus-reads-metrics", "dra-guard-metrics-reader", MON_NS, "prometheus")
        bind(env, "operator-debugs", "dra-guard-debug-reader", MON_NS, "operator")
        with guard.TempDir() as d:
            certs = guard.make_certs(d)
            kc = env.kubeconfig(token=guard_token, path=os.path.join(d, "kc.yaml"))
            s = guard.Server(certs, args=["--kubeconfig", kc, "--metrics-auth=kubernetes",
                                          "--probe-listen", "127.0.0.1:0"],
                             wait_ready=False, metrics_token=operator)
            try:
                check(s.metrics_tls, "the serving line does not say metrics_auth kubernetes: %s"
                      % s.find_log("serving"))
                s.wait(lambda: s.ready()[0], "the guard to sync and be ready", timeout=BOUND)

                # No token, a malformed header, an unknown token: 401.
                for token, headers, what in ((None, None, "no token"),
                                             (None, {"Authorization": "Basic YTpi"}, "Basic"),
                                             ("not-a-token-the-api-server-knows", None, "unknown token")):
                    st, body, hdrs = s.metrics_get("/metrics", token=token or "", headers=headers)
                    check(st == 401, "%s: HTTP %d %s" % (what, st, body[:300]))
                    check(hdrs.get("WWW-Authenticate", "").startswith("Bearer"), "%s: %s" % (what, hdrs))
                    check(status_of(body)["reason"] == "Unauthorized", "%s: %s" % (what, body))
                    check(b"dra_guard" not in body, "%s: the 401 carries metrics" % what)

                # Known, without a grant: 403 naming the user and the path.
                st, body, _ = s.metrics_get("/metrics", token=nobody)
                check(st == 403, "no grant: HTTP %d %s" % (st, body[:300]))
                msg = status_of(body)["message"]
                check("system:serviceaccount:monitoring:nobody" in msg and "/metrics" in msg, msg)

                # Prometheus' grant: /metrics, and nothing of /debug.
                st, body, _ = s.metrics_get("/metrics", token=prom)
                check(st == 200, "Prometheus: HTTP %d %s" % (st, body[:300]))
                text = body.decode()
                check(metric(text, "dra_guard_metrics_auth_total", result="unauthenticated") >= 3, "401s counted")
                check(metric(text, "dra_guard_metrics_auth_total", result="forbidden") >= 1, "403 counted")
                for path in ("/debug/view", "/debug/ledger", "/debug/pending", "/debug/readyz"):
                    st, body, _ = s.metrics_get(path, token=prom)
                    check(st == 403, "Prometheus on %s: HTTP %d" % (path, st))
                # /readyz: any authenticated user may get it (the API server's
                # system:public-info-viewer), so it says ready and nothing more.
                st, body, _ = s.metrics_get("/readyz", token=nobody)
                check(st == 200 and json.loads(body) == {"ready": True}, "/readyz: %d %s" % (st, body[:300]))
                # The operator's: /debug/view.
                st, body, _ = s.metrics_get("/debug/view", token=operator)
                check(st == 200 and "resourceclaims" in json.loads(body), "operator: HTTP %d %s" % (st, body[:200]))

                # Cached: a second scrape asks the API server nothing.
                before = reviews(env)
                hits = metric(s.metrics_get("/metrics", token=prom)[1].decode(),
                              "dra_guard_metrics_auth_cache_hits_total")
                st, body, _ = s.metrics_get("/metrics", token=prom)
                check(st == 200, "second scrape: HTTP %d" % st)
                check(reviews(env) == before, "the second scrape was reviewed again: %s then %s"
                      % (before, reviews(env)))
                check(metric(body.decode(), "dra_guard_metrics_auth_cache_hits_total") > hits, "no cache hit counted")
                check(before[0] >= 1 and before[1] >= 1, "no review made: %s" % (before,))

                # dra-guard pending reads a checked replica with a token file,
                # through an address of its own (a port-forward's).
                tokfile = os.path.join(d, "token")
                with open(tokfile, "w") as f:
                    f.write(operator + "\n")
                base = ["pending", "--url", "https://dra-guard.dra-guard.svc:%d" % s.metrics_port,
                        "--connect", "127.0.0.1:%d" % s.metrics_port, "--cacert", s.ca, "--output", "json"]
                p = subprocess.run([guard.binary()] + base + ["--token-file", tokfile], capture_output=True,
                                   timeout=30)
                check(p.returncode == 0 and "claims" in json.loads(p.stdout),
                      "dra-guard pending with a token: %d %s" % (p.returncode, p.stderr[-300:]))
                p = subprocess.run([guard.binary()] + base, capture_output=True, timeout=30)
                check(p.returncode == 2 and b"401" in p.stderr and b"--token-file" in p.stderr,
                      "dra-guard pending without a token: %d %s" % (p.returncode, p.stderr[-300:]))
                with open(tokfile, "w") as f:
                    f.write(prom)
                p = subprocess.run([guard.binary()] + base + ["--token-file", tokfile], capture_output=True,
                                   timeout=30)
                check(p.returncode == 2 and b"403" in p.stderr and b"dra-guard-debug-reader" in p.stderr,
                      "dra-guard pending as Prometheus: %d %s" % (p.returncode, p.stderr[-300:]))
                # A token is never sent in the clear off loopback (refused before
                # any connection: the address is never reached).
                p = subprocess.run([guard.binary(), "pending", "--url", "http://dra-guard.dra-guard.svc:9090",
                                    "--token-file", tokfile], capture_output=True, timeout=30)
                check(p.returncode == 2 and b"in the clear" in p.stderr,
                      "a token over plain HTTP off loopback: %d %s" % (p.returncode, p.stderr[-300:]))

                # Two Authorization headers: refused.
                conn = http.client.HTTPSConnection("127.0.0.1", s.metrics_port, timeout=10,
                                                   context=guard.tls_context(s.ca))
                conn.putrequest("GET", "/metrics")
                conn.putheader("Authorization", "Bearer " + prom)
                conn.putheader("Authorization", "Bearer " + nobody)
                conn.endheaders()
                st = conn.getresponse().status
                conn.close()
                check(st == 400, "two Authorization headers: HTTP %d" % st)

                # Plain HTTP on the checked port: no answer.
                try:
                    st, body = guard.http_get(s.metrics_port, "/metrics")
                except (http.client.HTTPException, OSError):
                    st = None
                check(st is None or st == 400, "plain HTTP served on the checked port: %s" % st)

                # The probe port: /healthz, a bare /readyz, nothing else.
                st, body = guard.http_get(s.probe_port, "/readyz")
                check(st == 200 and json.loads(body) == {"ready": True},
                      "probe /readyz says more than ready: %d %s" % (st, body[:300]))
                for path in ("/metrics", "/debug/view", "/debug/ledger", "/debug/pending"):
                    check(guard.http_get(s.probe_port, path)[0] == 404, "the probe port serves %s" % path)
                check(guard.http_get(s.probe_port, "/healthz")[0] == 200, "probe /healthz")

                # The API server down: denied, counted, logged; never cached.
                env.stop_apiserver()
                st, body, _ = s.metrics_get("/debug/pending", token=nobody)
                check(st == 503, "API server down: HTTP %d %s" % (st, body[:300]))
                check("denied" in status_of(body)["message"], body)
                # While it stays down, the next unknown check is refused at once,
                # without asking it again.
                st, body, _ = s.metrics_get("/debug/pending", token=nobody)
                check(st == 503 and "failed the last token review" in status_of(body)["message"],
                      "a check right after a failed review: HTTP %d %s" % (st, body[:300]))
                env.restart_apiserver()
                # The 503 was not kept: once the API server answers, the same
                # token gets its real answer (403: no grant).
                s.wait(lambda: s.metrics_get("/debug/pending", token=nobody)[0] == 403,
                       "the API server back, the earlier error not cached", timeout=BOUND)
                s.wait(lambda: s.metrics_get("/metrics", token=prom)[0] == 200, "the API server back", timeout=BOUND)
                text = s.metrics_get("/metrics", token=prom)[1].decode()
                check(metric(text, "dra_guard_metrics_auth_total", result="error") >= 1, "the error not counted")
                check(s.find_log("metrics port: request denied, the API server could not review it"),
                      "the error not logged")
                check(s.stop() == 0, "exit code")
            finally:
                s.stop()
    finally:
        env.stop()


def test_none_off_loopback_needs_the_explicit_flag_and_warns():
    with guard.TempDir() as d:
        certs = guard.make_certs(d)
        tls = ["--tls-cert", os.path.join(certs, "tls.crt"), "--tls-key", os.path.join(certs, "tls.key"),
               "--listen", "127.0.0.1:0", "--cluster-view", "off"]
        p = subprocess.run([guard.binary(), "serve", "--metrics-listen", "0.0.0.0:0", "--metrics-auth=none"] + tls,
                           capture_output=True, timeout=30)
        check(p.returncode == 2 and b"--metrics-auth-insecure" in p.stderr,
              "none on 0.0.0.0 started: %d %s" % (p.returncode, p.stderr[-500:]))
        # auto off loopback means kubernetes, which needs an API server.
        p = subprocess.run([guard.binary(), "serve", "--metrics-listen", "0.0.0.0:0"] + tls,
                           capture_output=True, timeout=30)
        check(p.returncode != 0 and b"--metrics-auth=kubernetes needs the API server" in p.stderr,
              "auto on 0.0.0.0 without an API server: %d %s" % (p.returncode, p.stderr[-500:]))
        # Loopback: plain HTTP, no check (make run).
        with guard.Server(certs, args=["--cluster-view", "off"]) as s:
            check(not s.metrics_tls and s.find_log("serving")["metrics_auth"] == "none", "loopback default")
            check(guard.http_get(s.metrics_port, "/metrics")[0] == 200, "loopback /metrics")
        # Asked for by name: serves, and says so at start.
        s = guard.Server(certs, args=["--cluster-view", "off", "--metrics-auth=none", "--metrics-auth-insecure",
                                      "--metrics-listen", "0.0.0.0:0"])
        try:
            line = [x for x in s.log_lines() if x.get("level") == "warn" and "without authentication" in x["msg"]]
            check(line, "no warning at start:\n%s" % s.log())
        finally:
            s.stop()
            s.cleanup()


if __name__ == "__main__":
    envtest.require("test_metrics_auth", fake=True)
    guard.run_tests([test_metrics_port_checks_tokens_and_rbac,
                     test_none_off_loopback_needs_the_explicit_flag_and_warns])
