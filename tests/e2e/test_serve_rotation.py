#!/usr/bin/env python3
"""Certificate rotation under load: a ..data symlink swap as the kubelet does
it, a plain rewrite of the files, SIGHUP, and a broken pair that must be
refused while the old one keeps serving. Zero failed requests throughout."""

import os
import shutil
import subprocess
import signal
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guard  # noqa: E402
from guard import check, metric  # noqa: E402


class Load:
    """Threads sending reviews until stopped: half on one keep-alive
    connection each, half on a new connection (a new handshake) per request."""

    def __init__(self, server, threads=4):
        self.server = server
        self.stop_flag = threading.Event()
        self.ok = 0
        self.failures = []
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(i % 2 == 0,), daemon=True) for i in range(threads)]
        for t in self.threads:
            t.start()

    def run(self, keep_alive):
        client = None
        while not self.stop_flag.is_set():
            try:
                if client is None or not keep_alive:
                    if client:
                        client.close()
                    client = guard.Client(self.server, timeout=20)
                rev = guard.slice_review()
                r = client.review(rev)
                if r["uid"] != rev["request"]["uid"] or r["allowed"] is not True:
                    raise AssertionError("wrong answer %s" % r)
                with self.lock:
                    self.ok += 1
            except Exception as e:  # noqa: BLE001 - every failure counts
                with self.lock:
                    self.failures.append("%s: %s" % (type(e).__name__, e))
                if client:
                    client.close()
                client = None
        if client:
            client.close()

    def stop(self):
        self.stop_flag.set()
        for t in self.threads:
            t.join(60)
        return self.ok, self.failures


def secret_files(certs):
    return {name: open(os.path.join(certs, name)).read() for name in ("tls.crt", "tls.key", "ca.crt")}


def wait_served(server, want_fp, what):
    server.wait(lambda: guard.served_fingerprint(server.port, server.ca) == want_fp, what)


def test_symlink_swap_rotation_under_load():
    with guard.TempDir() as tmp:
        ca_dir = guard.make_certs(os.path.join(tmp, "ca"))
        secret = guard.ConfigMapDir(os.path.join(tmp, "secret"))
        secret.publish(secret_files(ca_dir))
        first_fp = guard.fingerprint_file(os.path.join(ca_dir, "tls.crt"))
        with guard.Server(ca_dir, cert=os.path.join(secret.path, "tls.crt"),
                          key=os.path.join(secret.path, "tls.key")) as srv:
            check(guard.served_fingerprint(srv.port, srv.ca) == first_fp, "first certificate not served")
            load = Load(srv)
            try:
                time.sleep(0.3)
                fps = [first_fp]
                for i in range(3):
                    guard.new_serving_cert(ca_dir)
                    fp = guard.fingerprint_file(os.path.join(ca_dir, "tls.crt"))
                    check(fp not in fps, "make-certs.sh did not make a new certificate")
                    fps.append(fp)
                    secret.publish(secret_files(ca_dir))
                    wait_served(srv, fp, "rotation %d to be served" % (i + 1))
                    time.sleep(0.2)

                # A broken pair: this certificate with another CA's key.
                other = guard.make_certs(os.path.join(tmp, "other"))
                errors = metric(srv.metrics(), "dra_guard_tls_reload_total", result="error")
                broken = secret_files(ca_dir)
                broken["tls.key"] = open(os.path.join(other, "tls.key")).read()
                secret.publish(broken)
                srv.wait(lambda: metric(srv.metrics(), "dra_guard_tls_reload_total", result="error") > errors,
                         "the broken pair to be refused")
                check(guard.served_fingerprint(srv.port, srv.ca) == fps[-1], "broken pair replaced the good one")
                line = srv.find_log("certificate not loaded; the serving one stays")
                check(line and "does not match" in line.get("error", ""), "no error log: %s" % line)
                check(srv.ready()[0], "not ready after a refused pair")

                # Expired-looking garbage is refused too; then a good one again.
                secret.publish({"tls.crt": "garbage\n", "tls.key": "garbage\n"})
                srv.wait(lambda: metric(srv.metrics(), "dra_guard_tls_reload_total", result="error") > errors + 1,
                         "the garbage pair to be refused")
                guard.new_serving_cert(ca_dir)
                fp = guard.fingerprint_file(os.path.join(ca_dir, "tls.crt"))
                secret.publish(secret_files(ca_dir))
                wait_served(srv, fp, "recovery after broken pairs")
                time.sleep(0.3)
            finally:
                ok, failures = load.stop()
            check(not failures, "%d of %d requests failed during rotation: %s" % (len(failures), ok + len(failures),
                                                                                  failures[:5]))
            check(ok > 50, "only %d requests ran" % ok)
            print("     %d requests, 0 failed, 4 rotations, 2 broken pairs refused" % ok)
            m = srv.metrics()
            check(metric(m, "dra_guard_tls_reload_total", result="success") == 5,
                  "tls reload successes: %s" % metric(m, "dra_guard_tls_reload_total", result="success"))
            check(srv.stop() == 0, "exit code")


def test_plain_rewrite_and_sighup():
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        with guard.Server(certs) as srv:
            load = Load(srv, threads=2)
            try:
                # In place, no rename: the server may catch a half-written pair
                # and refuse it, but it must end on the new one.
                spare = guard.make_certs(os.path.join(tmp, "spare"))
                shutil.copy(os.path.join(certs, "ca.crt"), os.path.join(spare, "ca.crt"))
                shutil.copy(os.path.join(certs, "ca.key"), os.path.join(spare, "ca.key"))
                guard.new_serving_cert(spare)
                fp = guard.fingerprint_file(os.path.join(spare, "tls.crt"))
                for name in ("tls.key", "tls.crt"):
                    with open(os.path.join(certs, name), "w") as f:
                        f.write(open(os.path.join(spare, name)).read())
                wait_served(srv, fp, "the rewritten pair")

                # SIGHUP rereads even when nothing signalled a change.
                successes = metric(srv.metrics(), "dra_guard_tls_reload_total", result="success")
                srv.signal(signal.SIGHUP)
                srv.wait(lambda: srv.find_log("SIGHUP: reloading certificate and policy") is not None, "SIGHUP log")
                check(metric(srv.metrics(), "dra_guard_tls_reload_total", result="success") == successes,
                      "an unchanged pair was reloaded")
                time.sleep(0.2)
            finally:
                ok, failures = load.stop()
            check(not failures, "%d requests failed: %s" % (len(failures), failures[:5]))
            print("     %d requests, 0 failed" % ok)
            check(srv.stop() == 0, "exit code")


def test_start_without_a_usable_certificate_fails():
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        other = guard.make_certs(os.path.join(tmp, "other"))
        for cert, key, mention in ((os.path.join(tmp, "none.crt"), os.path.join(certs, "tls.key"), "none.crt"),
                                   (os.path.join(certs, "tls.crt"), os.path.join(other, "tls.key"),
                                    "does not match")):

            p = subprocess.run([guard.binary(), "serve", "--listen", "127.0.0.1:0", "--metrics-listen", "off",
                                "--tls-cert", cert, "--tls-key", key], capture_output=True, timeout=30)
            check(p.returncode == 1, "exit %d with a bad pair" % p.returncode)
            check(mention in p.stderr.decode(), "stderr does not say why: %s" % p.stderr.decode())


def main():
    guard.run_tests([
        test_symlink_swap_rotation_under_load,
        test_plain_rewrite_and_sighup,
        test_start_without_a_usable_certificate_fails,
    ])


if __name__ == "__main__":
    main()
