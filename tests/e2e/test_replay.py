#!/usr/bin/env python3
"""dra-guard replay on a recorded audit log (tests/fixtures/replay/).

The log was recorded by the real kube-apiserver (tests/e2e/envtest.py, audit
policy tests/fixtures/replay/audit-policy.yaml) while test_ledger_envtest.py
drove the seed's scenarios with the guard registered as its webhook:
same- and cross-NUMA claims, a claim shared by two Pods, release retries, a
duplicate allocation, a mapping change under a live claim, a node restart, a
driver restart with a stale writer and a freeze. `make replay-fixtures`
records it again and rewrites the expected reports (test_replay.py --update).

Checked here:
- the report (JSON and text) is the expected one, and every write the guard
  refused while recording is denied again by the same policy, for the same rule;
- a stricter policy's what-if names exactly the writes that succeeded and it
  would refuse, found here from the log itself by a model of the rules made
  stricter (the NUMA split allocation, the mapping change under a live claim)
  and of slice.writer;
- gzip'd logs read the same; a cut gzip stream is an error after the lines
  before it; corrupt and over-long lines are reported with their numbers and
  the replay goes on; events out of order within the window are sorted, and
  without a window counted;
- a dump taken mid-recording plus the rest of the log ends at the same ledger;
- JUnit output; exit codes 0/1/2 and --warn-exit-code;
- why Pods were pending: refusals by the live guard's reasons (the same set
  docs/operations.md names), each claim's time from its first refused
  allocation to its allocation in dra_guard_pending_seconds' buckets, and
  the claims still refused at the end, all against the log; dry runs
  neither emit nor store; the pending table's cap is an error;
- the readiness report's verdicts and evidence against what the log shows (the
  stale writer's refused slices, the freeze on and off, the kubelet's slice
  deletions, each Pod's time from creation to binding), and a threshold the
  window cannot meet."""

import gzip
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import guard  # noqa: E402
from guard import check  # noqa: E402

ROOT = os.environ.get("DRA_GUARD_ROOT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
FIX = os.path.join(ROOT, "tests", "fixtures", "replay")
LOG = os.path.join(FIX, "audit.log")
POLICY = os.path.join(FIX, "policy.yaml")
DUMP = os.path.join(FIX, "dump.json")
DRIVER_SA = "system:serviceaccount:dra-system:dra-example-driver"
NUMA = "dra.example.com/numaNode"
STRICT = "enforcement:\n  rules:\n    ledger.numa.split: deny\n    ledger.mapping.drift: deny\n"
TMP = tempfile.mkdtemp(prefix="dra-guard-replay-")

# Name -> arguments after "replay"; the expected output of each is
# tests/fixtures/replay/expected-<name>.
PROMOTION = os.path.join(FIX, "promotion.yaml")


def readiness_policy():
    with open(POLICY) as f, open(PROMOTION) as g:
        return tmp("readiness.yaml", f.read() + g.read())


CASES = {
    "report.json": ["--policy", POLICY, "--output", "json", LOG],
    "report.txt": ["--policy", POLICY, LOG],
    "readiness.md": ["--report", "readiness", "--policy", "@readiness", LOG],
    "readiness.json": ["--report", "readiness", "--policy", "@readiness", "--output", "json", LOG],
}


def case_args(args):
    return [readiness_policy() if a == "@readiness" else a for a in args]


def replay(args, ok=(0, 1)):
    p = subprocess.run([guard.binary(), "replay"] + args, capture_output=True, text=True, timeout=120)
    check(p.returncode in ok, "replay %s exited %d: %s" % (args, p.returncode, p.stderr))
    return p


def replay_json(args, ok=(0, 1)):
    p = replay(args + ["--output", "json"], ok)
    return json.loads(p.stdout), p


def tmp(name, text):
    path = os.path.join(TMP, name)
    mode = "wb" if isinstance(text, bytes) else "w"
    with open(path, mode) as f:
        f.write(text)
    return path


def strict_policy():
    with open(POLICY) as f:
        return tmp("strict.yaml", f.read() + STRICT)


def log_lines():
    with open(LOG) as f:
        return f.read().splitlines(True)


def events():
    return [(i + 1, json.loads(line)) for i, line in enumerate(log_lines())]


def ok(ev):
    return 200 <= ev["responseStatus"]["code"] < 300


def where(ev):
    ref = ev["objectRef"]
    return (ref["resource"], ref.get("subresource", ""), ref.get("namespace", ""), ref.get("name", ""))


# --- a model of the rules made stricter, over the log itself -------------------------------------

def expected_strict_refusals():
    """{line: set(rules)} of the writes that succeeded and the strict policy
    refuses: slice writes by anyone but the driver's ServiceAccount or the
    node's kubelet (slice.writer); a new allocation whose devices span NUMA
    zones (ledger.numa.split); a slice update that changes the mappings of a
    device a live claim holds (ledger.mapping.drift)."""
    slices = {}        # name -> object
    claims = {}        # (ns, name) -> object
    out = {}
    for line, ev in sorted(events(), key=lambda x: (x[1]["stageTimestamp"], x[0])):
        res, sub, ns, name = where(ev)
        if not ok(ev):
            continue
        obj = ev.get("responseObject")
        user = ev["user"]["username"]
        if res == "resourceslices":
            node = (obj or slices.get(name, {})).get("spec", {}).get("nodeName", "")
            if user not in (DRIVER_SA, "system:node:" + node):
                out.setdefault(line, set()).add("slice.writer")
            if ev["verb"] in ("update", "patch") and name in slices:
                held = {(r["pool"], r["device"]) for c in claims.values()
                        for r in c.get("status", {}).get("allocation", {}).get("devices", {}).get("results", [])}
                before = {d["name"]: d.get("nodeAllocatableResourceMappings") for d in slices[name]["spec"]["devices"]}
                pool = obj["spec"]["pool"]["name"]
                for d in obj["spec"]["devices"]:
                    if (pool, d["name"]) in held and d["name"] in before and \
                            before[d["name"]] != d.get("nodeAllocatableResourceMappings"):
                        out.setdefault(line, set()).add("ledger.mapping.drift")
            if ev["verb"] == "delete":
                slices.pop(name, None)
            else:
                slices[name] = obj
        elif res == "resourceclaims":
            old = claims.get((ns, name), {})
            if sub == "status" and not old.get("status", {}).get("allocation"):
                results = obj.get("status", {}).get("allocation", {}).get("devices", {}).get("results", [])
                zones = set()
                for r in results:
                    for s in slices.values():
                        for d in s["spec"]["devices"]:
                            if s["spec"]["pool"]["name"] == r["pool"] and d["name"] == r["device"]:
                                zones.add(d["attributes"][NUMA]["int"])
                if len(zones) > 1:
                    out.setdefault(line, set()).add("ledger.numa.split")
            if ev["verb"] == "delete":
                claims.pop((ns, name), None)
            else:
                claims[(ns, name)] = obj
    return out


# --- tests -------------------------------------------------------------------------------------

def test_expected_reports():
    for name, args in CASES.items():
        p = replay(case_args(args))
        with open(os.path.join(FIX, "expected-" + name)) as f:
            want = f.read()
        check(p.stdout == want, "replay %s differs from expected-%s (make replay-fixtures rewrites it)"
              % (name, name))


def test_recorded_denials_are_denied_again():
    rep, p = replay_json(["--policy", POLICY, "--examples", "100", LOG])
    check(p.returncode == 1, "exit %d with denials" % p.returncode)
    denied = {e["line"]: e for r in rep["rules"] for e in r["events"] if e["action"] == "deny"}
    refused = {line: ev for line, ev in events() if ev["responseStatus"]["code"] == 403}
    # The one refused pods/status patch is not judged: the log has the
    # patch, not the object the API server would have sent.
    patches = [line for line, ev in refused.items() if ev["verb"] == "patch"]
    check(rep["writes"]["notJudged"]["objectNotRecorded"] == len(patches), "patches %s, report %s"
          % (patches, rep["writes"]["notJudged"]))
    for line, ev in refused.items():
        if ev["verb"] == "patch":
            continue
        check(line in denied, "line %d was refused while recording and is not denied: %s" % (line, ev))
        rule = denied[line]["message"]
        check(any(r["rule"] in ev["responseStatus"]["message"] for r in rep["rules"]
                  if any(e["line"] == line for e in r["events"])),
              "line %d denied for other rules than recorded (%s): %s" % (line, ev["responseStatus"]["message"],
                                                                          rule))
    check(rep["input"]["corrupt"] == 0 and rep["input"]["outOfOrder"] == 0, "input %s" % rep["input"])
    check([e["freeze"] for e in rep["freeze"]["events"]] == [True, False] and not rep["freeze"]["frozenAtEnd"],
          "freeze %s" % rep["freeze"])
    check(rep["restarts"]["sliceDeletesByKubelet"] == 2, "restarts %s" % rep["restarts"])
    check(rep["divergence"]["admittedNumaSplits"] == 1, "NUMA splits %s" % rep["divergence"])
    check(rep["ledger"]["summary"]["overcommittedNodes"] == 0 and rep["ledger"]["summary"]["claims"] == 2,
          "final ledger %s" % rep["ledger"]["summary"])


def test_stricter_policy_names_exactly_what_it_would_refuse():
    want = expected_strict_refusals()
    check(any("ledger.numa.split" in r for r in want.values()) and
          any("ledger.mapping.drift" in r for r in want.values()), "the model found nothing to refuse: %s" % want)
    rep, _ = replay_json(["--policy", strict_policy(), "--examples", "100", LOG])
    got = {e["line"]: set(e["rules"]) for e in rep["wouldRefuse"]}
    check(got == want, "the what-if refuses %s, the log says %s" % (sorted(got.items()), sorted(want.items())))
    check(rep["writes"]["wouldRefuse"] == len(want), "wouldRefuse %d" % rep["writes"]["wouldRefuse"])
    base, _ = replay_json(["--policy", POLICY, LOG])
    check({e["line"] for e in base["wouldRefuse"]} == {line for line, r in want.items() if "slice.writer" in r},
          "the recording policy refuses %s" % base["wouldRefuse"])


def test_gzip_reads_the_same_and_a_cut_stream_is_an_error():
    with open(LOG, "rb") as f:
        raw = f.read()
    plain, _ = replay_json(["--policy", POLICY, LOG])
    gz = tmp("audit.log.gz", gzip.compress(raw))
    zipped, _ = replay_json(["--policy", POLICY, gz])
    check(zipped == plain, "the gzip'd log replays differently")
    cut = tmp("cut.log.gz", gzip.compress(raw)[: len(gzip.compress(raw)) // 2])
    p = replay(["--policy", POLICY, "--output", "json", cut], ok=(2,))
    check("gzip -dc failed" in p.stderr, "no error for a cut gzip stream: %s" % p.stderr)
    check(json.loads(p.stdout)["window"]["lines"] > 0, "nothing before the cut was replayed")


def strip_lines(rep):
    return ({r["rule"]: (r["wouldDeny"], r["wouldWarn"]) for r in rep["rules"]},
            sorted((e["time"], e["name"]) for e in rep["wouldRefuse"]), rep["ledger"]["nodes"])


def test_corrupt_and_long_lines_are_reported_and_skipped():
    lines = log_lines()
    bad = lines[:4] + ["{\"kind\":\"Event\",\"stage\":\n"] + lines[4:18] + ["not json at all\n"] + lines[18:]
    path = tmp("corrupt.log", "".join(bad))
    plain, _ = replay_json(["--policy", POLICY, LOG])
    rep, _ = replay_json(["--policy", POLICY, path])
    check([c["line"] for c in rep["input"]["corruptLines"]] == [5, 20], "corrupt lines %s"
          % rep["input"]["corruptLines"])
    check(strip_lines(rep) == strip_lines(plain), "corrupt lines changed the replay")
    longest = max(len(x) for x in lines)
    rep, _ = replay_json(["--policy", POLICY, "--max-line", str(longest - 2), LOG])
    long_lines = [i + 1 for i, x in enumerate(lines) if len(x) - 1 > longest - 2]
    check([c["line"] for c in rep["input"]["corruptLines"]] == long_lines[:20] and
          "over the longest read" in rep["input"]["corruptLines"][0]["error"], "long lines %s, want %s"
          % (rep["input"]["corruptLines"], long_lines))


def test_out_of_order_events_are_sorted_within_the_window():
    lines = log_lines()
    swapped = list(lines)
    swaps = 0
    for i in (5, 12, 30):
        swapped[i], swapped[i + 1] = swapped[i + 1], swapped[i]
        swaps += json.loads(lines[i])["stageTimestamp"] != json.loads(lines[i + 1])["stageTimestamp"]
    path = tmp("swapped.log", "".join(swapped))
    plain, _ = replay_json(["--policy", POLICY, LOG])
    rep, _ = replay_json(["--policy", POLICY, path])
    check(rep["input"]["outOfOrder"] == 0 and strip_lines(rep) == strip_lines(plain),
          "events swapped within the window replay differently: %s" % rep["input"])
    rep, _ = replay_json(["--policy", POLICY, "--reorder-window", "0s", path])
    check(rep["input"]["outOfOrder"] == swaps, "out of order %d, want %d" % (rep["input"]["outOfOrder"], swaps))


def test_a_dump_and_the_rest_of_the_log_end_at_the_same_ledger():
    with open(os.path.join(FIX, "dump-line.txt")) as f:
        n = int(f.read())
    tail = tmp("tail.log", "".join(log_lines()[n:]))
    whole, _ = replay_json(["--policy", POLICY, LOG])
    rep, _ = replay_json(["--policy", POLICY, "--view", DUMP, tail])

    def ledger(r):
        return [{k: v for k, v in nd.items() if k != "entries"} for nd in r["ledger"]["nodes"]], \
            [[(e["claim"], e["device"], e["amounts"]) for e in nd["entries"]] for nd in r["ledger"]["nodes"]]
    check(ledger(rep) == ledger(whole), "the dump and the rest end at %s, the whole log at %s"
          % (ledger(rep), ledger(whole)))
    check(rep["writes"]["notJudged"]["oldObjectUnknown"] == 0, "objects of the dump unknown: %s" % rep["writes"])


def test_junit_and_exit_codes():
    p = replay(["--policy", POLICY, "--output", "junit", LOG])
    suite = ET.fromstring(p.stdout)
    rep, _ = replay_json(["--policy", POLICY, LOG])
    denying = sum(1 for r in rep["rules"] if r["wouldDeny"])
    check(int(suite.get("failures")) == denying + 1, "junit failures %s, want %d (rules) + 1 (a NUMA split "
          "admitted)" % (suite.get("failures"), denying))
    check(p.returncode == 1, "exit %d" % p.returncode)
    with open(POLICY) as f:
        warn = tmp("warn.yaml", f.read() + "enforcement:\n  default: warn\n")
    check(replay(["--policy", warn, LOG]).returncode == 0, "warnings only: not 0")
    check(replay(["--policy", warn, "--warn-exit-code", "3", LOG], ok=(3,)).returncode == 3, "--warn-exit-code")
    check(replay(["--policy", warn, os.path.join(TMP, "missing.log")], ok=(2,)).returncode == 2, "a missing log")
    check(replay(["--policy", tmp("bad.yaml", "kind: Nope\n"), LOG], ok=(2,)).returncode == 2, "a bad policy")


def pending_times():
    """Seconds from the creation of each Pod with claims to its binding."""
    created, out = {}, []
    for _, ev in sorted(events(), key=lambda x: (x[1]["stageTimestamp"], x[0])):
        res, sub, ns, name = where(ev)
        if res != "pods" or not ok(ev):
            continue
        t = ev["stageTimestamp"]
        secs = int(t[11:13]) * 3600 + int(t[14:16]) * 60 + float(t[17:-1])
        if ev["verb"] == "create" and sub == "" and ev["responseObject"]["spec"].get("resourceClaims"):
            created[(ns, name)] = secs
        elif ev["verb"] == "create" and sub == "binding" and (ns, name) in created:
            out.append(secs - created.pop((ns, name)))
    return sorted(out), len(created)


def test_readiness_verdicts_follow_the_log():
    rep, p = replay_json(["--report", "readiness", "--policy", readiness_policy(), LOG])
    check(p.returncode == (0 if rep["verdict"] == "go" else 1), "exit %d for %s" % (p.returncode, rep["verdict"]))
    crit = {c["name"]: c for c in rep["criteria"]}
    check(list(crit) == ["driverCoverage", "rollbackDrill", "restartsAndUpgrades", "zeroDivergenceWindow",
                         "pendingSLO", "capacitySLO"], "criteria %s" % list(crit))
    # the stale writer's slices were refused while recording: the driver did not pass
    refused = [line for line, ev in events() if where(ev)[0] == "resourceslices" and not ok(ev)]
    drv = crit["driverCoverage"]["evidence"]["drivers"]
    check(crit["driverCoverage"]["verdict"] == "no-go" and drv[0]["name"] == "dra.example.com" and
          drv[0]["publishedMappings"] and drv[0]["refused"] >= len(refused), "driver coverage %s" % crit["driverCoverage"])
    freeze = [json.loads(ev["responseObject"]["data"].get("freeze", "false")) for _, ev in events()
              if where(ev)[0] == "configmaps" and ok(ev) and ev["verb"] in ("create", "update")]
    check(freeze[-2:] == [True, False], "the recording's freeze writes %s" % freeze)
    drills = crit["rollbackDrill"]["evidence"]["drills"]
    check(crit["rollbackDrill"]["verdict"] == "go" and len(drills) == 1 and drills[0]["clean"], "drill %s" % drills)
    kubelet = sum(1 for _, ev in events() if where(ev)[0] == "resourceslices" and ev["verb"] == "delete" and ok(ev)
                  and ev["user"]["username"].startswith("system:node:"))
    ev = crit["restartsAndUpgrades"]["evidence"]
    check(ev["sliceDeletesByKubelet"] == kubelet == 2 and ev["poolsRepublished"] == 2 and
          crit["restartsAndUpgrades"]["verdict"] == "go", "restarts %s" % ev)
    times, waiting = pending_times()
    ev = crit["pendingSLO"]["evidence"]
    p50, p99 = times[(len(times) + 1) // 2 - 1], times[-1]
    check(ev["pods"] == len(times) and ev["stillPending"] == waiting, "pending %s, log %s / %d" % (ev, times, waiting))
    # the histogram gives the upper bound of the bucket: 10 ms under 1 s, 100 ms under a minute
    for got, want in ((ev["p50Seconds"], p50), (ev["p99Seconds"], p99)):
        check(want <= got + 1e-6 <= want + (0.01 if want < 1 else 0.1) + 1e-6, "pending %s, log %s" % (ev, times))
    check(crit["capacitySLO"]["verdict"] == "go", "capacity %s" % crit["capacitySLO"])
    # a threshold the window cannot meet turns its criterion, and the verdict, to no-go
    with open(readiness_policy()) as f:
        text = f.read().replace("zeroDivergenceWindow: 5s", "zeroDivergenceWindow: 1h")
    rep, p = replay_json(["--report", "readiness", "--policy", tmp("long.yaml", text), LOG])
    check(p.returncode == 1 and rep["verdict"] == "no-go" and
          [c["verdict"] for c in rep["criteria"] if c["name"] == "zeroDivergenceWindow"] == ["no-go"],
          "a 1h window passed on a 15s log")
    p = replay(["--report", "readiness", "--policy", tmp("bad-promotion.yaml", text.replace("p99: 5s", "p99: 0s")),
                LOG], ok=(2,))
    check("promotion.pendingSLO.p99" in p.stderr, "a bad promotion section: %s" % p.stderr)


# --- why pending: the live guard's reasons and pending time --------------------------------------

BOUNDS = [1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600]   # dra_guard_pending_seconds


def camel(rule):
    return "".join(w[:1].upper() + w[1:] for w in rule.replace("-", ".").split("."))


def seconds(ts):
    return int(ts[11:13]) * 3600 + int(ts[14:16]) * 60 + float(ts[17:-1])


def documented_reasons():
    """The reasons docs/operations.md's Events table names (the live guard's)."""
    with open(os.path.join(ROOT, "docs", "operations.md")) as f:
        text = f.read()
    section = text[text.index("### Events and pending time"):text.index("### Probes")]
    return [row.split("|")[2].strip().strip("`") for row in section.splitlines()
            if row.startswith("| `") and row.count("|") == 5]


def expected_pending():
    """From the log: the refusals of claim writes that name a rule emitting
    an Event (each names one here), each claim's first refusal, and the
    time to the write that allocated it; the claims never allocated."""
    reasons = documented_reasons()
    refusals, first, samples = {}, {}, []
    for _, ev in sorted(events(), key=lambda x: (x[1]["stageTimestamp"], x[0])):
        res, sub, ns, name = where(ev)
        if res != "resourceclaims":
            continue
        if ev["responseStatus"]["code"] == 403:
            msg = ev["responseStatus"].get("message", "")
            rules = [r for r in ("ledger.pool.fresh", "ledger.device.duplicate", "ledger.numa.split",
                                 "claim.freeze.allocate", "claim.freeze.create") if "[%s]" % r in msg]
            for r in rules:
                check(camel(r) in reasons, "%s is not a documented reason %s" % (camel(r), reasons))
                refusals[camel(r)] = refusals.get(camel(r), 0) + 1
                first.setdefault((ns, name), (seconds(ev["stageTimestamp"]), camel(r)))
                first[(ns, name)] = (first[(ns, name)][0], camel(r))   # held last by this rule
        elif ok(ev) and sub == "status" and (ns, name) in first and \
                ev["responseObject"].get("status", {}).get("allocation"):
            since, reason = first.pop((ns, name))
            samples.append((reason, seconds(ev["stageTimestamp"]) - since))
    return refusals, samples, first


def test_pending_follows_the_log():
    refusals, samples, held = expected_pending()
    check(refusals and samples and held, "the recording has no refusal, no allocation after one, or none held "
          "at the end: %s %s %s" % (refusals, samples, held))
    rep, _ = replay_json(["--policy", POLICY, LOG])
    pend = rep["pending"]
    reasons = [r["reason"] for r in pend["reasons"]]
    # one set of reasons: the live guard's (docs/operations.md, the metrics' label values) and replay's
    check(sorted(reasons) == sorted(documented_reasons()), "replay's reasons %s, the live guard's %s"
          % (reasons, documented_reasons()))
    for r in pend["reasons"]:
        check(r["reason"] == camel(r["rule"]), "reason %s of rule %s" % (r["reason"], r["rule"]))
        check(r["refusals"] == refusals.get(r["reason"], 0), "%s: %d refusals, the log has %d"
              % (r["reason"], r["refusals"], refusals.get(r["reason"], 0)))
        if r["reason"] in ("LedgerPodAmounts", "LedgerPodOmitted"):
            check("buckets" not in r, "a Pod status refusal or warning has a pending time: %s" % r)
            continue
        mine = [t for reason, t in samples if reason == r["reason"]]
        check([b["le"] for b in r["buckets"]] == ["%g" % b for b in BOUNDS] + ["+Inf"], "buckets %s" % r["buckets"])
        want = [sum(1 for t in mine if t <= b) for b in BOUNDS] + [len(mine)]
        check([b["count"] for b in r["buckets"]] == want and r["allocated"] == len(mine) and
              abs(r["sumSeconds"] - sum(mine)) < 0.002, "%s: %s, the log gives %s" % (r["reason"], r, mine))
    got = {(c["namespace"], c["name"]): c for c in pend["claims"]}
    check(set(got) == set(held), "held at the end %s, the log %s" % (sorted(got), sorted(held)))
    end = seconds(rep["window"]["to"])
    for key, (since, reason) in held.items():
        c = got[key]
        check(c["reason"] == reason and 0 <= since - seconds(c["since"]) < 1 and
              abs(c["seconds"] - (end - since)) < 0.002 and c["refusals"] >= 1 and c["pod"],
              "%s: %s, the log: since %s, %s" % (key, c, since, reason))
    # the text report lists them as dra-guard pending does
    text = replay(["--policy", POLICY, LOG]).stdout
    check("claims still refused at the end of the log" in text and
          all("%s/%s" % k in text for k in held), "the text report does not list %s:\n%s" % (list(held), text))
    check(pend["refusedButWritten"] == 0 and pend["maxClaims"] == 100000, "pending %s" % pend)


def test_dry_runs_emit_nothing_and_store_nothing():
    """The log's refused allocations made again with ?dryRun=All (and the
    allocations that succeeded, as dry runs too): no Event, nothing held,
    nothing allocated by them."""
    out = []
    for line in log_lines():
        ev = json.loads(line)
        if where(ev)[0] == "resourceclaims" and where(ev)[1] == "status":
            ev["requestURI"] += "?fieldManager=kube-scheduler&dryRun=All"
            out.append(json.dumps(ev) + "\n")
        out.append(line)
    rep, _ = replay_json(["--policy", POLICY, tmp("dryrun.log", "".join(out))])
    plain, _ = replay_json(["--policy", POLICY, LOG])
    check([r["refusals"] for r in rep["pending"]["reasons"]] == [r["refusals"] for r in plain["pending"]["reasons"]]
          and rep["pending"]["claims"] == plain["pending"]["claims"] and
          rep["ledger"]["summary"] == plain["ledger"]["summary"],
          "dry runs changed the replay: %s\nwithout them: %s" % (rep["pending"], plain["pending"]))


def test_pending_table_cap_is_an_error():
    p = replay(["--policy", POLICY, "--max-pending", "1", "--output", "json", LOG], ok=(0, 1, 2))
    _, _, held = expected_pending()
    refused_claims = 1 + len(held)   # the one allocated after its refusal was held too
    if refused_claims > 1:
        check(p.returncode == 2 and "pending table" in p.stderr and "--max-pending 1" in p.stderr,
              "over the cap: exit %d, %s" % (p.returncode, p.stderr))
    check(replay(["--policy", POLICY, "--max-pending", "0", LOG], ok=(2,)).returncode == 2, "--max-pending 0")


def update():
    for name, args in CASES.items():
        p = replay(case_args(args))
        with open(os.path.join(FIX, "expected-" + name), "w") as f:
            f.write(p.stdout)
        print("wrote", os.path.join(FIX, "expected-" + name))


def main():
    if sys.argv[1:] == ["--update"]:
        update()
        return
    guard.run_tests([
        test_expected_reports,
        test_recorded_denials_are_denied_again,
        test_stricter_policy_names_exactly_what_it_would_refuse,
        test_gzip_reads_the_same_and_a_cut_stream_is_an_error,
        test_corrupt_and_long_lines_are_reported_and_skipped,
        test_out_of_order_events_are_sorted_within_the_window,
        test_a_dump_and_the_rest_of_the_log_end_at_the_same_ledger,
        test_junit_and_exit_codes,
        test_readiness_verdicts_follow_the_log,
        test_pending_follows_the_log,
        test_dry_runs_emit_nothing_and_store_nothing,
        test_pending_table_cap_is_an_error,
    ])


if __name__ == "__main__":
    main()
