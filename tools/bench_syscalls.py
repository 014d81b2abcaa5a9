#!/usr/bin/env python3
"""System calls per request of `dra-guard serve` under wrk: `strace -c -f`
attached to the server for the length of a wrk run, divided by the requests
wrk counted. With two binaries (A and B, e.g. this tree's release and an
earlier one's) they run in turn, A B A B, on the same bodies.

How often the server reads and waits follows how the client's bytes happen
to arrive; how often it writes per answer does not, so `sendmsg` per request
is the figure to compare changes of the write path by, on a machine too
loaded for CPU time to say anything (strace slows the server; the counts,
not the rate, are the result).

    tools/bench_syscalls.py --bin build/release/dra-guard [--base OTHER/dra-guard] \\
        --bodies build/bench/bodies [--sizes "32 128"] [--conns 16] [--seconds 4] [--rounds 2]
"""

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_lib as bl  # noqa: E402

CALLS = ("sendmsg", "recvfrom", "setsockopt", "epoll_wait")


def strace_counts(path):
    """{syscall: calls} from a strace -c summary."""
    out = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 5 and re.match(r"^[0-9.]+$", parts[0]) and parts[-1] in CALLS:
                out[parts[-1]] = int(parts[3])
    return out


def one_run(binary, certs, work, body, conns, seconds):
    srv = bl.Server(binary, os.path.join(certs, "tls.crt"), os.path.join(certs, "tls.key"),
                    os.path.join(certs, "ca.crt"), os.path.join(work, "server.log"), ["--log-level", "warn"])
    try:
        bl.check_verdict(srv.port, srv.ca, body, True)   # the handshake's writes stay out of the count
        trace = os.path.join(work, "strace.txt")
        st = subprocess.Popen(["strace", "-c", "-f", "-o", trace, "-p", str(srv.pid)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        res = bl.run_wrk(srv.port, [body], conns, seconds)
        st.send_signal(signal.SIGINT)
        st.wait(timeout=30)
    finally:
        srv.stop()
    counts = strace_counts(trace)
    n = max(res["requests"], 1)
    return {k: counts.get(k, 0) / n for k in CALLS}, res["requests"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bl.ab_arguments(ap, rounds=2)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="dra-guard-syscalls-")
    certs = bl.make_certs(os.path.join(work, "certs"))
    bins = [("A", os.path.abspath(args.bin))] + ([("B", os.path.abspath(args.base))] if args.base else [])
    print("server system calls per request (strace -c -f under wrk -c%d, %d s, mean of %d rounds)" % (
        args.conns, args.seconds, args.rounds))
    print("%7s %4s %9s %9s %9s %10s %10s" % (("devices", "bin", "requests") + CALLS))
    for n in [int(x) for x in args.sizes.split()]:
        body = os.path.join(args.bodies, "slice-%d.json" % n)
        sums = {name: ({k: 0.0 for k in CALLS}, 0) for name, _ in bins}
        for _ in range(args.rounds):
            for name, binary in bins:
                per, reqs = one_run(binary, certs, work, body, args.conns, args.seconds)
                acc, total = sums[name]
                for k in CALLS:
                    acc[k] += per[k] / args.rounds
                sums[name] = (acc, total + reqs)
        for name, _ in bins:
            acc, total = sums[name]
            print("%7d %4s %9d %9.2f %9.2f %10.2f %10.2f" % ((n, name, total) + tuple(acc[k] for k in CALLS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
