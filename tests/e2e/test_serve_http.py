#!/usr/bin/env python3
"""dra-guard serve over real HTTPS: verdicts, patches, refusals, TLS versions,
keep-alive, ALPN and metrics (tests/e2e/test_golden.py sends every golden case)."""

import json
import os
import re
import socket
import ssl
import subprocess
import sys
import time
import warnings

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guard  # noqa: E402
from guard import check, metric  # noqa: E402

CERTS = None
SERVER = None


def test_allowed_slice_with_curl_and_python():
    rev = guard.slice_review()
    code, body, version, err = guard.curl(SERVER, "/validate?timeout=10s", rev,
                                          headers=["Content-Type: application/json"])
    check(code == 200, "curl: HTTP %d %s %s" % (code, body, err))
    out = json.loads(body)
    check(out["apiVersion"] == "admission.k8s.io/v1" and out["kind"] == "AdmissionReview", out)
    check(out["response"]["uid"] == rev["request"]["uid"], "uid not echoed: %s" % out)
    check(out["response"]["allowed"] is True, out)
    check("patch" not in out["response"], "a validating answer carries a patch: %s" % out)
    c = guard.Client(SERVER)
    r = c.review(rev)
    check(r["allowed"] is True and r["uid"] == rev["request"]["uid"], r)
    c.close()


def deny_pods_key(obj):
    obj["spec"]["devices"][0]["nodeAllocatableResourceMappings"]["pods"] = {"allocationMultiplier": "1"}


def deny_capacity_key_on_exclusive_device(obj):
    dev = obj["spec"]["devices"][0]
    dev["nodeAllocatableResourceMappings"]["memory"] = {"capacityKey": "dra.example.com/memory"}


def test_denials_name_rule_and_path():
    cases = [
        (deny_pods_key, "slice.mapping.name", 'spec.devices[0].nodeAllocatableResourceMappings["pods"]'),
        (deny_capacity_key_on_exclusive_device, "slice.mapping.shareable", "spec.devices[0]"),
    ]
    c = guard.Client(SERVER)
    for mutate, rule, path in cases:
        rev = guard.slice_review(mutate)
        r = c.review(rev)
        check(r["uid"] == rev["request"]["uid"], r)
        check(r["allowed"] is False, "%s: allowed: %s" % (rule, r))
        check(r["status"]["code"] == 403, r)
        check(rule in r["status"]["message"], "%s not in %r" % (rule, r["status"]["message"]))
        check(path in r["status"]["message"], "%s not in %r" % (path, r["status"]["message"]))
        check(rule in r.get("auditAnnotations", {}).get("denied-rules", ""), r)
        # The same denial through curl.
        code, body, _, err = guard.curl(SERVER, "/validate", rev, headers=["Content-Type: application/json"])
        check(code == 200 and json.loads(body)["response"]["allowed"] is False, (code, body, err))
        # And the log line names uid and rule.
        line = None
        for l in SERVER.log_lines():
            if l.get("msg") == "admission denied" and l.get("uid") == rev["request"]["uid"]:
                line = l
        check(line is not None, "no denial log line for %s" % rev["request"]["uid"])
        check(rule in line["rules"] and line["kind"] == "ResourceSlice" and line["operation"] == "CREATE"
              and line["user"].startswith("system:serviceaccount:") and line["allowed"] is False
              and "duration_ms" in line, line)
    c.close()


def test_mutating_patch_sets_mapping_label():
    rev = guard.slice_review()
    c = guard.Client(SERVER)
    r = c.review(rev, endpoint="mutate")
    check(r["allowed"] is True and r["uid"] == rev["request"]["uid"], r)
    patch = guard.decode_patch(r)
    check(isinstance(patch, list) and patch, patch)
    labels = {}
    for op in patch:
        if op["path"] == "/metadata/labels" and op["op"] == "add":
            labels = op["value"]
        elif op["path"] == "/metadata/labels/dra-guard.io~1mappings":
            labels = {"dra-guard.io/mappings": op["value"]}
    value = labels.get("dra-guard.io/mappings", "")
    check(len(value) == 16 and all(ch in "0123456789abcdef" for ch in value), "label value %r" % value)
    # /mutate only mutates: a slice /validate refuses is allowed and labelled
    # there; the denial is /validate's alone.
    r = c.review(guard.slice_review(deny_pods_key), endpoint="mutate")
    check(r["allowed"] is True and guard.decode_patch(r), r)
    r = c.review(guard.slice_review(deny_pods_key), endpoint="validate")
    check(r["allowed"] is False and "patch" not in r, r)
    c.close()


def test_refusals_are_answered_logged_and_counted():
    before = SERVER.metrics()
    c = guard.Client(SERVER)
    good = json.dumps(guard.slice_review()).encode()
    cases = [
        # (method, path, body, headers, status, check on headers)
        ("GET", "/validate", None, {}, 405, lambda h: h.get("allow") == "POST"),
        ("PUT", "/mutate", good, {}, 405, lambda h: h.get("allow") == "POST"),
        ("POST", "/healthz", b"{}", {}, 405, lambda h: "GET" in h.get("allow", "")),
        ("POST", "/nowhere", good, {}, 404, None),
        ("GET", "/", None, {}, 404, None),
        ("POST", "/validate", good, {"Content-Type": "text/plain"}, 415, None),
        ("POST", "/validate", good, {"Content-Type": "application/jsonx"}, 415, None),
        ("POST", "/validate", b"{not json", {}, 400, None),
        ("POST", "/validate", b'{"apiVersion":"v1","kind":"Pod"}', {}, 400, None),
        ("POST", "/mutate", b"", {}, 400, None),
        ("POST", "/validate", b"[" * 100 + b"]" * 100, {}, 400, None),
    ]
    for method, path, body, headers, want, hcheck in cases:
        status, h, data = c.request(method, path, body, headers)
        check(status == want, "%s %s: %d, want %d (%s)" % (method, path, status, want, data[:200]))
        check(h.get("content-type", "").startswith("application/json"), "%s %s: %r" % (method, path, h))
        doc = json.loads(data)
        check(doc.get("kind") == "Status" and doc.get("code") == want, doc)
        if hcheck:
            check(hcheck(h), "%s %s headers %r" % (method, path, h))
        if h.get("connection", "").lower() == "close":
            c.close()
            c = guard.Client(SERVER)
    # charset and case in the media type are fine.
    status, _, data = c.request("POST", "/validate", good, {"Content-Type": "Application/JSON; charset=utf-8"})
    check(status == 200 and json.loads(data)["response"]["allowed"] is True, data)
    c.close()
    after = SERVER.metrics()
    for code, n in (("405", 3), ("404", 2), ("415", 2), ("400", 4)):
        d = metric(after, "dra_guard_http_errors_total", code=code) - \
            metric(before, "dra_guard_http_errors_total", code=code)
        check(d == n, "http_errors_total{code=%s} moved by %d, want %d" % (code, d, n))
    check(SERVER.count_log("request refused") >= 7, "refusals not logged")


def test_oversized_bodies_declared_and_chunked():
    # The suite's server runs with --max-body 256Ki.
    big = b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"' + \
        b"x" * (300 * 1024) + b'"}}'
    before = metric(SERVER.metrics(), "dra_guard_http_errors_total", code="413")
    ctx = guard.tls_context(SERVER.ca)
    # Declared far past the cap: refused from the headers, body never read.
    with socket.create_connection(("127.0.0.1", SERVER.port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as s:
            s.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n" % (1 << 30))
            s.sendall(big[:1000])
            head = s.recv(4096)
    check(head.startswith(b"HTTP/1.1 413"), "declared far oversize: %r" % head[:100])
    # Declared past the cap, waiting for 100 Continue: refused at once.
    with socket.create_connection(("127.0.0.1", SERVER.port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as s:
            s.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(big))
            head = s.recv(4096)
    check(head.startswith(b"HTTP/1.1 413"), "declared oversize with Expect: %r" % head[:100])
    # Declared past the cap and sent whole: answered 413 after the body.
    c = guard.Client(SERVER)
    status, _, data = c.request("POST", "/validate", big)
    check(status == 413 and json.loads(data)["code"] == 413, "declared oversize: %d %s" % (status, data[:100]))
    c.close()
    # Chunked: counted as it arrives.
    with socket.create_connection(("127.0.0.1", SERVER.port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as s:
            s.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Transfer-Encoding: chunked\r\n\r\n")
            for i in range(0, len(big), 16384):
                chunk = big[i:i + 16384]
                s.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            s.sendall(b"0\r\n\r\n")
            head = s.recv(4096)
    check(head.startswith(b"HTTP/1.1 413"), "chunked oversize: %r" % head[:100])
    # curl, declared length.
    code, body, _, err = guard.curl(SERVER, "/validate", big, headers=["Content-Type: application/json"])
    check(code == 413, "curl oversize: %d %s %s" % (code, body[:100], err))
    after = metric(SERVER.metrics(), "dra_guard_http_errors_total", code="413")
    check(after - before == 5, "413 counter moved by %d" % (after - before))
    # A body just under the cap is read whole (and is no AdmissionReview).
    c = guard.Client(SERVER)
    status, _, _ = c.request("POST", "/validate", b" " * (200 * 1024) + b"{}")
    check(status == 400, "under the cap: %d" % status)
    c.close()


def test_tls_versions():
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        ctx = guard.tls_context(SERVER.ca, minimum=version, maximum=version)
        with socket.create_connection(("127.0.0.1", SERVER.port), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname="localhost") as s:
                check(s.version() == {ssl.TLSVersion.TLSv1_2: "TLSv1.2", ssl.TLSVersion.TLSv1_3: "TLSv1.3"}[version],
                      s.version())
        c = guard.Client(SERVER, ctx=ctx)
        check(c.review(guard.slice_review())["allowed"] is True, "review over %s" % version)
        c.close()
    # Python's OpenSSL offers 1.0/1.1 at security level 0: the server must
    # end the handshake (a local "no protocols available" would mean the
    # client never offered, and proves nothing).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for version in (ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1):
            ctx = guard.tls_context(SERVER.ca, minimum=version, maximum=version)
            ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
            try:
                with socket.create_connection(("127.0.0.1", SERVER.port), timeout=10) as raw:
                    with ctx.wrap_socket(raw, server_hostname="localhost") as s:
                        raise AssertionError("%s accepted (%s)" % (version, s.version()))
            except (ssl.SSLError, ConnectionResetError) as e:
                check("NO_PROTOCOLS_AVAILABLE" not in str(e) and "no protocols" not in str(e),
                      "the client could not offer %s: %s" % (version, e))
    for old in ("tls1", "tls1_1"):
        # The client is made to offer only the old version (security level 0
        # so OpenSSL 3 agrees to); the server must refuse the handshake.
        p = subprocess.run(["openssl", "s_client", "-" + old, "-cipher", "DEFAULT:@SECLEVEL=0",
                            "-connect", "127.0.0.1:%d" % SERVER.port, "-servername", "localhost"],
                           input=b"", capture_output=True, timeout=20)
        out = (p.stdout + p.stderr).decode("utf-8", "replace")
        offered = re.search(r"Protocol\s*:\s*TLSv1(\.1)?\b", out) or "no protocols available" not in out
        check(offered, "openssl could not even offer %s: %s" % (old, out[-500:]))
        check("Cipher is (NONE)" in out or "Cipher    : 0000" in out or p.returncode != 0,
              "%s handshake was accepted:\n%s" % (old, out[-1500:]))
        check("BEGIN CERTIFICATE" not in out and "Server certificate" not in out,
              "%s: the server sent its certificate:\n%s" % (old, out[-1500:]))


def test_keep_alive_reuses_one_connection():
    c = guard.Client(SERVER)
    first = None
    for i in range(8):
        endpoint = "mutate" if i % 3 else "validate"
        r = c.review(guard.slice_review(deny_pods_key if i % 2 else None), endpoint=endpoint)
        # /mutate never denies; /validate refuses the pods mapping.
        check(r["allowed"] is (i % 2 == 0 or endpoint == "mutate"), r)
        status, h, _ = c.request("GET", "/healthz")
        check(status == 200 and h.get("connection", "").lower() != "close", (status, h))
        if first is None:
            first = c.sock()
        check(c.sock() is first and c.sock() is not None, "the connection was not reused (request %d)" % i)
    c.close()


def test_alpn_h2_offer_is_served_over_http11():
    ctx = guard.tls_context(SERVER.ca, alpn=["h2", "http/1.1"])
    c = guard.Client(SERVER, ctx=ctx)
    check(c.review(guard.slice_review())["allowed"] is True, "review with ALPN offer")
    proto = c.sock().selected_alpn_protocol()
    check(proto in (None, "http/1.1"), "ALPN selected %r" % proto)
    c.close()
    # h2 alone: no match, still HTTP/1.1.
    ctx = guard.tls_context(SERVER.ca, alpn=["h2"])
    c = guard.Client(SERVER, ctx=ctx)
    check(c.review(guard.slice_review())["allowed"] is True, "review with h2-only offer")
    check(c.sock().selected_alpn_protocol() in (None,), c.sock().selected_alpn_protocol())
    c.close()
    code, body, version, err = guard.curl(SERVER, "/validate", guard.slice_review(),
                                          headers=["Content-Type: application/json"], extra=["--http2"])
    check(code == 200 and version == "1.1", "curl --http2: %d over HTTP/%s %s" % (code, version, err))


def test_health_and_readiness():
    c = guard.Client(SERVER)
    status, h, body = c.request("GET", "/healthz")
    check(status == 200 and json.loads(body) == {"status": "ok"}, body)
    status, h, body = c.request("GET", "/readyz")
    check(status == 200 and json.loads(body)["ready"] is True, body)
    status, h, body = c.request("HEAD", "/readyz")
    check(status == 200 and body == b"", (status, body))
    c.close()
    for path in ("/healthz", "/readyz"):
        status, body = guard.http_get(SERVER.metrics_port, path)
        check(status == 200, (path, status, body))
    status, body = guard.http_get(SERVER.metrics_port, "/validate")
    check(status == 404 and b"this port serves GET /metrics" in body, (status, body))
    # The debug endpoints asked of the webhook port: the 404 says where they are.
    c = guard.Client(SERVER)
    for path in ("/debug/ledger", "/debug/pending", "/metrics"):
        status, h, body = c.request("GET", path)
        check(status == 404 and b"are on the metrics port" in body and b"--metrics-listen" in body, (path, status, body))
    c.close()
    # No cluster view here: the debug paths say so instead of "no such path".
    for path in ("/debug/view", "/debug/ledger"):
        status, body = guard.http_get(SERVER.metrics_port, path)
        check(status == 404 and b"without a cluster view" in body, (path, status, body))


def test_metrics_parse_and_counters_move():
    before = SERVER.metrics()
    c = guard.Client(SERVER)
    for _ in range(5):
        c.review(guard.slice_review())
    for _ in range(3):
        c.review(guard.slice_review(deny_pods_key))
    for _ in range(2):
        c.review(guard.slice_review(), endpoint="mutate")
    c.close()
    after = SERVER.metrics()

    def moved(name, **labels):
        return metric(after, name, **labels) - metric(before, name, **labels)

    lab = dict(endpoint="validate", resource="resourceslices", operation="CREATE")
    check(moved("dra_guard_requests_total", result="allowed", **lab) == 5, "allowed counter")
    check(moved("dra_guard_requests_total", result="denied", **lab) == 3, "denied counter")
    check(moved("dra_guard_requests_total", endpoint="mutate", resource="resourceslices", operation="CREATE",
                result="allowed") == 2, "mutate counter")
    check(moved("dra_guard_violations_total", rule="slice.mapping.name", action="deny") == 3, "violations")
    check(moved("dra_guard_request_duration_seconds_count", endpoint="validate", result="allowed") == 5,
          "histogram count (allowed)")
    check(moved("dra_guard_request_duration_seconds_count", endpoint="validate", result="denied") == 3,
          "histogram count (denied)")
    check(moved("dra_guard_request_duration_seconds_bucket", endpoint="validate", result="denied", le="+Inf") == 3,
          "+Inf bucket")
    check(metric(after, "dra_guard_ready") == 1, "ready gauge")
    check(metric(after, "dra_guard_requests_in_flight") == 0, "in flight")
    check(metric(after, "dra_guard_policy_reload_total", result="success") >= 1, "policy reload")
    check(metric(after, "dra_guard_tls_reload_total", result="success") >= 1, "tls reload")
    check(metric(after, "dra_guard_tls_cert_not_after_timestamp_seconds") > time.time(), "not after")
    check(metric(after, "dra_guard_freeze_active") == 0, "freeze")
    check(any(k[0] == "dra_guard_build_info" for k in after), "build info")
    check(any(k[0] == "dra_guard_policy_info" and dict(k[1]).get("hash") for k in after), "policy info")
    status, body = guard.http_get(SERVER.metrics_port, "/metrics")
    check(status == 200, status)


def test_the_parser_is_strict():
    bad = [
        "x_total 1\n",                                            # no TYPE
        "# TYPE x counter\nx 1\n",                                # counter without _total
        '# TYPE x_total counter\nx_total{a="1",a="2"} 1\n',       # label twice
        '# TYPE x_total counter\nx_total{a="1\\q"} 1\n',          # bad escape
        "# TYPE x_total counter\nx_total 1\nx_total 2\n",         # duplicate series
        "# TYPE g gauge\ng one\n",                                # bad value
        "# TYPE g gauge\ng 1",                                    # no final newline
        '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 0\nh_count 1\n',
    ]
    for text in bad:
        try:
            guard.parse_prometheus(text)
        except AssertionError:
            continue
        raise AssertionError("parser accepted %r" % text)
    ok = guard.parse_prometheus('# HELP g a "gauge"\n# TYPE g gauge\ng{l="a\\"b\\\\c\\nd"} -1.5e3\n')
    check(metric(ok, "g", l='a"b\\c\nd') == -1500.0, ok)


def main():
    global CERTS, SERVER
    with guard.TempDir() as tmp:
        CERTS = guard.make_certs(os.path.join(tmp, "certs"))
        with guard.Server(CERTS, ["--max-body", "256Ki", "--threads", "2"]) as SERVER:
            guard.run_tests([
                test_allowed_slice_with_curl_and_python,
                test_denials_name_rule_and_path,
                test_mutating_patch_sets_mapping_label,
                test_refusals_are_answered_logged_and_counted,
                test_oversized_bodies_declared_and_chunked,
                test_tls_versions,
                test_keep_alive_reuses_one_connection,
                test_alpn_h2_offer_is_served_over_http11,
                test_health_and_readiness,
                test_metrics_parse_and_counters_move,
                test_the_parser_is_strict,
            ])
            code = SERVER.stop()
            check(code == 0, "exit code %d after SIGTERM" % code)


if __name__ == "__main__":
    main()
