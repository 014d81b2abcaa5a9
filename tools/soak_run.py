#!/usr/bin/env python3
"""Soak: `dra-guard serve` under sustained wrk load for --seconds while its RSS
and open file descriptors are sampled; meanwhile the serving certificate is
rotated and the policy's freeze flipped (both by a ..data symlink swap, the
way the kubelet updates a mounted Secret or ConfigMap), a broken policy is
published once (the last good one must keep serving), and a prober sends a
review over a new TLS connection every --probe-interval seconds.

Fails on: any wrk error (connect, read, write, timeout, status >= 400); any
failed probe; a rotation or flip that does not take effect; RSS growing over
the second half of the load by more than noise (least-squares slope times the
span, against the larger of --rss-tolerance-kib and 3 residual standard
deviations); open fds growing under load, or not back to the idle baseline
once the load stops; a server that does not exit 0 on SIGTERM.

Prints a summary and writes every sample and event to --out (JSON).
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_lib as bl  # noqa: E402

MIX = ["slice-1.json", "slice-8.json", "slice-32.json", "slice-128.json", "slice-1-deny.json",
       "slice-32-deny.json", "claim-status.json", "pod-status.json"]


class Prober:
    """A review over a new connection (a full TLS handshake) every interval;
    every answer must be HTTP 200 with the request's uid echoed."""

    def __init__(self, srv, body_path, interval):
        self.srv = srv
        self.body = open(body_path, "rb").read()
        self.uid = json.loads(self.body)["request"]["uid"]
        self.interval = interval
        self.ok = 0
        self.failures = []
        self.max_s = 0.0
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop_flag.wait(self.interval):
            try:
                status, doc, dt = bl.post_review(self.srv.port, self.srv.ca, self.body, timeout=5)
                resp = (doc or {}).get("response") or {}
                if status != 200 or resp.get("uid") != self.uid or "allowed" not in resp:
                    raise bl.BenchError("HTTP %d %s" % (status, str(doc)[:200]))
                self.ok += 1
                self.max_s = max(self.max_s, dt)
            except Exception as e:  # noqa: BLE001 - every failure counts
                self.failures.append("%.1fs: %s: %s" % (time.time(), type(e).__name__, e))

    def stop(self):
        self.stop_flag.set()
        self.thread.join(30)


def wait_for(cond, timeout=20, step=0.05):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if cond():
                return True
        except Exception:  # noqa: BLE001 - not yet
            pass
        time.sleep(step)
    return False


def trend(samples, key, t_from):
    pts = [(s["t"], s[key]) for s in samples if s["t"] >= t_from]
    if len(pts) < 3:
        return None
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    slope, _, sd = bl.least_squares(xs, ys)
    span = xs[-1] - xs[0]
    return {"samples": len(pts), "span_s": round(span, 1), "slope_per_min": round(slope * 60, 2),
            "growth_over_span": round(slope * span, 1), "residual_sd": round(sd, 1),
            "min": min(ys), "max": max(ys), "first": ys[0], "last": ys[-1]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--bodies", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--seconds", type=int, default=600)
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--wrk-threads", type=int, default=1)
    ap.add_argument("--server-threads", type=int, default=0, help="0: the server's default")
    ap.add_argument("--sample", type=float, default=0, help="seconds between samples (0: seconds/60, 1..5)")
    ap.add_argument("--rotations", type=int, default=4)
    ap.add_argument("--flips", type=int, default=4, help="freeze flips (on, off, ...)")
    ap.add_argument("--probe-interval", type=float, default=0.25)
    ap.add_argument("--rss-tolerance-kib", type=int, default=2048)
    args = ap.parse_args()
    if args.seconds < 10:
        print("soak: --seconds must be at least 10", file=sys.stderr)
        return 2
    sample_s = args.sample or min(5.0, max(1.0, args.seconds / 60.0))
    work = args.workdir
    os.makedirs(work, exist_ok=True)

    ca_dir = bl.make_certs(os.path.join(work, "ca"))
    secret = bl.MountedDir(os.path.join(work, "secret"))
    cert_files = lambda: {n: open(os.path.join(ca_dir, n)).read() for n in ("tls.crt", "tls.key", "ca.crt")}  # noqa
    secret.publish(cert_files())
    policy = bl.example_policy()
    cm = bl.MountedDir(os.path.join(work, "policy"))
    cm.publish({"policy.yaml": policy, "freeze": "false", "freeze-reason": ""})

    extra = ["--policy-dir", cm.path, "--log-level", "warn"]
    if args.server_threads:
        extra += ["--threads", str(args.server_threads)]
    srv = bl.Server(args.bin, os.path.join(secret.path, "tls.crt"), os.path.join(secret.path, "tls.key"),
                    os.path.join(ca_dir, "ca.crt"), os.path.join(work, "server.log"), extra)
    pid = srv.pid
    bodies = [os.path.join(args.bodies, b) for b in MIX]
    res = {"soak": "dra-guard serve under wrk load", "machine": bl.machine(), "seconds": args.seconds,
           "conns": args.conns, "bodies": MIX, "server_cmd": " ".join(srv.cmd), "sample_s": sample_s,
           "events": [], "samples": []}
    failures = []
    wrk = prober = None
    try:
        for b in bodies:
            bl.check_verdict(srv.port, srv.ca, b, None)
        # Idle baseline, after one round of requests set up what lasts
        # (thread arenas, TLS session state).
        time.sleep(0.5)
        res["fds_idle_before"] = bl.fd_count(pid)
        res["rss_idle_before_kib"] = bl.status_kib(pid, "VmRSS")
        print("soak: PID %d, %d fds and %.1f MiB RSS idle; %ds of wrk -c%d over %d bodies; sampling every %.0fs" % (
            pid, res["fds_idle_before"], res["rss_idle_before_kib"] / 1024, args.seconds, args.conns, len(bodies),
            sample_s), flush=True)

        schedule = []
        for i in range(args.rotations):
            schedule.append(((i + 0.5) / max(args.rotations, 1) * 0.9, "rotate"))
        for i in range(args.flips):
            schedule.append(((i + 0.75) / max(args.flips, 1) * 0.9, "freeze-on" if i % 2 == 0 else "freeze-off"))
        if args.flips:
            schedule.append((0.93, "broken-policy"))
        schedule.sort()
        t_start = time.time()
        wrk = subprocess.Popen(bl.wrk_cmd(srv.port, bodies, args.conns, args.seconds, args.wrk_threads),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        prober = Prober(srv, bodies[0], args.probe_interval)
        cpu0 = bl.cpu_ticks(pid)
        next_sample = t_start
        freeze = False
        while wrk.poll() is None:
            now = time.time()
            t = now - t_start
            if schedule and t >= schedule[0][0] * args.seconds:
                _, what = schedule.pop(0)
                ev = {"t": round(t, 1), "event": what}
                if what == "rotate":
                    bl.new_serving_cert(ca_dir)
                    fp = bl.cert_fingerprint(os.path.join(ca_dir, "tls.crt"))
                    secret.publish(cert_files())
                    t0 = time.time()
                    ok = wait_for(lambda: bl.served_fingerprint(srv.port, srv.ca) == fp)
                    ev.update({"ok": ok, "took_s": round(time.time() - t0, 2), "fingerprint": fp[:16]})
                elif what in ("freeze-on", "freeze-off"):
                    freeze = what == "freeze-on"
                    cm.publish({"policy.yaml": policy, "freeze": "true" if freeze else "false",
                                "freeze-reason": "soak test" if freeze else ""})
                    t0 = time.time()
                    ok = wait_for(lambda: srv.metrics().get("dra_guard_freeze_active") == (1.0 if freeze else 0.0))
                    ev.update({"ok": ok, "took_s": round(time.time() - t0, 2)})
                else:
                    before = srv.metrics().get('dra_guard_policy_reload_total{result="error"}', 0)
                    cm.publish({"policy.yaml": policy + "notAPolicyKey: 1\n", "freeze": "false"})
                    t0 = time.time()
                    ok = wait_for(lambda: srv.metrics().get('dra_guard_policy_reload_total{result="error"}', 0) > before)
                    ok = ok and srv.metrics().get("dra_guard_ready") == 1.0
                    # The last good policy keeps serving: the freeze state it had stays.
                    ok = ok and srv.metrics().get("dra_guard_freeze_active") == (1.0 if freeze else 0.0)
                    ev.update({"ok": ok, "took_s": round(time.time() - t0, 2)})
                    cm.publish({"policy.yaml": policy, "freeze": "false", "freeze-reason": ""})
                    freeze = False
                    ok2 = wait_for(lambda: srv.metrics().get("dra_guard_freeze_active") == 0.0)
                    ev["recovered"] = ok2
                    ev["ok"] = ev["ok"] and ok2
                res["events"].append(ev)
                print("  t=%5.1fs %-13s %s (%.2fs)" % (t, what, "ok" if ev["ok"] else "FAILED", ev["took_s"]),
                      flush=True)
                if not ev["ok"]:
                    failures.append("%s at t=%.1fs did not take effect" % (what, t))
                continue
            if now >= next_sample:
                s = {"t": round(t, 2), "rss_kib": bl.status_kib(pid, "VmRSS"), "hwm_kib": bl.status_kib(pid, "VmHWM"),
                     "fds": bl.fd_count(pid), "threads": bl.status_kib(pid, "Threads"),
                     "cpu_s": round((bl.cpu_ticks(pid) - cpu0) / bl.CLK_TCK, 2)}
                res["samples"].append(s)
                next_sample += sample_s
            time.sleep(min(0.2, max(0.01, next_sample - time.time())))
            if not srv.alive():
                raise bl.BenchError("the server died under load; log:\n%s" % srv.log()[-3000:])
        out, _ = wrk.communicate()
        wrk_res = bl.parse_wrk(out)
        prober.stop()
        res["wrk"] = wrk_res
        res["cpu_s"] = round((bl.cpu_ticks(pid) - cpu0) / bl.CLK_TCK, 2)
        res["cpu_us_per_req"] = round(res["cpu_s"] * 1e6 / max(wrk_res["requests"], 1), 1)
        res["probes"] = {"ok": prober.ok, "failed": len(prober.failures), "failures": prober.failures[:20],
                         "max_ms": round(prober.max_s * 1000, 1)}
        if wrk_res["errors"]:
            failures.append("wrk saw %d errors: %s" % (wrk_res["errors"],
                                                       {k: wrk_res[k] for k in bl.WRK_ERRORS if wrk_res[k]}))
        if prober.failures:
            failures.append("%d of %d probes failed: %s" % (len(prober.failures), prober.ok + len(prober.failures),
                                                            prober.failures[:3]))

        # After the load: every connection closed on both ends; fds back to idle.
        settled = wait_for(lambda: bl.fd_count(pid) <= res["fds_idle_before"], timeout=15, step=0.2)
        res["fds_idle_after"] = bl.fd_count(pid)
        res["rss_idle_after_kib"] = bl.status_kib(pid, "VmRSS")
        res["hwm_kib"] = bl.status_kib(pid, "VmHWM")
        if not settled:
            failures.append("open fds %d after the load, %d before it" % (res["fds_idle_after"],
                                                                          res["fds_idle_before"]))
        # Trends over the second half of the load.
        half = args.seconds / 2.0
        rss = trend(res["samples"], "rss_kib", half)
        fds = trend(res["samples"], "fds", half)
        res["rss_trend_second_half"] = rss
        res["fd_trend_second_half"] = fds
        if rss:
            limit = max(args.rss_tolerance_kib, 3 * rss["residual_sd"])
            rss["limit_kib"] = round(limit, 1)
            if rss["growth_over_span"] > limit:
                failures.append("RSS grew %.0f KiB over the last %.0fs (slope %.1f KiB/min; limit %.0f KiB)" % (
                    rss["growth_over_span"], rss["span_s"], rss["slope_per_min"], limit))
        else:
            failures.append("too few samples for an RSS trend")
        if fds and fds["growth_over_span"] > 2 and fds["last"] > fds["first"]:
            failures.append("open fds grew under load: %d -> %d (slope %.2f/min)" % (
                fds["first"], fds["last"], fds["slope_per_min"]))
        res["server_log_lines"] = srv.log().count("\n")
    except bl.BenchError as e:
        failures.append(str(e))
    finally:
        if wrk and wrk.poll() is None:
            wrk.terminate()
            wrk.wait()
        if prober:
            prober.stop()
        code = srv.stop()
        res["exit_code"] = code
        if code != 0:
            failures.append("server exited with %s on SIGTERM" % code)

    res["ok"] = not failures
    res["failures"] = failures
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)

    w = res.get("wrk", {})
    rss = res.get("rss_trend_second_half") or {}
    print("soak: %d requests in %ds (%.0f req/s), errors %s; p50 %.2f ms, p99 %.2f ms, max %.1f ms; "
          "server CPU %.0f us/request" % (w.get("requests", 0), args.seconds, w.get("rps", 0), w.get("errors", "?"),
                                         w.get("p50_us", 0) / 1000, w.get("p99_us", 0) / 1000,
                                         w.get("max_us", 0) / 1000, res.get("cpu_us_per_req", 0)))
    p = res.get("probes", {})
    print("soak: probes over new TLS connections: %d ok, %d failed, slowest %.1f ms" % (
        p.get("ok", 0), p.get("failed", 0), p.get("max_ms", 0)))
    if res["samples"]:
        r = [s["rss_kib"] for s in res["samples"]]
        print("soak: RSS %.1f MiB idle, %.1f-%.1f MiB under load, %.1f MiB idle after; peak %.1f MiB" % (
            res.get("rss_idle_before_kib", 0) / 1024, min(r) / 1024, max(r) / 1024,
            res.get("rss_idle_after_kib", 0) / 1024, res.get("hwm_kib", 0) / 1024))
    if rss:
        print("soak: RSS second half: slope %+.1f KiB/min, %+.0f KiB over %.0fs (limit %.0f KiB, residual sd %.0f KiB)" % (
            rss["slope_per_min"], rss["growth_over_span"], rss["span_s"], rss.get("limit_kib", 0), rss["residual_sd"]))
    if res["samples"]:
        f = [s["fds"] for s in res["samples"]]
        print("soak: fds %s idle, %d-%d under load, %s idle after" % (res.get("fds_idle_before"), min(f), max(f),
                                                                     res.get("fds_idle_after")))
    print("soak: %d events (%s), server exit %s" % (len(res["events"]), ", ".join(
        "%s%s" % (e["event"], "" if e["ok"] else " FAILED") for e in res["events"]), res.get("exit_code")))
    for msg in failures:
        print("soak: FAIL: %s" % msg, file=sys.stderr)
    print("soak: %s; results in %s" % ("PASS" if not failures else "FAIL", args.out))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
