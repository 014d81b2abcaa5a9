#!/usr/bin/env python3
"""Hostile memory load at full size, the second half of `make soak`: the
release server with the Deployment's settings (--threads 4, --max-body 8Mi,
--memory-budget 128Mi) against clients that try to make it hold memory:

  idle      N connections that each sent an 8 MiB review and stay open
  stalled   N connections that each send an 8 MiB review one byte short
  echo      N connections whose review has a 1.86 MiB uid of '<' (echoed
            as \\u003c: an 11 MiB answer each), answers left unread
  many      --many connections that each send 8 MiB one byte short
  burst     --burst clients x 3 rounds of 0.3-8 MiB reviews over new
            connections, all at once

For each: the server's RSS at rest, at the peak and once every client has
gone; what the budget held and refused. Fails when the peak passes --limit
(the Deployment's memory limit less its cluster view's share), when what
the budget holds passes the
budget, or when RSS stays more than --after-slack above its idle level once
the clients are gone. Prints a table and writes --out (JSON).

Runs against any build (--server-args for an older one without the flags).
"""

import argparse
import json
import os
import resource
import socket
import ssl
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_lib as bl  # noqa: E402

MIB = 1 << 20


def review(size, uid=None):
    with open(os.path.join(bl.ROOT, "tests", "fixtures", "resourceslice-v1-node-allocatable.json")) as f:
        obj = json.load(f)
    obj["metadata"].setdefault("annotations", {})["pad"] = ""
    rev = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
           "request": {"uid": uid or "0f3c1d9e-0000-4000-8000-000000000001",
                       "kind": {"group": "resource.k8s.io", "version": "v1", "kind": "ResourceSlice"},
                       "resource": {"group": "resource.k8s.io", "version": "v1", "resource": "resourceslices"},
                       "name": obj["metadata"]["name"], "operation": "CREATE",
                       "userInfo": {"username": "system:serviceaccount:dra-system:dra-example-driver",
                                    "groups": ["system:authenticated"]},
                       "object": obj, "oldObject": None, "dryRun": False}}
    pad = size - len(json.dumps(rev).encode())
    obj["metadata"]["annotations"]["pad"] = "x" * max(0, pad)
    return json.dumps(rev).encode()


def connect(srv, rcvbuf=None):
    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    raw.settimeout(60)
    raw.connect(("127.0.0.1", srv.port))
    return ssl.create_default_context(cafile=srv.ca).wrap_socket(raw, server_hostname="localhost")


def post(s, body, send=None):
    s.sendall(b"POST /validate?timeout=10s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body) + (body if send is None else body[:send]))


def read_answer(s):
    data = b""
    while b"\r\n\r\n" not in data:
        d = s.recv(65536)
        if not d:
            return 0
        data += d
    head, _, rest = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v)
    while len(rest) < length:
        d = s.recv(1 << 20)
        if not d:
            break
        rest += d
    return int(head.split()[1])


class Peak:
    def __init__(self, pid):
        self.pid = pid
        self.peak = bl.status_kib(pid, "VmRSS")
        self.flag = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.flag.wait(0.02):
            try:
                self.peak = max(self.peak, bl.status_kib(self.pid, "VmRSS"))
            except OSError:
                return

    def stop(self):
        self.flag.set()
        self.t.join(5)
        return self.peak


def held(srv):
    m = srv.metrics()
    return (m.get("dra_guard_memory_in_use_bytes", 0), m.get('dra_guard_memory_refusals_total{kind="body"}', 0),
            m.get('dra_guard_memory_refusals_total{kind="answer"}', 0))


def settle(srv, idle_fds):
    bl_wait = time.time() + 30
    while time.time() < bl_wait and bl.fd_count(srv.pid) > idle_fds:
        time.sleep(0.1)
    time.sleep(1.5)   # a housekeeping tick or ten: the trim after a burst


def phase(srv, name, idle_fds, run):
    rss0 = bl.status_kib(srv.pid, "VmRSS")
    _, b0, a0 = held(srv)
    peak = Peak(srv.pid)
    t0 = time.time()
    socks, statuses, max_held = run()
    in_use, b1, a1 = held(srv)
    max_held = max(max_held, in_use)
    for s in socks:
        try:
            s.close()
        except OSError:
            pass
    settle(srv, idle_fds)
    top = peak.stop()
    return {"phase": name, "rss_before_mib": round(rss0 / 1024, 1), "rss_peak_mib": round(top / 1024, 1),
            "rss_after_mib": round(bl.status_kib(srv.pid, "VmRSS") / 1024, 1),
            "held_max_mib": round(max_held / MIB, 1), "refused_bodies": int(b1 - b0),
            "refused_answers": int(a1 - a0), "answers": statuses, "seconds": round(time.time() - t0, 1)}


def count(statuses, st):
    statuses[str(st)] = statuses.get(str(st), 0) + 1


def run_idle(srv, n):
    body = review(8 * MIB - 4096)

    def run():
        socks, statuses, top = [], {}, 0
        for _ in range(n):
            s = connect(srv)
            post(s, body)
            count(statuses, read_answer(s))
            socks.append(s)
        time.sleep(1)
        return socks, statuses, top
    return run


def run_stalled(srv, n):
    body = review(8 * MIB - 4096)

    def run():
        socks, statuses = [], {}
        for _ in range(n):
            s = connect(srv)
            post(s, body, send=len(body) - 1)
            socks.append(s)
        time.sleep(2)
        top = held(srv)[0]
        for s in socks:
            s.sendall(body[-1:])
        for s in socks:
            count(statuses, read_answer(s))
        return socks, statuses, top
    return run


def run_echo(srv, n):
    uid = "<" * int(1.86 * MIB)
    body = review(len(uid) + 20000, uid=uid)

    def run():
        socks, statuses = [], {}
        for _ in range(n):
            s = connect(srv, rcvbuf=65536)
            post(s, body)
            socks.append(s)
        time.sleep(3)
        top = held(srv)[0]
        for s in socks:
            count(statuses, read_answer(s))
        return socks, statuses, top
    return run


def run_burst(srv, n):
    bodies = [review(sz - 4096) for sz in (8 * MIB, 3 * MIB, MIB, 300 * 1024, 5 * MIB)]

    def run():
        statuses, lock = {}, threading.Lock()

        def client(i):
            for r in range(3):
                try:
                    s = connect(srv)
                    post(s, bodies[(i + r) % len(bodies)])
                    st = read_answer(s)
                    s.close()
                except OSError as e:
                    st = type(e).__name__
                with lock:
                    count(statuses, st)
        ts = [threading.Thread(target=client, args=(i,)) for i in range(n)]
        for t in ts:
            t.start()
        top = 0
        while any(t.is_alive() for t in ts):
            top = max(top, held(srv)[0])
            time.sleep(0.2)
        return [], statuses, top
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--conns", type=int, default=40)
    ap.add_argument("--many", type=int, default=200)
    ap.add_argument("--burst", type=int, default=100)
    ap.add_argument("--limit-mib", type=float, default=640,
                    help="the sizing's worst case without a cluster view (626 MiB; the Deployment's "
                         "1152 MiB limit also holds the view and its ledger)")
    ap.add_argument("--budget-mib", type=float, default=128)
    ap.add_argument("--after-slack-mib", type=float, default=32)
    ap.add_argument("--server-args", default="--threads 4 --max-body 8Mi --memory-budget 128Mi "
                    "--body-timeout 30s --idle-timeout 120s --cluster-view off --log-level warn")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    ca_dir = bl.make_certs(os.path.join(args.workdir, "ca"))
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
    except (ValueError, OSError):
        pass
    srv = bl.Server(args.bin, os.path.join(ca_dir, "tls.crt"), os.path.join(ca_dir, "tls.key"),
                    os.path.join(ca_dir, "ca.crt"), os.path.join(args.workdir, "server.log"),
                    args.server_args.split())
    res = {"hostile": "memory attacks at full size", "machine": bl.machine(), "server_cmd": " ".join(srv.cmd),
           "phases": []}
    failures = []
    try:
        s = connect(srv)
        post(s, review(4096))
        read_answer(s)
        s.close()
        time.sleep(0.5)
        idle_fds = bl.fd_count(srv.pid)
        res["rss_idle_mib"] = round(bl.status_kib(srv.pid, "VmRSS") / 1024, 1)
        # The server runs without a cluster view (no API server here), so the
        # bound is the sizing without the view's share of the limit.
        plan = [("idle: %d x 8 MiB answered, kept open" % args.conns, run_idle(srv, args.conns)),
                ("stalled: %d x 8 MiB one byte short" % args.conns, run_stalled(srv, args.conns)),
                ("echo: %d x 11 MiB answers unread" % args.conns, run_echo(srv, args.conns)),
                ("many: %d x 8 MiB one byte short" % args.many, run_stalled(srv, args.many)),
                ("burst: %d clients x 3 reviews of 0.3-8 MiB" % args.burst, run_burst(srv, args.burst))]
        for name, run in plan:
            p = phase(srv, name, idle_fds, run)
            res["phases"].append(p)
            print("hostile: %-44s RSS %6.1f -> peak %6.1f -> %6.1f MiB; held at most %6.1f MiB; refused %d bodies, "
                  "%d answers; answers %s (%.0fs)" % (
                      p["phase"], p["rss_before_mib"], p["rss_peak_mib"], p["rss_after_mib"], p["held_max_mib"],
                      p["refused_bodies"], p["refused_answers"], p["answers"], p["seconds"]), flush=True)
            if p["rss_peak_mib"] > args.limit_mib:
                failures.append("%s: RSS peak %.1f MiB past the limit %.0f MiB" % (name, p["rss_peak_mib"],
                                                                                   args.limit_mib))
            if p["held_max_mib"] > args.budget_mib:
                failures.append("%s: held %.1f MiB, budget %.0f MiB" % (name, p["held_max_mib"], args.budget_mib))
            if p["rss_after_mib"] > res["rss_idle_mib"] + args.after_slack_mib:
                failures.append("%s: RSS %.1f MiB after the clients left, %.1f MiB idle" % (
                    name, p["rss_after_mib"], res["rss_idle_mib"]))
            if not srv.alive():
                failures.append("%s: the server died" % name)
                break
    finally:
        res["exit_code"] = srv.stop()
    if res["exit_code"] != 0:
        failures.append("server exited with %s on SIGTERM" % res["exit_code"])
    res["ok"] = not failures
    res["failures"] = failures
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    for msg in failures:
        print("hostile: FAIL: %s" % msg, file=sys.stderr)
    print("hostile: %s; RSS idle %.1f MiB; results in %s" % ("PASS" if not failures else "FAIL",
                                                             res.get("rss_idle_mib", 0), args.out))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
