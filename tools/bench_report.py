#!/usr/bin/env python3
"""Merge the parts of `make bench` into one results.json and print the summary.

Reads, from --dir, whatever exists of engine.json (bench_engine), profile.json
(tools/bench_profile.py), e2e.json (tools/bench_e2e.py), replay.json (the replay
step of tools/bench.sh), gate.json (tools/bench_gate.py) and compare/<peer>/
runs.csv (../shared/bench/compare.sh with dra-guard as A and the peer as B).
"""

import argparse
import csv
import json
import os
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_lib as bl  # noqa: E402


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def compare_summary(run_dir):
    """Per (devices, conns) the mean over kept rounds, A and B, and the ratios."""
    path = os.path.join(run_dir, "runs.csv")
    if not os.path.exists(path):
        return None
    acc = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["kept"] != "1" or r["variant"] != "allow":
                continue
            k = (int(r["devices"]), int(r["conns"]))
            a = acc.setdefault(k, {"body_bytes": int(r["body_bytes"]), "A": [], "B": []})
            a[r["server"]].append(r)
    rows = []
    for (n, c), a in sorted(acc.items()):
        out = {"devices": n, "conns": c, "body_bytes": a["body_bytes"]}
        for s in ("A", "B"):
            runs = a[s]
            if not runs:
                continue
            req = sum(int(r["requests"]) for r in runs)
            out[s] = {
                "name": runs[0]["name"],
                "rps": round(sum(float(r["rps"]) for r in runs) / len(runs), 1),
                "p99_ms": round(sum(float(r["p99_us"]) for r in runs) / len(runs) / 1000, 2),
                "cpu_us_per_req": round(sum(float(r["server_cpu_us_per_req"]) * int(r["requests"]) for r in runs)
                                        / req, 1) if req else None,
                "errors": sum(int(r["errors"]) for r in runs),
                "peak_rss_mib": round(max(int(r["vmhwm_kib"]) for r in runs) / 1024, 1),
                "rounds": len(runs),
                "rps_spread_pct": round(100 * (max(float(r["rps"]) for r in runs) - min(float(r["rps"]) for r in runs))
                                        / max(float(r["rps"]) for r in runs), 1),
                "noise_max_pct": round(max(float(r["other_cpu_pct"]) + float(r["steal_pct"]) for r in runs), 1),
            }
        if "A" in out and "B" in out:
            out["rps_ratio"] = round(out["A"]["rps"] / out["B"]["rps"], 2) if out["B"]["rps"] else None
            out["cpu_ratio"] = round(out["B"]["cpu_us_per_req"] / out["A"]["cpu_us_per_req"], 2) \
                if out["A"]["cpu_us_per_req"] else None
        rows.append(out)
    header = ""
    hp = os.path.join(run_dir, "header.txt")
    if os.path.exists(hp):
        header = open(hp).read()
    return {"dir": run_dir, "header": header, "rows": rows}


def print_engine(eng):
    print("engine (bench_engine, best of %d rounds, built-in policy): ns per operation" % eng["rounds"])
    print("%-14s %8s %9s %9s %9s %9s %9s %12s %8s" % ("body", "bytes", "skip", "decode", "decide", "encode",
                                                        "total", "decisions/s", "MB/s"))
    for b in eng["bodies"]:
        print("%-14s %8d %9.0f %9.0f %9.0f %9.0f %9.0f %12.0f %8.0f" % (
            b["name"], b["bytes"], b["skip_ns"], b["decode_ns"], b["decide_ns"], b["encode_ns"], b["total_ns"],
            b["decisions_per_second"], b["bytes"] / b["total_ns"] * 1e3))


def print_profile(prof):
    print("callgrind, instructions inside admission_handle:")
    print("%-14s %8s %12s %9s %10s %12s" % ("body", "bytes", "instr/call", "instr/B", "decode/B", "decide/call"))
    for r in prof["bodies"]:
        print("%-14s %8d %12d %9.1f %10.1f %12d" % (r["name"], r["bytes"], r["instr_per_call"], r["instr_per_byte"],
                                                    r["decode_instr_per_byte"], r["engine_decide_instr_per_call"]))


def print_e2e(e2e):
    print("end to end (dra-guard serve, TLS keep-alive, wrk %ds per run):" % e2e["duration_s"])
    print("%-7s %4s %7s %5s %9s %8s %8s %8s %6s %8s %6s" % ("threads", "devs", "KiB", "conns", "req/s", "p50 ms",
                                                             "p99 ms", "max ms", "errors", "cpu us/r", "noise"))
    for part in ("main", "scaling"):
        for r in e2e[part]["runs"]:
            print("%-7s %4d %7.1f %5d %9.0f %8.2f %8.2f %8.2f %6d %8.0f %5.0f%%" % (
                r["server_threads"], r["devices"], r["body_bytes"] / 1024, r["conns"], r["rps"], r["p50_us"] / 1000,
                r["p99_us"] / 1000, r["max_us"] / 1000, r["errors"], r["server_cpu_us_per_req"],
                r["other_cpu_pct"] + r["steal_pct"]))
        if part == "main" and e2e["scaling"]["runs"]:
            print("  -- scaling --")
    for s in ([e2e["main"].get("session")] if e2e["main"].get("session") else []) + e2e["scaling"]["sessions"]:
        print("  server %s threads: RSS %.1f MiB idle at start, %.1f MiB before the runs, %.1f MiB after" % (
            s["server_threads"], s.get("rss_start_kib", 0) / 1024, s.get("rss_before_kib", 0) / 1024,
            s.get("rss_after_kib", 0) / 1024))


def print_compare(peer, cmp):
    print("compare.sh: dra-guard (A) vs %s (B), mean of rounds; ratio = A/B req/s, cpu ratio = B/A us per request" % peer)
    print("  %s" % (cmp["header"].splitlines()[0] if cmp["header"] else cmp["dir"]))
    print("%4s %7s %5s | %9s %9s %6s | %8s %8s %6s | %7s %7s | %6s" % ("devs", "KiB", "conns", "A req/s", "B req/s",
                                                                      "ratio", "A us/r", "B us/r", "ratio",
                                                                      "A p99ms", "B p99ms", "noise"))
    for r in cmp["rows"]:
        if "A" not in r or "B" not in r:
            continue
        print("%4d %7.1f %5d | %9.0f %9.0f %6.2f | %8.0f %8.0f %6.2f | %7.2f %7.2f | %5.0f%%" % (
            r["devices"], r["body_bytes"] / 1024, r["conns"], r["A"]["rps"], r["B"]["rps"], r["rps_ratio"],
            r["A"]["cpu_us_per_req"], r["B"]["cpu_us_per_req"], r["cpu_ratio"], r["A"]["p99_ms"], r["B"]["p99_ms"],
            max(r["A"]["noise_max_pct"], r["B"]["noise_max_pct"])))


def markdown(res, soak):
    """The figures as Markdown tables, for docs/performance.md."""
    m = res["machine"]
    out = ["Measured %s on %d CPUs (%s), Linux %s; load average at the end %s." % (
        res["generated"][:10], m["cpus"], m["cpu_model"], m["kernel"], " ".join(res.get("load_avg", [])))]
    eng = res.get("engine")
    if eng:
        out += ["", "Engine (`bench_engine`, best of %d rounds, built-in policy), ns per operation:" % eng["rounds"], "",
                "| body | bytes | skip (scan only) | decode | decide | encode | total | decisions/s |",
                "|---|--:|--:|--:|--:|--:|--:|--:|"]
        for b in eng["bodies"]:
            out.append("| %s | %d | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |" % (
                b["name"], b["bytes"], b["skip_ns"], b["decode_ns"], b["decide_ns"], b["encode_ns"], b["total_ns"],
                b["decisions_per_second"]))
    prof = res.get("profile")
    if prof:
        out += ["", "Instructions inside `admission_handle` (callgrind, `--toggle-collect=admission_handle`):", "",
                "| body | bytes | instructions / request | per byte | decode per byte | decide / request | encode / request |",
                "|---|--:|--:|--:|--:|--:|--:|"]
        for r in prof["bodies"]:
            out.append("| %s | %d | %d | %.1f | %.1f | %d | %d |" % (
                r["name"], r["bytes"], r["instr_per_call"], r["instr_per_byte"], r["decode_instr_per_byte"],
                r["engine_decide_instr_per_call"], r["review_encode_instr_per_call"]))
        hot = prof.get("hot_functions", {})
        if hot.get("functions"):
            out += ["", "Own instructions by function, %s: %s." % (hot["body"], ", ".join(
                "`%s` %.0f%%" % (h["function"].split(":")[-1], h["share_pct"]) for h in hot["functions"][:10]))]
    e2e = res.get("end_to_end")
    if e2e:
        for part, title in (("main", "End to end, server at its default thread count (%d)" % m["cpus"]),
                            ("scaling", "Scaling: server `--threads` 1, 2, 4")):
            runs = e2e[part]["runs"]
            if not runs:
                continue
            out += ["", "%s; wrk -t%d, %d s per run, TLS keep-alive:" % (title, e2e["wrk_threads"], e2e["duration_s"]),
                    "", "| threads | devices | body KiB | conns | req/s | p50 ms | p90 ms | p99 ms | max ms | errors "
                        "| server CPU µs/req | RSS MiB after | noise |",
                    "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
            for r in runs:
                out.append("| %s | %d | %.1f | %d | %.0f | %.2f | %.2f | %.2f | %.1f | %d | %.0f | %.1f | %.0f%% |" % (
                    r["server_threads"], r["devices"], r["body_bytes"] / 1024, r["conns"], r["rps"],
                    r["p50_us"] / 1000, r["p90_us"] / 1000, r["p99_us"] / 1000, r["max_us"] / 1000, r["errors"],
                    r["server_cpu_us_per_req"], r["rss_kib"] / 1024, r["other_cpu_pct"] + r["steal_pct"]))
    perf = res.get("perf")
    if perf:
        out += ["", "Server CPU by component (perf record under wrk -c16):", "",
                "| body | req/s | " + " | ".join(g.split(" (")[0] for g in
                                                    perf["sizes"][0]["groups_pct"]) + " |",
                "|---|--:|" + "--:|" * len(perf["sizes"][0]["groups_pct"])]
        keys = list(perf["sizes"][0]["groups_pct"])
        for e in perf["sizes"]:
            out.append("| slice-%d | %.0f | %s |" % (e["devices"], e["rps"], " | ".join(
                "%.0f%%" % e["groups_pct"].get(k, 0) for k in keys)))
    for peer, cmp in res.get("compare", {}).items():
        out += ["", "`compare.sh`: dra-guard (A) against %s (B); %s" % (
            peer, cmp["header"].splitlines()[0] if cmp["header"] else ""), "",
                "| devices | body KiB | conns | dra-guard req/s | %s req/s | req/s ratio | dra-guard CPU µs/req "
                "| %s CPU µs/req | CPU ratio | dra-guard p99 ms | %s p99 ms |" % (peer, peer, peer),
                "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
        for r in cmp["rows"]:
            if "A" in r and "B" in r:
                out.append("| %d | %.1f | %d | %.0f | %.0f | %.2f× | %.0f | %.0f | %.2f× | %.2f | %.2f |" % (
                    r["devices"], r["body_bytes"] / 1024, r["conns"], r["A"]["rps"], r["B"]["rps"], r["rps_ratio"],
                    r["A"]["cpu_us_per_req"], r["B"]["cpu_us_per_req"], r["cpu_ratio"], r["A"]["p99_ms"],
                    r["B"]["p99_ms"]))
    if soak:
        w = soak.get("wrk", {})
        rss = soak.get("rss_trend_second_half") or {}
        samples = soak.get("samples") or [{"rss_kib": 0, "fds": 0}]
        out += ["", "Soak (`make soak`, %d s, wrk -c%d over %d bodies): %d requests, %d errors, %.0f req/s, "
                    "p99 %.2f ms; %d probes over new connections, %d failed; %d certificate rotations and %d policy "
                    "changes under load; RSS %.1f MiB idle, %.1f–%.1f MiB under load, %.1f MiB idle after; "
                    "second-half RSS slope %+.1f KiB/min; fds %s idle, %d–%d under load, %s after; %s." % (
                        soak["seconds"], soak["conns"], len(soak["bodies"]), w.get("requests", 0), w.get("errors", 0),
                        w.get("rps", 0), w.get("p99_us", 0) / 1000, soak.get("probes", {}).get("ok", 0),
                        soak.get("probes", {}).get("failed", 0),
                        sum(1 for e in soak["events"] if e["event"] == "rotate"),
                        sum(1 for e in soak["events"] if e["event"] != "rotate"),
                        soak.get("rss_idle_before_kib", 0) / 1024, min(s["rss_kib"] for s in samples) / 1024,
                        max(s["rss_kib"] for s in samples) / 1024, soak.get("rss_idle_after_kib", 0) / 1024,
                        rss.get("slope_per_min", 0), soak.get("fds_idle_before"), min(s["fds"] for s in samples),
                        max(s["fds"] for s in samples), soak.get("fds_idle_after"),
                        "PASS" if soak.get("ok") else "FAIL")]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", default="make bench")
    ap.add_argument("--markdown", help="also write the tables as Markdown here")
    ap.add_argument("--soak", help="a soak results.json to include in the Markdown")
    args = ap.parse_args()
    res = {"generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": bl.machine(),
           "command": args.command}
    try:
        res["load_avg"] = open("/proc/loadavg").read().split()[:3]
    except OSError:
        pass
    eng = load(os.path.join(args.dir, "engine.json"))
    prof = load(os.path.join(args.dir, "profile.json"))
    e2e = load(os.path.join(args.dir, "e2e.json"))
    sprof = load(os.path.join(args.dir, "profile-server.json"))
    if eng:
        res["engine"] = eng
        print_engine(eng)
        print()
    if prof:
        res["profile"] = prof
        print_profile(prof)
        print()
    if sprof:
        res["profile_server"] = sprof
        for e in sprof["sizes"]:
            print("callgrind, whole server, slice-%d (%d bytes): %d instructions per request" % (
                e["devices"], e["body_bytes"], e["ir_per_request"]))
        print()
    if e2e:
        res["end_to_end"] = e2e
        print_e2e(e2e)
        print()
    perf = load(os.path.join(args.dir, "perf.json"))
    if perf:
        res["perf"] = perf
        for e in perf["sizes"]:
            print("perf, slice-%d at %.0f req/s: server CPU by component: %s" % (
                e["devices"], e["rps"], ", ".join("%s %.0f%%" % (k.split(" (")[0], v) for k, v in e["groups_pct"].items())))
        print()
    replay = load(os.path.join(args.dir, "replay.json"))
    if replay:
        res["replay"] = replay
        print("replay (one core): %.0f MB/s of guarded writes, %.0f MB/s without ledger samples, %.0f MB/s of a busy "
              "cluster's log" % (replay["guarded"]["mb_per_s"], replay["guarded_no_ledger"]["mb_per_s"],
                                 replay["mixed"]["mb_per_s"]))
        print()
    gate = load(os.path.join(args.dir, "gate.json"))
    if gate:
        res["gate"] = gate
        print("gate release (real API server, %d Pods, median of %d rounds): %.2f s, %.2fx the API server's own time "
              "for the same PATCHes (%.2f s)" % (gate["pods"], len(gate["rounds"]), gate["median_release_s"],
                                                  gate["median_ratio"], gate["median_baseline_s"]))
        print()
    cdir = os.path.join(args.dir, "compare")
    if os.path.isdir(cdir):
        res["compare"] = {}
        for peer in sorted(os.listdir(cdir)):
            cmp = compare_summary(os.path.join(cdir, peer))
            if cmp:
                res["compare"][peer] = cmp
                print_compare(peer, cmp)
                print()
    ok = True
    if e2e is not None and not e2e.get("ok"):
        ok = False
    for peer, cmp in res.get("compare", {}).items():
        for r in cmp["rows"]:
            if r.get("A", {}).get("errors") or r.get("B", {}).get("errors"):
                ok = False
    res["ok"] = ok
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    print("results: %s" % args.out)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(res, load(args.soak) if args.soak else None))
        print("markdown: %s" % args.markdown)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
