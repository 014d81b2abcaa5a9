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
# The binary `make test` builds (build/rel), not ./dra-guard, which only `make`
# refreshes: a stale copy there would be tested in its place.
BIN = os.environ.get("DRA_GUARD_BIN", os.path.join(ROOT, "build", "rel", "dra-guard"))
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "resourceslice-v1-node-allocatable.json")
CLAIM_FIXTURE = os.path.join(ROOT, "tests", "fixtures", "resourceclaim-v1-allocated.json")
STRICT = os.path.join(ROOT, "tests", "golden", "policies", "strict.yaml")
# What a slice write leaves out without --view (ledger.mapping.drift: UPDATE only).
VIEW_SLICE_RULES = ["slice.generation.stale", "slice.pool.collision", "ledger.mapping.drift"]
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
        # A pool of two slices: a one-slice pool changes in place at the same
        # generation, as the ResourceSlice controller writes it.
        old = slice_obj()
        old["spec"]["pool"]["resourceSliceCount"] = 2
        new = copy.deepcopy(old)
        new["spec"]["devices"][0]["nodeAllocatableResourceMappings"]["memory"]["allocationMultiplier"] = "16Gi"
        oldp, newp = self.write("old.json", old), self.write("new.json", new)
        code, doc, _ = self.json_run("--old", oldp, newp, "--warn-exit-code", "3")
        self.assertEqual(code, 3)
        self.assertEqual(doc["results"][0]["operation"], "UPDATE")
        self.assertEqual([(v["rule"], v["action"]) for v in doc["results"][0]["violations"]],
                         [("slice.mapping.unversioned", "warn")])
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
            path = self.write(name, text)
            code, doc, _ = self.json_run(path)
            self.assertEqual(code, 2, name)
            r = doc["results"][0]
            self.assertGreater(r["line"], 0, name)
            self.assertTrue(r["error"].startswith("%s:%d:%d: " % (path, r["line"], r["column"])), (name, r))
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


DUMP = os.path.join(ROOT, "tests", "fixtures", "kubectl-get-resourceslices.yaml")
NODE_SA = ["--user", DRIVER_SA, "--group", "system:serviceaccounts"]


def slice_yaml(name, node, pool, generation, count, devices=(("accel-0", 0, "8Gi", "2"),), labels=None):
    """A ResourceSlice manifest as a driver's published object would read."""
    text = ("apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n  name: %s\n" % name)
    if labels:
        text += "  labels:\n" + "".join("    %s: %s\n" % kv for kv in labels.items())
    text += ("spec:\n  driver: dra.example.com\n  nodeName: %s\n"
             "  pool:\n    name: %s\n    generation: %d\n    resourceSliceCount: %d\n  devices:\n"
             % (node, pool, generation, count))
    for dev, numa, mem, cpu in devices:
        text += ("  - name: %s\n    attributes:\n      dra.example.com/numaNode: {int: %d}\n"
                 "    capacity:\n      dra.example.com/memory: {value: 80Gi}\n"
                 "    nodeAllocatableResourceMappings:\n      memory: {allocationMultiplier: %s}\n"
                 "      cpu: {allocationMultiplier: \"%s\"}\n" % (dev, numa, mem, cpu))
    return text


def by_name(doc):
    return {r["name"]: r for r in doc["results"]}


class StoredObjects(unittest.TestCase):
    """--old: files, directories, multi-document YAML and kind: List, paired by identity."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text if isinstance(text, str) else json.dumps(text))
        return path

    def json_run(self, *args, stdin=None):
        code, out, err = run("dry-run", "--output", "json", *args, stdin=stdin)
        try:
            return code, json.loads(out), err
        except ValueError:
            self.fail("not JSON (exit %d): %r %r" % (code, out, err))

    def test_old_directory_list_and_multi_document(self):
        stored = slice_obj()
        new = slice_obj()
        new["metadata"]["labels"] = {"team": "a"}
        newp = self.write("new.json", new)
        olddir = os.path.join(self.dir, "old")
        self.write("old/a.json", stored)
        listp = self.write("list.json", {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
                                         "items": [stored]})
        other = slice_obj()
        other["metadata"]["name"] = "other"
        multi = self.write("multi.yaml", json.dumps(other) + "\n---\n" + json.dumps(stored) + "\n")
        for old, source in ((olddir, os.path.join(olddir, "a.json#0")), (listp, listp + "#0/items[0]"),
                            (multi, multi + "#1")):
            code, doc, err = self.json_run("--old", old, newp)
            self.assertEqual(code, 0, (old, doc, err))
            r = doc["results"][0]
            self.assertEqual(r["operation"], "UPDATE", old)
            self.assertEqual(r["old"], source)

    def test_object_without_stored_namesake_is_a_create(self):
        # A stored slice of another pool at generation 5, and a new slice at
        # generation 1: they are unrelated, so the new one is a CREATE.
        stored = slice_obj()
        stored["spec"]["pool"]["generation"] = 5
        new = slice_obj()
        new["metadata"]["name"] = "worker-9-dra.example.com-new"
        new["spec"]["nodeName"] = new["spec"]["pool"]["name"] = "worker-9"
        new["spec"]["pool"]["generation"] = 1
        code, doc, _ = self.json_run("--old", self.write("old.json", stored), self.write("new.json", new))
        self.assertEqual(code, 0, doc)
        r = doc["results"][0]
        self.assertEqual(r["operation"], "CREATE")
        self.assertIsNone(r["old"])
        self.assertEqual(r["violations"], [])
        # Same name, another kind or group: still no namesake.
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": stored["metadata"]["name"]}}
        code, doc, _ = self.json_run("--old", self.write("old.json", stored), self.write("cm.json", cm))
        self.assertEqual(doc["results"][0]["operation"], "CREATE")
        # --operation UPDATE without a namesake is unusable, and says which object it wanted.
        code, doc, _ = self.json_run("--operation", "UPDATE", "--old", self.write("old.json", stored),
                                     self.write("new.json", new))
        self.assertEqual(code, 2)
        self.assertIn('no ResourceSlice named "worker-9-dra.example.com-new"', doc["results"][0]["error"])

    def test_two_stored_namesakes_are_an_error_not_a_guess(self):
        stored = slice_obj()
        a = self.write("old/a.json", stored)
        b = self.write("old/b.json", stored)
        code, doc, _ = self.json_run("--old", os.path.dirname(a), FIXTURE)
        self.assertEqual(code, 2)
        err = doc["results"][0]["error"]
        self.assertIn("more than one ResourceSlice", err)
        self.assertIn(a + "#0", err)
        self.assertIn(b + "#0", err)

    def test_unusable_stored_documents_fail_the_run(self):
        dump = self.write("dump.yaml", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: resource.k8s.io/v1\n"
                          "  kind: ResourceSlice\n  metadata: {name: s, uid: [\n")
        code, out, err = run("dry-run", "--old", dump, FIXTURE)
        self.assertEqual(code, 2)
        self.assertIn("--old %s:" % dump, err)
        self.assertIn('(List "")', err)
        code, out, err = run("dry-run", "--old", os.path.join(self.dir, "missing.yaml"), FIXTURE)
        self.assertEqual(code, 2)
        self.assertIn("No such file", err)
        # A stored object that reads as YAML but not as its kind: named with its position.
        bad = slice_obj()
        bad["spec"]["pool"]["generation"] = "three"
        code, doc, _ = self.json_run("--old", self.write("bad.json", bad), FIXTURE)
        self.assertEqual(code, 2)
        self.assertIn("its stored object (--old)", doc["results"][0]["error"])
        self.assertIn("spec.pool.generation", doc["results"][0]["error"])

    def test_namespace_of_objects_that_name_none(self):
        with open(CLAIM_FIXTURE) as f:
            stored = json.load(f)                       # namespace team-a
        new = copy.deepcopy(stored)
        del new["metadata"]["namespace"]
        oldp, newp = self.write("old.json", stored), self.write("new.json", new)
        code, doc, _ = self.json_run("--old", oldp, newp)
        r = doc["results"][0]
        self.assertEqual((r["operation"], r["namespace"]), ("CREATE", "default"))
        code, doc, _ = self.json_run("--namespace", "team-a", "--old", oldp, newp)
        r = doc["results"][0]
        self.assertEqual((r["operation"], r["namespace"], r["old"]), ("UPDATE", "team-a", oldp + "#0"))

    def test_stdin_once(self):
        code, _, err = run("dry-run", "--old", "-", "-", stdin="")
        self.assertEqual(code, 2)
        self.assertIn("stdin", err)


class CIDryRun(unittest.TestCase):
    """What a CI job does: kubectl get resourceslices -o yaml > dump.yaml, then
    dra-guard dry-run --old dump.yaml manifests/."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = os.path.join(self.tmp.name, "manifests")
        os.makedirs(self.dir)
        def w(name, text):
            with open(os.path.join(self.dir, name), "w") as f:
                f.write(text)
        # Unchanged but for a label: an UPDATE of dump item 0.
        w("10-worker-1.yaml", slice_yaml("worker-1-dra.example.com-abcde", "worker-1", "worker-1", 3, 1,
                                         labels={"rollout": "wave-2"}))
        # Generation 5 -> 4: a stale writer.
        w("20-worker-2.yaml", slice_yaml("worker-2-dra.example.com-fghij", "worker-2", "worker-2", 4, 1,
                                         devices=(("accel-0", 0, "8Gi", "2"), ("accel-1", 1, "8Gi", "2"))))
        # A two-slice pool: one slice as stored, the other with its mapping
        # changed at the same generation (warned of: slice.mapping.unversioned
        # is advisory).
        w("30-worker-3.yaml",
          slice_yaml("worker-3-dra.example.com-kq7zt", "worker-3", "worker-3-accel", 7, 2) + "---\n" +
          slice_yaml("worker-3-dra.example.com-m2x9p", "worker-3", "worker-3-accel", 7, 2,
                     devices=(("accel-1", 1, "16Gi", "2"),)))
        # A node the dump does not know: a CREATE at generation 1, not a
        # regression against some other pool's generation.
        w("40-worker-4.yaml", slice_yaml("worker-4-dra.example.com-zzzzz", "worker-4", "worker-4", 1, 1))
        w("README.md", "not a manifest\n")

    def tearDown(self):
        self.tmp.cleanup()

    def check(self, doc):
        r = by_name(doc)
        self.assertEqual(len(doc["results"]), 5)
        want = {
            "worker-1-dra.example.com-abcde": ("UPDATE", DUMP + "#0/items[0]", True, []),
            "worker-2-dra.example.com-fghij": ("UPDATE", DUMP + "#0/items[1]", False, ["slice.generation.regress"]),
            "worker-3-dra.example.com-kq7zt": ("UPDATE", DUMP + "#0/items[2]", True, []),
            "worker-3-dra.example.com-m2x9p": ("UPDATE", DUMP + "#0/items[3]", True, []),
            "worker-4-dra.example.com-zzzzz": ("CREATE", None, True, []),
        }
        for name, (op, old, allowed, rules) in want.items():
            got = r[name]
            if got["old"] and got["old"].startswith("<stdin>"):
                old = old and old.replace(DUMP, "<stdin>")
            self.assertEqual((got["operation"], got["old"], got["allowed"]), (op, old, allowed), name)
            self.assertEqual([v["rule"] for v in got["violations"] if v["action"] == "deny"], rules, name)
        self.assertEqual([(v["rule"], v["action"]) for v in r["worker-3-dra.example.com-m2x9p"]["violations"]],
                         [("slice.mapping.unversioned", "warn")])
        self.assertEqual((doc["summary"]["denied"], doc["summary"]["warned"]), (1, 1))

    def test_dump_and_manifest_directory(self):
        code, out, err = run("dry-run", "--output", "json", *NODE_SA, "--old", DUMP, self.dir)
        self.assertEqual(code, 1, err)
        doc = json.loads(out)
        self.check(doc)
        # The driver's ServiceAccount without its node: the writer rules ran;
        # without --view the rules that read the cluster view did not.
        self.assertEqual([[s["rules"] for s in x["skipped"]] for x in doc["results"]],
                         [[VIEW_SLICE_RULES[:2] if x["operation"] == "CREATE" else VIEW_SLICE_RULES]
                          for x in doc["results"]])

    def test_dump_on_stdin_and_text_output(self):
        with open(DUMP) as f:
            dump = f.read()
        code, out, err = run("dry-run", "--output", "json", "--old", "-", self.dir, stdin=dump)
        self.assertEqual(code, 1, err)
        doc = json.loads(out)
        self.check(doc)
        # Without --user every slice says the writer rules did not run.
        for x in doc["results"]:
            self.assertEqual([s["rules"] for s in x["skipped"]][0], ["slice.writer", "slice.writer.node"])
        self.assertEqual(doc["summary"]["skipped"], 5)
        code, out, _ = run("dry-run", "--old", DUMP, self.dir)
        self.assertIn("UPDATE ResourceSlice/worker-2-dra.example.com-fghij %s/20-worker-2.yaml#0 (stored: %s#0/items[1])"
                      % (self.dir, DUMP), out)
        self.assertIn("skipped slice.writer, slice.writer.node: no user was given (--user)", out)
        self.assertTrue(out.rstrip().endswith("5 objects: 4 allowed (1 with warnings), 1 denied, 0 unusable; "
                                              "for 5 of them some rules did not run (see \"skipped\")"), out)


class Positions(unittest.TestCase):
    """Errors point at the value that is wrong: file:line:column."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, text):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_decode_error_names_the_line_and_column_of_the_value(self):
        text = slice_yaml("s", "worker-1", "worker-1", 1, 1).replace("generation: 1", "generation: abc")
        line = text.splitlines().index("    generation: abc") + 1
        p = self.write("bad.yaml", "# leading comment\n---\n" + text)
        code, out, _ = run("dry-run", "--output", "json", p)
        self.assertEqual(code, 2)
        r = json.loads(out)["results"][0]
        self.assertEqual((r["line"], r["column"]), (line + 2, 17))
        self.assertEqual(r["error"], "%s:%d:17: spec.pool.generation: expected an integer, got a string" % (p, line + 2))
        self.assertEqual((r["kind"], r["name"]), ("ResourceSlice", "s"))

    def test_violations_say_where_their_path_is(self):
        text = slice_yaml("s", "worker-1", "worker-1", 1, 1).replace("memory: {allocationMultiplier: 8Gi}",
                                                                   "pods: {allocationMultiplier: 8Gi}")
        p = self.write("pods.yaml", "---\n" + text)
        line = ("---\n" + text).splitlines().index("      pods: {allocationMultiplier: 8Gi}") + 1
        code, out, _ = run("dry-run", "--output", "json", p)
        self.assertEqual(code, 1)
        v = json.loads(out)["results"][0]["violations"][0]
        self.assertEqual((v["rule"], v["file"], v["line"], v["column"]), ("slice.mapping.name", p, line, 7))

    def test_broken_document_hides_no_other(self):
        text = ("apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n  name: broken\n"
                "spec: {driver: dra.example.com\n"
                "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n"
                "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
        p = self.write("three.yaml", text)
        code, out, _ = run("dry-run", "--output", "json", p)
        self.assertEqual(code, 2)
        doc = json.loads(out)
        self.assertEqual(doc["summary"]["objects"], 3)
        first = doc["results"][0]
        self.assertEqual((first["kind"], first["name"], first["source"]), ("ResourceSlice", "broken", p + "#0"))
        self.assertEqual(first["line"], 6)
        self.assertIn("flow mapping", first["error"])
        self.assertEqual([(r["name"], r["allowed"]) for r in doc["results"][1:]], [("b", True), ("c", True)])
        code, out, _ = run("dry-run", p)
        self.assertIn("3 objects: 2 allowed (0 with warnings), 0 denied, 1 unusable", out)

    def test_review_error_position(self):
        with open(os.path.join(ROOT, "tests", "golden", "cases", "writer-own-sa-other-node.json")) as f:
            review = json.load(f)["review"]
        review["request"]["object"]["spec"]["pool"]["generation"] = "x"
        text = json.dumps(review, indent=1)
        p = self.write("review.json", text)
        line = next(i for i, l in enumerate(text.splitlines(), 1) if '"generation": "x"' in l)
        col = text.splitlines()[line - 1].index('"x"') + 1
        code, out, _ = run("dry-run", "--output", "json", p)
        self.assertEqual(code, 2)
        r = json.loads(out)["results"][0]
        self.assertEqual((r["line"], r["column"]), (line, col), r)


class SkippedRules(unittest.TestCase):
    """Rules a dry-run cannot exercise are named per object, never skipped silently."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        with open(CLAIM_FIXTURE) as f:
            self.claim = json.load(f)
        with open(os.path.join(ROOT, "tests", "fixtures", "pod-status-node-allocatable.json")) as f:
            self.pod = json.load(f)

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, obj):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            json.dump(obj, f)
        return path

    def json_run(self, *args):
        code, out, err = run("dry-run", "--output", "json", *args)
        return code, json.loads(out), err

    def test_without_user_the_writer_rules_are_named(self):
        code, doc, _ = self.json_run("--policy", STRICT, FIXTURE)
        self.assertEqual(code, 0)
        sk = doc["results"][0]["skipped"]
        self.assertEqual(sk[0]["rules"], ["slice.writer", "slice.writer.node"])
        self.assertIn("--user", sk[0]["reason"])
        code, doc, _ = self.json_run("--policy", STRICT, "--user", "mallory", FIXTURE)
        self.assertEqual(code, 1)
        sk = doc["results"][0]["skipped"]
        self.assertEqual([s["rules"] for s in sk], [["slice.generation.stale", "slice.pool.collision"]])
        self.assertIn("--view", sk[0]["reason"])
        # With a view (here an empty cluster) every rule runs.
        empty = self.write("empty-cluster.json", {"apiVersion": "v1", "kind": "List", "items": []})
        code, doc, _ = self.json_run("--policy", STRICT, "--user", "mallory", "--view", empty, FIXTURE)
        self.assertEqual(code, 1)
        self.assertEqual(doc["results"][0]["skipped"], [])
        code, out, _ = run("dry-run", "--output", "junit", FIXTURE)
        self.assertIn("skipped [slice.writer, slice.writer.node]", out)

    def test_status_inferred_when_only_status_differs(self):
        # The stored claim has no allocation; the new one has: only status
        # differs, so this can only be a status write, and a stranger may not
        # write an allocation.
        old = copy.deepcopy(self.claim)
        del old["status"]
        oldp, newp = self.write("old.json", old), self.write("new.json", self.claim)
        code, doc, _ = self.json_run("--user", "mallory", "--old", oldp, newp)
        self.assertEqual(code, 1, doc)
        r = doc["results"][0]
        self.assertEqual((r["operation"], r["subresource"], r["subresourceInferred"]), ("UPDATE", "status", True))
        self.assertIn("status.allocation.writer", [v["rule"] for v in r["violations"]])
        code, doc, _ = self.json_run("--user", "system:kube-scheduler", "--old", oldp, newp)
        self.assertEqual(code, 0, doc)
        code, out, _ = run("dry-run", "--user", "mallory", "--old", oldp, newp)
        self.assertIn("DENY  UPDATE status ResourceClaim/team-a/cpu-claim", out)
        self.assertIn("note   decided as a status write", out)
        # Same for a Pod's node-allocatable claim statuses.
        old = copy.deepcopy(self.pod)
        del old["status"]["nodeAllocatableResourceClaimStatuses"]
        code, doc, _ = self.json_run("--user", "system:node:worker-1", "--old", self.write("pod-old.json", old),
                                     self.write("pod-new.json", self.pod))
        self.assertEqual(code, 1)
        self.assertEqual(doc["results"][0]["violations"][0]["rule"], "status.pod.writer")

    def test_main_resource_write_names_the_status_rules(self):
        # spec and status both differ: not a status write, so the status
        # rules do not run, and the result says so.
        old = copy.deepcopy(self.claim)
        del old["status"]
        old["metadata"]["labels"] = {"was": "different"}
        code, doc, _ = self.json_run("--user", "mallory", "--old", self.write("old.json", old),
                                     self.write("new.json", self.claim))
        self.assertEqual(code, 0)
        r = doc["results"][0]
        self.assertEqual((r["subresource"], r["subresourceInferred"]), ("", False))
        self.assertEqual(r["skipped"][0]["rules"],
                         ["claim.freeze.allocate", "status.allocation.writer", "status.devices.writer"])
        self.assertIn("--subresource status", r["skipped"][0]["reason"])
        # With --subresource status and no user: the writer rules are named.
        code, doc, _ = self.json_run("--subresource", "status", "--old", self.write("old.json", old),
                                     self.write("new.json", self.claim))
        self.assertEqual(doc["results"][0]["skipped"][0]["rules"],
                         ["status.allocation.writer", "status.devices.writer"])


class Messages(unittest.TestCase):
    """Messages name what they count, and echo quantities as they were written."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, obj):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write(obj if isinstance(obj, str) else json.dumps(obj))
        return path

    def messages(self, *args):
        code, out, err = run("dry-run", "--output", "json", *args)
        doc = json.loads(out)
        return code, {v["rule"]: v["message"] for r in doc["results"] for v in r["violations"]}, out

    def test_lists_are_named(self):
        s = slice_obj()
        s["spec"]["nodeName"] = s["spec"]["pool"]["name"] = "worker-7"
        s["spec"]["devices"][0]["nodeAllocatableResourceMappings"]["hugepages-1Gi"] = {"allocationMultiplier": "1Gi"}
        code, msgs, _ = self.messages("--policy", STRICT, "--user", "mallory", self.write("s.json", s))
        self.assertEqual(code, 1)
        # Policy lists are named in sorted order (they are kept sorted for bisection).
        self.assertIn("may not map hugepages-1Gi; the policy allows it cpu, ephemeral-storage, hugepages-2Mi "
                      "and memory", msgs["slice.driver"])
        self.assertIn("(canary.nodes: worker-1 and gpu-canary-*)", msgs["slice.canary"])
        self.assertIn("only its ServiceAccounts (system:serviceaccount:dra-system:dra-example-driver)",
                      msgs["slice.writer"])
        s["spec"]["driver"] = "other.example.com"
        code, msgs, _ = self.messages("--policy", STRICT, self.write("s.json", s))
        self.assertIn("(the policy lists ctrl.example.com, dra.example.com and gpu.example.com)", msgs["slice.driver"])
        # Claim and Pod status writers name the schedulers, allocators and claims.
        with open(CLAIM_FIXTURE) as f:
            claim = json.load(f)
        old = copy.deepcopy(claim)
        del old["status"]
        code, msgs, _ = self.messages("--policy", STRICT, "--user", "mallory", "--subresource", "status",
                                      "--old", self.write("old.json", old), self.write("new.json", claim))
        self.assertIn("(schedulers: system:kube-scheduler) or an allocation controller (writers.allocators: "
                      "system:kube-controller-manager and system:serviceaccount:kube-system:resource-claim-controller)",
                      msgs["status.allocation.writer"])
        with open(os.path.join(ROOT, "tests", "fixtures", "pod-status-node-allocatable.json")) as f:
            pod = json.load(f)
        old = copy.deepcopy(pod)
        del old["status"]["nodeAllocatableResourceClaimStatuses"]
        code, msgs, _ = self.messages("--user", "mallory", "--subresource", "status",
                                      "--old", self.write("pod-old.json", old), self.write("pod.json", pod))
        self.assertIn("(claims before: none; after: cpu-claim)", msgs["status.pod.writer"])

    def test_quantities_are_echoed_as_written(self):
        s = slice_obj()
        s["spec"]["devices"][0]["nodeAllocatableResourceMappings"]["memory"]["allocationMultiplier"] = "16Ei"
        code, msgs, out = self.messages("--policy", STRICT, self.write("s.json", s))
        self.assertEqual(code, 1)
        self.assertIn("one allocation maps 16Ei of memory, more than driver dra.example.com's max of 64Gi",
                      msgs["slice.mapping.bounds"])
        self.assertNotIn("9223372036854775807", out)

    def test_no_message_shows_a_capped_quantity(self):
        # Every quantity of the fixture, and of a policy's bounds, written
        # past int64: whatever the rules say, they say it with 16Ei.
        def huge(o):
            if isinstance(o, dict):
                return {k: (huge(v) if k not in ("name", "driver", "nodeName", "apiVersion", "kind") else v)
                        for k, v in o.items()}
            if isinstance(o, list):
                return [huge(v) for v in o]
            if isinstance(o, str) and o[:1].isdigit():
                return "16Ei"
            return o
        s = huge(slice_obj())
        policy = ("apiVersion: dra-guard.io/v1alpha1\nkind: Policy\ndrivers:\n  dra.example.com:\n"
                  "    resources:\n      memory: {max: 8Ei}\n      cpu: {max: 1}\n")
        for args in (["--policy", STRICT], ["--policy", self.write("p.yaml", policy)], []):
            code, msgs, out = self.messages(*args, self.write("s.json", s))
            self.assertNotIn("9223372036854775807", out, args)
            for m in msgs.values():
                self.assertNotRegex(m, r"\b\d{19}\b", args)


class FieldValidation(unittest.TestCase):
    """Unknown fields as the 1.36 API server's field validation reports them,
    kinds no rule judges, and inputs that are not there."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text if isinstance(text, str) else json.dumps(text, indent=1))
        return path

    def misspelt(self):
        s = slice_obj()
        d = s["spec"]["devices"][0]
        d["nodeAllocatableResourceMapping"] = d.pop("nodeAllocatableResourceMappings")
        return self.write("typo.json", s)

    def test_misspelt_mapping_is_a_warning_with_path_position_and_close_name(self):
        path = self.misspelt()
        code, out, _ = run("dry-run", path)
        self.assertEqual(code, 0, out)
        self.assertIn('field  unknown field "spec.devices[0].nodeAllocatableResourceMapping": '
                      'did you mean "nodeAllocatableResourceMappings"? at %s:' % path, out)
        self.assertIn("1 allowed (1 with warnings)", out)
        code, out, _ = run("dry-run", "--output", "json", path)
        r = json.loads(out)["results"][0]
        self.assertEqual(r["warnings"], ['unknown field "spec.devices[0].nodeAllocatableResourceMapping"'])
        f = r["fields"][0]
        self.assertEqual((f["path"], f["didYouMean"], f["file"]),
                         ("spec.devices[0].nodeAllocatableResourceMapping", "nodeAllocatableResourceMappings", path))
        with open(path) as fh:
            line = fh.read().split("\n")[f["line"] - 1]
        self.assertEqual(line[f["column"] - 1:].split(":")[0], '"nodeAllocatableResourceMapping"')
        code, out, _ = run("dry-run", "--output", "junit", path)
        self.assertIn('unknown field &quot;spec.devices[0].nodeAllocatableResourceMapping&quot;',
                      ET.fromstring(out).find("testcase/system-out").text.replace('"', "&quot;"))
        # The warning is a warning of the run: --warn-exit-code sees it.
        code, _, _ = run("dry-run", "--warn-exit-code", "3", path)
        self.assertEqual(code, 3)

    def test_strict_makes_it_an_error_as_the_api_server_does(self):
        path = self.misspelt()
        for value in ("Strict", "strict"):
            code, out, _ = run("dry-run", "--field-validation", value, path)
            self.assertEqual(code, 2, out)
            self.assertIn('ERROR', out)
            self.assertIn('strict decoding error: unknown field "spec.devices[0].nodeAllocatableResourceMapping"', out)
        code, out, _ = run("dry-run", "--field-validation", "Ignore", path)
        self.assertEqual(code, 0)
        self.assertNotIn("unknown field", out)
        code, out, err = run("dry-run", "--field-validation", "loud", path)
        self.assertEqual((code, out), (2, ""))
        self.assertIn("--field-validation: 'loud' is not Strict, Warn or Ignore", err)

    def test_known_fields_of_the_fixtures_raise_nothing(self):
        for f in (FIXTURE, CLAIM_FIXTURE, os.path.join(ROOT, "tests", "fixtures", "pod-status-node-allocatable.json")):
            code, out, _ = run("dry-run", "--field-validation", "Strict", f)
            self.assertNotIn("unknown field", out, f)
            self.assertNotEqual(code, 2, out)

    def test_duplicate_field_is_named_by_its_path(self):
        path = self.write("dup.yaml", "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\n"
                          "spec:\n  driver: a\n  pool: {name: p, generation: 1, resourceSliceCount: 1}\n"
                          "  driver: b\n")
        code, out, _ = run("dry-run", path)
        self.assertEqual(code, 2, out)
        self.assertIn('%s:7:3: duplicate field "spec.driver" (first at line 5, column 3)' % path, out)

    def test_kind_no_rule_judges_is_not_judged_and_skipped(self):
        s = slice_obj()
        s["kind"] = "ResourceSlise"
        typo = self.write("typo-kind.json", s)
        other = self.write("deploy.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n")
        code, out, _ = run("dry-run", "--output", "json", typo, other, FIXTURE)
        doc = json.loads(out)
        self.assertEqual(code, 0)
        self.assertEqual((doc["summary"]["notJudged"], doc["summary"]["allowed"]), (2, 1))
        self.assertGreaterEqual(doc["summary"]["skipped"], 2)
        t, d = doc["results"][0], doc["results"][1]
        self.assertFalse(t["judged"])
        self.assertIn("no rule judges kind ResourceSlise", t["notJudged"])
        self.assertIn("did you mean ResourceSlice?", t["warnings"][0])
        self.assertFalse(d["judged"])
        self.assertEqual(d["warnings"], [])
        self.assertTrue(doc["results"][2]["judged"])
        # The gate docs/dry-run.md recommends catches it.
        self.assertNotEqual(doc["summary"]["skipped"], 0)
        code, out, _ = run("dry-run", typo)
        self.assertIn("SKIP  - ResourceSlise/", out)
        self.assertIn("1 not judged", out)
        code, _, _ = run("dry-run", "--warn-exit-code", "4", typo)
        self.assertEqual(code, 4)
        code, out, _ = run("dry-run", "--field-validation", "Strict", typo)
        self.assertEqual(code, 2, out)
        code, out, _ = run("dry-run", "--output", "junit", other)
        self.assertIn("<skipped message=", out)

    def test_missing_file_names_the_file_and_the_errno_text(self):
        missing = os.path.join(self.dir, "nope.yaml")
        code, out, err = run("dry-run", missing)
        self.assertEqual(code, 2)
        self.assertIn("ERROR - %s\n" % missing, out)
        self.assertNotIn("- / ", out)
        self.assertIn("%s: cannot read: No such file or directory" % missing, out)
        self.assertIn("dra-guard dry-run: %s: cannot read: No such file or directory" % missing, err)


class Help(unittest.TestCase):
    COMMANDS = [["rules"], ["policy"], ["version"], ["dry-run"], ["serve"], ["convert"], ["policy", "lint"], ["vap"],
                ["replay"], ["readiness"], ["ledger"], ["pending"]]

    def test_every_command_answers_help_on_stdout_with_status_0(self):
        for cmd in self.COMMANDS:
            for flag in ("--help", "-h"):
                code, out, err = run(*(cmd + [flag]))
                self.assertEqual((code, err), (0, ""), cmd + [flag])
                self.assertTrue(out.startswith("usage: dra-guard %s" % " ".join(cmd)), (cmd, out))
        code, out, err = run("--help")
        self.assertEqual((code, err), (0, ""))
        self.assertIn("dry-run", out)

    def test_usage_errors_exit_2_on_stderr(self):
        code, out, err = run()
        self.assertEqual((code, out), (2, ""))
        self.assertIn("usage: dra-guard", err)

    def test_serve_help_lists_the_debug_endpoints_under_metrics_listen(self):
        code, out, _ = run("serve", "--help")
        flag = out[out.index("--metrics-listen"):]
        flag = flag[:flag.index("\n  --", 1)]
        for path in ("/debug/view", "/debug/ledger", "/debug/pending"):
            self.assertIn(path, flag)

    def test_readiness_help_is_its_own(self):
        code, out, _ = run("readiness", "--help")
        self.assertEqual(code, 0)
        self.assertTrue(out.startswith("usage: dra-guard readiness"), out)
        self.assertIn("markdown (default) or json", out)
        self.assertNotIn("--report", out)
        self.assertNotIn("junit", out)

    def test_a_bad_flag_is_one_line_and_a_help_hint(self):
        cases = [
            (["dry-run", "--bogus"], "dra-guard dry-run: unknown flag '--bogus'", "dry-run"),
            (["dry-run"], "dra-guard dry-run: no INPUT given", "dry-run"),
            (["replay", "--bogus"], "dra-guard replay: unknown flag '--bogus'", "replay"),
            (["readiness", "--bogus"], "dra-guard readiness: unknown flag '--bogus'", "readiness"),
            (["readiness"], "dra-guard readiness: no LOG given", "readiness"),
            (["ledger", "--bogus"], "dra-guard ledger: unknown flag '--bogus'", "ledger"),
            (["pending", "--bogus"], "dra-guard pending: unknown flag '--bogus'", "pending"),
            (["vap", "--bogus"], "dra-guard vap: unknown flag '--bogus'", "vap"),
            (["convert", "--bogus"], "dra-guard convert: unknown flag '--bogus'", "convert"),
            (["policy", "lint"], "dra-guard policy lint: no FILE given", "policy lint"),
            (["policy", "frobnicate"], "dra-guard policy: unknown command 'frobnicate'", "policy"),
            (["policy"], "dra-guard policy: no command given (lint)", "policy"),
            (["rules", "extra"], "dra-guard rules: unexpected argument 'extra'", "rules"),
            (["version", "extra"], "dra-guard version: unexpected argument 'extra'", "version"),
            (["serve", "--bogus"], "dra-guard serve: unknown flag '--bogus'", "serve"),
            (["serve", "--listen"], "dra-guard serve: --listen needs a value (ADDR:PORT)", "serve"),
        ]
        for args, line, cmd in cases:
            code, out, err = run(*args)
            self.assertEqual((code, out), (2, ""), args)
            self.assertEqual(err, "%s\nRun 'dra-guard %s --help' for the usage.\n" % (line, cmd), args)
        code, out, err = run("nope")
        self.assertEqual(err, "dra-guard: unknown command 'nope'\nRun 'dra-guard --help' for the commands.\n")

    def test_a_bad_value_names_the_flag_the_value_and_what_is_allowed(self):
        """Every subcommand's flags come from one kind of table: the same
        kind of mistake gets the same kind of message everywhere."""
        cases = [
            (["dry-run", "--warn-exit-code", "256", "x"], "--warn-exit-code: 256 is out of range (0 to 255)"),
            (["dry-run", "--output", "xml", "x"], "--output: 'xml' is not text, json or junit"),
            (["dry-run", "--now", "yesterday", "x"], "--now: 'yesterday' is not a time (RFC 3339 in UTC, "
             "e.g. 2026-12-01T10:00:00Z, or seconds since the epoch)"),
            (["dry-run", "--pol", "x", "y"], "ambiguous flag '--pol' (--policy, --policy-configmap)"),
            (["replay", "--sample", "0", "x"], "--sample: 0 is out of range (1ms to 2500000h)"),
            (["replay", "--max-pending", "0", "x"], "--max-pending: 0 is out of range (1 to 268435456)"),
            (["replay", "--max-line", "8Mb", "x"],
             "--max-line: '8Mb' is not a size (bytes, or a number with Ki, Mi, Gi, k, M, G)"),
            (["replay", "--view-time", "0", "x"], "--view-time: 0 is out of range (after 1970-01-01T00:00:00Z)"),
            (["readiness", "--output", "junit", "x"], "--output: 'junit' is not markdown or json"),
            (["ledger", "--output", "xml", "--view", "x"], "--output: 'xml' is not table or json"),
            (["ledger", "--view", "a", "b"], "unexpected argument 'b'"),
            (["pending", "--output", "xml"], "--output: 'xml' is not table or json"),
            (["vap", "--output", "yaml"], "--output: 'yaml' is not text or json"),
            (["serve", "--idle-timeout", "2h"], "--idle-timeout: 2h is out of range (1s to 1h)"),
            (["serve", "--max-body", "1Gi"], "--max-body: 1Gi is out of range (1Ki to 256Mi)"),
        ]
        for args, line in cases:
            code, out, err = run(*args)
            self.assertEqual((code, out), (2, ""), args)
            self.assertEqual(err, "dra-guard %s: %s\nRun 'dra-guard %s --help' for the usage.\n"
                             % (args[0], line, args[0]), args)


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

    def test_lint_lists_every_error_where_it_is_in_the_file(self):
        text = ("apiVersion: v1\n"
                "kind: ConfigMap\n"
                "metadata: {name: dra-guard-policy, namespace: dra-guard}\n"
                "data:\n"
                "  freeze: \"maybe\"\n"
                "  policy.yaml: |\n"
                "    apiVersion: dra-guard.io/v1alpha1\n"
                "    kind: Policy\n"
                "    drivers:\n"
                "      gpu.example.com:\n"
                "        scope: global\n"
                "        resources:\n"
                "          pods: {max: 2}\n"
                "    canary: {nodez: [a]}\n")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "policy-configmap.yaml")
            with open(path, "w") as f:
                f.write(text)
            want = [
                '%s:5:11: data["freeze"]: freeze must be "true" or "false", not "maybe"' % path,
                '%s:11:16: drivers["gpu.example.com"].scope: unknown scope "global"' % path,
                '%s:13:11: drivers["gpu.example.com"].resources.pods: "pods" is not a node resource' % path,
                '%s:14:14: canary: unknown key "nodez" (accepted: nodes)' % path,
                '%s: not a valid policy (4 errors)' % path,
            ]
            code, out, err = run("policy", "lint", path)
            self.assertEqual(code, 2)
            lines = err.splitlines()
            self.assertEqual(len(lines), len(want), err)
            for line, w in zip(lines, want):
                self.assertTrue(line.startswith(w), (line, w))
            # The same from stdin, and from dry-run --policy.
            code, out, err = run("policy", "lint", "-", stdin=text)
            self.assertEqual(code, 2)
            self.assertEqual(err.splitlines()[1], lines[1].replace(path, "<stdin>"))
            code, out, err = run("dry-run", "--policy", path, FIXTURE)
            self.assertEqual(code, 2)
            self.assertEqual([l.replace("dra-guard dry-run: --policy ", "") for l in err.splitlines()], lines)

    def test_lint_stdin(self):
        with open(STRICT) as f:
            code, out, err = run("policy", "lint", "-", stdin=f.read())
        self.assertEqual(code, 0, err)
        self.assertTrue(out.startswith("<stdin>: valid"))
        code, _, err = run("policy", "lint", "-", "-", stdin="")
        self.assertEqual(code, 2)

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
