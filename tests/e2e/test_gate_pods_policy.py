#!/usr/bin/env python3
"""manifests/gate-pods/guard-pod-writes.yaml, offline: the
ValidatingAdmissionPolicy that lets the guard's identity only take the
freeze's scheduling gate (and its annotation) off a Pod.

No API server here, so the policy's CEL is evaluated by the small
evaluator below, which knows the part of CEL the policy uses (field
selection, has(), indexing, ==, !=, in, !, &&, ||, ?:, list literals,
the macros map, filter, all and exists, and CEL's rule that && and ||
absorb an error when the other side decides). It checks what the
expressions say, not how the API server type-checks them or what they
cost: the real API server is the check of that. The cases are the
review's: an image swap, a relabel, an added or changed annotation, another
gate removed, refused; the real release patch, and a release of a Pod
released already, allowed; and the policy reaches no one but the guard."""

import copy
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import guard  # noqa: E402
import manifests_lib as ml  # noqa: E402
from guard import check  # noqa: E402

POLICY = os.path.join(guard.ROOT, "manifests", "gate-pods", "guard-pod-writes.yaml")
RBAC = os.path.join(guard.ROOT, "manifests", "gate-pods", "rbac.yaml")
GATE = "dra-guard.io/freeze"
ANNOTATION = "dra-guard.io/freeze-reason"


# --- a CEL subset -----------------------------------------------------------------------------

class CelError(Exception):
    pass


TOKEN = re.compile(r"\s*(?:(?P<str>'(?:[^'\\]|\\.)*')|(?P<num>\d+)|(?P<id>[A-Za-z_][A-Za-z0-9_]*)|"
                   r"(?P<op>==|!=|&&|\|\||[!?:.,()\[\]]))")


def tokenize(text):
    out, i = [], 0
    text = text.strip()
    while i < len(text):
        m = TOKEN.match(text, i)
        if not m or m.end() == i:
            raise CelError("cannot read %r" % text[i:i + 20])
        i = m.end()
        if m.group("str") is not None:
            out.append(("str", m.group("str")[1:-1].replace("\\'", "'").replace("\\\\", "\\")))
        elif m.group("num") is not None:
            out.append(("num", int(m.group("num"))))
        elif m.group("id") is not None:
            out.append(("id", m.group("id")))
        else:
            out.append(("op", m.group("op")))
    out.append(("end", None))
    return out


class Parser:
    """Expressions as nested tuples, precedence as CEL's."""

    def __init__(self, text):
        self.t, self.i = tokenize(text), 0

    def peek(self, kind=None, val=None):
        k, v = self.t[self.i]
        return (kind is None or k == kind) and (val is None or v == val)

    def take(self, kind=None, val=None):
        if not self.peek(kind, val):
            raise CelError("expected %s %s at %r" % (kind, val, self.t[self.i]))
        tok = self.t[self.i]
        self.i += 1
        return tok[1]

    def parse(self):
        e = self.ternary()
        self.take("end")
        return e

    def ternary(self):
        c = self.binary(0)
        if self.peek("op", "?"):
            self.take()
            a = self.ternary()
            self.take("op", ":")
            return ("?", c, a, self.ternary())
        return c

    LEVELS = [("||",), ("&&",), ("==", "!=", "in")]

    def binary(self, level):
        if level == len(self.LEVELS):
            return self.unary()
        e = self.binary(level + 1)
        while any(self.peek(k, op) for op in self.LEVELS[level] for k in ("op", "id")):
            op = self.take()
            e = (op, e, self.binary(level + 1))
        return e

    def unary(self):
        if self.peek("op", "!"):
            self.take()
            return ("!", self.unary())
        return self.postfix()

    def postfix(self):
        e = self.primary()
        while True:
            if self.peek("op", "."):
                self.take()
                name = self.take("id")
                if self.peek("op", "("):
                    e = ("call", name, e, self.args())
                else:
                    e = ("sel", e, name)
            elif self.peek("op", "["):
                self.take()
                idx = self.ternary()
                self.take("op", "]")
                e = ("idx", e, idx)
            else:
                return e

    def args(self):
        self.take("op", "(")
        out = []
        while not self.peek("op", ")"):
            out.append(self.ternary())
            if not self.peek("op", ")"):
                self.take("op", ",")
        self.take("op", ")")
        return out

    def primary(self):
        if self.peek("str") or self.peek("num"):
            return ("lit", self.take())
        if self.peek("op", "("):
            self.take()
            e = self.ternary()
            self.take("op", ")")
            return e
        if self.peek("op", "["):
            self.take()
            items = []
            while not self.peek("op", "]"):
                items.append(self.ternary())
                if not self.peek("op", "]"):
                    self.take("op", ",")
            self.take("op", "]")
            return ("list", items)
        name = self.take("id")
        if name in ("true", "false"):
            return ("lit", name == "true")
        if name == "null":
            return ("lit", None)
        if self.peek("op", "("):
            return ("fn", name, self.args())
        return ("var", name)


def evaluate(e, env):
    op = e[0]
    if op == "lit":
        return e[1]
    if op == "var":
        if e[1] not in env:
            raise CelError("no variable %s" % e[1])
        return env[e[1]]
    if op == "list":
        return [evaluate(x, env) for x in e[1]]
    if op == "sel":
        obj = evaluate(e[1], env)
        if not isinstance(obj, dict) or e[2] not in obj:
            raise CelError("no such key: %s" % e[2])
        return obj[e[2]]
    if op == "idx":
        obj, key = evaluate(e[1], env), evaluate(e[2], env)
        try:
            return obj[key]
        except (KeyError, IndexError, TypeError):
            raise CelError("no such key: %r" % (key,))
    if op == "fn":
        if e[1] != "has" or len(e[2]) != 1 or e[2][0][0] != "sel":
            raise CelError("unknown function %s" % e[1])
        obj = evaluate(e[2][0][1], env)
        return isinstance(obj, dict) and e[2][0][2] in obj
    if op == "call":
        name, target, args = e[1], evaluate(e[2], env), e[3]
        if name not in ("map", "filter", "all", "exists") or len(args) != 2 or args[0][0] != "var":
            raise CelError("unknown method %s" % name)
        if not isinstance(target, (list, dict)):
            raise CelError("%s on a %s" % (name, type(target).__name__))
        var, body, out = args[0][1], args[1], []
        for x in list(target):
            v = evaluate(body, dict(env, **{var: x}))
            if name == "map":
                out.append(v)
            elif not isinstance(v, bool):
                raise CelError("%s: not a bool" % name)
            elif name == "filter" and v:
                out.append(x)
            elif name == "all" and not v:
                return False
            elif name == "exists" and v:
                return True
        return {"map": out, "filter": out, "all": True, "exists": False}[name]
    if op == "!":
        v = evaluate(e[1], env)
        if not isinstance(v, bool):
            raise CelError("! of a non-bool")
        return not v
    if op in ("&&", "||"):
        decide = op == "||"          # the value that decides: true for ||, false for &&
        results = []
        for side in (e[1], e[2]):
            try:
                v = evaluate(side, env)
            except CelError as err:
                results.append(err)
                continue
            if not isinstance(v, bool):
                raise CelError("%s of a non-bool" % op)
            if v == decide:
                return decide
            results.append(v)
        for r in results:
            if isinstance(r, CelError):
                raise r
        return not decide
    if op == "?":
        c = evaluate(e[1], env)
        if not isinstance(c, bool):
            raise CelError("?: on a non-bool")
        return evaluate(e[2] if c else e[3], env)
    a, b = evaluate(e[1], env), evaluate(e[2], env)
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    if op == "in":
        if not isinstance(b, (list, dict)):
            raise CelError("in on a %s" % type(b).__name__)
        return a in b
    raise CelError("unknown operator %s" % op)


def cel(text, env):
    return evaluate(Parser(text).parse(), env)


def test_the_evaluator_follows_cel():
    env = {"o": {"a": {"x": 1}, "l": ["p", "q"]}}
    for text, want in (("has(o.a) && !has(o.b)", True), ("o.l.map(s, s) == ['p', 'q']", True),
                       ("o.l.filter(s, s != 'p') == ['q']", True), ("o.a.all(k, k == 'x')", True),
                       ("o.b.c == 1 || true", True), ("false && o.b.c == 1", False),
                       ("true ? 'x' in o.a : false", True), ("'q' in o.l", True)):
        check(cel(text, env) == want, "%s gave %r" % (text, cel(text, env)))
    for text in ("o.b.c == 1 || false", "o.a.y == 1"):
        try:
            cel(text, env)
        except CelError:
            continue
        check(False, "%s gave a value, want an error" % text)


# --- the policy against the cases -----------------------------------------------------------------

def load():
    with open(POLICY) as f:
        objs = ml.convert(f.read(), "guard-pod-writes.yaml")
    pol = ml.one(objs, "ValidatingAdmissionPolicy")
    binding = ml.one(objs, "ValidatingAdmissionPolicyBinding")
    return pol, binding


def gated_pod():
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "train-0", "namespace": "team-a", "uid": "6f1c1a55-0d2b-4c3e-9a7e-000000000001",
                         "labels": {"app": "train"}, "resourceVersion": "41",
                         "annotations": {ANNOTATION: "INC-4211: hugepage mapping regression",
                                         "team.example.com/owner": "alice"},
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train",
                                              "uid": "6f1c1a55-0d2b-4c3e-9a7e-000000000002", "controller": True}]},
            "spec": {"containers": [{"name": "main", "image": "registry.example.com/train:1.4",
                                     "resources": {"claims": [{"name": "gpu"}]}}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}],
                     "schedulingGates": [{"name": "example.com/quota"}, {"name": GATE}],
                     "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]},
            "status": {"phase": "Pending"}}


def release(pod):
    """The guard's strategic merge patch (policy/rules/gate.h) applied."""
    new = copy.deepcopy(pod)
    new["metadata"]["annotations"].pop(ANNOTATION, None)
    new["spec"]["schedulingGates"] = [g for g in new["spec"]["schedulingGates"] if g["name"] != GATE]
    if not new["spec"]["schedulingGates"]:
        del new["spec"]["schedulingGates"]
    new["metadata"]["resourceVersion"] = "42"
    return new


def changed(fn):
    new = release(gated_pod())
    fn(new)
    return new


def verdict(pol, old, new, user):
    """None when the policy does not apply, else the failed messages."""
    req = {"operation": "UPDATE", "userInfo": {"username": user}}
    env = {"object": new, "oldObject": old, "request": req}
    for mc in pol["spec"].get("matchConditions") or []:
        if not cel(mc["expression"], env):
            return None
    return [v["message"] for v in pol["spec"]["validations"] if cel(v["expression"], env) is not True]


def self_user():
    out = subprocess.run([guard.binary(), "serve", "--help"], capture_output=True, text=True).stdout
    m = re.search(r"--self-user\b.*?default:?\s*\"?([a-z0-9:.-]+)", out, re.S)
    return m.group(1) if m else None


def test_the_guard_may_only_release_the_gate():
    pol, binding = load()
    with open(RBAC) as f:
        rbac = ml.convert(f.read(), "rbac.yaml")
    sa = ml.one(rbac, "ClusterRoleBinding")["subjects"][0]
    me = "system:serviceaccount:%s:%s" % (sa["namespace"], sa["name"])
    check(binding["spec"]["policyName"] == pol["metadata"]["name"] and
          binding["spec"]["validationActions"] == ["Deny"], "the binding does not deny: %s" % binding["spec"])
    check(pol["spec"]["failurePolicy"] == "Fail", "failurePolicy %s" % pol["spec"]["failurePolicy"])
    rules = pol["spec"]["matchConstraints"]["resourceRules"]
    check(rules == [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["pods"]}],
          "the policy matches %s" % rules)
    check("'%s'" % me in pol["spec"]["matchConditions"][0]["expression"],
          "the policy does not name the ServiceAccount the ClusterRole is bound to (%s)" % me)
    old = gated_pod()
    # The real release passes, and so does a release of a Pod released already.
    check(verdict(pol, old, release(old), me) == [], "the release is refused: %s" %
          verdict(pol, old, release(old), me))
    done = release(old)
    check(verdict(pol, done, release(done), me) == [], "a repeated release is refused")
    # A Pod with no other gate or annotation: both lists go away whole
    # (an emptied map or list is not written back).
    only = gated_pod()
    only["spec"]["schedulingGates"] = [{"name": GATE}]
    only["metadata"]["annotations"] = {ANNOTATION: "INC-4211"}
    bare = release(only)
    del bare["metadata"]["annotations"]
    check(verdict(pol, only, bare, me) == [], "the release of a Pod with no other gate or annotation is "
          "refused: %s" % verdict(pol, only, bare, me))
    refused = {
        "image swap": lambda p: p["spec"]["containers"][0].update(image="registry.example.com/miner:1"),
        "relabel": lambda p: p["metadata"]["labels"].update(app="other"),
        "label added": lambda p: p["metadata"]["labels"].update(extra="1"),
        "annotation added": lambda p: p["metadata"]["annotations"].update({"evil.example.com/x": "1"}),
        "annotation changed": lambda p: p["metadata"]["annotations"].update({"team.example.com/owner": "eve"}),
        "annotation removed": lambda p: p["metadata"]["annotations"].pop("team.example.com/owner"),
        "freeze annotation rewritten": lambda p: p["metadata"]["annotations"].update({ANNOTATION: "lifted"}),
        "another gate removed": lambda p: p["spec"].update(schedulingGates=[]),
        "the gate kept": lambda p: p["spec"].update(schedulingGates=[{"name": "example.com/quota"},
                                                                     {"name": GATE}]),
        "toleration added": lambda p: p["spec"]["tolerations"].append({"key": "x", "operator": "Exists"}),
        "nodeSelector set": lambda p: p["spec"].update(nodeSelector={"kubernetes.io/hostname": "n1"}),
        "deadline set": lambda p: p["spec"].update(activeDeadlineSeconds=1),
        "owner dropped": lambda p: p["metadata"].pop("ownerReferences"),
        "finalizer added": lambda p: p["metadata"].update(finalizers=["example.com/hold"]),
    }
    for what, fn in refused.items():
        msgs = verdict(pol, old, changed(fn), me)
        check(msgs, "%s by the guard passes" % what)
    # Anyone else is not this policy's to judge.
    check(verdict(pol, old, changed(refused["image swap"]), "system:serviceaccount:team-a:app") is None,
          "the policy reaches a tenant")
    su = self_user()
    check(su == me, "--self-user's default %r is not the ServiceAccount %s" % (su, me))
    print("     %d changes by the guard refused, the release and a repeated one allowed" % len(refused))


if __name__ == "__main__":
    guard.run_tests([test_the_evaluator_follows_cel, test_the_guard_may_only_release_the_gate])
