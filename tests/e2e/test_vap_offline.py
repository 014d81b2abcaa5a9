#!/usr/bin/env python3
"""The generated ValidatingAdmissionPolicies checked offline, as far as a
machine without a real API server can: every CEL expression of every policy
`dra-guard vap` writes (manifests/vap, tests/golden/vap, and the example
policy's) parses by the CEL grammar, every name it reads at its root is one
CEL admission declares (object, oldObject, request, params,
namespaceObject, authorizer, variables) or a comprehension's own variable,
every `variables.X` is declared by the policy before it is used, and every
function and method is one of the libraries the 1.36 API server offers.
What only the API server can say - the expression's type check, its cost
against the limits, what it evaluates to - is test_vap_envtest.py's, on a
machine with KUBE_APISERVER.

The parser is written from the CEL language definition (cel-spec,
doc/langdef.md: the grammar, macros, literals), with cel-go's optional
syntax (`.?`, `[?`) and the two-variable comprehensions the API server
enables; it builds no tree, it only accepts or refuses."""

import glob
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import guard  # noqa: E402
from guard import check  # noqa: E402

ROOTS = {"object", "oldObject", "request", "params", "namespaceObject", "authorizer", "variables"}
# Macros whose first argument(s) name the element (and key) they bind.
MACROS = {"all", "exists", "exists_one", "existsOne", "map", "filter", "transformList", "transformMap",
          "transformMapEntry", "sortBy"}
# The functions and methods of CEL's standard definitions and of the
# libraries the 1.36 API server's admission CEL environment has (Kubernetes
# quantity, regex, URL, IP/CIDR, format, lists, authorizer; cel-go strings
# v2, sets, math, optional types, two-variable comprehensions).
FUNCTIONS = {
    # standard
    "size", "has", "int", "uint", "double", "string", "bytes", "bool", "duration", "timestamp", "dyn", "type",
    "matches", "startsWith", "endsWith", "contains", "getDate", "getDayOfMonth", "getDayOfWeek",
    "getDayOfYear", "getFullYear", "getHours", "getMilliseconds", "getMinutes", "getMonth", "getSeconds",
    # strings
    "charAt", "indexOf", "lastIndexOf", "lowerAscii", "upperAscii", "replace", "split", "substring", "trim",
    "join", "quote", "format", "reverse",
    # Kubernetes lists
    "isSorted", "sum", "min", "max", "flatten", "sort", "slice", "range", "distinct", "first", "last",
    # Kubernetes regex
    "find", "findAll",
    # Kubernetes quantity
    "quantity", "isQuantity", "sign", "isLessThan", "isGreaterThan", "compareTo", "add", "sub", "asInteger",
    "asApproximateFloat", "isInteger",
    # Kubernetes URL, IP, CIDR
    "url", "isURL", "getScheme", "getHost", "getHostname", "getPort", "getEscapedPath", "getQuery", "ip", "isIP",
    "cidr", "isCIDR", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast",
    "isGlobalUnicast", "containsIP", "containsCIDR", "prefixLength", "masked",
    # Kubernetes format, semver
    "validate", "semver", "isSemver", "major", "minor", "patch",
    # authorizer
    "path", "group", "resource", "namespace", "name", "subresource", "check", "allowed", "reason", "errored",
    "error", "serviceAccount",
    # optional types
    "of", "none", "orValue", "hasValue", "value", "optMap", "optFlatMap", "or",
    # sets and math (namespaced: sets.contains, math.greatest, ...)
    "equivalent", "intersects", "greatest", "least", "ceil", "floor", "round", "trunc", "abs", "isNaN", "isInf",
    "isFinite", "bitAnd", "bitOr", "bitXor", "bitNot", "bitShiftLeft", "bitShiftRight",
} | MACROS
NAMESPACES = {"sets", "math", "optional", "strings", "format"}


class CelError(Exception):
    pass


TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<float>(?:\d+\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\.\d+(?:[eE][+-]?\d+)?))
  | (?P<int>0x[0-9a-fA-F]+u?|\d+u?)
  | (?P<str>[rR]?[bB]?[rR]?(?:'''(?:.|\n)*?'''|\"\"\"(?:.|\n)*?\"\"\"|'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"))
  | (?P<op>\|\||&&|==|!=|<=|>=|\.\?|\[\?|[-+*/%!<>?:.,()\[\]{}])
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
""", re.X)

RESERVED = {"as", "break", "const", "continue", "else", "for", "function", "if", "import", "let", "loop",
            "package", "namespace", "return", "var", "void", "while"}


def tokenize(text):
    out, pos = [], 0
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            raise CelError("cannot read %r" % text[pos:pos + 20])
        pos = m.end()
        kind = m.lastgroup
        if kind == "ws":
            continue
        val = m.group(kind)
        if kind == "id" and val in ("true", "false", "null"):
            kind = "lit"
        elif kind in ("float", "int", "str"):
            kind = "lit"
        elif kind == "id" and val in ("in",):
            kind = "op"
        out.append((kind, val))
    out.append(("end", ""))
    return out


class Parser:
    """Recursive descent over CEL's grammar; records the root names it reads,
    the functions it calls and the variables.X it uses."""

    def __init__(self, text, declared):
        self.t = tokenize(text)
        self.i = 0
        self.scopes = [set()]
        self.declared = declared
        self.errors = []

    def peek(self, k=0):
        return self.t[self.i + k]

    def take(self, val=None, kind=None):
        tk = self.t[self.i]
        if (val is not None and tk[1] != val) or (kind is not None and tk[0] != kind):
            raise CelError("expected %r at %r" % (val or kind, tk[1]))
        self.i += 1
        return tk

    def accept(self, val):
        if self.t[self.i][1] == val and self.t[self.i][0] in ("op", "id"):
            self.i += 1
            return True
        return False

    def parse(self):
        self.expr()
        if self.peek()[0] != "end":
            raise CelError("unexpected %r" % self.peek()[1])

    def expr(self):
        self.cond_or()
        if self.accept("?"):
            self.cond_or()
            self.take(":")
            self.expr()

    def cond_or(self):
        self.cond_and()
        while self.accept("||"):
            self.cond_and()

    def cond_and(self):
        self.relation()
        while self.accept("&&"):
            self.relation()

    def relation(self):
        self.addition()
        while self.peek()[1] in ("<", "<=", ">=", ">", "==", "!=", "in") and self.peek()[0] == "op":
            self.i += 1
            self.addition()

    def addition(self):
        self.multiplication()
        while self.peek()[1] in ("+", "-") and self.peek()[0] == "op":
            self.i += 1
            self.multiplication()

    def multiplication(self):
        self.unary()
        while self.peek()[1] in ("*", "/", "%") and self.peek()[0] == "op":
            self.i += 1
            self.unary()

    def unary(self):
        if self.peek()[1] in ("!", "-") and self.peek()[0] == "op":
            while self.peek()[1] in ("!", "-") and self.peek()[0] == "op":
                self.i += 1
        self.member()

    def args(self, macro=None):
        """A call's arguments; a macro's first one or two bind names."""
        if macro in MACROS and self.peek()[0] == "id" and self.peek(1)[1] == ",":
            names = [self.take(kind="id")[1]]
            self.take(",")
            if macro in ("all", "exists", "existsOne", "exists_one", "transformList", "transformMap",
                         "transformMapEntry", "map", "filter") and self.peek()[0] == "id" and \
                    self.peek(1)[1] == "," and self._two_var(macro):
                names.append(self.take(kind="id")[1])
                self.take(",")
            self.scopes.append(set(names))
            try:
                self.expr()
                while self.accept(","):
                    self.expr()
            finally:
                self.scopes.pop()
            self.take(")")
            return
        if self.accept(")"):
            return
        self.expr()
        while self.accept(","):
            self.expr()
        self.take(")")

    def _two_var(self, macro):
        """After `x, ` comes `y, ` only in the two-variable forms; count the
        top-level commas up to the closing parenthesis to tell."""
        depth, commas, j = 0, 0, self.i
        while self.t[j][0] != "end":
            v = self.t[j][1]
            if v in ("(", "[", "{", "[?"):
                depth += 1
            elif v in (")", "]", "}"):
                if depth == 0:
                    break
                depth -= 1
            elif v == "," and depth == 0:
                commas += 1
            j += 1
        # One variable: `x, p` (or map's `x, p, t`); two: `i, v, p` (or
        # `i, v, p, t`). What remains after `x,` has commas: map/filter
        # with one variable never has 2, transformList with two has 1 or 2.
        if macro in ("transformList", "transformMap", "transformMapEntry"):
            return True
        if macro == "map":
            return commas >= 2
        return commas >= 1

    def member(self):
        self.primary()
        while True:
            if self.peek()[1] in (".", ".?") and self.peek()[0] == "op":
                self.i += 1
                name = self.take(kind="id")[1]
                if self.accept("("):
                    if name not in FUNCTIONS:
                        self.errors.append("unknown method %s()" % name)
                    self.args(macro=name)
            elif self.peek()[1] in ("[", "[?") and self.peek()[0] == "op":
                self.i += 1
                self.expr()
                self.take("]")
            else:
                return

    def primary(self):
        kind, val = self.peek()
        if kind == "lit":
            self.i += 1
            return
        if val == "(":
            self.i += 1
            self.expr()
            self.take(")")
            return
        if val == "[":
            self.i += 1
            if not self.accept("]"):
                self.accept("?")
                self.expr()
                while self.accept(","):
                    if self.peek()[1] == "]":
                        break
                    self.accept("?")
                    self.expr()
                self.take("]")
            return
        if val == "{":
            self.i += 1
            if not self.accept("}"):
                while True:
                    self.accept("?")
                    self.expr()
                    self.take(":")
                    self.expr()
                    if not self.accept(","):
                        break
                    if self.peek()[1] == "}":
                        break
                self.take("}")
            return
        if val == ".":
            self.i += 1
            kind, val = self.peek()
        if kind == "id":
            # A reserved word may select a field (request.namespace), never
            # name a variable.
            if val in RESERVED:
                raise CelError("reserved word %r" % val)
            self.i += 1
            if self.peek()[1] == "(" and self.peek()[0] == "op":
                self.i += 1
                if val not in FUNCTIONS:
                    self.errors.append("unknown function %s()" % val)
                if val == "has":
                    self.expr()
                    self.take(")")
                    return
                self.args(macro=val)
                return
            if val in NAMESPACES and self.peek()[1] == "." and self.peek(1)[0] == "id" and self.peek(2)[1] == "(":
                self.i += 1
                fn = self.take(kind="id")[1]
                self.take("(")
                if fn not in FUNCTIONS:
                    self.errors.append("unknown function %s.%s()" % (val, fn))
                self.args()
                return
            if not any(val in s for s in self.scopes):
                if val not in ROOTS:
                    self.errors.append("unknown name %r" % val)
                elif val == "variables":
                    if self.peek()[1] == "." and self.peek(1)[0] == "id":
                        var = self.peek(1)[1]
                        if var not in self.declared:
                            self.errors.append("variables.%s is not declared before it is used" % var)
            return
        raise CelError("unexpected %r" % val)


def check_expression(text, declared):
    try:
        p = Parser(text, declared)
        p.parse()
    except CelError as e:
        return ["does not parse: %s" % e]
    return p.errors


def policies(path):
    out = subprocess.run([guard.binary(), "convert", "-"], stdin=open(path, "rb"), stdout=subprocess.PIPE,
                         check=True).stdout.decode()
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def expressions(policy):
    """(where, text, variables declared before it) of one policy."""
    spec = policy.get("spec") or {}
    name = policy["metadata"]["name"]
    declared = set()
    for i, m in enumerate(spec.get("matchConditions") or []):
        yield "%s matchConditions[%d]" % (name, i), m["expression"], set()
    for i, v in enumerate(spec.get("variables") or []):
        yield "%s variables[%d] (%s)" % (name, i, v["name"]), v["expression"], set(declared)
        declared.add(v["name"])
    for i, v in enumerate(spec.get("validations") or []):
        yield "%s validations[%d].expression" % (name, i), v["expression"], declared
        if "messageExpression" in v:
            yield "%s validations[%d].messageExpression" % (name, i), v["messageExpression"], declared
    for i, a in enumerate(spec.get("auditAnnotations") or []):
        yield "%s auditAnnotations[%d]" % (name, i), a["valueExpression"], declared


def sources():
    out = sorted(glob.glob(os.path.join(guard.ROOT, "tests", "golden", "vap", "*.yaml")))
    out.append(os.path.join(guard.ROOT, "manifests", "vap", "policies.yaml"))
    return out


def test_every_expression_parses_and_names_what_admission_declares():
    n, files, bad = 0, 0, []
    for path in sources():
        files += 1
        for pol in policies(path):
            if pol.get("kind") != "ValidatingAdmissionPolicy":
                continue
            for where, text, declared in expressions(pol):
                n += 1
                for err in check_expression(text, declared):
                    bad.append("%s: %s: %s" % (os.path.relpath(path, guard.ROOT), where, err))
    check(n > 1000 and files >= 8, "only %d expressions in %d files" % (n, files))
    check(not bad, "%d problems, first ones:\n  %s" % (len(bad), "\n  ".join(bad[:10])))
    print("     %d expressions in %d files" % (n, files))


def test_the_checker_refuses_what_the_api_server_would():
    """Each broken expression is refused (so a pass above means something),
    each good one accepted."""
    good = ["has(object.spec) && object.spec.devices.all(d, size(d.name) <= 63)",
            "object.spec.devices.exists(i, d, i < 3 && d.name.startsWith('gpu'))",
            "[1, 2].map(x, x * 2)[0] == 2 ? 'a' : \"b\"",
            "variables.one.isLessThan(quantity('2')) || params.data.freeze == 'true'",
            "object.?spec.?devices.orValue([]).size() >= 0",
            "sets.contains([1], [1]) && {'a': 1}['a'] == 1 && -1 < 0u",
            "object.spec.devices.transformList(i, d, i < 2, d.name)"]
    bad = [("object.spec.devices.all(d, size(d.name) <= 63", "does not parse"),
           ("objekt.spec", "unknown name 'objekt'"),
           ("variables.missing == 1", "variables.missing is not declared"),
           ("object.spec.devices.al(d, true)", "unknown method al()"),
           ("quantitiy('1')", "unknown function quantitiy()"),
           ("object.spec.devices.all(d, e.name == '')", "unknown name 'e'"),
           ("'unterminated", "does not parse"),
           ("a ? b", "does not parse"),
           ("namespace == 'x'", "does not parse")]
    for text in good:
        errs = check_expression(text, {"one"})
        check(not errs, "%r refused: %s" % (text, errs))
    for text, want in bad:
        errs = check_expression(text, {"one"})
        check(any(want in e for e in errs), "%r: %s, want %r" % (text, errs, want))


if __name__ == "__main__":
    guard.run_tests([test_the_checker_refuses_what_the_api_server_would,
                     test_every_expression_parses_and_names_what_admission_declares])
