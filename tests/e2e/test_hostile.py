#!/usr/bin/env python3
"""Hostile clients against the real server: headers and bodies trickled a byte
a second, connections and TLS handshakes that stop half way, bodies that never
end, garbage on the TLS port. Throughout, a bystander keeps sending reviews
(a new TLS connection each, 5 s client timeout) and every one must be answered;
afterwards the server's open file descriptors return to their idle count.
The server runs one worker thread, so no attack can hide behind another
thread. Last, the whole mix against the ASan+UBSan build: exit 0 on SIGTERM
and no sanitizer report.

(Silent clients beside a working one, the connection limit and oversized
bodies are in test_serve_lifecycle.py and test_serve_http.py.)"""

import os
import http.client
import json
import random
import socket
import ssl
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guard  # noqa: E402
from guard import check  # noqa: E402

IDLE = 2                      # --idle-timeout, seconds
MAX_BODY = 64 * 1024          # --max-body
CLIENT_TIMEOUT = 5            # the bystander's whole-request timeout
ARGS = ["--threads", "1", "--idle-timeout", "%ds" % IDLE, "--max-body", "64Ki"]
SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "runtime error:", "UndefinedBehaviorSanitizer")
HEADERS = (b"POST /validate?timeout=10s HTTP/1.1\r\nHost: localhost\r\n"
           b"Content-Type: application/json\r\nUser-Agent: slowloris\r\n")


# --- helpers ------------------------------------------------------------------------


def fds(srv):
    return len(os.listdir("/proc/%d/fd" % srv.proc.pid))


def idle_baseline(srv):
    """The server's fd count at rest, after one review has set up what lasts."""
    c = guard.Client(srv, timeout=CLIENT_TIMEOUT)
    check(c.review(guard.slice_review())["allowed"], "first review")
    c.close()
    time.sleep(0.2)
    return fds(srv)


def wait_fds(srv, baseline, what):
    srv.wait(lambda: fds(srv) <= baseline, "the server's fds to return to %d %s (now %d)" % (
        baseline, what, fds(srv)))


class Bystander:
    """Reviews over a new TLS connection each, back to back, until stopped."""

    def __init__(self, srv):
        self.srv = srv
        self.latencies = []
        self.failures = []
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop_flag.is_set():
            t0 = time.monotonic()
            try:
                c = guard.Client(self.srv, timeout=CLIENT_TIMEOUT)
                try:
                    rev = guard.slice_review()
                    r = c.review(rev)
                    check(r["uid"] == rev["request"]["uid"] and r["allowed"] is True, "answer %s" % r)
                finally:
                    c.close()
                self.latencies.append(time.monotonic() - t0)
            except Exception as e:  # noqa: BLE001 - every failure counts
                self.failures.append("%s: %s" % (type(e).__name__, e))
            self.stop_flag.wait(0.05)

    def stop(self, at_least=3):
        deadline = time.time() + 20
        while len(self.latencies) + len(self.failures) < at_least and time.time() < deadline:
            time.sleep(0.05)
        self.stop_flag.set()
        self.thread.join(30)
        check(not self.failures, "%d of %d bystander reviews failed: %s" % (
            len(self.failures), len(self.failures) + len(self.latencies), self.failures[:3]))
        check(len(self.latencies) >= at_least, "only %d bystander reviews ran" % len(self.latencies))
        lat = sorted(self.latencies)
        return "%d bystander reviews, median %.1f ms, slowest %.1f ms" % (
            len(lat), 1000 * lat[len(lat) // 2], 1000 * lat[-1])


def tcp(srv):
    return socket.create_connection(("127.0.0.1", srv.port), timeout=10)


def tls(srv):
    return guard.tls_context(srv.ca).wrap_socket(tcp(srv), server_hostname="localhost")


def client_hello(ca):
    """The bytes of a real ClientHello (TLS 1.2-1.3, SNI localhost)."""
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = guard.tls_context(ca).wrap_bio(inc, out, server_hostname="localhost")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


def half_handshake(srv, hello):
    """A full ClientHello; read the server's answer; never send Finished."""
    s = tcp(srv)
    s.sendall(hello)
    first = s.recv(65536)
    check(first[:1] == b"\x16", "no handshake record after a ClientHello: %r" % first[:20])
    return s


def handshaken_raw(srv):
    """A completed TLS handshake driven through memory BIOs, so the raw TCP
    socket stays ours to write anything to: (raw socket, SSLObject, in BIO, out BIO)."""
    raw = tcp(srv)
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = guard.tls_context(srv.ca).wrap_bio(inc, out, server_hostname="localhost")
    while True:
        try:
            obj.do_handshake()
            break
        except ssl.SSLWantReadError:
            pending = out.read()
            if pending:
                raw.sendall(pending)
            data = raw.recv(65536)
            check(data, "server closed during the handshake")
            inc.write(data)
    pending = out.read()
    if pending:
        raw.sendall(pending)
    return raw


def closed_by_server(sock, timeout):
    """True if the server closes its end within timeout (EOF or reset); what
    it sent first - a TLS alert, an HTTP error - is allowed, a 200 is not."""
    sock.settimeout(0.5)
    deadline = time.time() + timeout
    got = b""
    while time.time() < deadline:
        try:
            data = sock.recv(65536)
        except socket.timeout:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return True, got
        except ssl.SSLError:
            return True, got
        if not data:
            return True, got
        got += data
    return False, got


def close_all(socks):
    for s in socks:
        try:
            s.close()
        except OSError:
            pass


# --- tests ------------------------------------------------------------------------------


def test_slowloris_headers_and_bodies_trickled_a_byte_a_second():
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        with guard.Server(certs, ARGS) as srv:
            base = idle_baseline(srv)
            heads = [tls(srv) for _ in range(16)]
            bodies = [tls(srv) for _ in range(8)]
            for s in bodies:
                s.sendall(HEADERS + b"Content-Length: 1000\r\n\r\n{")
            text = HEADERS + b"X-Pad: " + b"a" * 64
            by = Bystander(srv)
            alive = {id(s): True for s in heads + bodies}
            seconds = 3 * IDLE + 1
            for i in range(seconds):
                for s in heads + bodies:
                    if not alive[id(s)]:
                        continue
                    try:
                        s.sendall(text[i:i + 1] if s in heads else b" ")
                    except (OSError, ssl.SSLError):
                        alive[id(s)] = False
                time.sleep(1)
            summary = by.stop()
            kept = sum(alive.values())
            close_all(heads + bodies)
            wait_fds(srv, base, "after the slow clients left")
            check(srv.ready()[0], "not ready after the attack")
            check(srv.stop() == 0, "exit code")
            # Reported, not asserted: the idle timeout is reset by every byte,
            # so a client sending one byte a second keeps its connection
            # (a body, until --body-timeout: the next test).
            print("     %s; %d of %d trickling connections still open after %ds (idle timeout %ds)" % (
                summary, kept, len(alive), seconds, IDLE))


def trickle_until_closed(socks, started, byte_for, limit):
    """Send each socket its next byte every half second (never idle for the
    2 s idle timeout) until the server closes it; {index: seconds from its
    first byte to the close}."""
    closed = {}
    for s in socks:
        s.settimeout(0.05)
    t_end = time.monotonic() + limit
    i = 0
    while len(closed) < len(socks) and time.monotonic() < t_end:
        for k, s in enumerate(socks):
            if k in closed:
                continue
            try:
                s.sendall(byte_for(k, i))
                if s.recv(4096) == b"":
                    closed[k] = time.monotonic() - started[k]
            except socket.timeout:
                pass
            except (OSError, ssl.SSLError):
                closed[k] = time.monotonic() - started[k]
        i += 1
        time.sleep(0.5)
    return closed


def check_timed_out(srv, closed, n, body_timeout, what):
    check(len(closed) == n, "%s: %d of %d still open after %ds" % (what, n - len(closed), n, body_timeout + 10))
    early = [round(t, 2) for t in closed.values() if t < body_timeout]
    check(not early, "%s: closed before --body-timeout: %s" % (what, early))
    late = [round(t, 2) for t in closed.values() if t > body_timeout + 3]
    check(not late, "%s: closed well after --body-timeout: %s" % (what, late))


def timed_out_counts(srv):
    logged = [l for l in srv.log_lines() if l.get("msg") == "request refused" and l.get("code") == 408]
    return len(logged), guard.metric(srv.metrics(), "dra_guard_http_errors_total", code="408")


def test_a_body_trickled_past_the_body_timeout_loses_its_connection():
    body_timeout = 3
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        with guard.Server(certs, ARGS + ["--body-timeout", "%ds" % body_timeout]) as srv:
            base = idle_baseline(srv)
            by = Bystander(srv)
            started, slow = [], []
            for _ in range(4):
                started.append(time.monotonic())    # the handshake is the first byte
                s = tls(srv)
                s.sendall(HEADERS + b"Content-Length: 1000\r\n\r\n{")
                slow.append(s)
            closed = trickle_until_closed(slow, started, lambda k, i: b" ", body_timeout + 10)
            summary = by.stop()
            close_all(slow)
            check_timed_out(srv, closed, len(slow), body_timeout, "trickled bodies")
            logged, counted = timed_out_counts(srv)
            check(logged == len(slow), "%d 408 log lines, want %d" % (logged, len(slow)))
            check(counted == len(slow), "http_errors_total{code=408} is %s" % counted)
            wait_fds(srv, base, "after the trickled bodies were dropped")
            check(srv.stop() == 0, "exit code")
            print("     %d trickled bodies closed %.1f-%.1fs after their first byte (--body-timeout %ds); %s" % (
                len(slow), min(closed.values()), max(closed.values()), body_timeout, summary))


def test_framing_trickled_past_the_body_timeout_loses_its_connection():
    """What never reaches the handler runs on the same clock: headers, zeros
    trickled into a chunk-size line, trailer bytes after the last chunk."""
    body_timeout = 3
    review = json.dumps(guard.slice_review()).encode()
    chunked = HEADERS + b"Transfer-Encoding: chunked\r\n\r\n"
    kinds = [
        ("headers a byte at a time", b"", lambda i: (HEADERS + b"X-Pad: " + b"a" * 200)[i:i + 1]),
        ("zeros in a chunk-size line", chunked, lambda i: b"0"),
        ("trailer after the last chunk", chunked + b"%x\r\n%s\r\n0\r\n" % (len(review), review),
         lambda i: b"X-Trailer-%d: a\r\n" % i if i % 8 == 7 else b"a"),
    ]
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        with guard.Server(certs, ARGS + ["--body-timeout", "%ds" % body_timeout]) as srv:
            base = idle_baseline(srv)
            by = Bystander(srv)
            started, socks, which = [], [], []
            for k, (what, first, _) in enumerate(kinds):
                for _ in range(2):
                    started.append(time.monotonic())
                    s = tls(srv)
                    if first:
                        s.sendall(first)
                    socks.append(s)
                    which.append(k)
            closed = trickle_until_closed(socks, started, lambda n, i: kinds[which[n]][2](i), body_timeout + 10)
            summary = by.stop()
            close_all(socks)
            results = []
            for k, (what, _, _) in enumerate(kinds):
                mine = {n: t for n, t in closed.items() if which[n] == k}
                check_timed_out(srv, mine, which.count(k), body_timeout, what)
                results.append("%s %.1f-%.1fs" % (what, min(mine.values()), max(mine.values())))
            logged, counted = timed_out_counts(srv)
            check(logged == len(socks), "%d 408 log lines, want %d" % (logged, len(socks)))
            check(counted == len(socks), "http_errors_total{code=408} is %s" % counted)
            wait_fds(srv, base, "after the trickling clients were closed")
            check(srv.stop() == 0, "exit code")
            print("     closed after their first byte (--body-timeout %ds): %s; %s" % (
                body_timeout, "; ".join(results), summary))


def test_stalled_connections_and_handshakes_are_closed_and_freed():
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        with guard.Server(certs, ARGS) as srv:
            base = idle_baseline(srv)
            hello = client_hello(srv.ca)
            check(len(hello) > 100 and hello[:1] == b"\x16", "ClientHello %r" % hello[:10])
            by = Bystander(srv)
            socks = {"connect, send nothing": [tcp(srv) for _ in range(40)]}
            partial = []
            for n in (1, 5, 9, len(hello) // 2, len(hello) - 1):
                for _ in range(4):
                    s = tcp(srv)
                    s.sendall(hello[:n])
                    partial.append(s)
            socks["partial ClientHello"] = partial
            socks["ClientHello, then silence"] = [half_handshake(srv, hello) for _ in range(16)]
            socks["handshake done, silence"] = [tls(srv) for _ in range(8)]
            stalled = []
            for _ in range(6):
                s = tls(srv)
                s.sendall(HEADERS + b"Content-Length: 20000\r\n\r\n" + b" " * 5000)
                stalled.append(s)
            for _ in range(6):
                s = tls(srv)
                s.sendall(HEADERS + b"Transfer-Encoding: chunked\r\n\r\n400\r\n" + b" " * 1024 + b"\r\n")
                stalled.append(s)
            socks["body stops half way"] = stalled
            during = fds(srv)
            # The idle timeout frees them while the clients still hold their ends.
            wait_fds(srv, base + 2, "while the stalled clients still hold their sockets")
            summary = by.stop()
            for what, group in socks.items():
                for i, s in enumerate(group):
                    closed, got = closed_by_server(s, 5)
                    check(closed, "%s #%d: not closed by the server" % (what, i))
                    check(b"HTTP/1.1 200" not in got, "%s #%d: answered 200" % (what, i))
            close_all(s for group in socks.values() for s in group)
            wait_fds(srv, base, "after the stalled clients left")
            check(srv.stop() == 0, "exit code")
            print("     %d stalled connections, %d fds at the peak, freed by the server; %s" % (
                sum(len(g) for g in socks.values()), during, summary))


def test_a_body_that_never_ends_is_cut_off():
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        with guard.Server(certs, ARGS) as srv:
            base = idle_baseline(srv)
            by = Bystander(srv)
            results = []
            # A chunked body is counted as it arrives; one that streams on past
            # the cap must have its connection closed, whatever the chunk size.
            # The bound on what we manage to send is loose on purpose: socket
            # buffers on both ends absorb megabytes before a send fails.
            limit = 256 * MAX_BODY
            for size in (4096, 1):
                chunk = b"%x\r\n%s\r\n" % (size, b" " * size)
                burst = chunk * max(1, 4096 // len(chunk))
                s = tls(srv)
                s.settimeout(10)
                s.sendall(HEADERS + b"Transfer-Encoding: chunked\r\n\r\n")
                sent = 0
                try:
                    while sent < limit:
                        s.sendall(burst)
                        sent += len(burst)
                except (OSError, ssl.SSLError):
                    pass
                closed, head = closed_by_server(s, 10)
                s.close()
                check(closed, "an endless chunked body (chunks of %d) was not cut off" % size)
                check(sent < limit, "sent %d bytes of an endless body and the server still read on" % sent)
                check(b"HTTP/1.1 200" not in head, "an endless body was answered 200: %r" % head[:80])
                results.append("chunks of %d B: closed after %d KiB sent (%s)" % (
                    size, sent // 1024, head.split(b"\r\n", 1)[0].decode("latin-1") or "no answer read"))
            summary = by.stop()
            wait_fds(srv, base, "after the endless bodies")
            check(srv.stop() == 0, "exit code")
            print("     %s; %s" % ("; ".join(results), summary))


def garbage_clients(srv, rng):
    """(what, socket) pairs, each having sent something that is not TLS or not HTTP."""
    out = []
    for i in range(4):
        s = tcp(srv)
        s.sendall(bytes(rng.getrandbits(8) for _ in range(2048)))
        out.append(("random bytes", s))
    s = tcp(srv)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
    out.append(("plain HTTP on the TLS port", s))
    s = tcp(srv)
    s.sendall(b"\x16\x03\x01\xff\xff" + b"\x01" * 300)
    out.append(("record longer than TLS allows", s))
    s = tcp(srv)
    s.sendall(b"\x80\x2e\x01\x00\x02\x00\x15\x00\x00\x00\x10" + b"\x00" * 37)
    out.append(("SSLv2 ClientHello", s))
    s = tcp(srv)
    s.sendall(b"\x15\x03\x03\x00\x02\x02\x28")
    out.append(("alert before any handshake", s))
    for _ in range(2):
        s = handshaken_raw(srv)
        s.sendall(b"\x17\x03\x03\x00\x40" + bytes(rng.getrandbits(8) for _ in range(64)))
        out.append(("forged record after the handshake", s))
    for _ in range(2):
        s = tls(srv)
        s.sendall(b"\x00\x01\x02GARBAGE / \xff\xfe\r\n\r\n")
        out.append(("garbage HTTP inside TLS", s))
    s = tls(srv)
    s.sendall(HEADERS + b"Content-Length: 5\r\nContent-Length: 7\r\n\r\n{}   ")
    out.append(("two Content-Lengths", s))
    return out


def test_garbage_on_the_tls_port():
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        with guard.Server(certs, ARGS) as srv:
            base = idle_baseline(srv)
            by = Bystander(srv)
            rng = random.Random(7)
            answers = {}
            for _ in range(3):
                for what, s in garbage_clients(srv, rng):
                    closed, got = closed_by_server(s, IDLE + 8)
                    s.close()
                    check(closed, "%s: connection not closed" % what)
                    check(b"HTTP/1.1 200" not in got, "%s: answered 200: %r" % (what, got[:100]))
                    answers[what] = got.split(b"\r\n", 1)[0][:40] if got.startswith(b"HTTP/") else (
                        b"TLS alert" if got[:1] == b"\x15" else b"closed")
            summary = by.stop()
            wait_fds(srv, base, "after the garbage")
            check(srv.proc.poll() is None, "server died")
            check(srv.stop() == 0, "exit code")
            print("     %s" % summary)
            for what, a in answers.items():
                print("       %-36s %s" % (what, a.decode("latin-1")))


def rss_mib(srv):
    try:
        with open("/proc/%d/status" % srv.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def padded_review(size, uid=None):
    """A valid slice review of about size bytes (an annotation pads it)."""
    rev = guard.slice_review()
    if uid is not None:
        rev["request"]["uid"] = uid
    rev["request"]["object"]["metadata"].setdefault("annotations", {})["pad"] = ""
    pad = size - len(json.dumps(rev).encode())
    rev["request"]["object"]["metadata"]["annotations"]["pad"] = "x" * max(0, pad)
    return json.dumps(rev).encode()


def post_raw(s, body, send=None):
    s.sendall(b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body) + (body if send is None else body[:send]))


def read_answer(s):
    """(status, headers, body) of one HTTP answer."""
    data = b""
    while b"\r\n\r\n" not in data:
        d = s.recv(65536)
        check(d, "connection closed before an answer: %r" % data[:200])
        data += d
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    headers = dict((k.strip().lower(), v.strip()) for k, _, v in (l.partition(b":") for l in lines[1:]))
    length = int(headers.get(b"content-length", b"0"))
    while len(rest) < length:
        d = s.recv(1 << 20)
        check(d, "connection closed inside an answer")
        rest += d
    return int(lines[0].split()[1]), headers, rest


def tcp_wmem_max():
    """The most a TCP send buffer may grow to (net.ipv4.tcp_wmem's third)."""
    try:
        with open("/proc/sys/net/ipv4/tcp_wmem") as f:
            return int(f.read().split()[2])
    except (OSError, ValueError, IndexError):
        return 4 << 20


class RssPeak:
    """The server's highest RSS, sampled every 20 ms until stopped (or the
    test's process ends: a failed check must not leave it running)."""

    def __init__(self, srv):
        self.srv = srv
        self.peak = rss_mib(srv)
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop_flag.wait(0.02):
            self.peak = max(self.peak, rss_mib(self.srv))

    def stop(self):
        self.stop_flag.set()
        self.thread.join(10)
        return self.peak


def reviews_allowed(srv):
    return guard.metric(srv.metrics(), "dra_guard_requests_total", endpoint="validate", resource="resourceslices",
                        operation="CREATE", result="allowed")


def memory(srv):
    m = srv.metrics()
    return (guard.metric(m, "dra_guard_memory_in_use_bytes"),
            guard.metric(m, "dra_guard_memory_refusals_total", kind="body"),
            guard.metric(m, "dra_guard_memory_refusals_total", kind="answer"),
            guard.metric(m, "dra_guard_memory_budget_bytes"))


def test_the_memory_budget_bounds_bodies_and_answers():
    """Before: each connection kept its last body and answer while it idled,
    and nothing bounded the sum (40 idle connections that had sent 8 MiB each
    held 325 MiB). Now one budget counts bodies as they arrive and answers
    until they are sent; past it the request is refused, counted: a body's
    review answered inside a review (denied, code 503; its uid is in the
    first bytes kept), an answer too big to hold with 503 (its uid, 580 KiB
    of '<', is past what is echoed); an idle connection holds nothing. Scaled down: --max-body 1Mi,
    --memory-budget 8Mi, 30 connections."""
    mib = 1 << 20
    budget = 8 * mib
    args = ["--threads", "1", "--idle-timeout", "60s", "--body-timeout", "40s", "--max-body", "1Mi",
            "--memory-budget", "8Mi"]
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        with guard.Server(certs, args) as srv:
            base = idle_baseline(srv)
            rss0 = rss_mib(srv)
            check(memory(srv)[3] == budget, "dra_guard_memory_budget_bytes is %s" % memory(srv)[3])
            peak = RssPeak(srv)
            figures = []

            # 1. Bodies answered, connections kept open and idle: nothing held.
            body = padded_review(mib - 4096)
            idle = []
            for _ in range(30):
                s = tls(srv)
                post_raw(s, body)
                status, _, answer = read_answer(s)
                check(status == 200 and json.loads(answer)["response"]["allowed"], "answer %d %r" % (status, answer[:200]))
                idle.append(s)
            time.sleep(0.3)
            in_use = memory(srv)[0]
            check(in_use == 0, "%d bytes held by 30 idle connections" % in_use)
            figures.append("30 idle connections after 1 MiB bodies: %.1f MiB RSS, 0 held" % (rss_mib(srv) - rss0))

            # 2. Bodies stalled one byte short: the budget holds, the rest is refused.
            stalled = []
            for _ in range(30):
                s = tls(srv)
                post_raw(s, body, send=len(body) - 1)
                stalled.append(s)
            srv.wait(lambda: memory(srv)[1] >= 30 - budget // len(body), "the budget to refuse the bodies past it")
            in_use, refused_bodies, _, _ = memory(srv)
            check(in_use <= budget, "%d bytes held, budget %d" % (in_use, budget))
            figures.append("30 stalled 1 MiB bodies: %.1f MiB RSS, %.1f MiB held, %d refused" % (
                rss_mib(srv) - rss0, in_use / mib, refused_bodies))
            for s in stalled:
                s.sendall(body[-1:])
            codes = {}
            for s in stalled:
                status, headers, answer = read_answer(s)
                check(status == 200, "stalled body answered %d: %r" % (status, answer[:200]))
                r = json.loads(answer)["response"]
                # A refused body is answered inside a review all the same: its
                # uid is in the first bytes the server keeps.
                refusal = not r["allowed"] and r["status"]["code"] == 503
                check(r["allowed"] or (refusal and "--memory-budget" in r["status"]["message"]), "answer %r" % r)
                codes[503 if refusal else 200] = codes.get(503 if refusal else 200, 0) + 1
            check(codes.get(503, 0) == refused_bodies, "%s answers for %d refusals" % (codes, refused_bodies))

            # 3. Answers six times their body (a uid of '<' is echoed as \u003c),
            #    not read: held until sent, within the budget. An answer must
            #    be bigger than what the kernel takes off the server (its
            #    send buffer, at most tcp_wmem's maximum, 4 MiB by default,
            #    and the reader's 64 KiB window), or it is never held
            #    whatever the timing: 800 KiB of '<' answer with 4.7 MiB.
            wmem_max = tcp_wmem_max()
            amplified = padded_review(820 * 1024, uid="<" * (800 * 1024))
            check(6 * 800 * 1024 > wmem_max + (256 << 10),
                  "net.ipv4.tcp_wmem allows %d-byte send buffers: a 4.7 MiB answer would not be held" % wmem_max)
            readers = []
            reviewed = reviews_allowed(srv)
            _, bodies0, answers0, _ = memory(srv)
            for _ in range(6):
                raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)   # a small window: answers wait
                raw.settimeout(10)
                raw.connect(("127.0.0.1", srv.port))
                s = guard.tls_context(srv.ca).wrap_socket(raw, server_hostname="localhost")
                post_raw(s, amplified)
                readers.append(s)

            def decided():
                _, bodies, _, _ = memory(srv)
                return reviews_allowed(srv) - reviewed + bodies - bodies0 == 6

            srv.wait(decided, "the six requests to be answered or refused")
            in_use, bodies, answers, _ = memory(srv)
            refused = bodies - bodies0 + answers - answers0
            check(in_use <= budget, "%d bytes held, budget %d" % (in_use, budget))
            check(answers - answers0 >= 1, "no answer was refused: %.1f MiB held, %d bodies refused" % (
                in_use / mib, bodies - bodies0))
            figures.append("6 unread 4.7 MiB answers to 0.8 MiB bodies: %.1f MiB held, %d refused" % (
                in_use / mib, refused))
            answered = {}
            for s in readers:
                status, _, answer = read_answer(s)
                answered[status] = answered.get(status, 0) + 1
            check(answered.get(503, 0) == refused and answered.get(200, 0) == 6 - refused,
                  "answers %s, %d refused" % (answered, refused))

            close_all(idle + stalled + readers)
            wait_fds(srv, base, "after the clients left")
            srv.wait(lambda: memory(srv)[0] == 0, "everything held to be given back")
            high = peak.stop()
            time.sleep(0.5)
            after = rss_mib(srv) - rss0
            # The budget, one answer being built, the arena and the per-connection
            # buffers (60 connections x 100 KiB): well under budget + 16 MiB.
            check(high - rss0 <= budget / mib + 16, "RSS rose by %.1f MiB (budget 8 MiB)" % (high - rss0))
            check(after <= 8, "RSS %.1f MiB above idle once every client left" % after)
            check(srv.stop() == 0, "exit code")
            for f in figures:
                print("       %s" % f)
            print("     RSS %.1f MiB idle, peak +%.1f MiB, +%.1f MiB after (budget 8 MiB)" % (rss0, high - rss0, after))


def raw_exchange(srv, data, wait=5):
    """Send data on a new TLS connection; everything the server sends until
    it closes (or wait seconds pass), and whether it closed."""
    s = tls(srv)
    s.sendall(data)
    closed, got = closed_by_server(s, wait)
    s.close()
    return got, closed


def single_json_answer(got, what):
    """The one HTTP answer in got: (status, JSON document). Fails on a second
    status line, a body that is not JSON, or bytes after the body."""
    check(got.count(b"HTTP/1.") == 1, "%s: %d status lines in %r" % (what, got.count(b"HTTP/1."), got[:300]))
    head, sep, body = got.partition(b"\r\n\r\n")
    check(sep, "%s: no end of headers in %r" % (what, got[:300]))
    lines = head.split(b"\r\n")
    headers = dict((k.strip().lower(), v.strip()) for k, _, v in (l.partition(b":") for l in lines[1:]))
    check(headers.get(b"content-type", b"").startswith(b"application/json"), "%s: headers %r" % (what, headers))
    length = int(headers.get(b"content-length", b"-1"))
    check(length == len(body), "%s: Content-Length %d, %d bytes follow: %r" % (what, length, len(body), body[:200]))
    return int(lines[0].split()[1]), json.loads(body)


def test_framing_and_paths_the_library_lets_through():
    """libmicrohttpd 0.9.75 takes the first of two Content-Lengths, answers a
    malformed one itself (status line twice, then HTML) and decodes %00 in
    the path to the end of the string. Each gets one JSON answer here, is
    counted, and never reaches a review."""
    review = json.dumps(guard.slice_review()).encode()
    post = (b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n")
    framing = [
        ("valid body, a second Content-Length after it", b"Content-Length: %d\r\nContent-Length: 7\r\n" % len(review)),
        ("valid body, a second Content-Length before it", b"Content-Length: 7\r\nContent-Length: %d\r\n" % len(review)),
        ("the same Content-Length twice", b"Content-Length: %d\r\nContent-Length: %d\r\n" % (len(review), len(review))),
        ("Content-Length and chunked", b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n" % len(review)),
        ("a Transfer-Encoding other than chunked", b"Transfer-Encoding: gzip, chunked\r\n"),
    ]
    malformed = [(b"-1", 400), (b"0x10", 400), (b"+5", 400), (b"1" * 23, 413)]
    paths = [b"/validate%00", b"/validate%00.json", b"/%76alidate", b"/validate%2f", b"/mutate%00"]
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        with guard.Server(certs, ARGS) as srv:
            base = idle_baseline(srv)
            before = srv.metrics()
            seen = []
            for what, headers in framing:
                got, closed = raw_exchange(srv, post + headers + b"\r\n" + review)
                status, doc = single_json_answer(got, what)
                check(status == 400 and doc.get("code") == 400 and doc.get("kind") == "Status",
                      "%s: %d %s" % (what, status, doc))
                check(closed, "%s: connection left open after the 400" % what)
                seen.append("%s: 400" % what)
            for value, want in malformed:
                what = "Content-Length: %s" % value.decode()
                got, closed = raw_exchange(srv, post + b"Content-Length: " + value + b"\r\n\r\n" + review)
                status, doc = single_json_answer(got, what)
                check(status == want and doc.get("code") == want, "%s: %d %s" % (what, status, doc))
                check(closed, "%s: connection left open" % what)
                seen.append("%s: %d" % (what[:40], status))
            for path in paths:
                what = path.decode()
                got, closed = raw_exchange(srv, post.replace(b"/validate", path, 1) +
                                           b"Content-Length: %d\r\n\r\n" % len(review) + review)
                status, doc = single_json_answer(got, what)
                check(status == 404, "%s: %d %s" % (what, status, doc))
                check(closed, "%s: connection left open after the 404" % what)
            seen.append("%d escaped paths: 404" % len(paths))
            after = srv.metrics()
            for code, want in (("400", len(framing) + 3), ("413", 1), ("404", len(paths))):
                moved = (guard.metric(after, "dra_guard_http_errors_total", code=code) -
                         guard.metric(before, "dra_guard_http_errors_total", code=code))
                check(moved == want, "http_errors_total{code=%s} rose by %d, want %d" % (code, moved, want))
            for r in ("allowed", "denied", "error"):
                check(guard.metric(after, "dra_guard_requests_total", endpoint="validate", resource="resourceslices",
                                   operation="CREATE", result=r) ==
                      guard.metric(before, "dra_guard_requests_total", endpoint="validate",
                                   resource="resourceslices", operation="CREATE", result=r),
                      "a refused request reached a review (%s)" % r)
            wait_fds(srv, base, "after the refused requests")
            check(srv.stop() == 0, "exit code")
            for line in seen:
                print("       %s" % line)


def test_a_malformed_length_beside_a_slow_client_is_still_refused_and_counted():
    """The JSON answer in place of the library's needs the connection to be
    the only one on its worker thread whose headers are arriving. Beside a
    client that trickles its headers, the library's own answer goes out;
    it is still counted, never a review."""
    post = (b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n")
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        with guard.Server(certs, ARGS) as srv:
            base = idle_baseline(srv)
            slow = tls(srv)
            slow.sendall(post + b"X-Slow: ")
            time.sleep(0.3)
            before = guard.metric(srv.metrics(), "dra_guard_http_errors_total", code="400")
            got, closed = raw_exchange(srv, post + b"Content-Length: -1\r\n\r\n{}")
            check(closed, "connection left open")
            check(got.startswith(b"HTTP/1.1 400"), "answer %r" % got[:100])
            after = guard.metric(srv.metrics(), "dra_guard_http_errors_total", code="400")
            check(after - before == 1, "http_errors_total{code=400} rose by %d" % (after - before))
            slow.close()
            wait_fds(srv, base, "after the slow client left")
            check(srv.stop() == 0, "exit code")
            print("     beside a slow client: %d status line(s), %s body, counted" % (
                got.count(b"HTTP/1."), "JSON" if got.rstrip().endswith(b"}") else "HTML"))


def from_address(srv_port, source, timeout=10):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((source, 0))
    s.connect(("127.0.0.1", srv_port))
    return s


class Trickler:
    """Connections that send a header byte every second and never finish;
    each one the server closes is opened again, as an attacker would."""

    def __init__(self, port, sources, per_source):
        self.port = port
        self.slots = [(src, None) for src in sources for _ in range(per_source)]
        self.opened = self.refused = self.closed = 0
        self.lifetimes = []
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def open(self, src):
        try:
            s = from_address(self.port, src, timeout=0.2)
            s.sendall(b"G")
            self.opened += 1
            return (s, time.monotonic())
        except OSError:
            self.refused += 1
            return None

    def run(self):
        text = b"ET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 100000
        i = 0
        while not self.stop_flag.is_set():
            for k, (src, held) in enumerate(self.slots):
                if held is None:
                    self.slots[k] = (src, self.open(src))
                    continue
                s, t0 = held
                try:
                    s.sendall(text[i % len(text):i % len(text) + 1])
                    s.setblocking(False)
                    try:
                        gone = s.recv(100) == b""
                    except BlockingIOError:
                        gone = False
                    s.setblocking(True)
                except OSError:
                    gone = True
                if gone:
                    self.closed += 1
                    self.lifetimes.append(time.monotonic() - t0)
                    s.close()
                    self.slots[k] = (src, None)
            i += 1
            self.stop_flag.wait(1)

    def stop(self):
        self.stop_flag.set()
        self.thread.join(30)
        for _, held in self.slots:
            if held:
                held[0].close()


def kubelet_probe(port, path):
    """What the kubelet does: a new connection, GET, 2 s timeout."""
    t0 = time.monotonic()
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        c.request("GET", path)
        r = c.getresponse()
        r.read()
        c.close()
        return r.status, time.monotonic() - t0
    except Exception as e:  # noqa: BLE001 - a failed probe is a result
        return type(e).__name__, time.monotonic() - t0


def test_probes_answer_while_the_metrics_port_is_held():
    """Before: 32 connections trickling header bytes filled the metrics port's
    32 slots and /healthz failed 8 times of 8. Now probes have a port with
    slots of their own, every plain port limits connections per address and
    closes a request not complete in time: attackers from 40 addresses on the
    metrics port and one on the probe port leave every probe answered."""
    attackers = ["127.0.0.%d" % i for i in range(2, 42)]
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        with guard.Server(certs, ARGS + ["--probe-listen", "127.0.0.1:0"]) as srv:
            on_metrics = Trickler(srv.metrics_port, attackers, 2)
            on_probe = Trickler(srv.probe_port, ["127.0.0.2"], 12)
            time.sleep(1.5)
            probes = []
            t_end = time.monotonic() + 8
            while time.monotonic() < t_end:
                for path in ("/healthz", "/readyz"):
                    probes.append((path,) + kubelet_probe(srv.probe_port, path))
                time.sleep(0.4)
            scrape = kubelet_probe(srv.metrics_port, "/metrics")
            on_metrics.stop()
            on_probe.stop()
            failed = [p for p in probes if p[1] != 200]
            check(not failed, "%d of %d probes failed during the attack: %s" % (len(failed), len(probes), failed[:4]))
            check(len(probes) >= 16, "only %d probes ran" % len(probes))
            check(on_probe.refused > 0 or on_probe.closed > 0, "the probe port let one address hold 12 slots")
            closed_log = srv.count_log("connection closed: request not complete in time")
            check(closed_log > 0, "no trickling connection was closed for being slow")
            worst = max(p[2] for p in probes)
            srv.wait(lambda: srv.ready()[0], "the metrics port to answer once the attack stops")
            check(srv.stop() == 0, "exit code")
            print("     %d probes on the probe port, all 200, slowest %.0f ms; metrics port: %d connections opened "
                  "by 40 addresses, %d closed by the server (%d for being slow: lived %.1f-%.1fs from connect, backlog "
                  "wait included); /metrics scrape during the attack: %s" % (
                      len(probes), 1000 * worst, on_metrics.opened, on_metrics.closed, closed_log,
                      min(on_metrics.lifetimes or [0]), max(on_metrics.lifetimes or [0]), scrape[0]))


def test_one_address_cannot_hold_the_metrics_port():
    """40 trickling connections from one address: 8 are let in and closed at
    the request deadline; scrapes and probes from elsewhere are answered."""
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        with guard.Server(certs, ARGS) as srv:
            attack = Trickler(srv.metrics_port, ["127.0.0.2"], 40)
            time.sleep(1.5)
            answers = []
            t_end = time.monotonic() + 7
            while time.monotonic() < t_end:
                for path in ("/healthz", "/metrics"):
                    answers.append((path,) + kubelet_probe(srv.metrics_port, path))
                time.sleep(0.5)
            attack.stop()
            failed = [a for a in answers if a[1] != 200]
            check(not failed, "%d of %d requests failed: %s" % (len(failed), len(answers), failed[:4]))
            check(attack.lifetimes and max(attack.lifetimes) < 9,
                  "trickling connections lived %s" % attack.lifetimes[:8])
            check(srv.stop() == 0, "exit code")
            print("     %d scrapes and probes answered, slowest %.0f ms; the attacker opened %d connections "
                  "(the rest refused at once), each closed %.1f-%.1fs after it opened" % (
                      len(answers), 1000 * max(a[2] for a in answers), attack.opened,
                      min(attack.lifetimes), max(attack.lifetimes)))


def test_hostile_mix_under_asan_leaves_no_report():
    body_timeout = 10          # the budget's connections take a while under ASan,
    idle = 6                   # and must not go idle meanwhile
    env = {"ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1"),
           "UBSAN_OPTIONS": os.environ.get("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")}
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        with guard.Server(certs, ["--threads", "2", "--idle-timeout", "%ds" % idle, "--max-body", "1Mi",
                                  "--body-timeout", "%ds" % body_timeout, "--memory-budget", "5Mi",
                                  "--probe-listen", "127.0.0.1:0"],
                          asan=True, env=env) as srv:
            base = idle_baseline(srv)
            by = Bystander(srv)
            # Bodies past the memory budget: refused, then answered inside a
            # review (a denial with code 503).
            body = padded_review(1024 * 1024 - 4096)
            held = []
            for _ in range(8):
                s = tls(srv)
                post_raw(s, body, send=len(body) - 1)
                held.append(s)
            srv.wait(lambda: memory(srv)[1] > 0, "a body refused by the memory budget")
            for s in held:
                s.sendall(body[-1:])
            budget_answers = []
            for s in held:
                status, _, answer = read_answer(s)
                check(status == 200, "a held body answered %d" % status)
                r = json.loads(answer)["response"]
                budget_answers.append(503 if not r["allowed"] and r["status"]["code"] == 503 else 200)
            check(sorted(set(budget_answers)) == [200, 503], "answers past the budget: %s" % budget_answers)
            hello = client_hello(srv.ca)
            rng = random.Random(11)
            hostile = [tcp(srv) for _ in range(8)]
            for n in (3, len(hello) // 2):
                s = tcp(srv)
                s.sendall(hello[:n])
                hostile.append(s)
            hostile += [half_handshake(srv, hello) for _ in range(4)]
            slow = [tls(srv) for _ in range(4)]
            for s in slow[:2]:
                s.sendall(HEADERS + b"Content-Length: 4000\r\n\r\n{")
            s = tls(srv)
            s.sendall(HEADERS + b"Transfer-Encoding: chunked\r\n\r\n")
            try:
                s.settimeout(5)
                for _ in range(4 * 1024):                # four times its --max-body
                    s.sendall(b"400\r\n" + b" " * 1024 + b"\r\n")
            except (OSError, ssl.SSLError):
                pass
            hostile.append(s)
            garbage = garbage_clients(srv, rng)
            # What the library answers itself, and a path with %00.
            post = b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            for value in (b"-1", b"0x10", b"+5", b"1" * 23):
                raw_exchange(srv, post + b"Content-Length: " + value + b"\r\n\r\n{}", wait=3)
            raw_exchange(srv, post.replace(b"/validate", b"/validate%00") + b"Content-Length: 2\r\n\r\n{}", wait=3)
            # The probe port held by one address, while the slow clients
            # trickle past --body-timeout.
            probe_attack = Trickler(srv.probe_port, ["127.0.0.2"], 8)
            for i in range(body_timeout + 1):
                for s in slow:
                    try:
                        s.sendall(b"x")
                    except (OSError, ssl.SSLError):
                        pass
                time.sleep(1)
            probe_attack.stop()
            check(kubelet_probe(srv.probe_port, "/healthz")[0] == 200, "probe port not answering")
            check(timed_out_counts(srv)[1] >= 2, "no trickling client was cut at --body-timeout")
            for _, s in garbage:
                closed_by_server(s, idle + 8)
            summary = by.stop()
            close_all(hostile + slow + held + [s for _, s in garbage])
            wait_fds(srv, base, "after the hostile mix")
            code = srv.stop(timeout=60)
            log = srv.log()
            reports = [m for m in SANITIZER_MARKS if m in log]
            check(not reports, "sanitizer report in stderr (%s):\n%s" % (reports, log[-6000:]))
            check(code == 0, "exit code %s:\n%s" % (code, log[-3000:]))
            print("     ASan+UBSan build: exit 0, no report; %s" % summary)


def main():
    guard.run_tests([
        test_slowloris_headers_and_bodies_trickled_a_byte_a_second,
        test_a_body_trickled_past_the_body_timeout_loses_its_connection,
        test_framing_trickled_past_the_body_timeout_loses_its_connection,
        test_stalled_connections_and_handshakes_are_closed_and_freed,
        test_a_body_that_never_ends_is_cut_off,
        test_garbage_on_the_tls_port,
        test_the_memory_budget_bounds_bodies_and_answers,
        test_framing_and_paths_the_library_lets_through,
        test_a_malformed_length_beside_a_slow_client_is_still_refused_and_counted,
        test_probes_answer_while_the_metrics_port_is_held,
        test_one_address_cannot_hold_the_metrics_port,
        test_hostile_mix_under_asan_leaves_no_report,
    ])


if __name__ == "__main__":
    main()
