#!/usr/bin/env python3
"""How the webhook port's worker threads share the load: `dra-guard serve
--threads 2` under wrk, each worker thread's CPU time read from
/proc/PID/task for the length of the run. With two binaries (A and B) they
run in turn, A B A B, a fresh server for every run (a connection stays
with the worker it was given for its life, so each run's share is decided
when wrk opens its connections).

The figure is the busiest worker's share of the workers' CPU: 50% is an
even split, 100% one worker serving every connection while the other
idles. It does not depend on the machine's load the way req/s does.

    tools/bench_workers.py --bin build/release/dra-guard [--base OTHER/dra-guard] \\
        --bodies build/bench/bodies [--sizes "32 128"] [--conns 16] [--seconds 4] [--rounds 5]
"""

import argparse
import os
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_lib as bl  # noqa: E402

WORKER_THREAD = "MHD-worker"


def worker_ticks(pid):
    """{tid: user+system ticks} of the server's worker threads."""
    out = {}
    task = "/proc/%d/task" % pid
    for tid in os.listdir(task):
        try:
            with open(os.path.join(task, tid, "stat")) as f:
                s = f.read()
        except OSError:
            continue
        name = s[s.index("(") + 1:s.rindex(")")]
        if name != WORKER_THREAD:
            continue
        fields = s[s.rindex(")") + 2:].split()
        out[tid] = int(fields[11]) + int(fields[12])
    return out


def one_run(binary, certs, work, body, conns, seconds, threads):
    srv = bl.Server(binary, os.path.join(certs, "tls.crt"), os.path.join(certs, "tls.key"),
                    os.path.join(certs, "ca.crt"), os.path.join(work, "server.log"),
                    ["--log-level", "warn", "--threads", str(threads)])
    try:
        before = worker_ticks(srv.pid)
        res = bl.run_wrk(srv.port, [body], conns, seconds)
        after = worker_ticks(srv.pid)
    finally:
        srv.stop()
    used = sorted((after[t] - before.get(t, 0) for t in after), reverse=True)
    used += [0] * (threads - len(used))
    total = sum(used)
    busiest = 100.0 * used[0] / total if total else 0.0
    return busiest, res["rps"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bl.ab_arguments(ap, rounds=5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="dra-guard-workers-")
    certs = bl.make_certs(os.path.join(work, "certs"))
    bins = [("A", os.path.abspath(args.bin))] + ([("B", os.path.abspath(args.base))] if args.base else [])
    print("busiest worker's share of the workers' CPU (--threads %d, wrk -c%d, %d s, %d rounds; 50%% is even)"
          % (args.threads, args.conns, args.seconds, args.rounds))
    print("%7s %4s  %-40s %s" % ("devices", "bin", "busiest worker, each round", "req/s, each round"))
    for n in [int(x) for x in args.sizes.split()]:
        body = os.path.join(args.bodies, "slice-%d.json" % n)
        got = {name: [] for name, _ in bins}
        for _ in range(args.rounds):
            for name, binary in bins:
                got[name].append(one_run(binary, certs, work, body, args.conns, args.seconds, args.threads))
        for name, _ in bins:
            shares = " ".join("%3.0f%%" % b for b, _ in got[name])
            rates = " ".join("%6.0f" % r for _, r in got[name])
            print("%7d %4s  %-40s %s" % (n, name, shares, rates))
    return 0


if __name__ == "__main__":
    sys.exit(main())
