#!/usr/bin/env python3
"""The monitoring add-on (manifests/monitoring), against the real thing.

- The rule file passes `promtool check rules`, and its unit tests
  (tests/monitoring/alerts.test.yaml) pass `promtool test rules`, with a case
  where each alert fires and one where it stays quiet.
- The PrometheusRule holds exactly the rule file's groups, the kustomization
  renders, its ServiceMonitor finds the guard's Service and port, and the
  generated files are fresh.
- Debian's Prometheus runs on loopback, loads the rule file and scrapes a
  running dra-guard that answers allowed and denied reviews, goes through a
  freeze flip, a reload and a held-back broken policy. Then every dashboard
  panel's query and every alert expression is evaluated through the HTTP API:
  each must parse, each panel must return data, and every metric each names
  must exist - so a renamed metric fails here instead of blanking a panel.
  A panel may name metrics a later part of the server brings ("needs" in
  tools/monitoring.py); those are checked for data only once the server
  exports them, and the test says so while it does not.
- The guard runs with its cluster view against the real API server
  (tests/e2e/envtest.py), or the fake one (tests/e2e/fakeapi.py) where the
  machine has none: its first LIST waits while the API server cannot be
  reached, then completes; slices are created, changed and deleted; a watch
  connection is cut. Every panel of the view's row must then show it.

Standard library only; promtool and prometheus come from Debian's package
`prometheus` (tools/deps.sh test group).
"""

import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import envtest  # noqa: E402
import fakeapi  # noqa: E402
import guard  # noqa: E402
import manifests_lib as ml  # noqa: E402
from guard import check, fail  # noqa: E402

sys.path.insert(0, os.path.join(guard.ROOT, "tools"))
import monitoring as gen  # noqa: E402

RULES = gen.RULES
RULE_TESTS = os.path.join(guard.ROOT, "tests", "monitoring", "alerts.test.yaml")
DOC = os.path.join(guard.ROOT, "docs", "monitoring.md")
SEVERITIES = {"critical", "warning", "info"}

# Grafana's variables, as Grafana fills them for "all replicas" of job
# dra-guard. $__rate_interval is at least four scrape intervals; 30 s here
# (scrapes every second) keeps every rate() window well filled.
GRAFANA_VARS = {"job": "dra-guard", "instance": ".+", "__rate_interval": "30s"}

SCRAPE = "1s"
# The cluster view's metrics: exported only by a guard that watches an API
# server.
# The gate's (freeze.gatePods) come with --gate-release, which needs the view;
# dra_guard_gate_withheld_total is every server's. Events and pending time
# come with the view and --events (the default).
VIEW_METRIC = re.compile(r"^dra_guard_((watch|view|ledger|events|pending)_|gate_(?!withheld))")
# Upper bound for Prometheus to start or to see an event: a failure bound.
PROM_TIMEOUT = 30.0


def tool(name):
    path = shutil.which(name)
    if not path:
        fail("%s not found: it comes with Debian's package prometheus (make deps-test installs it)" % name)
    return path


def rule_groups():
    (doc,) = ml.load_file(RULES)
    return doc["groups"]


def alerts():
    return [r for g in rule_groups() for r in g["rules"] if "alert" in r]


# --- promtool ----------------------------------------------------------------------------


def test_promtool_checks_the_rule_file():
    code, out, err = ml.run([tool("promtool"), "check", "rules", RULES], ok=None)
    check(code == 0, "promtool check rules:\n%s%s" % (out, err))
    check("SUCCESS: %d rules found" % len(alerts()) in out, "promtool saw: %s" % out.strip())


def test_promtool_unit_tests_pass():
    code, out, err = ml.run([tool("promtool"), "test", "rules", RULE_TESTS], ok=None)
    check(code == 0, "promtool test rules:\n%s%s" % (out, err))


def test_every_alert_has_a_firing_and_a_quiet_unit_test():
    (doc,) = ml.load_file(RULE_TESTS)
    fires, quiet = set(), set()
    for t in doc["tests"]:
        for case in t.get("alert_rule_test") or []:
            (fires if case.get("exp_alerts") else quiet).add(case["alertname"])
    names = {a["alert"] for a in alerts()}
    check(names, "no alerts in %s" % RULES)
    check(not names - fires, "alerts no unit test makes fire: %s" % sorted(names - fires))
    check(not names - quiet, "alerts no unit test keeps quiet: %s" % sorted(names - quiet))
    check(not (fires | quiet) - names, "unit tests of unknown alerts: %s" % sorted((fires | quiet) - names))


def _anchors(path):
    """GitHub's anchors for the headings of a Markdown file."""
    out = set()
    fenced = False
    with open(path) as f:
        for line in f:
            if line.startswith("```"):
                fenced = not fenced
            m = None if fenced else re.match(r"^#+\s+(.*?)\s*$", line)
            if m:
                a = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
                out.add(a)
    return out


def test_every_alert_says_how_bad_and_where_its_runbook_is():
    anchors = _anchors(DOC)
    for a in alerts():
        name = a["alert"]
        check(a.get("labels", {}).get("severity") in SEVERITIES, "%s: severity %r" % (name, a.get("labels")))
        ann = a.get("annotations") or {}
        check(ann.get("summary") and ann.get("description"), "%s: summary and description" % name)
        url = ann.get("runbook_url", "")
        check(url == "docs/monitoring.md#" + name.lower(),
              "%s: runbook_url %r, want docs/monitoring.md#%s" % (name, url, name.lower()))
        check(name.lower() in anchors, "%s: docs/monitoring.md has no section %r" % (name, name))


def test_doc_links_resolve():
    """Links from docs/monitoring.md to files and sections of the repository exist."""
    text = open(DOC).read()
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(os.path.dirname(DOC), path)) if path else DOC
        check(os.path.exists(full), "docs/monitoring.md links to %s, which does not exist" % target)
        if anchor and full.endswith(".md"):
            check(anchor in _anchors(full), "docs/monitoring.md links to %s: no such section" % target)


# --- the manifests -------------------------------------------------------------------------


def test_generated_files_are_fresh():
    for path, text in gen.generated().items():
        with open(path) as f:
            check(f.read() == text, "%s is stale: run tools/monitoring.py" % os.path.relpath(path, guard.ROOT))


def test_kustomization_renders_the_rule_the_monitor_and_the_dashboard():
    objs = ml.render(os.path.join(ml.MANIFESTS, "monitoring"))
    kinds = sorted(o["kind"] for o in objs)
    check(kinds == ["ConfigMap", "PrometheusRule", "ServiceMonitor"], "rendered %s" % kinds)
    for o in objs:
        check(o["metadata"].get("namespace") == "dra-guard", "%s outside dra-guard" % o["kind"])
    rule = ml.one(objs, "PrometheusRule")
    check(rule["spec"]["groups"] == rule_groups(), "the PrometheusRule's groups differ from %s" % RULES)
    cm = ml.one(objs, "ConfigMap")
    check(cm["metadata"]["name"] == "dra-guard-dashboard", "dashboard ConfigMap %s" % cm["metadata"]["name"])
    check(cm["metadata"].get("labels", {}).get("grafana_dashboard") == "1", "no grafana_dashboard label")
    check(json.loads(cm["data"]["dra-guard.json"]) == gen.dashboard(), "the ConfigMap's dashboard differs")

    # The ServiceMonitor selects the guard's Service, and scrapes a port of it
    # that leads to the container's metrics port.
    base = ml.render(os.path.join(ml.MANIFESTS, "base"))
    svc = ml.one(base, "Service", "dra-guard")
    sm = ml.one(objs, "ServiceMonitor")
    check(ml.selector_matches(sm["spec"]["selector"], svc["metadata"].get("labels") or {}),
          "the ServiceMonitor does not select Service dra-guard")
    check(sm["spec"]["namespaceSelector"] == {"matchNames": ["dra-guard"]}, "namespaceSelector")
    ports = {p["name"]: p for p in svc["spec"]["ports"]}
    for ep in sm["spec"]["endpoints"]:
        check(ep["port"] in ports, "ServiceMonitor port %r is not a port of the Service" % ep["port"])
        check(ports[ep["port"]]["targetPort"] == "metrics", "port %s does not lead to metrics" % ep["port"])
        # The port checks every request (--metrics-auth=kubernetes): HTTPS,
        # the certificate checked for the Service's name against the CA the
        # overlays put in dra-guard-tls, and Prometheus' own token.
        check(ep.get("path", "/metrics") == "/metrics" and ep.get("scheme") == "https", "endpoint %s" % ep)
        check(ep.get("bearerTokenFile") == "/var/run/secrets/kubernetes.io/serviceaccount/token",
              "endpoint %s sends no ServiceAccount token" % ep)
        tls = ep.get("tlsConfig") or {}
        check(tls.get("serverName") == "dra-guard.dra-guard.svc" and not tls.get("insecureSkipVerify")
              and tls.get("ca") == {"secret": {"name": "dra-guard-tls", "key": "ca.crt"}}, "tlsConfig %s" % tls)


def test_add_on_composes_with_an_overlay():
    ws = ml.overlay_workspace()
    try:
        mine = os.path.join(ws, "mine")
        os.mkdir(mine)
        with open(os.path.join(mine, "kustomization.yaml"), "w") as f:
            f.write("bases:\n- ../manifests/overlays/cert-manager\n- ../manifests/monitoring\n")
        objs = ml.render(mine)
        alone = ml.render(os.path.join(ws, "manifests", "overlays", "cert-manager"))
        want = {ml.key(o) for o in alone} | {("ServiceMonitor", "dra-guard", "dra-guard"),
                                             ("PrometheusRule", "dra-guard", "dra-guard"),
                                             ("ConfigMap", "dra-guard", "dra-guard-dashboard")}
        check({ml.key(o) for o in objs} == want, "overlay + monitoring rendered %s" % sorted(ml.key(o) for o in objs))
    finally:
        shutil.rmtree(ws, ignore_errors=True)


# --- the dashboard, as Grafana reads it -------------------------------------------------------


def panels(d=None):
    """Every panel that is not a row, with its targets."""
    return [p for p in (d or gen.dashboard())["panels"] if p["type"] != "row"]


def test_dashboard_is_a_well_formed_grafana_dashboard():
    d = json.load(open(gen.DASHBOARD))
    check(d["schemaVersion"] == 42 and d["uid"] == "dra-guard", "schemaVersion %s uid %s" % (d["schemaVersion"],
                                                                                           d["uid"]))
    ids = [p["id"] for p in d["panels"]]
    check(len(ids) == len(set(ids)), "panel ids repeat: %s" % ids)
    variables = {v["name"] for v in d["templating"]["list"]}
    cells = set()
    for p in d["panels"]:
        g = p["gridPos"]
        check(0 <= g["x"] and g["x"] + g["w"] <= 24 and g["h"] > 0, "%s: gridPos %s" % (p["title"], g))
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                check((x, y) not in cells, "%s overlaps another panel" % p["title"])
                cells.add((x, y))
        if p["type"] == "row":
            continue
        check(p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, "%s: datasource" % p["title"])
        check(p.get("description"), "%s: no description" % p["title"])
        refs = [t["refId"] for t in p["targets"]]
        check(refs and len(refs) == len(set(refs)), "%s: refIds %s" % (p["title"], refs))
        for t in p["targets"]:
            for var in re.findall(r"\$\{?(\w+)", t["expr"]):
                check(var in variables or var in GRAFANA_VARS, "%s: unknown variable $%s" % (p["title"], var))


# --- against a real Prometheus -----------------------------------------------------------------


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    """Debian's prometheus on loopback, scraping one target every second."""

    def __init__(self, tmp, target_port):
        self.dir = os.path.join(tmp, "prometheus")
        os.makedirs(self.dir)
        cfg = os.path.join(self.dir, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: %s\n  scrape_timeout: %s\n  evaluation_interval: %s\n"
                    "rule_files:\n- %s\n"
                    "scrape_configs:\n- job_name: dra-guard\n  static_configs:\n"
                    "  - targets: ['127.0.0.1:%d']\n" % (SCRAPE, SCRAPE, SCRAPE, RULES, target_port))
        code, out, err = ml.run([tool("promtool"), "check", "config", cfg], ok=None)
        check(code == 0, "promtool check config:\n%s%s" % (out, err))
        self.log_path = os.path.join(self.dir, "prometheus.log")
        self.log_file = open(self.log_path, "wb")
        for attempt in range(3):
            self.port = free_port()
            self.proc = subprocess.Popen(
                [tool("prometheus"), "--config.file=" + cfg, "--storage.tsdb.path=" + os.path.join(self.dir, "data"),
                 "--web.listen-address=127.0.0.1:%d" % self.port, "--log.level=warn"],
                stdout=self.log_file, stderr=self.log_file)
            deadline = time.time() + PROM_TIMEOUT
            while time.time() < deadline and self.proc.poll() is None:
                try:
                    if self.get("/-/ready")[0] == 200:
                        return
                except OSError:
                    pass
                time.sleep(0.1)
            if self.proc.poll() is None:
                self.stop()
                fail("prometheus not ready within %ss:\n%s" % (PROM_TIMEOUT, self.log()))
            # Most likely the port was taken between free_port() and the bind.
        fail("prometheus exited at start:\n%s" % self.log())

    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")[-4000:]

    def get(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def api(self, path, **params):
        """GET /api/v1/<path>; returns the decoded body whatever the status."""
        status, body = self.get("/api/v1/%s?%s" % (path, urllib.parse.urlencode(params)))
        try:
            return json.loads(body)
        except ValueError:
            fail("prometheus answered %d, not JSON: %r" % (status, body[:300]))

    def query(self, expr, **params):
        return self.api("query", query=expr, **params)

    def wait(self, expr, what):
        deadline = time.time() + PROM_TIMEOUT
        while time.time() < deadline:
            r = self.query(expr)
            if r.get("status") == "success" and r["data"]["result"]:
                return
            time.sleep(0.2)
        fail("prometheus never saw %s (%s):\n%s" % (what, expr, self.log()))

    def metric_names(self):
        r = self.api("label/__name__/values")
        check(r.get("status") == "success", "label values: %s" % r)
        return set(r["data"])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log_file.close()


def grafana_expr(expr):
    """expr with Grafana's variables filled in; an unknown one is an error."""
    def sub(m):
        name = m.group(1) or m.group(2)
        check(name in GRAFANA_VARS, "unknown Grafana variable $%s in %s" % (name, expr))
        return GRAFANA_VARS[name]
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", sub, expr)


def metric_names_in(expr):
    """The dra_guard_* metric names an expression selects (string literals,
    which hold label values, left out)."""
    bare = re.sub(r'"(?:[^"\\]|\\.)*"|`[^`]*`', '""', expr)
    return set(re.findall(r"\b(dra_guard_[a-zA-Z0-9_]+)\b", bare))


def pending_metrics():
    """Metrics that come with a later part of the server (panels' "needs")."""
    return set(n for names in gen.panels_needing().values() for n in names)


def view_metrics_in(dashboard, groups):
    """The cluster view's metrics that panels and alerts name."""
    exprs = [t["expr"] for p in panels(dashboard) for t in p["targets"]] + \
        [r["expr"] for g in groups for r in g["rules"]]
    return set(n for e in exprs for n in metric_names_in(e) if VIEW_METRIC.match(n))


def check_queries(prom, exported, dashboard, groups, start, end, log, view=True):
    """Evaluate every panel target and alert expression; returns the
    problems found (empty: all is well). exported: the metric names the
    running server exports (read from its /metrics). view: the server runs
    a cluster view; without one, the view's metrics are not required (every
    query still has to parse and evaluate)."""
    problems = []
    known = prom.metric_names()
    pending = pending_metrics()
    no_view = set() if view else view_metrics_in(dashboard, groups)
    for p in panels(dashboard):
        title = p["title"]
        for t in p["targets"]:
            expr = grafana_expr(t["expr"])
            names = metric_names_in(expr)
            waiting = sorted(n for n in names & pending if n not in exported)
            missing = sorted(n for n in names - pending - no_view if n not in known)
            if missing:
                problems.append("panel %r: metrics %s do not exist (renamed?): %s" % (title, missing, expr))
                continue
            if t.get("instant"):
                r = prom.query(expr, time=end)
            else:
                r = prom.api("query_range", query=expr, start=start, end=end, step="1s")
            if r.get("status") != "success":
                problems.append("panel %r: %s: %s" % (title, r.get("error"), expr))
                continue
            if waiting:
                log("     skip data check of panel %r: %s not exported by this server yet"
                    % (title, ", ".join(waiting)))
                continue
            if names & no_view:
                continue            # said once, by the SKIP line of the view's test
            if not r["data"]["result"]:
                problems.append("panel %r returned no data: %s" % (title, expr))
    # Annotation queries and the variables' label_values() must name metrics
    # (and labels) that exist too; they need not return data.
    for a in (dashboard.get("annotations") or {}).get("list", []):
        if a.get("expr"):
            expr = grafana_expr(a["expr"])
            missing = sorted(n for n in metric_names_in(expr) - pending if n not in known)
            if missing:
                problems.append("annotation %r: metrics %s do not exist (renamed?)" % (a["name"], missing))
            elif prom.query(expr, time=end).get("status") != "success":
                problems.append("annotation %r does not evaluate: %s" % (a["name"], expr))
    for v in (dashboard.get("templating") or {}).get("list", []):
        if v.get("type") != "query":
            continue
        m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", v["query"]["query"])
        if not m:
            problems.append("variable %s: query %r is not label_values(SELECTOR, LABEL)" % (v["name"], v["query"]))
            continue
        r = prom.api("series", **{"match[]": grafana_expr(m.group(1)), "start": start, "end": end})
        if r.get("status") != "success" or not any(m.group(2) in s for s in r["data"]):
            problems.append("variable %s: no series of %s with label %s" % (v["name"], m.group(1), m.group(2)))
    for g in groups:
        for rule in g["rules"]:
            name = rule.get("alert") or rule.get("record")
            expr = rule["expr"]
            names = metric_names_in(expr)
            missing = sorted(n for n in names - pending - no_view if n not in known)
            if missing:
                problems.append("alert %s: metrics %s do not exist (renamed?)" % (name, missing))
            waiting = sorted(n for n in names & pending if n not in exported)
            if waiting:
                log("     alert %s: %s not exported by this server yet; its expression is parsed and "
                    "evaluated, its metrics not required" % (name, ", ".join(waiting)))
            r = prom.query(expr, time=end)
            if r.get("status") != "success":
                problems.append("alert %s: %s" % (name, r.get("error")))
    return problems


_live = {}

SLICES = envtest.RESOURCE_V1 + "/resourceslices"


def view_slice(i):
    """A node's one-slice pool, for the API server the view watches."""
    node = "node-%d" % i
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": node + "-gpu"},
            "spec": {"driver": "gpu.example.com", "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-0"}]}}


def has_view():
    return _live.get("env") is not None


def live():
    """A guard with traffic behind it and a Prometheus that scraped it all:
    (prometheus, server, start, end). Made once; torn down by main()."""
    if "state" in _live:
        ok, v = _live["state"]
        if not ok:
            raise AssertionError("(as before) %s" % v)
        return v
    try:
        _live["state"] = (True, _make_live())
    except AssertionError as e:
        _live["state"] = (False, e)
        raise
    return _live["state"][1]


LEDGER_NODE = "mon-node"


def ledger_objects(env):
    """A node for the ledger's panels: 2 cpus, and a Pod bound to it asking
    for 3 (overcommitted: ledger.node.overcommit), and a Pod whose status
    says its claim adds 1 cpu where no claim is charged (diverging)."""
    env.must("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": LEDGER_NODE}})
    n = env.get("/api/v1/nodes/" + LEDGER_NODE)
    n["status"] = {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"},
                   "capacity": {"cpu": "2", "memory": "4Gi", "pods": "110"}}
    env.must("PUT", "/api/v1/nodes/%s/status" % LEDGER_NODE, n)
    env.must("POST", "/api/v1/namespaces/default/serviceaccounts",
             {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}, ok=(201, 409))

    def pod(name, cpu, claims=()):
        env.create("/api/v1/namespaces/default/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": LEDGER_NODE, "automountServiceAccountToken": False,
                     "resourceClaims": [{"name": c, "resourceClaimName": c} for c in claims],
                     "containers": [{"name": "app", "image": "registry.example/app:1",
                                     "resources": {"requests": {"cpu": cpu},
                                                   "claims": [{"name": c} for c in claims]}}]}})

    pod("over", "3")
    pod("diverging", "100m", ["gpu"])
    env.patch("/api/v1/namespaces/default/pods/diverging/status", {"status": {
        "nodeAllocatableResourceClaimStatuses": [{"resourceClaimName": "gpu", "containers": ["app"],
                                                  "resources": {"cpu": "1"}}]}}, kind="strategic")


def _make_live():
    tmp = guard.TempDir().path
    _live["tmp"] = tmp
    certs = guard.make_certs(os.path.join(tmp, "certs"))
    cm = guard.ConfigMapDir(os.path.join(tmp, "policy"))
    # Every rule at its built-in action; the fixture's driver listed (so its
    # denials have a series of their own), writing as a cluster-wide
    # controller with the fixture's ServiceAccount.
    policy = ("apiVersion: dra-guard.io/v1alpha1\nkind: Policy\n"
              "drivers:\n  dra.example.com:\n    scope: cluster\n"
              "    serviceAccounts: [system:serviceaccount:dra-system:dra-example-driver]\n")
    cm.publish({"policy.yaml": policy, "freeze": "false", "freeze-reason": ""})
    # The cluster view, when the API server can run here: three slices to
    # list, through a proxy that holds the first LIST back until Prometheus
    # has seen the view unsynced and its discovery failing.
    view_args, env, proxy = [], None, None
    _live["env"] = None
    if True:
        # The real API server where the machine has one, else the fake one
        # (tests/e2e/fakeapi.py): the view's panels need a cluster either way.
        env = envtest.EnvTest() if not envtest.missing() else fakeapi.FakeEnv()
        _live["env"] = env
        env.start()
        for i in range(3):
            env.create(SLICES, view_slice(i))
        ledger_objects(env)
        proxy = env.proxy()
        proxy.pause()
        view_args = ["--kubeconfig", env.kubeconfig(server="https://127.0.0.1:%d" % proxy.port,
                                                    path=os.path.join(tmp, "kubeconfig")),
                     # The gate's metrics (its alerts select them).
                     "--gate-release", "--gate-lease", "default/dra-guard-gate"]
    server = guard.Server(certs, args=["--policy-dir", cm.path] + view_args, wait_ready=env is None)
    _live["server"] = server
    prom = Prometheus(tmp, server.metrics_port)
    _live["prom"] = prom
    start = time.time()
    if env:
        prom.wait('dra_guard_watch_synced{job="dra-guard",resource="resourceslices"} == 0 and on() '
                  'changes(dra_guard_watch_errors_total{job="dra-guard",resource="resourceslices",'
                  'request="discovery"}[1m]) > 0', "the view unsynced, a failed discovery counted")
        proxy.resume()
    prom.wait('dra_guard_ready{job="dra-guard"} == 1', "the guard ready")
    if env:
        # Events of every kind, then a cut connection: the watch fails,
        # backs off and resumes.
        env.create(SLICES, view_slice(3))
        env.patch(SLICES + "/node-0-gpu", {"metadata": {"labels": {"changed": "yes"}}})
        env.delete(SLICES + "/node-1-gpu")
        prom.wait('dra_guard_watch_events_total{job="dra-guard",resource="resourceslices",type="DELETED"} >= 1 '
                  'and on() dra_guard_view_objects{job="dra-guard",resource="resourceslices"} == 3', "the slice events")
        proxy.cut()
        prom.wait('dra_guard_watch_errors_total{job="dra-guard",resource="resourceslices",request="watch"} >= 1',
                  "the cut watch")

    c = guard.Client(server)

    def pods_key(obj):
        obj["spec"]["devices"][0]["nodeAllocatableResourceMappings"]["pods"] = {"allocationMultiplier": "1"}

    for _ in range(5):
        check(c.review(guard.slice_review())["allowed"], "an ordinary slice was denied")
    for _ in range(3):
        check(not c.review(guard.slice_review(pods_key))["allowed"], "a pods mapping was allowed")
    for _ in range(2):
        c.review(guard.slice_review(), endpoint="mutate")
    check(c.review(guard.claim_create_review())["allowed"], "a claim was denied before the freeze")
    prom.wait('sum(dra_guard_requests_total{job="dra-guard",result="denied"}) >= 3', "the denials")

    # The freeze flip: a reload that freezes; a new claim is refused.
    cm.publish({"policy.yaml": policy, "freeze": "true", "freeze-reason": "INC-1: monitoring test"})
    server.wait(lambda: server.ready()[1]["policy"]["freeze"], "the freeze")
    resp = c.review(guard.claim_create_review(name="claim-2"))
    check(not resp["allowed"] and "claim.freeze.create" in resp["status"]["message"], "freeze denial %s" % resp)
    prom.wait('dra_guard_freeze_active{job="dra-guard"} == 1', "the freeze")

    # A broken policy: held back, the frozen one keeps serving.
    cm.publish({"policy.yaml": policy + "freeze:\n  alertAfter: 2d\n", "freeze": "true",
                "freeze-reason": "INC-1: monitoring test"})
    prom.wait('dra_guard_policy_last_reload_successful{job="dra-guard"} == 0', "the held-back policy")
    for _ in range(3):
        c.review(guard.slice_review())
    c.close()
    prom.wait('sum(dra_guard_requests_total{job="dra-guard",endpoint="mutate"}) >= 2 and '
              'sum(dra_guard_violations_total{job="dra-guard",rule="claim.freeze.create"}) >= 1', "the last requests")
    # Two more scrapes, so every rate() window ends on the last events.
    time.sleep(2.5)
    return prom, server, start, time.time()


def exported_names(server):
    return {name for (name, _) in server.metrics()} | {
        name[: -len(s)] for (name, _) in server.metrics() for s in ("_bucket", "_sum", "_count") if name.endswith(s)}


def test_every_panel_and_alert_evaluates_with_data_from_a_real_guard():
    prom, server, start, end = live()
    problems = check_queries(prom, exported_names(server), gen.dashboard(), rule_groups(), start, end, print,
                             view=has_view())
    check(not problems, "\n     ".join(["%d problems:" % len(problems)] + problems))


def _series(prom, expr, start, end):
    r = prom.api("query_range", query=grafana_expr(expr), start=start, end=end, step="1s")
    check(r.get("status") == "success", "%s: %s" % (expr, r))
    return [(s["metric"], [float(v) for _, v in s["values"]]) for s in r["data"]["result"]]


def _panel(title):
    for p in panels():
        if p["title"] == title:
            return p
    fail("no panel %r" % title)


def _values(prom, title, start, end, i=0, **labels):
    """Every value (NaN left out) the panel's i-th query gives for series with these labels."""
    out = []
    for metric, values in _series(prom, _panel(title)["targets"][i]["expr"], start, end):
        if all(metric.get(k) == v for k, v in labels.items()):
            out += [v for v in values if v == v]
    return out


def test_panels_show_the_traffic_that_was_sent():
    prom, _, start, end = live()

    def peak(title, i=0, **labels):
        return max([0.0] + _values(prom, title, start, end, i, **labels))

    check(peak("Admission requests/s by endpoint and result", endpoint="validate", result="allowed") > 0,
          "no allowed validate requests on the requests panel")
    check(peak("Admission requests/s by endpoint and result", endpoint="validate", result="denied") > 0,
          "no denials on the requests panel")
    check(peak("Admission requests/s by endpoint and result", endpoint="mutate", result="allowed") > 0,
          "no mutate requests on the requests panel")
    check(peak("Latency p50 / p99 by endpoint and result", endpoint="validate", result="denied") > 0,
          "no latency for denials")
    check(peak("Denials/s by rule", rule="slice.mapping.name") > 0, "slice.mapping.name denials not shown")
    check(peak("Denials/s by rule", rule="claim.freeze.create") > 0, "freeze denials not shown")
    check(peak("Denied ResourceSlice writes/s by driver", driver="dra.example.com") > 0,
          "the listed driver's denials not shown")
    check(peak("Policy reloads by result", result="success") > 0, "no successful reload shown")
    check(peak("Policy reloads by result", result="error") > 0, "the broken policy's reload error not shown")
    timeline = _series(prom, _panel("Freeze timeline")["targets"][0]["expr"], start, end)
    check(timeline and {0.0, 1.0} <= set(timeline[0][1]), "the freeze timeline does not show the flip: %s" % timeline)
    check(peak("Replicas holding back a broken policy") == 1, "the held-back policy is not counted")
    check(peak("Serving certificate expires in") > 14 * 86400, "certificate expiry")
    reason = prom.query(grafana_expr(_panel("Freeze reason")["targets"][0]["expr"]), time=end)["data"]["result"]
    check([r["metric"].get("reason") for r in reason] == ["INC-1: monitoring test"], "freeze reason %s" % reason)


def test_view_panels_show_the_watch():
    prom, _, start, end = live()
    if not has_view():
        groups = rule_groups()
        view = view_metrics_in(gen.dashboard(), groups)
        npanels = sum(1 for p in panels() if any(metric_names_in(t["expr"]) & view for t in p["targets"]))
        nalerts = sum(1 for g in groups for r in g["rules"] if metric_names_in(r["expr"]) & view)
        raise guard.Skip("the cluster view's %d panels and %d alerts not checked for data: needs a real "
                         "API server: %s" % (npanels, nalerts, envtest.missing()))

    def values(title, i=0, **labels):
        return _values(prom, title, start, end, i, **labels)

    resources = ("resourceslices", "resourceclaims", "configmap")
    for r in resources:
        age = values("View age by resource", resource=r)
        check(age and min(age) == -1 and 0 <= age[-1] < 60,
              "the age of %s should go from -1 (not listed) to fresh: %s" % (r, age[:3] + age[-3:]))
        synced = values("Replicas synced by resource", resource=r)
        check(synced and synced[0] == 0 and synced[-1] == 1, "%s synced: %s" % (r, synced))
        check(max(values("Relists by resource and reason", resource=r, reason="start") or [0]) > 0,
              "the first LIST of %s not on the relists panel" % r)
        check(max(values("API server errors/s and skipped objects/s", resource=r, request="discovery") or [0]) > 0,
              "the failed discovery not shown for %s" % r)
    check(values("View age by resource", 1) and set(values("View age by resource", 1)) == {300},
          "clusterView.maxAge line: %s" % set(values("View age by resource", 1)))
    for t in ("ADDED", "MODIFIED", "DELETED"):
        check(max(values("Watch events/s by resource and type", resource="resourceslices", type=t) or [0]) > 0,
              "no %s events of resourceslices on the events panel" % t)
    objects = values("Objects in the view", resource="resourceslices")
    check(objects and objects[-1] == 3, "slices in the view: %s, want 3 at the end" % objects[-3:])
    check(max(values("Bytes decoded/s by resource", resource="resourceslices") or [0]) > 0, "no bytes decoded")
    check(max(values("LIST duration by resource", 0, resource="resourceslices") or [0]) > 0,
          "the LIST of resourceslices has no duration on the panel")
    check(values("LIST duration by resource", 1, resource="resourceslices"), "no mean LIST duration")
    check(max(values("API server errors/s and skipped objects/s", resource="resourceslices", request="watch")
              or [0]) > 0, "the cut watch not on the errors panel")
    check(values("API server errors/s and skipped objects/s", 1, resource="resourceslices") and
          max(values("API server errors/s and skipped objects/s", 1)) == 0, "skipped objects where none were")
    source = prom.query(grafana_expr(_panel("Policy source per replica")["targets"][0]["expr"]),
                        time=end)["data"]["result"]
    check([r["metric"].get("source") for r in source] == ["directory"], "policy source %s" % source)

    # The ledger: the node the live setup overcommitted and made diverge.
    check(values("Overcommitted and diverging nodes", 0)[-1:] == [1], "overcommitted nodes %s"
          % values("Overcommitted and diverging nodes", 0)[-3:])
    check(values("Overcommitted and diverging nodes", 1)[-1:] == [1], "diverging nodes %s"
          % values("Overcommitted and diverging nodes", 1)[-3:])
    for title, want in (("Nodes over allocatable", 1.1), ("Nodes whose Pod statuses diverge", -1)):
        rows = prom.query(grafana_expr(_panel(title)["targets"][0]["expr"]), time=end)["data"]["result"]
        got = [(r["metric"].get("node"), r["metric"].get("resource"), float(r["value"][1])) for r in rows]
        check(got == [(LEDGER_NODE, "cpu", want)], "%s: %s, want %s cpu %s" % (title, got, LEDGER_NODE, want))
    usage = values("Ledger usage of allocatable by resource", resource="cpu")
    check(usage and abs(usage[-1] - 3.1 / 2) < 1e-9, "cpu usage of allocatable %s, want 155%%" % usage[-3:])


def test_prometheus_loads_and_evaluates_every_rule():
    prom, _, _, _ = live()
    # Evaluations run every second; wait for one after the last event.
    deadline = time.time() + PROM_TIMEOUT
    while True:
        r = prom.api("rules")
        check(r.get("status") == "success", "rules API: %s" % r)
        loaded = {rule["name"]: rule for g in r["data"]["groups"] for rule in g["rules"]}
        held = loaded.get("DraGuardPolicyHeldBack", {})
        if held.get("state") == "pending" or time.time() > deadline:
            break
        time.sleep(0.2)
    check(set(loaded) == {a["alert"] for a in alerts()}, "prometheus loaded %s" % sorted(loaded))
    for name, rule in loaded.items():
        check(rule.get("health") == "ok", "%s: health %s, %s" % (name, rule.get("health"), rule.get("lastError")))
    # The held-back policy is there for real: its alert waits out its 5 minutes.
    check(held.get("state") == "pending", "DraGuardPolicyHeldBack is %s, not pending" % held.get("state"))
    quiet = ["DraGuardDown", "DraGuardNotReady", "DraGuardCertificateExpiresSoon", "DraGuardFreezeTooLong"]
    if has_view():
        quiet += ["DraGuardViewNotSynced", "DraGuardViewStale", "DraGuardViewRelisting", "DraGuardViewSkippedObjects"]
    for name in quiet:
        check(loaded[name]["state"] == "inactive", "%s is %s on a healthy guard" % (name, loaded[name]["state"]))


def test_a_renamed_metric_fails_the_check():
    """What the two tests above guard against: a metric renamed in the
    server (or misspelt in a panel or alert) is reported, not a blank panel."""
    prom, server, start, end = live()
    exported = exported_names(server)
    d = json.loads(json.dumps(gen.dashboard()).replace("dra_guard_requests_total", "dra_guard_request_total"))
    problems = check_queries(prom, exported, d, [], start, end, lambda *_: None)
    check(any("Admission requests/s by endpoint and result" in p and "dra_guard_request_total" in p
              for p in problems), "a renamed metric in a panel went unnoticed: %s" % problems)
    groups = json.loads(json.dumps(rule_groups()).replace("dra_guard_freeze_active", "dra_guard_frozen"))
    problems = check_queries(prom, exported, {"panels": []}, groups, start, end, lambda *_: None)
    check(any("DraGuardFreezeTooLong" in p and "dra_guard_frozen" in p for p in problems),
          "a renamed metric in an alert went unnoticed: %s" % problems)
    d = json.loads(json.dumps(gen.dashboard()).replace("dra_guard_build_info", "dra_guard_build"))
    problems = check_queries(prom, exported, {"panels": [], "templating": d["templating"]}, [], start, end,
                             lambda *_: None)
    check(any("variable job" in p for p in problems), "a renamed metric in a variable went unnoticed: %s" % problems)
    d = json.loads(json.dumps(gen.dashboard()).replace("dra_guard_freeze_active", "dra_guard_frozen"))
    problems = check_queries(prom, exported, {"panels": [], "annotations": d["annotations"]}, [], start, end,
                             lambda *_: None)
    check(any("annotation 'Freeze changes'" in p for p in problems),
          "a renamed metric in an annotation went unnoticed: %s" % problems)
    # A query that does not parse is reported too.
    broken = {"panels": [{"type": "timeseries", "title": "broken", "targets": [{"expr": "sum(rate(up[30s])"}]}]}
    problems = check_queries(prom, exported, broken, [], start, end, lambda *_: None)
    check(any("'broken'" in p for p in problems), "an unparsable query went unnoticed: %s" % problems)


def main():
    t0 = time.time()
    try:
        guard.run_tests([
            test_promtool_checks_the_rule_file,
            test_promtool_unit_tests_pass,
            test_every_alert_has_a_firing_and_a_quiet_unit_test,
            test_every_alert_says_how_bad_and_where_its_runbook_is,
            test_doc_links_resolve,
            test_generated_files_are_fresh,
            test_kustomization_renders_the_rule_the_monitor_and_the_dashboard,
            test_add_on_composes_with_an_overlay,
            test_dashboard_is_a_well_formed_grafana_dashboard,
            test_every_panel_and_alert_evaluates_with_data_from_a_real_guard,
            test_panels_show_the_traffic_that_was_sent,
            test_view_panels_show_the_watch,
            test_prometheus_loads_and_evaluates_every_rule,
            test_a_renamed_metric_fails_the_check,
        ])
    finally:
        if "prom" in _live:
            _live["prom"].stop()
        if "server" in _live:
            _live["server"].stop()
            _live["server"].cleanup()
        if _live.get("env"):
            _live["env"].stop()
        if "tmp" in _live:
            shutil.rmtree(_live["tmp"], ignore_errors=True)
        print("     monitoring tests took %.1fs" % (time.time() - t0))


if __name__ == "__main__":
    main()
