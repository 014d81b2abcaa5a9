#!/usr/bin/env python3
"""The cluster view at scale, side by side with client-go's figures.

Loads ../shared/bench/scale/loader.py's data set (5,000 nodes: 5,000 one-slice
pools of 8 mapped devices, 40,000 devices; 100,000 allocated claims) into a
real kube-apiserver (tests/e2e/envtest.py), adds the Nodes (allocatable 128
cpus, 512Gi) and 150,000 Pods bound to them (one per claim, reserving it,
with the Pod status the scheduler writes for it, cpu 4 and 16Gi; the rest
without claims), then measures dra-guard serve:

  api     synced in (process start to /readyz 200, every resource listed)
          and RSS after the sync, RUNS times, from the API server;
  file    the same from a local HTTPS file server answering the API server's
          saved LIST bodies whole: what the client costs apart from the
          API server; slices only and claims only give RSS per device and
          per claim;
  cpu     admission CPU per request (the guard's user+system time over
          REQUESTS reviews of each kind) with the view synced and with
          --cluster-view=off: a ResourceSlice, the scheduler's allocation
          of a held device (ledger.pool.fresh, ledger.device.duplicate and
          ledger.numa.split run; denied, --view-recheck 0 so nothing waits),
          and the scheduler's Pod status for a claim (ledger.pod.amounts);
  ledger  the ledger's build time (dra_guard_ledger_build_seconds, built
          by the first scrape), RSS once built, and GET /debug/ledger whole;
  events  bench_view: WATCH events applied per second (no API server can
          write 50,000 objects a second; the apply path is measured alone).

    tools/bench_scale.py [--runs 3] [--requests 3000] [--pods 150000] [--out build/bench-scale.json] [--data DIR]
    tools/bench_scale.py --synthetic [--runs 3] [--save-bodies DIR] ...

--synthetic skips the API server: the same data set, written as the API
server's LIST bodies (metadata with uid, resourceVersion, creationTimestamp
and a managedFields entry of the size the API server keeps), is served
whole by the local file server, and sync, RSS, the ledger and admission CPU
are measured from it. Loading 205,000 objects and 250,000 Pod writes takes
the loader over an hour on a loaded 2-core machine; this takes a minute.

--baseline-bin PATH (with --synthetic) also syncs that binary (an earlier build) in
each run, alternating which goes first, and prints the two side by side: RSS after the
sync, the view's memory metrics and the ratio of the sync times.

--save-bodies DIR also writes the synthetic LIST bodies there (resourceslices.json,
resourceclaims.json, pods.json, nodes.json), for `bench_view --files`.

--data DIR (or BENCH_SCALE_DATA) keeps etcd's data directory there and
reuses it, so a second run skips the load.

Needs a real kube-apiserver (KUBE_APISERVER; none ships with the project),
etcd, and about 4 minutes to load; without one it says so in one line and
exits 0 (--synthetic needs neither). Figures go to stdout and --out as JSON.
"""

import argparse
import http.client
import http.server
import json
import os
import ssl
import subprocess
import sys
import threading
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))

import envtest  # noqa: E402
import guard  # noqa: E402

LOADER = os.path.join(envtest.SHARED, "bench", "scale", "loader.py")
SCHEDULER = "system:kube-scheduler"
NODE_ALLOCATABLE = {"cpu": "128", "memory": "512Gi", "pods": "110"}
CLAIM_AMOUNTS = {"cpu": "4", "memory": "16Gi"}   # what one device of the loader's slices maps
CLIENT_GO = {"protobuf": (2.28, 2.63, 562, 580), "json": (6.20, 6.39, 608, 665),
             "dynamic": (10.80, 12.00, 2334, 2361)}


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tick


def sync_run(certs, args, label):
    """Start the guard, time it to ready, sample RSS; returns (seconds, MiB)."""
    t0 = time.monotonic()
    s = guard.Server(certs, args=args, wait_ready=False)
    try:
        deadline = t0 + 900
        while time.monotonic() < deadline:
            try:
                if s.ready()[0]:
                    break
            except OSError:
                pass
            time.sleep(0.01)
        else:
            raise SystemExit("%s: not synced in 900 s:\n%s" % (label, s.log()[-3000:]))
        synced = time.monotonic() - t0
        time.sleep(2)
        rss = rss_kib(s.proc.pid) / 1024.0
        print("  %-28s synced in %6.2f s   RSS %6.1f MiB" % (label, synced, rss), flush=True)
        return synced, rss, s
    except BaseException:
        s.kill()
        raise


class FileServer:
    """HTTPS: discovery, and each collection's saved LIST body whole; WATCHes stay open."""

    def __init__(self, certs, bodies):
        outer = self
        self.stop = threading.Event()

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                path, _, query = self.path.partition("?")
                if path == "/apis/resource.k8s.io":
                    body = json.dumps({"kind": "APIGroup", "versions": [
                        {"groupVersion": "resource.k8s.io/v1", "version": "v1"}]}).encode()
                elif "sendInitialEvents=true" in query:
                    # Refused as an API server without the WatchList feature
                    # refuses it: the guard lists in pages (whole LISTs here)
                    # at once, instead of waiting out its LIST timeout for
                    # initial events a file server never sends.
                    body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                       "reason": "Invalid", "code": 422,
                                       "message": "sendInitialEvents is forbidden"}).encode()
                    self.send_response(422)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                elif "watch=true" in query:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    outer.stop.wait(600)
                    return
                else:
                    body = bodies.get(path.rsplit("/", 1)[1],
                                      b'{"kind":"List","metadata":{"resourceVersion":"1"},"items":[]}')
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(os.path.join(certs, "tls.crt"), os.path.join(certs, "tls.key"))
        self.srv.socket = ctx.wrap_socket(self.srv.socket, server_side=True)
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.port = self.srv.server_address[1]

    def close(self):
        self.stop.set()
        self.srv.shutdown()


# --- Nodes and Pods -----------------------------------------------------------------------

def place(i, nodes, claims, namespaces=100):
    """Claim i of the loader: (namespace, claim name, node, device)."""
    sys.path.insert(0, os.path.dirname(LOADER))
    import loader  # noqa: E402 - ../shared's, for its placement
    return loader.claim_place(i, nodes, namespaces, claims)


def node_obj(name):
    # A Node's status may be set on create (the kubelet registers so).
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": NODE_ALLOCATABLE, "capacity": NODE_ALLOCATABLE}}


def pod_obj(name, node, cpu, memory, claim=None):
    c = {"name": "app", "image": "registry.example/app:1", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    spec = {"nodeName": node, "automountServiceAccountToken": False, "containers": [c]}
    if claim:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim}]
        c["resources"]["claims"] = [{"name": "gpu"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def load_pods(env, nodes, claims, pods):
    """Nodes, a default ServiceAccount per namespace, the Pods; the claims'
    Pods get the status the scheduler writes (strategic merge on status)."""
    sys.path.insert(0, os.path.dirname(LOADER))
    import loader  # noqa: E402
    crt, key = env.identity("admin")
    ctx = ssl.create_default_context(cafile=env.path("ca.crt"))
    ctx.load_cert_chain(crt, key)
    mk = lambda: loader.Client(env.url, ctx)  # noqa: E731

    def ok(st, body):
        if st not in (200, 201, 409):
            raise RuntimeError("HTTP %d: %s" % (st, body[:300].decode(errors="replace")))

    def mk_node(c, n):
        ok(*c.req("POST", "/api/v1/nodes", node_obj(loader.node_name(n))))

    def mk_sa(c, k):
        ok(*c.req("POST", "/api/v1/namespaces/ns-%03d/serviceaccounts" % k,
                  {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}))

    with_claims = min(pods, claims)

    def mk_pod(c, i):
        if i < with_claims:
            ns, claim, node, _ = loader.claim_place(i, nodes, 100, claims)
            ok(*c.req("POST", "/api/v1/namespaces/%s/pods" % ns, pod_obj("p-%d" % i, node, "1", "2Gi", claim)))
            ok(*c.req("PATCH", "/api/v1/namespaces/%s/pods/p-%d/status" % (ns, i),
                      {"status": {"nodeAllocatableResourceClaimStatuses": [
                          {"resourceClaimName": claim, "containers": ["app"], "resources": CLAIM_AMOUNTS}]}},
                      ctype="application/strategic-merge-patch+json"))
        else:
            j = i - with_claims
            ok(*c.req("POST", "/api/v1/namespaces/ns-%03d/pods" % (j % 100),
                      pod_obj("q-%d" % j, loader.node_name(j % nodes), "500m", "1Gi")))

    loader.run_parallel("nodes", nodes, 32, mk_node, mk)
    loader.run_parallel("serviceaccounts", 100, 32, mk_sa, mk)
    _, errors = loader.run_parallel("pods", pods, 32, mk_pod, mk)
    if errors:
        raise SystemExit("bench-scale: %d Pods failed to load" % len(errors))


# --- measuring ---------------------------------------------------------------------------------

def get(port, path):
    """GET on the metrics port, with room for a large body on a loaded machine."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def ledger_figures(s, res):
    """Build the ledger (a scrape), then its build time, RSS, and the export."""
    t0 = time.monotonic()
    st, text = get(s.metrics_port, "/metrics")
    scrape = time.monotonic() - t0
    guard.check(st == 200, "/metrics answered %d" % st)
    samples = guard.parse_prometheus(text.decode())
    build = guard.metric(samples, "dra_guard_ledger_build_seconds")
    rss = rss_kib(s.proc.pid) / 1024.0
    t0 = time.monotonic()
    st, body = get(s.metrics_port, "/debug/ledger")
    export = time.monotonic() - t0
    guard.check(st == 200, "/debug/ledger answered %d" % st)
    summary = json.loads(body)["summary"]
    out = {"build_s": build, "first_scrape_s": scrape, "rss_mib": rss, "export_s": export,
           "export_bytes": len(body), "summary": summary}
    print("  ledger: built in %.3f s (first scrape %.2f s), RSS %.1f MiB once built; /debug/ledger %.1f MB in "
          "%.2f s; %d nodes, %d claims, %d entries, %d overcommitted, %d unbalanced" % (
              build, scrape, rss, len(body) / 1e6, export, summary["nodes"], summary["claims"],
              summary["entries"], summary["overcommittedNodes"], summary["unbalancedNodes"]), flush=True)
    res.setdefault("ledger", []).append(out)


def reviews(nodes, claims):
    """One review of each kind the bench measures (see the docstring)."""
    ns, claim, node, dev = place(1, nodes, claims)
    held = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "bench-claim", "namespace": ns, "uid": "0b000000-0000-4000-8000-000000000001"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com",
                                                                          "count": 1}}]}}}
    old = json.loads(json.dumps(held))
    held["status"] = {"allocation": {
        "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": node, "device": dev}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
        "reservedFor": [{"resource": "pods", "name": "bench-pod", "uid": "0b000000-0000-4000-8000-000000000002"}]}
    alloc = guard.review_for(held, operation="UPDATE", old=old, user=SCHEDULER, sub_resource="status",
                             kind=("resource.k8s.io", "v1", "ResourceClaim"), resource="resourceclaims",
                             namespace=ns)
    pod = pod_obj("p-1", node, "1", "2Gi", claim)
    pod["metadata"].update({"namespace": ns, "uid": "0b000000-0000-4000-8000-000000000003"})
    pod["status"] = {"phase": "Pending"}
    new = json.loads(json.dumps(pod))
    new["status"]["nodeAllocatableResourceClaimStatuses"] = [
        {"resourceClaimName": claim, "containers": ["app"], "resources": CLAIM_AMOUNTS}]
    status = guard.review_for(new, operation="UPDATE", old=pod, user=SCHEDULER, sub_resource="status",
                              kind=("", "v1", "Pod"), resource="pods", namespace=ns)
    return [("slice", guard.slice_review(), None), ("allocation", alloc, "ledger.device.duplicate"),
            ("pod_status", status, None)]


def admission_cpu(s, n, kinds, view):
    """The guard's CPU seconds per review over n reviews of each kind."""
    out = {}
    c = guard.Client(s)
    for name, review, denied_by in kinds:
        r = c.review(review)
        if view and denied_by:
            guard.check(not r["allowed"] and denied_by in r["status"]["message"],
                        "%s: expected %s, got %s" % (name, denied_by, r))
        elif name != "slice":
            guard.check(r["allowed"], "%s: denied: %s" % (name, r.get("status")))
        for _ in range(200):
            c.review(review)
        before = cpu_s(s.proc.pid)
        for _ in range(n):
            c.review(review)
        out[name] = (cpu_s(s.proc.pid) - before) / n
    c.close()
    return out


# --- the data set as LIST bodies, without an API server ----------------------------------------

MANAGED = [{"manager": "loader", "operation": "Update", "apiVersion": "v1", "time": "2026-12-01T09:00:00Z",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {}}, "f:spec": {
                "f:devices": {".": {}, "f:requests": {}}}, "f:status": {"f:allocation": {
                    ".": {}, "f:devices": {".": {}, "f:results": {}}, "f:nodeSelector": {}},
                    "f:reservedFor": {}}}}]


def meta(name, rv, ns=None, uid=None):
    m = {"name": name, "uid": uid or str(uuid.uuid5(uuid.NAMESPACE_URL, "bench/%s/%s" % (ns, name))),
         "resourceVersion": str(rv), "creationTimestamp": "2026-12-01T09:00:00Z", "managedFields": MANAGED}
    if ns:
        m["namespace"] = ns
    return m


def list_body(kind, items):
    return json.dumps({"kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": "1000000"},
                       "items": items}, separators=(",", ":")).encode()


def synthetic_bodies(nodes, claims, pods):
    """{collection: LIST body} for the loader's data set plus Nodes and Pods."""
    sys.path.insert(0, os.path.dirname(LOADER))
    import loader  # noqa: E402 - ../shared's objects and placement
    rv = 100
    slices = []
    for n in range(nodes):
        o = loader.slice_obj(n)
        o["metadata"] = meta(o["metadata"]["name"], rv + n)
        slices.append(o)
    rv += nodes
    cl, pl = [], []
    with_claims = min(pods, claims)
    for i in range(claims):
        ns, name, node, dev = loader.claim_place(i, nodes, 100, claims)
        o = loader.claim_obj(name)
        o["metadata"] = meta(name, rv + i, ns)
        o["status"] = loader.claim_status_patch(i, node, dev)["status"]
        cl.append(o)
        if i < with_claims:
            pod = pod_obj("p-%d" % i, node, "1", "2Gi", name)
            pod["metadata"] = meta("p-%d" % i, rv + claims + i, ns, o["status"]["reservedFor"][0]["uid"])
            pod["status"] = {"phase": "Running", "qosClass": "Burstable", "nodeAllocatableResourceClaimStatuses": [
                {"resourceClaimName": name, "containers": ["app"], "resources": CLAIM_AMOUNTS}]}
            pl.append(pod)
    rv += claims + with_claims
    for j in range(pods - with_claims):
        pod = pod_obj("q-%d" % j, loader.node_name(j % nodes), "500m", "1Gi")
        pod["metadata"] = meta("q-%d" % j, rv + j, "ns-%03d" % (j % 100))
        pod["status"] = {"phase": "Running", "qosClass": "Burstable"}
        pl.append(pod)
    nl = []
    for n in range(nodes if pods else 0):
        o = node_obj(loader.node_name(n))
        o["metadata"] = meta(o["metadata"]["name"], rv + pods + n)
        nl.append(o)
    return {"resourceslices": list_body("ResourceSliceList", slices),
            "resourceclaims": list_body("ResourceClaimList", cl),
            "pods": list_body("PodList", pl), "nodes": list_body("NodeList", nl)}


def file_kubeconfig(d, port):
    path = os.path.join(d, "file-kc.yaml")
    with open(path, "w") as f:
        f.write("apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster:\n"
                "    server: https://localhost:%d\n    certificate-authority: %s\n"
                "users:\n- name: u\n  user:\n    token: x\ncontexts:\n- name: c\n  context:\n"
                "    cluster: c\n    user: u\n" % (port, os.path.join(d, "ca.crt")))
    return path


def view_memory(s, label, res):
    """The view's own accounting (dra_guard_view_memory_bytes), printed and kept."""
    st, text = get(s.metrics_port, "/metrics")
    guard.check(st == 200, "/metrics answered %d" % st)
    samples = guard.parse_prometheus(text.decode())
    mem = {part: int(guard.metric(samples, "dra_guard_view_memory_bytes", part=part)) for part in ("records", "atoms")}
    print("  %-28s view records %d B, atoms %d B" % (label, mem["records"], mem["atoms"]), flush=True)
    res.setdefault("view_memory", {})[label] = mem


def baseline_run(a, d, fs, i, res):
    """Sync --baseline-bin beside DRA_GUARD_BIN: first on even runs, second on odd ones."""
    ours = os.environ.get("DRA_GUARD_BIN", "")
    order = [("baseline", a.baseline_bin), ("this build", ours)]
    out = {}
    for label, path in (order if i % 2 == 0 else order[::-1]):
        os.environ["DRA_GUARD_BIN"] = path
        synced, rss, s = sync_run(d, ["--kubeconfig", file_kubeconfig(d, fs.port), "--view-recheck", "0"],
                                  "%s, run %d" % (label, i + 1))
        view_memory(s, "%s, run %d" % (label, i + 1), res)
        s.kill()
        out[label] = {"synced_s": synced, "rss_mib": rss}
    os.environ["DRA_GUARD_BIN"] = ours
    print("  run %d: RSS %.1f -> %.1f MiB, sync time ratio %.2f (this build / baseline)" % (
        i + 1, out["baseline"]["rss_mib"], out["this build"]["rss_mib"],
        out["this build"]["synced_s"] / out["baseline"]["synced_s"]), flush=True)
    res.setdefault("baseline", []).append(out)


def synthetic_main(a, res):
    t0 = time.monotonic()
    bodies = synthetic_bodies(a.nodes, a.claims, a.pods)
    res["synthetic"] = True
    res["list_bytes"] = {k: len(v) for k, v in bodies.items()}
    if a.save_bodies:
        os.makedirs(a.save_bodies, exist_ok=True)
        for k, v in bodies.items():
            with open(os.path.join(a.save_bodies, k + ".json"), "wb") as f:
                f.write(v)
    print("the data set as LIST bodies (%.1f s): %s bytes" % (time.monotonic() - t0, res["list_bytes"]), flush=True)
    kinds = reviews(a.nodes, a.claims)
    with guard.TempDir() as d:
        guard.make_certs(d)
        fs = FileServer(d, bodies)
        try:
            runs = []
            for i in range(a.runs):
                if a.baseline_bin:
                    baseline_run(a, d, fs, i, res)
                synced, rss, s = sync_run(d, ["--kubeconfig", file_kubeconfig(d, fs.port), "--view-recheck", "0"],
                                          "file server, run %d" % (i + 1))
                view_memory(s, "file server, run %d" % (i + 1), res)
                ledger_figures(s, res)
                if i == a.runs - 1:
                    res["cpu_per_review_view_s"] = admission_cpu(s, a.requests, kinds, True)
                s.kill()
                runs.append({"synced_s": synced, "rss_mib": rss})
            res["file"] = runs
        finally:
            fs.close()
        _, rss_off, s = sync_run(d, ["--cluster-view=off"], "--cluster-view=off")
        res["rss_off_mib"] = rss_off
        res["cpu_per_review_off_s"] = admission_cpu(s, a.requests, kinds, False)
        s.kill()
    for name, _, _ in kinds:
        on, off = res["cpu_per_review_view_s"][name], res["cpu_per_review_off_s"][name]
        print("  admission CPU per %s review: %.1f us with the view and ledger rules, %.1f us without" % (
            name, on * 1e6, off * 1e6), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench-scale.json"))
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--claims", type=int, default=100000)
    ap.add_argument("--pods", type=int, default=150000, help="Pods (and the Nodes) to add; 0: none")
    ap.add_argument("--data", default=os.environ.get("BENCH_SCALE_DATA", ""),
                    help="keep etcd's data here and reuse it next time (skips the 4-minute load)")
    ap.add_argument("--bench-view", default=os.path.join(ROOT, "build", "release", "bench", "bench_view"))
    ap.add_argument("--synthetic", action="store_true", help="LIST bodies from a file server, no API server")
    ap.add_argument("--baseline-bin", default="", help="--synthetic: sync this dra-guard too, alternating")
    ap.add_argument("--save-bodies", default="", help="--synthetic: write the LIST bodies to this directory")
    a = ap.parse_args()
    if a.synthetic:
        if not os.path.exists(LOADER):
            raise SystemExit("bench-scale: no %s" % LOADER)
        res = {"nodes": a.nodes, "devices": a.nodes * 8, "claims": a.claims, "pods": a.pods,
               "loadavg_start": os.getloadavg()}
        synthetic_main(a, res)
        res["loadavg_end"] = os.getloadavg()
        os.makedirs(os.path.dirname(a.out), exist_ok=True)
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)
        print("load average (1, 5, 15 min): %s at the start, %s at the end" % (
            " ".join("%.2f" % x for x in res["loadavg_start"]), " ".join("%.2f" % x for x in res["loadavg_end"])))
        return
    envtest.require("bench-scale")
    if not os.path.exists(LOADER):
        raise SystemExit("bench-scale: no %s" % LOADER)
    res = {"nodes": a.nodes, "devices": a.nodes * 8, "claims": a.claims, "pods": a.pods, "client_go": CLIENT_GO,
           "loadavg_start": os.getloadavg()}
    loaded = os.path.join(a.data, "loaded-%d-%d" % (a.nodes, a.claims)) if a.data else None
    env = envtest.EnvTest(etcd_quota=8 << 30, etcd_dir=os.path.join(a.data, "etcd") if a.data else None,
                          extra_args=["--max-requests-inflight=800", "--max-mutating-requests-inflight=400"])
    env.start()
    try:
        t0 = time.monotonic()
        crt, key = env.identity("admin")
        if not (loaded and os.path.exists(loaded)):
            subprocess.run([sys.executable, LOADER, "--server", env.url, "--ca", env.path("ca.crt"),
                            "--cert", crt, "--key", key, "--nodes", str(a.nodes), "--claims", str(a.claims)],
                           check=True)
            if loaded:
                open(loaded, "w").close()
        res["load_seconds"] = time.monotonic() - t0
        pods_loaded = loaded and "%s-pods-%d" % (loaded, a.pods)
        if a.pods and not (pods_loaded and os.path.exists(pods_loaded)):
            t0 = time.monotonic()
            load_pods(env, a.nodes, a.claims, a.pods)
            res["load_pods_seconds"] = time.monotonic() - t0
            if pods_loaded:
                open(pods_loaded, "w").close()
        kinds = reviews(a.nodes, a.claims)
        kc = env.kubeconfig()
        with guard.TempDir() as d:
            guard.make_certs(d)
            print("from the API server (%s):" % env.url, flush=True)
            runs = []
            for i in range(a.runs):
                synced, rss, s = sync_run(d, ["--kubeconfig", kc, "--view-recheck", "0"], "run %d" % (i + 1))
                ledger_figures(s, res)
                if i == a.runs - 1:
                    res["cpu_per_review_view_s"] = admission_cpu(s, a.requests, kinds, True)
                s.kill()
                runs.append({"synced_s": synced, "rss_mib": rss})
            res["api"] = runs
            _, rss_off, s = sync_run(d, ["--cluster-view=off"], "--cluster-view=off")
            res["rss_off_mib"] = rss_off
            res["cpu_per_review_off_s"] = admission_cpu(s, a.requests, kinds, False)
            s.kill()
            for name, _, _ in kinds:
                on, off = res["cpu_per_review_view_s"][name], res["cpu_per_review_off_s"][name]
                print("  admission CPU per %s review: %.1f us with the view and ledger rules, %.1f us without"
                      % (name, on * 1e6, off * 1e6), flush=True)
            # The API server's own LIST bodies, saved, served by a file server.
            bodies = {}
            for coll in ("resourceslices", "resourceclaims"):
                st, body = env.request("GET", envtest.RESOURCE_V1 + "/" + coll, raw=True, timeout=300)
                bodies[coll] = body
            res["list_bytes"] = {k: len(v) for k, v in bodies.items()}
            print("from a local file server (LIST bodies %s bytes):" % res["list_bytes"], flush=True)
            for label, served in (("all", bodies), ("slices only", {"resourceslices": bodies["resourceslices"]}),
                                  ("claims only", {"resourceclaims": bodies["resourceclaims"]})):
                fs = FileServer(d, served)
                fkc = os.path.join(d, "file-kc.yaml")
                with open(fkc, "w") as f:
                    f.write("apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster:\n"
                            "    server: https://localhost:%d\n    certificate-authority: %s\n"
                            "users:\n- name: u\n  user:\n    token: x\ncontexts:\n- name: c\n  context:\n"
                            "    cluster: c\n    user: u\n" % (fs.port, os.path.join(d, "ca.crt")))
                synced, rss, s = sync_run(d, ["--kubeconfig", fkc], "file server, " + label)
                s.kill()
                fs.close()
                res["file_" + label.replace(" ", "_")] = {"synced_s": synced, "rss_mib": rss}
            base = res["rss_off_mib"]
            res["rss_bytes_per_device"] = (res["file_slices_only"]["rss_mib"] - base) * 1048576 / res["devices"]
            res["rss_bytes_per_claim"] = (res["file_claims_only"]["rss_mib"] - base) * 1048576 / res["claims"]
            print("  RSS per device %.0f B, per claim %.0f B (over --cluster-view=off's %.1f MiB)" % (
                res["rss_bytes_per_device"], res["rss_bytes_per_claim"], base), flush=True)
    finally:
        env.stop()
    out = subprocess.run([a.bench_view, str(a.claims), "200000", "500"],
                         stdout=subprocess.PIPE, check=True).stdout.decode()
    print("apply rate (bench_view):\n  " + out.replace("\n", "\n  ").rstrip(), flush=True)
    res["bench_view"] = out
    res["loadavg_end"] = os.getloadavg()
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    syncs = sorted(r["synced_s"] for r in res["api"])
    rsss = sorted(r["rss_mib"] for r in res["api"])
    print("load average (1, 5, 15 min): %s at the start, %s at the end" % (
        " ".join("%.2f" % x for x in res["loadavg_start"]), " ".join("%.2f" % x for x in res["loadavg_end"])))
    print("\nsummary: synced in %.2f / %.2f s (min / median), RSS %.1f / %.1f MiB; client-go protobuf %.2f / %.2f s, "
          "%d / %d MiB" % (syncs[0], syncs[len(syncs) // 2], rsss[0], rsss[len(rsss) // 2], *CLIENT_GO["protobuf"]))


if __name__ == "__main__":
    main()
