#!/usr/bin/env python3
"""The policy from a mounted ConfigMap directory (laid out the kubelet's way):
a freeze flipped by swapping ..data starts and ends denials without a
restart; a broken policy keeps the last good one serving (failure counted,
still ready); a broken policy at start means not ready, with the reason.

Also measures - and only reports - how long after the symlink swap the
freeze takes effect."""

import json
import os
import signal
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guard  # noqa: E402
from guard import check, metric  # noqa: E402

POLICY = guard.policy_text()
BROKEN = POLICY + "unknownTopLevelKey: 1\n"
REASON = "INC-4211: hugepage mapping regression on gpu.example.com"


def claim_allowed(client):
    rev = guard.claim_create_review()
    r = client.review(rev)
    check(r["uid"] == rev["request"]["uid"], r)
    return r["allowed"], r


def wait_for_claim_verdict(srv, client, want_allowed, since):
    """Send claim CREATEs until the verdict flips; the seconds since `since`."""
    deadline = time.time() + guard.EVENT_TIMEOUT
    while time.time() < deadline:
        allowed, r = claim_allowed(client)
        if allowed is want_allowed:
            return time.time() - since, r
        time.sleep(0.005)
    fail = "verdict never became allowed=%s; log:\n%s" % (want_allowed, srv.log()[-3000:])
    raise AssertionError(fail)


def test_freeze_flip_by_symlink_swap_and_last_good():
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        cm = guard.ConfigMapDir(os.path.join(tmp, "policy"))
        cm.publish({"policy.yaml": POLICY, "freeze": "false", "freeze-reason": ""})
        with guard.Server(certs, ["--policy-dir", cm.path]) as srv:
            c = guard.Client(srv)
            allowed, r = claim_allowed(c)
            check(allowed, "claim CREATE denied without a freeze: %s" % r)
            m = srv.metrics()
            check(metric(m, "dra_guard_freeze_active") == 0, "freeze gauge at start")
            hash0 = [dict(k[1])["hash"] for k in m if k[0] == "dra_guard_policy_info"]

            latencies = []
            for round_ in range(3):
                t = cm.publish({"policy.yaml": POLICY, "freeze": "true", "freeze-reason": REASON})
                lat_on, r = wait_for_claim_verdict(srv, c, False, t)
                check("claim.freeze.create" in r["status"]["message"] and REASON in r["status"]["message"],
                      "freeze denial message: %s" % r["status"]["message"])
                m = srv.metrics()
                check(metric(m, "dra_guard_freeze_active") == 1, "freeze gauge on")
                check(metric(m, "dra_guard_freeze_info", reason=REASON) == 1, "freeze reason gauge")
                check(metric(m, "dra_guard_freeze_since_timestamp_seconds") > 0, "freeze since")
                # The metrics port's /readyz (unchecked on loopback) says which
                # policy serves and that it is frozen, and why; the webhook
                # port's, which any Pod reaches through the Service, says
                # ready and nothing of the freeze.
                _, ready = srv.ready()
                check(ready["ready"] and ready["policy"]["freeze"] is True and
                      ready["policy"]["freezeReason"] == REASON and ready["policy"]["freezeSince"].endswith("Z"),
                      "readyz during a freeze: %s" % ready)
                status, _, data = c.request("GET", "/readyz")
                check(status == 200 and json.loads(data) == {"ready": True},
                      "the webhook port's /readyz during a freeze: %s" % data)
                # Slices stay writable during a freeze (operators repair mappings).
                r = c.review(guard.slice_review(extra={"authentication.kubernetes.io/node-name": ["worker-1"]}))
                check(r["allowed"], "slice write denied during a freeze: %s" % r)
                t = cm.publish({"policy.yaml": POLICY, "freeze": "false", "freeze-reason": ""})
                lat_off, _ = wait_for_claim_verdict(srv, c, True, t)
                check(metric(srv.metrics(), "dra_guard_freeze_active") == 0, "freeze gauge off")
                _, ready = srv.ready()
                check(ready["policy"]["freeze"] is False and "freezeReason" not in ready["policy"],
                      "readyz after the freeze: %s" % ready)
                latencies += [lat_on, lat_off]
            check(srv.find_log("freeze active", reason=REASON) is not None, "freeze not logged")
            check(srv.find_log("freeze lifted") is not None, "lift not logged")
            print("     freeze took effect %.0f-%.0f ms after the ..data swap (mean %.0f ms over %d flips)" % (
                min(latencies) * 1000, max(latencies) * 1000, sum(latencies) / len(latencies) * 1000,
                len(latencies)))

            # A broken document: refused; the last good one keeps serving.
            errors = metric(srv.metrics(), "dra_guard_policy_reload_total", result="error")
            good_hash = [dict(k[1])["hash"] for k in srv.metrics() if k[0] == "dra_guard_policy_info"]
            check(good_hash == hash0, "policy hash changed over freeze flips back to the same content")
            cm.publish({"policy.yaml": BROKEN, "freeze": "true", "freeze-reason": REASON})
            srv.wait(lambda: metric(srv.metrics(), "dra_guard_policy_reload_total", result="error") > errors,
                     "the broken policy to be refused")
            line = srv.find_log("policy not loaded; the last good policy stays")
            check(line and line["file"].endswith("/policy.yaml") and line.get("line") and
                  "unknownTopLevelKey" in line["error"], "error log: %s" % line)
            ready, body = srv.ready()
            check(ready, "not ready after a broken reload: %s" % body)
            status, _, data = c.request("GET", "/readyz")
            check(status == 200, "TLS /readyz after a broken reload: %d %s" % (status, data))
            allowed, r = claim_allowed(c)
            check(allowed, "the broken policy's freeze took effect: %s" % r)
            check([dict(k[1])["hash"] for k in srv.metrics() if k[0] == "dra_guard_policy_info"] == good_hash,
                  "policy_info changed to a broken policy")

            # A freeze key that is not true/false is broken too.
            cm.publish({"policy.yaml": POLICY, "freeze": "yes", "freeze-reason": ""})
            srv.wait(lambda: metric(srv.metrics(), "dra_guard_policy_reload_total", result="error") > errors + 1,
                     "freeze: yes to be refused")
            check(claim_allowed(c)[0], "freeze: yes froze")

            # Repaired: serves the new policy.
            cm.publish({"policy.yaml": POLICY, "freeze": "true", "freeze-reason": "repaired"})
            wait_for_claim_verdict(srv, c, False, time.time())
            c.close()
            check(srv.stop() == 0, "exit code")


def test_broken_policy_at_start_is_not_ready():
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        cm = guard.ConfigMapDir(os.path.join(tmp, "policy"))
        cm.publish({"policy.yaml": BROKEN})
        with guard.Server(certs, ["--policy-dir", cm.path], wait_ready=False) as srv:
            ready, body = srv.ready()
            check(not ready and "no valid policy" in body["reason"] and "unknownTopLevelKey" in body["reason"],
                  "readyz: %s" % body)
            c = guard.Client(srv)
            status, _, data = c.request("GET", "/readyz")
            check(status == 503 and json.loads(data)["ready"] is False, (status, data))
            # Not a failed call (a webhook that fails open would let the
            # write through): a denial inside the review, code 503.
            status, _, data = c.request("POST", "/validate", guard.claim_create_review())
            resp = json.loads(data).get("response", {}) if status == 200 else {}
            check(resp.get("allowed") is False and resp.get("status", {}).get("code") == 503
                  and "no valid policy" in resp["status"].get("message", ""),
                  "a review without a policy: %d %s" % (status, data))
            check(metric(srv.metrics(), "dra_guard_ready") == 0, "ready gauge")
            line = srv.find_log("no valid policy: not ready")
            check(line and "unknownTopLevelKey" in line["error"] and line.get("line"), "log: %s" % line)
            c.close()
            # Fixed in place: picked up without a restart.
            cm.publish({"policy.yaml": POLICY})
            srv.wait(lambda: srv.ready()[0], "ready after the fix")
            c = guard.Client(srv)
            check(claim_allowed(c)[0], "claim after fix")
            c.close()
            check(srv.stop() == 0, "exit code")


def test_broken_policy_file_at_start_recovers_without_a_signal():
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        path = os.path.join(tmp, "policy.yaml")
        open(path, "w").write(BROKEN)
        with guard.Server(certs, ["--policy", path], wait_ready=False) as srv:
            ready, body = srv.ready()
            check(not ready and "unknownTopLevelKey" in body["reason"], body)
            # Not ready, nothing to keep stable: the file is polled until it loads.
            open(path, "w").write(POLICY)
            srv.wait(lambda: srv.ready()[0], "ready once the file is fixed")
            check(srv.stop() == 0, "exit code")


def test_policy_file_sighup_and_watch():
    with guard.TempDir() as tmp:
        certs = guard.make_certs(os.path.join(tmp, "certs"))
        path = os.path.join(tmp, "policy-configmap.yaml")
        example = open(os.path.join(guard.ROOT, "examples", "policy-configmap.yaml")).read()
        open(path, "w").write(example)
        with guard.Server(certs, ["--policy", path]) as srv:
            c = guard.Client(srv)
            check(claim_allowed(c)[0], "claim denied at start")
            # Without --policy-file-watch only SIGHUP rereads the file.
            with open(path, "w") as f:
                f.write(example.replace('freeze: "false"', 'freeze: "true"'))
            srv.signal(signal.SIGHUP)
            wait_for_claim_verdict(srv, c, False, time.time())
            c.close()
            check(srv.stop() == 0, "exit code")
        open(path, "w").write(example)
        with guard.Server(certs, ["--policy", path, "--policy-file-watch"]) as srv:
            c = guard.Client(srv)
            check(claim_allowed(c)[0], "claim denied at start")
            tmpfile = path + ".tmp"
            with open(tmpfile, "w") as f:
                f.write(example.replace('freeze: "false"', 'freeze: "true"'))
            os.rename(tmpfile, path)
            wait_for_claim_verdict(srv, c, False, time.time())
            c.close()
            check(srv.stop() == 0, "exit code")


def main():
    guard.run_tests([
        test_freeze_flip_by_symlink_swap_and_last_good,
        test_broken_policy_at_start_is_not_ready,
        test_broken_policy_file_at_start_recovers_without_a_signal,
        test_policy_file_sighup_and_watch,
    ])


if __name__ == "__main__":
    main()
