#!/usr/bin/env python3
"""End-to-end benchmark: the real `dra-guard serve` over TLS with keep-alive on
loopback, loaded by wrk (bench/wrk_post.lua) at several concurrency levels and
body sizes, at the default thread count and then at each of --scale-threads.

For every run: requests/s, p50/p90/p99/p99.9/max latency, wrk's errors (any is a
failure), the server's CPU time per request (from /proc/PID/stat), its RSS and
peak RSS, and what else the machine did meanwhile (wrk's CPU, other processes,
hypervisor steal). A run during which other processes took more than
--busy-pct % of a CPU is rerun (up to --retries times) after waiting for a quiet
second; the figures kept say how disturbed they were.

Writes JSON to --out and prints a table per server. Exit 1 on any error response
or failed check, 2 on bad usage.
"""

import argparse
import json
import os
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_lib as bl  # noqa: E402

HEADER = "%-7s %4s %7s %5s %9s %8s %8s %8s %8s %6s %7s %7s %6s %6s %8s %8s" % (
    "threads", "devs", "KiB", "conns", "req/s", "p50 ms", "p90 ms", "p99 ms", "max ms", "errors",
    "srv cpu", "us/req", "wrk", "other", "RSS MiB", "HWM MiB")


def row(r):
    return "%-7s %4d %7.1f %5d %9.0f %8.2f %8.2f %8.2f %8.2f %6d %6.0f%% %7.0f %5.0f%% %5.0f%% %8.1f %8.1f%s" % (
        r["server_threads"], r["devices"], r["body_bytes"] / 1024, r["conns"], r["rps"], r["p50_us"] / 1000,
        r["p90_us"] / 1000, r["p99_us"] / 1000, r["max_us"] / 1000, r["errors"], r["server_cpu_pct"],
        r["server_cpu_us_per_req"], r["wrk_cpu_pct"], r["other_cpu_pct"], r["rss_kib"] / 1024,
        r["hwm_kib"] / 1024, "  disturbed" if r["disturbed"] else "")


def measure(srv, body, conns, seconds, wrk_threads):
    pid = srv.pid
    bl.reset_hwm(pid)
    b0, s0 = bl.sys_ticks()
    c0 = bl.cpu_ticks(pid)
    w0 = bl.children_cpu()
    t0 = time.monotonic()
    res = bl.run_wrk(srv.port, [body], conns, seconds, wrk_threads)
    wall = time.monotonic() - t0
    w1 = bl.children_cpu()
    c1 = bl.cpu_ticks(pid)
    b1, s1 = bl.sys_ticks()
    if not srv.alive():
        raise bl.BenchError("the server died during a run; log:\n%s" % srv.log()[-3000:])
    srv_s = (c1 - c0) / bl.CLK_TCK
    wrk_s = w1 - w0
    other_s = max(0.0, (b1 - b0) / bl.CLK_TCK - srv_s - wrk_s)
    n = res["requests"]
    res.update({
        "wall_s": round(wall, 3),
        "server_cpu_s": round(srv_s, 3),
        "server_cpu_pct": round(100 * srv_s / wall, 1),
        "server_cpu_us_per_req": round(srv_s * 1e6 / n, 1) if n else None,
        "wrk_cpu_pct": round(100 * wrk_s / wall, 1),
        "other_cpu_pct": round(100 * other_s / wall, 1),
        "steal_pct": round(100 * (s1 - s0) / bl.CLK_TCK / wall, 1),
        "rss_kib": bl.status_kib(pid, "VmRSS"),
        "hwm_kib": bl.status_kib(pid, "VmHWM"),
    })
    return res


def session(args, threads, sizes, conns_list, out_rows, certs):
    """One server process: verify, warm up, measure every size x conns."""
    label = str(threads) if threads else "default"
    extra = ["--log-level", "warn"]
    if threads:
        extra += ["--threads", str(threads)]
    log = os.path.join(args.workdir, "server-t%s.log" % label)
    srv = bl.Server(args.bin, os.path.join(certs, "tls.crt"), os.path.join(certs, "tls.key"),
                    os.path.join(certs, "ca.crt"), log, extra)
    info = {"server_threads": threads or os.cpu_count(), "cmd": " ".join(srv.cmd), "pid": srv.pid}
    try:
        for n in sizes:
            bl.check_verdict(srv.port, srv.ca, os.path.join(args.bodies, "slice-%d.json" % n), True)
            bl.check_verdict(srv.port, srv.ca, os.path.join(args.bodies, "slice-%d-deny.json" % n), False)
        info["rss_start_kib"] = bl.status_kib(srv.pid, "VmRSS")
        info["fds_start"] = bl.fd_count(srv.pid)
        biggest = os.path.join(args.bodies, "slice-%d.json" % max(sizes))
        if args.warmup > 0:
            bl.run_wrk(srv.port, [biggest], max(conns_list), args.warmup, args.wrk_threads)
        info["rss_before_kib"] = bl.status_kib(srv.pid, "VmRSS")
        print("server threads %s (PID %d): RSS %.1f MiB at start, %.1f MiB after warm-up, %d fds" % (
            label, srv.pid, info["rss_start_kib"] / 1024, info["rss_before_kib"] / 1024, info["fds_start"]))
        print(HEADER)
        for n in sizes:
            body = os.path.join(args.bodies, "slice-%d.json" % n)
            size = os.path.getsize(body)
            for c in conns_list:
                attempts = 0
                while True:
                    attempts += 1
                    r = measure(srv, body, c, args.duration, args.wrk_threads)
                    noisy = r["other_cpu_pct"] + r["steal_pct"] > args.busy_pct
                    if noisy and attempts <= args.retries:
                        print("  (disturbed run: other %.0f%% steal %.0f%% of a CPU; rerunning)" % (
                            r["other_cpu_pct"], r["steal_pct"]))
                        bl.wait_quiet(args.busy_pct, args.quiet_wait)
                        continue
                    break
                r.update({"server_threads": threads or os.cpu_count(), "devices": n, "body_bytes": size,
                          "conns": c, "wrk_threads": args.wrk_threads, "attempts": attempts,
                          "disturbed": noisy})
                out_rows.append(r)
                print(row(r), flush=True)
        # Connections close when wrk exits; give the server a moment to see it.
        deadline = time.time() + 10
        while bl.fd_count(srv.pid) > info["fds_start"] and time.time() < deadline:
            time.sleep(0.1)
        info["rss_after_kib"] = bl.status_kib(srv.pid, "VmRSS")
        info["hwm_session_kib"] = bl.status_kib(srv.pid, "VmHWM")
        info["fds_end"] = bl.fd_count(srv.pid)
        info["cpu_total_s"] = bl.cpu_ticks(srv.pid) / bl.CLK_TCK
    finally:
        code = srv.stop()
    info["exit_code"] = code
    print("server threads %s: RSS %.1f MiB before the runs, %.1f MiB after; fds %s -> %s; exit %s\n" % (
        label, info.get("rss_before_kib", 0) / 1024, info.get("rss_after_kib", 0) / 1024, info.get("fds_start"),
        info.get("fds_end"), code))
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--bodies", required=True, help="directory made by bench/gen_bodies.py")
    ap.add_argument("--out", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--duration", type=int, default=5, help="seconds per measured run")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--sizes", default="1 8 32 128")
    ap.add_argument("--conns", default="1 16 64")
    ap.add_argument("--scale-threads", default="1 2 4")
    ap.add_argument("--scale-conns", default="64")
    ap.add_argument("--scale-sizes", default="1 8 32 128")
    ap.add_argument("--wrk-threads", type=int, default=1)
    ap.add_argument("--busy-pct", type=float, default=25)
    ap.add_argument("--retries", type=int, default=1)
    ap.add_argument("--quiet-wait", type=int, default=10, help="seconds to wait for a quiet machine before a rerun")
    args = ap.parse_args()
    ints = lambda s: [int(x) for x in s.split()]  # noqa: E731
    try:
        sizes, conns = ints(args.sizes), ints(args.conns)
        scale_threads, scale_conns, scale_sizes = ints(args.scale_threads), ints(args.scale_conns), ints(args.scale_sizes)
    except ValueError as e:
        print("bench_e2e: bad list: %s" % e, file=sys.stderr)
        return 2
    os.makedirs(args.workdir, exist_ok=True)
    certs = bl.make_certs(os.path.join(args.workdir, "certs"))
    result = {"benchmark": "end-to-end", "machine": bl.machine(), "duration_s": args.duration,
              "wrk_threads": args.wrk_threads, "busy_pct": args.busy_pct, "tls": "TLS 1.3, ECDSA P-256, keep-alive",
              "main": {"runs": []}, "scaling": {"runs": [], "sessions": []}}
    failures = []
    try:
        if sizes and conns:
            print("== end to end: default server threads (%d), conns %s, %ds per run" % (
                os.cpu_count(), args.conns, args.duration))
            result["main"]["session"] = session(args, None, sizes, conns, result["main"]["runs"], certs)
        if scale_threads and scale_conns and scale_sizes:
            print("== scaling: server threads %s, conns %s" % (args.scale_threads, args.scale_conns))
            for t in scale_threads:
                result["scaling"]["sessions"].append(
                    session(args, t, scale_sizes, scale_conns, result["scaling"]["runs"], certs))
    except bl.BenchError as e:
        failures.append(str(e))
    for part in ("main", "scaling"):
        for r in result[part]["runs"]:
            if r["errors"]:
                failures.append("%s: %d errors at %d devices, c%d, %s threads: %s" % (
                    part, r["errors"], r["devices"], r["conns"], r["server_threads"],
                    {k: r[k] for k in bl.WRK_ERRORS if r[k]}))
    sessions = ([result["main"]["session"]] if "session" in result["main"] else []) + result["scaling"]["sessions"]
    for s in sessions:
        if s.get("exit_code") != 0:
            failures.append("server (%s threads) exited with %s on SIGTERM" % (s["server_threads"], s.get("exit_code")))
    result["ok"] = not failures
    result["failures"] = failures
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    for msg in failures:
        print("bench_e2e: FAIL: %s" % msg, file=sys.stderr)
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
