#!/usr/bin/env python3
"""dra-guard vap on the command line: what it prints, what --explain says,
and how it refuses bad arguments and broken policies (the policies
themselves are judged against a real API server in test_vap_envtest.py)."""

import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guard  # noqa: E402
from guard import check  # noqa: E402

EXAMPLE = os.path.join(guard.ROOT, "examples", "policy-configmap.yaml")
STRICT = os.path.join(guard.ROOT, "tests", "golden", "policies", "strict.yaml")


def run(*args, stdin=None):
    p = subprocess.run([guard.binary()] + list(args), input=stdin, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def objects(text):
    code, out, err = run("convert", "-", stdin=text)
    check(code == 0, "the output does not read back: %s" % err)
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def rule_ids():
    code, out, _ = run("rules")
    return [line.split()[0] for line in out.splitlines()[1:] if line.strip()]


def test_prints_a_policy_and_a_binding_per_expressed_rule():
    code, out, err = run("vap", "--policy", EXAMPLE)
    check(code == 0 and err == "", "exit %d: %s" % (code, err))
    objs = objects(out)
    code, ex, _ = run("vap", "--policy", EXAMPLE, "--explain", "--output", "json")
    rules = json.loads(ex)["rules"]
    expressed = [r for r in rules if r["coverage"] in ("full", "partial")]
    check(len(objs) == 2 * len(expressed), "%d objects for %d expressed rules" % (len(objs), len(expressed)))
    names = {(o["kind"], o["metadata"]["name"]) for o in objs}
    for r in expressed:
        check(("ValidatingAdmissionPolicy", r["policy"]) in names, "no policy for %s" % r["rule"])
        check(("ValidatingAdmissionPolicyBinding", r["policy"]) in names, "no binding for %s" % r["rule"])
    for o in objs:
        check(o["apiVersion"] == "admissionregistration.k8s.io/v1", "%s: %s" % (o["metadata"]["name"], o["apiVersion"]))


def test_explain_names_every_rule_and_says_why_when_not_full():
    code, out, err = run("vap", "--policy", STRICT, "--explain")
    check(code == 0, "exit %d: %s" % (code, err))
    for rule in rule_ids():
        check("\n%s " % rule in out, "--explain does not list %s" % rule)
    code, out, _ = run("vap", "--policy", STRICT, "--explain", "--output", "json")
    doc = json.loads(out)
    check([r["rule"] for r in doc["rules"]] == rule_ids(), "the JSON lists other rules than dra-guard rules")
    for r in doc["rules"]:
        check((r["coverage"] == "full") == (r["why"] is None), "%s: coverage %s, why %r" % (r["rule"], r["coverage"], r["why"]))
        check((r["policy"] is None) == (r["coverage"] in ("none", "idle")), "%s: policy %r" % (r["rule"], r["policy"]))
    by = {r["rule"]: r for r in doc["rules"]}
    check(by["policy.invalid"]["coverage"] == "none" and by["slice.mapping.schema"]["coverage"] == "none",
          "the rules a policy cannot express are not listed as such")
    code, out, _ = run("vap", "--explain", "--output", "json")
    check(json.loads(out)["rules"][0]["rule"] == rule_ids()[0], "the built-in policy's explanation")


def test_policy_from_stdin_and_configmap_name():
    with open(EXAMPLE) as f:
        text = f.read()
    code, a, _ = run("vap", "--policy", "-", stdin=text)
    _, b, _ = run("vap", "--policy", EXAMPLE)
    check(code == 0 and a == b, "--policy - does not give what the file gives")
    code, out, _ = run("vap", "--policy", EXAMPLE, "--policy-configmap", "ops/guard-policy")
    refs = [o["spec"]["paramRef"] for o in objects(out) if "paramRef" in o.get("spec", {})]
    check(refs and all(r == {"name": "guard-policy", "namespace": "ops", "parameterNotFoundAction": "Deny"}
                       for r in refs), "paramRef: %s" % refs)


def test_refuses_bad_arguments_and_broken_policies():
    for args in (["--policy-configmap", "no-slash"], ["--policy-configmap", "Bad_NS/x"], ["--output", "json"],
                 ["--explain", "--output", "yaml"], ["extra"], ["--nope"]):
        code, out, err = run("vap", *args)
        check(code == 2 and out == "" and "dra-guard vap" in err, "%s: exit %d, %r" % (args, code, err))
    code, out, err = run("vap", "--policy", "/nonexistent/policy.yaml")
    check(code == 2 and out == "" and "/nonexistent/policy.yaml" in err, "missing file: %d %r" % (code, err))
    code, out, err = run("vap", "--policy", "-", stdin="apiVersion: dra-guard.io/v1alpha1\nkind: Policy\n"
                         "drivers:\n  gpu.example.com:\n    scope: global\n")
    check(code == 2 and out == "" and ":5:" in err and "scope" in err, "broken policy: %d %r" % (code, err))
    for flag in ("--help", "-h"):
        code, out, err = run("vap", flag)
        check(code == 0 and err == "" and out.startswith("usage: dra-guard vap"), "%s: %d %r" % (flag, code, err))


if __name__ == "__main__":
    guard.run_tests([test_prints_a_policy_and_a_binding_per_expressed_rule,
                     test_explain_names_every_rule_and_says_why_when_not_full,
                     test_policy_from_stdin_and_configmap_name,
                     test_refuses_bad_arguments_and_broken_policies])
