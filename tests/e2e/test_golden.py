#!/usr/bin/env python3
"""The golden cases (tests/golden/README.md): the files are what gen.py writes and
every recorded verdict keeps its intent, and the real server answers every case
with exactly the recorded verdict."""

import base64
import copy
import glob
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "golden"))
import guard  # noqa: E402
from guard import check  # noqa: E402

CERTS = None
SHOWN = 5                     # mismatches printed in full; all are counted


def golden_cases():
    files = sorted(glob.glob(os.path.join(guard.ROOT, "tests", "golden", "cases", "*.json")))
    out = []
    for f in files:
        with open(f) as fh:
            out.append(json.load(fh))
    return out


def test_cases_match_gen_py_and_their_intent():
    import gen  # noqa: E402 - builds the cases in memory, writes nothing
    problems = gen.check()
    check(not problems, "%d problems (make golden-update records the cases again):\n     %s"
          % (len(problems), "\n     ".join(problems[:20])))
    print("     %d cases, each as gen.py writes it and keeping its intent" % len(gen.cases))


def recorded_view(case, resp, logged_rules):
    """The server's answer in the recording's terms, and what differs."""
    got = copy.deepcopy(resp)
    diffs = []
    if got.pop("uid", None) != case["review"]["request"]["uid"]:
        diffs.append("uid not echoed")
    if "patch" in got:
        got["patch"] = json.loads(base64.b64decode(got["patch"], validate=True))
    want = case["verdict"]["response"]
    for key in sorted(set(want) | set(got)):
        if want.get(key) != got.get(key):
            diffs.append("response.%s: recorded %s, served %s" % (key, json.dumps(want.get(key)),
                                                                  json.dumps(got.get(key))))
    rules = []
    for v in case["verdict"]["violations"]:
        if v["rule"] not in rules:
            rules.append(v["rule"])
    if logged_rules != rules:
        diffs.append("logged rules %s, recorded %s" % (logged_rules, rules))
    return diffs


def test_the_server_gives_every_recorded_verdict():
    everything = golden_cases()
    # A case with a view is judged against a cluster view built from timed
    # events at a fixed time: the engine replays that (test_engine), and the
    # real server meets the same rules against a real API server in
    # test_ledger_envtest.py. Here the server judges the rest.
    cases = [c for c in everything if "view" not in c]
    # A server gates a Pod only while a replica could release it (it runs
    # --gate-release and the Lease has a live holder): this one, alone and
    # without a cluster, withholds the gate as the cases marked
    # gateUnreleasable record; the gate itself is served in
    # test_gate_envtest.py.
    gating = [c for c in cases if not c.get("gateUnreleasable") and
              "schedulingGates" in json.dumps(c["verdict"]["response"].get("patch"))]
    cases = [c for c in cases if c not in gating]
    check(len(cases) >= 50, "only %d golden cases" % len(cases))
    by_policy = {}
    for case in cases:
        by_policy.setdefault(case.get("policy"), []).append(case)
    n, bad = 0, []
    for policy, group in sorted(by_policy.items(), key=lambda kv: str(kv[0])):
        args = ["--log-level", "debug"]
        if policy:
            args += ["--policy", os.path.join(guard.ROOT, policy)]
        with guard.Server(CERTS, args) as srv:
            c = guard.Client(srv)
            answers = [(case, c.review(case["review"], endpoint=case["endpoint"])) for case in group]
            c.close()
            srv.stop()
            logged = {}
            for line in srv.log_lines():
                if line.get("msg", "").startswith("admission ") and "uid" in line:
                    check(line["uid"] not in logged, "uid %s logged twice" % line["uid"])
                    logged[line["uid"]] = list(line.get("rules", []))
            for case, resp in answers:
                diffs = recorded_view(case, resp, logged.get(case["review"]["request"]["uid"]))
                if diffs:
                    bad.append((case["name"], diffs))
                n += 1
    check(n == len(cases), "ran %d of %d golden cases" % (n, len(cases)))
    check(not bad, "%d of %d cases differ from their recorded verdict:\n     %s" % (
        len(bad), n, "\n     ".join("%s: %s" % (name, "; ".join(d)) for name, d in bad[:SHOWN])))
    print("     %d golden cases under %d policies, each answered exactly as recorded "
          "(%d with a cluster view: test_engine and test_ledger_envtest.py; %d that gate a Pod: "
          "test_gate_envtest.py)" % (n, len(by_policy), len(everything) - len(cases) - len(gating), len(gating)))


def main():
    global CERTS
    with guard.TempDir() as tmp:
        CERTS = guard.make_certs(os.path.join(tmp, "certs"))
        guard.run_tests([
            test_cases_match_gen_py_and_their_intent,
            test_the_server_gives_every_recorded_verdict,
        ])


if __name__ == "__main__":
    main()
