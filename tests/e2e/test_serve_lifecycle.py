#!/usr/bin/env python3
"""Process lifecycle and hostile clients: SIGTERM drains a slow request and
exits 0, the shutdown timeout bounds a drain, bad flags exit 2, silent and
slowloris clients do not stall others, idle connections are closed."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guard  # noqa: E402
from guard import check  # noqa: E402


def tls_socket(srv):
    raw = socket.create_connection(("127.0.0.1", srv.port), timeout=20)
    return guard.tls_context(srv.ca).wrap_socket(raw, server_hostname="localhost")


def read_response(s):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v)
    while len(body) < length:
        chunk = s.recv(65536)
        if not chunk:
            break
        body += chunk
    return head, body


def can_connect(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return True
    except OSError:
        return False


def test_sigterm_finishes_a_slow_request_then_exits_0():
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        with guard.Server(certs) as srv:
            rev = guard.slice_review()
            body = json.dumps(rev).encode()
            s = tls_socket(srv)
            s.sendall(b"POST /validate?timeout=10s HTTP/1.1\r\nHost: localhost\r\n"
                      b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body))
            half = len(body) // 2
            s.sendall(body[:half])
            srv.wait(lambda: guard.metric(srv.metrics(), "dra_guard_requests_in_flight") == 1,
                     "the slow request to be in flight")
            srv.signal(signal.SIGTERM)
            srv.wait(lambda: srv.find_log("shutting down") is not None, "the shutdown log line")
            # Draining: no new connections, the process waits for ours.
            srv.wait(lambda: not can_connect(srv.port), "the listener to stop accepting")
            time.sleep(0.3)
            check(srv.proc.poll() is None, "exited before the in-flight request finished")
            # The rest of the body, slowly.
            for i in range(half, len(body), 512):
                s.sendall(body[i:i + 512])
                time.sleep(0.002)
            head, data = read_response(s)
            s.close()
            check(head.startswith(b"HTTP/1.1 200"), "drained request: %r" % head[:80])
            check(b"connection: close" in head.lower(), "no Connection: close while draining: %r" % head)
            out = json.loads(data)["response"]
            check(out["uid"] == rev["request"]["uid"] and out["allowed"] is True, out)
            code = srv.proc.wait(30)
            check(code == 0, "exit code %d" % code)
            check(srv.find_log("stopped") is not None, "no final log line")


def test_shutdown_timeout_bounds_the_drain():
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        with guard.Server(certs, ["--shutdown-timeout", "1s"]) as srv:
            s = tls_socket(srv)
            s.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 1000\r\n\r\n{")
            srv.wait(lambda: guard.metric(srv.metrics(), "dra_guard_requests_in_flight") == 1, "in flight")
            srv.signal(signal.SIGTERM)
            code = srv.proc.wait(30)
            check(code == 0, "exit code %d" % code)
            line = srv.find_log("shutdown timeout: closing requests still in progress")
            check(line and line["in_flight"] == 1, "no shutdown-timeout log: %s" % line)
            s.close()


def test_bad_flags_exit_2_with_a_message():
    for args, mention in ((["--threads", "0"], "--threads"), (["--listen", "nowhere"], "--listen"),
                          (["--bogus"], "--bogus"), (["--policy", "a", "--policy-dir", "b"], "exclusive"),
                          (["--max-body", "lots"], "--max-body")):
        p = subprocess.run([guard.binary(), "serve"] + args, capture_output=True, timeout=30)
        check(p.returncode == 2, "%s: exit %d" % (args, p.returncode))
        check(mention in p.stderr.decode(), "%s: stderr %r" % (args, p.stderr))
    p = subprocess.run([guard.binary(), "serve", "--help"], capture_output=True, timeout=30)
    check(p.returncode == 0 and b"DRA_GUARD_LISTEN" in p.stdout, "--help")
    p = subprocess.run([guard.binary(), "serve", "--listen", "127.0.0.1:0"], capture_output=True, timeout=30,
                       env=dict(os.environ, DRA_GUARD_THREADS="none"))
    check(p.returncode == 2 and b"DRA_GUARD_THREADS" in p.stderr, p.stderr)


def test_port_in_use_fails_at_start():
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        with guard.Server(certs) as srv:
            p = subprocess.run([guard.binary(), "serve", "--listen", "127.0.0.1:%d" % srv.port,
                                "--metrics-listen", "off", "--tls-cert", os.path.join(certs, "tls.crt"),
                                "--tls-key", os.path.join(certs, "tls.key")], capture_output=True, timeout=30)
            check(p.returncode == 1 and b"cannot start listening" in p.stderr, p.stderr[-500:])
            check(srv.stop() == 0, "exit code")


def test_no_usable_certificate_at_start_says_so():
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        other = guard.make_certs(os.path.join(tmp, "other"))
        for cert, key, why in ((os.path.join(tmp, "missing.crt"), os.path.join(tmp, "missing.key"),
                                "No such file"),
                               (os.path.join(certs, "tls.crt"), os.path.join(other, "tls.key"), "does not match")):
            p = subprocess.run([guard.binary(), "serve", "--listen", "127.0.0.1:0", "--metrics-listen", "off",
                                "--tls-cert", cert, "--tls-key", key], capture_output=True, timeout=30)
            lines = [json.loads(x) for x in p.stderr.decode().splitlines() if x.startswith("{")]
            msgs = [x.get("msg") for x in lines]
            check(p.returncode == 1, "exit %d: %s" % (p.returncode, msgs))
            check("no usable certificate: not serving" in msgs, "messages: %s" % msgs)
            check("certificate not loaded; the serving one stays" not in msgs, "claims a serving one: %s" % msgs)
            line = lines[msgs.index("no usable certificate: not serving")]
            check(why in line.get("error", ""), "error: %s" % line)


def test_silent_and_slow_clients_do_not_stall_others():
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        with guard.Server(certs, ["--threads", "1", "--idle-timeout", "3s"]) as srv:
            # Sockets that never send, one mid-handshake, one sending headers a byte at a time.
            silent = [socket.create_connection(("127.0.0.1", srv.port)) for _ in range(20)]
            half = socket.create_connection(("127.0.0.1", srv.port))
            half.sendall(b"\x16\x03\x01\x00\xff")     # the start of a ClientHello, then nothing
            slow = tls_socket(srv)
            slow.sendall(b"POST /validate HTTP/1.1\r\nHo")
            # With one worker thread, others are served all the same.
            c = guard.Client(srv)
            for _ in range(20):
                check(c.review(guard.slice_review())["allowed"], "review beside silent clients")
                slow.sendall(b"s")
            c.close()
            # The idle timeout closes the silent ones: at most a TLS alert
            # record (close_notify), then end of stream.
            for i, sock in enumerate(silent[:3] + [half]):
                sock.settimeout(20)
                got = b""
                try:
                    data = sock.recv(100)
                    while data:
                        got += data
                        data = sock.recv(100)
                except ConnectionResetError:
                    pass
                check(got == b"" or got.startswith(b"\x15\x03"), "silent connection %d got %r" % (i, got))
            for sock in silent + [half, slow]:
                sock.close()
            check(srv.stop() == 0, "exit code")


def test_connection_limit_keeps_serving():
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        with guard.Server(certs, ["--max-connections", "4", "--threads", "1"]) as srv:
            hogs = [socket.create_connection(("127.0.0.1", srv.port)) for _ in range(4)]
            time.sleep(0.2)
            # Over the limit a connection waits in the backlog (or is
            # refused and retried) and is served once a slot frees.
            result = []
            t = threading.Thread(target=lambda: result.append(_review_ok(srv, timeout=30)))
            t.start()
            time.sleep(0.5)
            check(not result, "a fifth connection was served while four were open")
            for h in hogs:
                h.close()
            t.join(60)
            check(result == [True], "the waiting review was not served: %s" % result)
            check(srv.stop() == 0, "exit code")


def _worker_connections(srv):
    samples = srv.metrics()
    return [guard.metric(samples, "dra_guard_webhook_connections", worker=str(w)) for w in range(2)]


def test_connections_opened_together_spread_over_the_workers():
    # A client's pool opens its connections together; libmicrohttpd's own
    # accept gave them all to the worker that woke first, for their life.
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        with guard.Server(certs, ["--threads", "2"]) as srv:
            raws = [socket.create_connection(("127.0.0.1", srv.port), timeout=20) for _ in range(8)]
            clients = []
            for raw in raws:
                c = guard.Client(srv)
                c.conn.sock = guard.tls_context(srv.ca).wrap_socket(raw, server_hostname="localhost")
                check(c.review(guard.slice_review())["allowed"], "review allowed")
                clients.append(c)
            per_worker = _worker_connections(srv)
            check(sum(per_worker) == 8, "connections by worker: %s" % per_worker)
            check(min(per_worker) >= 3, "8 connections opened together, by worker: %s" % per_worker)
            for c in clients[:5]:
                c.close()
            srv.wait(lambda: sum(_worker_connections(srv)) == 3, "the gauge to fall to 3")
            # A connection opened now is served as well as the ones kept.
            c = guard.Client(srv)
            check(c.review(guard.slice_review())["allowed"], "review on a new connection")
            check(sum(_worker_connections(srv)) == 4, "gauge %s" % _worker_connections(srv))
            for c in clients[5:] + [c]:
                c.close()
            srv.wait(lambda: sum(_worker_connections(srv)) == 0, "the gauge to fall to 0")
            check(srv.stop() == 0, "exit code")


def _review_ok(srv, timeout=5):
    try:
        c = guard.Client(srv, timeout=timeout)
        ok = c.review(guard.slice_review())["allowed"]
        c.close()
        return ok
    except Exception:  # noqa: BLE001 - not yet
        return False


def main():
    guard.run_tests([
        test_sigterm_finishes_a_slow_request_then_exits_0,
        test_shutdown_timeout_bounds_the_drain,
        test_bad_flags_exit_2_with_a_message,
        test_port_in_use_fails_at_start,
        test_no_usable_certificate_at_start_says_so,
        test_silent_and_slow_clients_do_not_stall_others,
        test_connection_limit_keeps_serving,
        test_connections_opened_together_spread_over_the_workers,
    ])


if __name__ == "__main__":
    main()
