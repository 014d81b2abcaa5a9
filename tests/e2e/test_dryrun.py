#!/usr/bin/env python3
"""End-to-end tests of `dra-guard dry-run`, `policy lint` and `rules`: the real binary,
real files, exit codes and every output format."""

import copy
import json
import os
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

ROOT = os.environ.get("DRA_GUARD_ROOT", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BIN = os.environ.get("DRA_GUARD_BIN", os.path.join(ROOT, "dra-guard"))
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "resourceslice-v1-node-allocatable.json")
CLAIM_FIXTURE = os.path.join(ROOT, "tests", "fixtures", "resourceclaim-v1-allocated.json")
STRICT = os.path.join(ROOT, "tests", "golden", "policies", "strict.yaml")
FROZEN = os.path.join(ROOT, "tests", "golden", "policies", "frozen.yaml")
EXAMPLE = os.path.join(ROOT, "examples", "policy-configmap.yaml")
DRIVER_SA = "system:serviceaccount:dra-system:dra-example-driver"


def run(*args, stdin=None):
    p = subprocess.run([BIN] + list(args), input=stdin, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def slice_obj():
    with open(FIXTURE) as f:
        return json.load(f)


class DryRun(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, obj):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(obj if isinstance(obj, str) else json.dumps(obj))
        return path

    def json_run(self, *args, stdin=None):
        code, out, err = run("dry-run", "--output", "json", *args, stdin=stdin)
        try:
            doc = json.loads(out)
        except ValueError:
            self.fail("not JSON (exit %d): %r %r" % (code, out, err))
        return code, doc, err

    def test_fixture_is_allowed(self):
        code, out, _ = run("dry-run", FIXTURE)
        self.assertEqual(code, 0, out)
        self.assertIn("ALLOW", out)

    def test_pods_mapping_is_denied_naming_rule_and_path(self):
        s = slice_obj()
        s["spec"]["devices"][0]["nodeAllocatableResourceMappings"]["pods"] = {"allocationMultiplier": "1"}
        code, out, _ = run("dry-run", self.write("pods.json", s))
        self.assertEqual(code, 1)
        self.assertIn("slice.mapping.name", out)
        self.assertIn('spec.devices[0].nodeAllocatableResourceMappings["pods"]', out)

    def test_capacity_key_on_non_shareable_device_is_denied(self):
        s = slice_obj()
        s["spec"]["devices"][0]["nodeAllocatableResourceMappings"]["memory"] = {"capacityKey": "dra.example.com/memory"}
        code, doc, _ = self.json_run(self.write("cap.json", s))
        self.assertEqual(code, 1)
        v = doc["results"][0]["violations"]
        self.assertEqual([x["rule"] for x in v], ["slice.mapping.shareable"])
        self.assertEqual(v[0]["path"], 'spec.devices[0].nodeAllocatableResourceMappings["memory"].capacityKey')
        self.assertEqual(v[0]["action"], "deny")

    def test_json_output_shape(self):
        code, doc, _ = self.json_run(FIXTURE)
        self.assertEqual(code, 0)
        self.assertEqual(set(doc), {"results", "summary"})
        r = doc["results"][0]
        for key in ("source", "kind", "name", "operation", "allowed", "violations", "warnings", "patch"):
            self.assertIn(key, r)
        self.assertEqual(r["source"], FIXTURE + "#0")
        self.assertEqual(r["kind"], "ResourceSlice")
        self.assertEqual(r["operation"], "CREATE")
        self.assertTrue(r["allowed"])
        self.assertEqual(r["patch"][0]["path"], "/metadata/labels")
        self.assertEqual(doc["summary"]["allowed"], 1)
        self.assertEqual(doc["summary"]["denied"], 0)

    def test_yaml_multi_document_and_list(self):
        yaml_text = (
            "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: a}\n"
            "spec:\n  driver: dra.example.com\n  nodeName: worker-1\n"
            "  pool: {name: worker-1, generation: 1, resourceSliceCount: 1}\n"
            "  devices:\n  - name: d0\n    nodeAllocatableResourceMappings:\n      pods: {allocationMultiplier: 1}\n"
            "---\n"
            "---\n"
            "apiVersion: v1\nkind: List\nitems:\n"
            "- apiVersion: resource.k8s.io/v1\n  kind: ResourceSlice\n  metadata: {name: b}\n"
            "  spec: {driver: dra.example.com, nodeName: worker-1, pool: {name: p, generation: 1, resourceSliceCount: 1}}\n"
            "- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: c}\n  spec: {}\n")
        code, doc, _ = self.json_run(self.write("multi.yaml", yaml_text))
        self.assertEqual(code, 1)
        names = [(r["source"].split("#")[1], r["name"], r["allowed"]) for r in doc["results"]]
        self.assertEqual(names, [("0", "a", False), ("2/items[0]", "b", True), ("2/items[1]", "c", True)])

    def test_directory_and_stdin(self):
        self.write("a.json", slice_obj())
        self.write("b.yml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {}\n")
        self.write("ignored.txt", "not a manifest")
        code, doc, _ = self.json_run(self.dir)
        self.assertEqual(code, 0)
        self.assertEqual(len(doc["results"]), 2)
        with open(FIXTURE) as f:
            code, doc, _ = self.json_run("-", stdin=f.read())
        self.assertEqual(code, 0)
        self.assertEqual(doc["results"][0]["source"], "<stdin>#0")

    def test_update_against_old(self):
        old = slice_obj()
        new = slice_obj()
        new["spec"]["devices"][0]["nodeAllocatableResourceMappings"]["memory"]["allocationMultiplier"] = "16Gi"
        oldp, newp = self.write("old.json", old), self.write("new.json", new)
        code, doc, _ = self.json_run("--old", oldp, newp)
        self.assertEqual(code, 1)
        self.assertEqual(doc["results"][0]["operation"], "UPDATE")
        self.assertEqual([v["rule"] for v in doc["results"][0]["violations"]], ["slice.mapping.unversioned"])
        new["spec"]["pool"]["generation"] = 4
        code, doc, _ = self.json_run("--old", oldp, self.write("new2.json", new))
        self.assertEqual(code, 0)

    def test_update_without_old_is_unusable(self):
        code, _, err = run("dry-run", "--operation", "UPDATE", FIXTURE)
        self.assertEqual(code, 2)
        self.assertIn("--old", err)

    def test_identity_flags(self):
        common = ["--policy", STRICT, FIXTURE]
        code, doc, _ = self.json_run("--user", DRIVER_SA, "--extra",
                                     "authentication.kubernetes.io/node-name=worker-1", *common)
        self.assertEqual(code, 0, doc)
        code, doc, _ = self.json_run("--user", DRIVER_SA, "--extra",
                                     "authentication.kubernetes.io/node-name=worker-2", *common)
        self.assertEqual(code, 1)
        self.assertIn("slice.writer.node", [v["rule"] for v in doc["results"][0]["violations"]])
        code, doc, _ = self.json_run("--user", "bob", "--group", "dra-guard:slice-admins", *common)
        self.assertEqual(code, 0)
        # Without --user there is no writer to check.
        code, doc, _ = self.json_run(*common)
        self.assertEqual(code, 0)

    def test_delete_as_kubelet(self):
        common = ["--policy", STRICT, "--operation", "DELETE", FIXTURE]
        code, _, _ = run("dry-run", "--user", "system:node:worker-1", "--group", "system:nodes", *common)
        self.assertEqual(code, 0)
        code, _, _ = run("dry-run", "--user", "system:node:worker-2", *common)
        self.assertEqual(code, 1)

    def test_status_subresource(self):
        with open(os.path.join(ROOT, "tests", "fixtures", "pod-status-node-allocatable.json")) as f:
            pod = json.load(f)
        old = copy.deepcopy(pod)
        del old["status"]["nodeAllocatableResourceClaimStatuses"]
        oldp, newp = self.write("pod-old.json", old), self.write("pod-new.json", pod)
        code, doc, _ = self.json_run("--user", "system:node:worker-1", "--subresource", "status", "--old", oldp, newp)
        self.assertEqual(code, 1)
        self.assertEqual(doc["results"][0]["violations"][0]["rule"], "status.pod.writer")
        code, _, _ = run("dry-run", "--user", "system:kube-scheduler", "--subresource", "status", "--old", oldp, newp)
        self.assertEqual(code, 0)

    def test_freeze_from_configmap_and_flag(self):
        with open(CLAIM_FIXTURE) as f:
            claim = json.load(f)
        del claim["status"]
        p = self.write("claim.json", claim)
        code, doc, _ = self.json_run("--policy", FROZEN, p)
        self.assertEqual(code, 1)
        self.assertEqual(doc["results"][0]["violations"][0]["rule"], "claim.freeze.create")
        self.assertIn("INC-4211", doc["results"][0]["violations"][0]["message"])
        code, _, _ = run("dry-run", "--policy", EXAMPLE, p)
        self.assertEqual(code, 0)
        code, _, _ = run("dry-run", "--policy", EXAMPLE, "--freeze", p)
        self.assertEqual(code, 1)

    def test_warn_exit_code(self):
        s = slice_obj()
        s["spec"]["devices"][0]["nodeAllocatableResourceMappings"]["memory"] = {}
        p = self.write("empty.json", s)
        code, out, _ = run("dry-run", p)
        self.assertEqual(code, 0)
        self.assertIn("slice.mapping.empty", out)
        code, _, _ = run("dry-run", "--warn-exit-code", "3", p)
        self.assertEqual(code, 3)
        code, _, _ = run("dry-run", "--warn-exit-code", "3", FIXTURE)
        self.assertEqual(code, 0)

    def test_junit_output(self):
        s = slice_obj()
        s["spec"]["devices"][0]["nodeAllocatableResourceMappings"]["pods"] = {"allocationMultiplier": "1"}
        code, out, _ = run("dry-run", "--output", "junit", FIXTURE, self.write("pods.json", s),
                           self.write("broken.json", "{"))
        self.assertEqual(code, 2)
        suite = ET.fromstring(out)
        self.assertEqual(suite.tag, "testsuite")
        self.assertEqual(suite.get("tests"), "3")
        self.assertEqual(suite.get("failures"), "1")
        self.assertEqual(suite.get("errors"), "1")
        cases = suite.findall("testcase")
        self.assertIsNone(cases[0].find("failure"))
        self.assertIn("slice.mapping.name", cases[1].find("failure").text)
        self.assertIsNotNone(cases[2].find("error"))

    def test_unusable_inputs_exit_2_with_location(self):
        cases = {
            "syntax.json": '{"apiVersion": "v1",\n "kind": }',
            "syntax.yaml": "apiVersion: v1\nkind: [\n",
            "alias.yaml": "a: &x 1\nb: *x\n",
            "dup.yaml": "apiVersion: v1\napiVersion: v2\n",
            "scalar.yaml": "just a string\n",
        }
        for name, text in cases.items():
            code, doc, _ = self.json_run(self.write(name, text))
            self.assertEqual(code, 2, name)
            self.assertIn("line", doc["results"][0]["error"], name)
        code, _, err = run("dry-run", os.path.join(self.dir, "missing.json"))
        self.assertEqual(code, 2)

    def test_admission_review_input_uses_its_own_request(self):
        with open(os.path.join(ROOT, "tests", "golden", "cases", "writer-own-sa-other-node.json")) as f:
            case = json.load(f)
        p = self.write("review.json", case["review"])
        code, doc, _ = self.json_run("--policy", STRICT, p)
        self.assertEqual(code, 1)
        self.assertEqual(doc["results"][0]["violations"][0]["rule"], "slice.writer.node")
        bad = copy.deepcopy(case["review"])
        bad["apiVersion"] = "admission.k8s.io/v2"
        code, doc, _ = self.json_run(self.write("bad-review.json", bad))
        self.assertEqual(code, 2)

    def test_bad_policy_and_flags_exit_2(self):
        bad = self.write("bad-policy.yaml", "apiVersion: dra-guard.io/v1alpha1\nkind: Policy\ncanary:\n  nodez: [a]\n")
        code, _, err = run("dry-run", "--policy", bad, FIXTURE)
        self.assertEqual(code, 2)
        self.assertIn(":4:", err)
        self.assertIn("canary", err)
        for args in (["--output", "xml", FIXTURE], ["--operation", "PATCH", FIXTURE], ["--extra", "novalue", FIXTURE],
                     []):
            code, _, _ = run("dry-run", *args)
            self.assertEqual(code, 2, args)


class Lint(unittest.TestCase):
    def test_lint(self):
        code, out, _ = run("policy", "lint", EXAMPLE, STRICT, FROZEN)
        self.assertEqual(code, 0, out)
        self.assertIn("valid", out)
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write("apiVersion: dra-guard.io/v1alpha1\nkind: Policy\ndrivers:\n  gpu.example.com:\n    scope: global\n")
        try:
            code, _, err = run("policy", "lint", f.name)
            self.assertEqual(code, 2)
            self.assertIn(':5:', err)
            self.assertIn('drivers["gpu.example.com"].scope', err)
        finally:
            os.unlink(f.name)

    def test_rules_lists_every_rule(self):
        code, out, _ = run("rules")
        self.assertEqual(code, 0)
        for rule in ("slice.mapping.name", "claim.freeze.create", "status.pod.writer", "policy.invalid"):
            self.assertIn(rule, out)

    def test_version(self):
        code, out, _ = run("version")
        self.assertEqual(code, 0)
        self.assertTrue(out.startswith("dra-guard "))


if __name__ == "__main__":
    unittest.main(verbosity=1)
