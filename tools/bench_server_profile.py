#!/usr/bin/env python3
"""Instructions per request of the whole server: `dra-guard serve` under
callgrind, N requests of each body over one keep-alive TLS connection,
counted from the server's side only (TLS record decryption, libmicrohttpd,
the copies, the decision, the answer's encryption; the client runs outside
valgrind).

Counts are repeatable on a shared machine, unlike time: the figure to compare
changes of the request path by. Warm-up requests (the handshake, first-use
allocations) are sent before the counters are zeroed.

    tools/bench_server_profile.py --bin build/release/dra-guard --bodies build/bench/bodies \
        [--sizes "32 128"] [--requests 200] [--out profile-server.json]
"""

import argparse
import glob
import http.client
import json
import os
import ssl
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_lib as bl  # noqa: E402


def total_ir(outfile):
    """Ir of a callgrind dump: its 'summary:' (or 'totals:') line."""
    with open(outfile) as f:
        for line in f:
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1])
    raise bl.BenchError("no summary in %s" % outfile)


def control(pid, *args):
    p = subprocess.run(["callgrind_control"] + list(args) + [str(pid)], capture_output=True, text=True)
    if p.returncode != 0:
        raise bl.BenchError("callgrind_control %s: %s" % (" ".join(args), p.stderr or p.stdout))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--bodies", required=True)
    ap.add_argument("--sizes", default="32 128")
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--out")
    ap.add_argument("--workdir")
    args = ap.parse_args()
    work = args.workdir or tempfile.mkdtemp(prefix="dra-guard-prof-")
    os.makedirs(work, exist_ok=True)
    certs = bl.make_certs(os.path.join(work, "certs"))
    wrapper = os.path.join(work, "vg-serve")
    prefix = os.path.join(work, "callgrind.out")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\nexec valgrind -q --tool=callgrind --callgrind-out-file=%s.%%p "
                "--dump-instr=no --collect-atstart=yes %s \"$@\"\n" % (prefix, os.path.abspath(args.bin)))
    os.chmod(wrapper, 0o755)
    ca = os.path.join(certs, "ca.crt")
    srv = bl.Server(wrapper, os.path.join(certs, "tls.crt"), os.path.join(certs, "tls.key"), ca,
                    os.path.join(work, "server.log"), ["--log-level", "warn", "--threads", "1"],
                    ready_timeout=120)
    result = {"what": "callgrind Ir of dra-guard serve per request (keep-alive TLS, server side only)",
              "requests": args.requests, "sizes": []}
    try:
        ctx = ssl.create_default_context(cafile=ca)
        for n in [int(x) for x in args.sizes.split()]:
            path = os.path.join(args.bodies, "slice-%d.json" % n)
            body = open(path, "rb").read()
            c = http.client.HTTPSConnection("localhost", srv.port, timeout=120, context=ctx)

            def post():
                c.request("POST", bl.URL_PATH, body=body, headers={"Content-Type": "application/json"})
                r = c.getresponse()
                data = r.read()
                if r.status != 200 or b'"allowed":true' not in data:
                    raise bl.BenchError("slice-%d: HTTP %d %s" % (n, r.status, data[:300]))

            for _ in range(args.warmup):
                post()
            control(srv.pid, "-z")
            for _ in range(args.requests):
                post()
            for old in glob.glob(prefix + ".*"):
                os.unlink(old)
            control(srv.pid, "-d")
            time.sleep(0.2)
            dumps = sorted(glob.glob(prefix + ".*"))
            ir = sum(total_ir(d) for d in dumps)
            c.close()
            entry = {"devices": n, "body_bytes": len(body), "ir_per_request": ir // args.requests}
            result["sizes"].append(entry)
            print("slice-%d (%d bytes): %d instructions per request (server, %d requests)" % (
                n, len(body), entry["ir_per_request"], args.requests), flush=True)
    finally:
        srv.stop(timeout=60)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
