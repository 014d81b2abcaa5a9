#!/usr/bin/env python3
"""Where the server's CPU goes end to end: `perf record` of `dra-guard serve`
while wrk loads it, per body size, summed by shared object (TLS in
libgnutls/libnettle, HTTP in libmicrohttpd, the decision in dra-guard, the
kernel's share for sockets) and by symbol.

Sampling (perf's cpu-clock); the shares are estimates from a few thousand
samples, fine for "where", not for small differences.
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_lib as bl  # noqa: E402

GROUPS = [  # (label, substrings of the DSO name)
    ("TLS (gnutls, nettle, hogweed, gmp)", ("gnutls", "nettle", "hogweed", "gmp", "tasn1", "p11-kit", "idn2",
                                          "unistring")),
    ("HTTP (libmicrohttpd)", ("microhttpd",)),
    ("dra-guard (decode, decide, encode, handler)", ("dra-guard",)),
    ("libc (malloc, memcpy, ...)", ("libc.so", "libc-", "ld-linux")),
    ("kernel (sockets, epoll, scheduling)", ("kernel", "[k]", "vmlinux")),
]


def group_of(dso):
    for label, keys in GROUPS:
        if any(k in dso for k in keys):
            return label
    return "other (%s)" % dso


def report(data, sort, limit):
    p = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children", "--sort", sort,
                        "--percent-limit", str(limit), "-q"], capture_output=True, text=True)
    rows = []
    for line in p.stdout.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[0].endswith("%"):
            try:
                rows.append((float(parts[0][:-1]), parts[1].strip()))
            except ValueError:
                pass
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--bodies", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--sizes", default="1 128")
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--seconds", type=int, default=5)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    certs = bl.make_certs(os.path.join(args.workdir, "certs"))
    srv = bl.Server(args.bin, os.path.join(certs, "tls.crt"), os.path.join(certs, "tls.key"),
                    os.path.join(certs, "ca.crt"), os.path.join(args.workdir, "server.log"), ["--log-level", "warn"])
    out = {"profile": "perf record -F 2999 -g of dra-guard serve under wrk -c%d" % args.conns, "sizes": []}
    try:
        for n in [int(x) for x in args.sizes.split()]:
            body = os.path.join(args.bodies, "slice-%d.json" % n)
            data = os.path.join(args.workdir, "perf-%d.data" % n)
            wrk = subprocess.Popen(bl.wrk_cmd(srv.port, [body], args.conns, args.seconds + 2),
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            time.sleep(1)
            rec = subprocess.run(["perf", "record", "-F", "2999", "-g", "-o", data, "-p", str(srv.pid), "--",
                                  "sleep", str(args.seconds)], capture_output=True, text=True)
            wout, _ = wrk.communicate()
            res = bl.parse_wrk(wout)
            if rec.returncode != 0:
                raise bl.BenchError("perf record failed: %s" % rec.stderr[-1000:])
            groups = {}
            for pct, dso in report(data, "dso", 0.1):
                g = group_of(dso)
                groups[g] = groups.get(g, 0.0) + pct
            syms = [(p, " ".join(t for t in s.split() if t != "-")) for p, s in report(data, "dso,symbol", 1.0)[:20]]
            entry = {"devices": n, "body_bytes": os.path.getsize(body), "rps": res["rps"], "errors": res["errors"],
                     "groups_pct": {k: round(v, 1) for k, v in sorted(groups.items(), key=lambda kv: -kv[1])},
                     "top_symbols": [{"pct": p, "symbol": s} for p, s in syms]}
            out["sizes"].append(entry)
            print("slice-%d (%d bytes), wrk -c%d, %.0f req/s: server CPU by component" % (
                n, entry["body_bytes"], args.conns, res["rps"]))
            for g, v in entry["groups_pct"].items():
                print("  %5.1f%%  %s" % (v, g))
            print("  top symbols:")
            for p, s in syms[:12]:
                print("  %5.1f%%  %s" % (p, s))
    finally:
        srv.stop()
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
