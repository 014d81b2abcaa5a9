#!/usr/bin/env python3
"""The cluster view at scale, side by side with client-go's figures.

Loads ../shared/bench/scale/loader.py's data set (5,000 nodes: 5,000 one-slice
pools of 8 mapped devices, 40,000 devices; 100,000 allocated claims) into a
real kube-apiserver (tests/e2e/envtest.py), then measures dra-guard serve:

  api     synced in (process start to /readyz 200, every resource listed)
          and RSS after the sync, RUNS times, from the API server;
  file    the same from a local HTTPS file server answering the API server's
          saved LIST bodies whole: what the client costs apart from the
          API server; slices only and claims only give RSS per device and
          per claim;
  cpu     admission CPU per request (the guard's user+system time over
          REQUESTS ResourceSlice reviews) with the view synced and with
          --cluster-view=off;
  events  bench_view: WATCH events applied per second (no API server can
          write 50,000 objects a second; the apply path is measured alone).

    tools/bench_scale.py [--runs 3] [--requests 3000] [--out build/bench-scale.json] [--data DIR]

--data DIR (or BENCH_SCALE_DATA) keeps etcd's data directory there and
reuses it, so a second run skips the load.

Needs ../shared/envtest/kube-apiserver (or KUBE_APISERVER), etcd, and
about 4 minutes to load. Figures go to stdout and --out as JSON.
"""

import argparse
import http.server
import json
import os
import ssl
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))

import envtest  # noqa: E402
import guard  # noqa: E402

LOADER = os.path.join(envtest.SHARED, "bench", "scale", "loader.py")
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
        deadline = t0 + 300
        while time.monotonic() < deadline:
            try:
                if s.ready()[0]:
                    break
            except OSError:
                pass
            time.sleep(0.01)
        else:
            raise SystemExit("%s: not synced in 300 s:\n%s" % (label, s.log()[-3000:]))
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


def admission_cpu(s, n):
    """The guard's CPU seconds per review over n ResourceSlice reviews."""
    c = guard.Client(s)
    review = guard.slice_review()
    for _ in range(200):
        c.review(review)
    before = cpu_s(s.proc.pid)
    for _ in range(n):
        c.review(review)
    used = cpu_s(s.proc.pid) - before
    c.close()
    return used / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench-scale.json"))
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--claims", type=int, default=100000)
    ap.add_argument("--data", default=os.environ.get("BENCH_SCALE_DATA", ""),
                    help="keep etcd's data here and reuse it next time (skips the 4-minute load)")
    ap.add_argument("--bench-view", default=os.path.join(ROOT, "build", "release", "bench", "bench_view"))
    a = ap.parse_args()
    envtest.require("bench-scale")
    if not os.path.exists(LOADER):
        raise SystemExit("bench-scale: no %s" % LOADER)
    res = {"nodes": a.nodes, "devices": a.nodes * 8, "claims": a.claims, "client_go": CLIENT_GO}
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
        kc = env.kubeconfig()
        with guard.TempDir() as d:
            guard.make_certs(d)
            print("from the API server (%s):" % env.url, flush=True)
            runs = []
            for i in range(a.runs):
                synced, rss, s = sync_run(d, ["--kubeconfig", kc], "run %d" % (i + 1))
                if i == a.runs - 1:
                    res["cpu_per_review_view_s"] = admission_cpu(s, a.requests)
                s.kill()
                runs.append({"synced_s": synced, "rss_mib": rss})
            res["api"] = runs
            _, rss_off, s = sync_run(d, ["--cluster-view=off"], "--cluster-view=off")
            res["rss_off_mib"] = rss_off
            res["cpu_per_review_off_s"] = admission_cpu(s, a.requests)
            s.kill()
            print("  admission CPU per review: %.1f us with the view, %.1f us without (%+.1f%%)" % (
                res["cpu_per_review_view_s"] * 1e6, res["cpu_per_review_off_s"] * 1e6,
                100 * (res["cpu_per_review_view_s"] / res["cpu_per_review_off_s"] - 1)), flush=True)
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
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    syncs = sorted(r["synced_s"] for r in res["api"])
    rsss = sorted(r["rss_mib"] for r in res["api"])
    print("\nsummary: synced in %.2f / %.2f s (min / median), RSS %.1f / %.1f MiB; client-go protobuf %.2f / %.2f s, "
          "%d / %d MiB" % (syncs[0], syncs[len(syncs) // 2], rsss[0], rsss[len(rsss) // 2], *CLIENT_GO["protobuf"]))


if __name__ == "__main__":
    main()
