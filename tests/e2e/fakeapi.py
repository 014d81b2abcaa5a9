"""A fake kube-apiserver on loopback: what the guard's tests need of the real
one when no real one is on the machine (KUBE_APISERVER unset).

Standard library only. FakeEnv has EnvTest's interface (tests/e2e/envtest.py),
so a suite written against the real API server runs against this one
unchanged; `envtest.EnvTest` is this class when require(fake=True) found no
real server. It is not a mock that answers what the guard hopes: every
answer has the shape, status code, reason and message the 1.36 API server
gives for the same request, taken from its source and kept as data under
tests/fixtures/apiserver/ (README.md there says where each comes from), and
tests/e2e/test_fakeapi.py compares the two servers' answers field by field
where KUBE_APISERVER is set.

What it serves:
- discovery (/api, /apis, /apis/<group>, /apis/<group>/<version>), /readyz,
  /healthz, /livez, /version;
- every resource the guard and its tests touch (RESOURCES below), cluster-
  scoped and namespaced, with the status, binding and token subresources;
- LIST with limit and continue (the continue token expires with a 410 after
  compact()), resourceVersion=0, labelSelector and fieldSelector
  (metadata.name, metadata.namespace, spec.nodeName, status.phase, = and !=);
- WATCH over chunked HTTP: one JSON event per line, from a resourceVersion
  or from now, bookmarks (allowWatchBookmarks, every bookmark_interval
  seconds and before the timeout closes the stream), the initial events of
  a streaming list (sendInitialEvents=true, ending in the
  k8s.io/initial-events-end bookmark), a 410 ERROR event for a
  resourceVersion compacted away, timeoutSeconds;
- POST (generateName), PUT (resourceVersion precondition: 409 Conflict),
  PATCH (merge, JSON and strategic merge, retried on a concurrent write as
  the real server does), DELETE (finalizers, graceful deletion of bound
  Pods), DeleteCollection, dryRun=All;
- authentication by client certificate (CN user, O groups) and bearer
  token (the token file's and TokenRequest's), authorization by RBAC (Roles,
  ClusterRoles, bindings, resourceNames with the metadata.name field
  selector of a list or watch, nonResourceURLs, system:masters, the
  bootstrap discovery and self-review grants), SelfSubjectAccessReview,
  SelfSubjectRulesReview, SubjectAccessReview and TokenReview;
- admission webhooks: Mutating then Validating configurations, rules with
  subresources and scope, namespace and object selectors, the matchConditions
  the project writes (a small CEL subset, see cel_eval), failurePolicy,
  timeouts, JSON patches, warnings, audit annotations (a key with a second
  '/' is dropped, as the real server does), the denial message of the real
  server;
- an audit log (JSON lines, audit.k8s.io/v1 Events at Metadata level, or
  RequestResponse for writes when a policy text is given);
- restart_apiserver() (every connection cut, data kept), compact() (older
  resourceVersions gone), proxy().

What it does not do, and the real server does: OpenAPI field validation and
defaulting beyond the few defaults below, version conversion (resource.k8s.io
is served at v1 only; v1beta1/v1beta2 paths answer 404 and say so),
ValidatingAdmissionPolicy evaluation (CEL), server-side apply, priority and
fairness. A test that needs those asks for the real server
(envtest.require() without fake=True, or env.real)."""

import base64
import bisect
import copy
import datetime
import http.client
import http.server
import json
import os
import re
import secrets
import shutil
import socket
import socketserver
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import envtest  # noqa: E402  (the client side, certificates, Proxy)

ROOT = os.environ.get("DRA_GUARD_ROOT") or os.path.dirname(os.path.dirname(HERE))

# (group, plural) -> (kind, namespaced, version, subresources, has status subresource)
RESOURCES = {
    ("", "namespaces"): ("Namespace", False, "v1", ("status",)),
    ("", "nodes"): ("Node", False, "v1", ("status",)),
    ("", "pods"): ("Pod", True, "v1", ("status", "binding")),
    ("", "configmaps"): ("ConfigMap", True, "v1", ()),
    ("", "secrets"): ("Secret", True, "v1", ()),
    ("", "serviceaccounts"): ("ServiceAccount", True, "v1", ("token",)),
    ("", "events"): ("Event", True, "v1", ()),
    ("resource.k8s.io", "resourceslices"): ("ResourceSlice", False, "v1", ()),
    ("resource.k8s.io", "resourceclaims"): ("ResourceClaim", True, "v1", ("status",)),
    ("resource.k8s.io", "resourceclaimtemplates"): ("ResourceClaimTemplate", True, "v1", ()),
    ("resource.k8s.io", "deviceclasses"): ("DeviceClass", False, "v1", ()),
    ("coordination.k8s.io", "leases"): ("Lease", True, "v1", ()),
    ("events.k8s.io", "events"): ("Event", True, "v1", ()),
    ("apps", "deployments"): ("Deployment", True, "v1", ("status",)),
    ("apps", "daemonsets"): ("DaemonSet", True, "v1", ("status",)),
    ("rbac.authorization.k8s.io", "roles"): ("Role", True, "v1", ()),
    ("rbac.authorization.k8s.io", "rolebindings"): ("RoleBinding", True, "v1", ()),
    ("rbac.authorization.k8s.io", "clusterroles"): ("ClusterRole", False, "v1", ()),
    ("rbac.authorization.k8s.io", "clusterrolebindings"): ("ClusterRoleBinding", False, "v1", ()),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"):
        ("ValidatingWebhookConfiguration", False, "v1", ()),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"):
        ("MutatingWebhookConfiguration", False, "v1", ()),
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"):
        ("ValidatingAdmissionPolicy", False, "v1", ("status",)),
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"):
        ("ValidatingAdmissionPolicyBinding", False, "v1", ()),
}
# Create-only reviews: answered, never stored.
REVIEWS = {
    ("authorization.k8s.io", "selfsubjectaccessreviews"): "SelfSubjectAccessReview",
    ("authorization.k8s.io", "selfsubjectrulesreviews"): "SelfSubjectRulesReview",
    ("authorization.k8s.io", "subjectaccessreviews"): "SubjectAccessReview",
    ("authentication.k8s.io", "tokenreviews"): "TokenReview",
    ("authentication.k8s.io", "selfsubjectreviews"): "SelfSubjectReview",
}
# Versions the real 1.36 server serves for a group (discovery); only the
# first is served here.
GROUP_VERSIONS = {"resource.k8s.io": ["v1", "v1beta2", "v1beta1"]}

# Strategic merge: the merge key of the lists patched by key (the
# patchMergeKey of k8s.io/api's types); any other list is replaced whole.
MERGE_KEYS = {"schedulingGates": "name", "containers": "name", "initContainers": "name",
              "conditions": "type", "ownerReferences": "uid", "env": "name", "volumes": "name",
              "resourceClaims": "name", "resourceClaimStatuses": "name", "reservedFor": "uid"}
PRIMITIVE_MERGE = {"finalizers"}

# The Go zero value of a kind's spec and status as JSON (fields without
# omitempty): what a bookmark's empty object carries besides its metadata.
ZERO = {"ResourceSlice": {"spec": {"driver": "", "pool": {"name": "", "generation": 0, "resourceSliceCount": 0}}},
        "ResourceClaim": {"spec": {"devices": {}}, "status": {}},
        "Pod": {"spec": {"containers": None}, "status": {}},
        "ConfigMap": {},
        "Node": {"spec": {}, "status": {"daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
                                         "nodeInfo": {"machineID": "", "systemUUID": "", "bootID": "",
                                                      "kernelVersion": "", "osImage": "",
                                                      "containerRuntimeVersion": "", "kubeletVersion": "",
                                                      "kubeProxyVersion": "", "operatingSystem": "",
                                                      "architecture": ""}}}}

# Kinds whose strategy keeps metadata.generation (1 at create, +1 when the
# spec changes or a graceful deletion starts); a ResourceClaim or a Node has
# none, as the recorded answers show.
GENERATION = {"Pod", "ResourceSlice", "DeviceClass", "Deployment", "DaemonSet", "ValidatingAdmissionPolicy"}

BOOKMARK_INTERVAL = 60.0   # the real watch cache's bookmark frequency (about a minute)


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_micro():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def status(code, reason, message, details=None):
    """A metav1.Status as the API server writes it for an error."""
    s = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
         "message": message, "reason": reason, "code": code}
    if details is not None:
        s["details"] = details
    return s


class ApiError(Exception):
    def __init__(self, st):
        super().__init__(st["message"])
        self.status = st


def not_found(group, plural, name):
    return ApiError(status(404, "NotFound", '%s "%s" not found' % (qualified(group, plural), name),
                           {"name": name, "group": group, "kind": plural} if group else
                           {"name": name, "kind": plural}))


def already_exists(group, plural, name):
    return ApiError(status(409, "AlreadyExists", '%s "%s" already exists' % (qualified(group, plural), name),
                           dict({"name": name, "kind": plural}, **({"group": group} if group else {}))))


def conflict(group, plural, name):
    return ApiError(status(409, "Conflict",
                           'Operation cannot be fulfilled on %s "%s": the object has been modified; please apply '
                           'your changes to the latest version and try again' % (qualified(group, plural), name),
                           dict({"name": name, "kind": plural}, **({"group": group} if group else {}))))


def forbidden(user, verb, group, plural, sub, ns, name=None):
    res = plural + ("/" + sub if sub else "")
    what = 'User "%s" cannot %s resource "%s" in API group "%s"' % (user, verb, res, group)
    if ns:
        what += ' in the namespace "%s"' % ns
    else:
        what += " at the cluster scope"
    full = qualified(group, plural) + ("" if not name else ' "%s"' % name)
    return ApiError(status(403, "Forbidden", "%s is forbidden: %s" % (full, what),
                           dict({"kind": plural}, **({"group": group} if group else {}),
                                **({"name": name} if name else {}))))


def qualified(group, plural):
    return plural + ("." + group if group else "")


def bad_request(msg):
    return ApiError(status(400, "BadRequest", msg))


def invalid(kind, group, name, causes):
    msg = '%s.%s "%s" is invalid: %s' % (kind, group, name, ", ".join(
        "%s: %s" % (c["field"], c["message"]) for c in causes)) if group else \
        '%s "%s" is invalid: %s' % (kind, name, ", ".join("%s: %s" % (c["field"], c["message"]) for c in causes))
    return ApiError(status(422, "Invalid", msg, {"name": name, "kind": kind,
                                                 **({"group": group} if group else {}),
                                                 "causes": [{"reason": "FieldValueInvalid", **c} for c in causes]}))


# --- patches ----------------------------------------------------------------------------------------

def merge_patch(target, patch):
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def _pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request("the server rejected our request due to an error in our request")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def json_patch(doc, ops):
    """RFC 6902."""
    doc = copy.deepcopy(doc)
    if not isinstance(ops, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")

    def parent(d, parts):
        for p in parts[:-1]:
            d = d[int(p)] if isinstance(d, list) else d[p]
        return d

    for op in ops:
        kind, parts = op.get("op"), _pointer(op.get("path", ""))
        try:
            if kind == "test":
                cur = doc
                for p in parts:
                    cur = cur[int(p)] if isinstance(cur, list) else cur[p]
                if cur != op.get("value"):
                    raise ApiError(status(422, "Invalid", "the server rejected our request due to an error in "
                                          "our request"))
                continue
            if kind in ("add", "replace"):
                par = parent(doc, parts)
                last = parts[-1]
                if isinstance(par, list):
                    if last == "-":
                        par.append(copy.deepcopy(op["value"]))
                    elif kind == "add":
                        par.insert(int(last), copy.deepcopy(op["value"]))
                    else:
                        par[int(last)] = copy.deepcopy(op["value"])
                else:
                    if kind == "replace" and last not in par:
                        raise KeyError(last)
                    par[last] = copy.deepcopy(op["value"])
            elif kind == "remove":
                par = parent(doc, parts)
                if isinstance(par, list):
                    del par[int(parts[-1])]
                else:
                    del par[parts[-1]]
            else:
                raise bad_request("Unexpected kind: %s" % kind)
        except (KeyError, IndexError, ValueError, TypeError):
            raise ApiError(status(422, "Invalid", "the server rejected our request due to an error in our "
                                  "request"))
    return doc


def strategic_patch(target, patch, key=None):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    for k, v in patch.items():
        if k.startswith("$setElementOrder/") or k == "$retainKeys" or k == "$patch":
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            name = k.split("/", 1)[1]
            out[name] = [x for x in out.get(name) or [] if x not in v]
            continue
        if v is None:
            out.pop(k, None)
        elif isinstance(v, list) and MERGE_KEYS.get(k):
            mk = MERGE_KEYS[k]
            cur = list(out.get(k) or [])
            for item in v:
                if not isinstance(item, dict):
                    continue
                idx = next((i for i, c in enumerate(cur) if isinstance(c, dict) and c.get(mk) == item.get(mk)),
                           None)
                if item.get("$patch") == "delete":
                    if idx is not None:
                        del cur[idx]
                elif idx is None:
                    cur.append({a: b for a, b in item.items() if a != "$patch"})
                else:
                    cur[idx] = strategic_patch(cur[idx], item)
            out[k] = cur
        elif isinstance(v, list) and k in PRIMITIVE_MERGE:
            cur = list(out.get(k) or [])
            out[k] = cur + [x for x in v if x not in cur]
        elif isinstance(v, dict):
            out[k] = strategic_patch(out.get(k), v)
        else:
            out[k] = copy.deepcopy(v)
    return out


# --- a small CEL subset for matchConditions -------------------------------------------------------------

class _Missing(Exception):
    pass


class _Obj:
    """Field access on a JSON value, CEL style: a missing field is an error
    that has() turns into false."""

    def __init__(self, v):
        self.v = v

    def __getattr__(self, name):
        if name == "v":
            raise AttributeError(name)
        if isinstance(self.v, dict) and name in self.v:
            return wrap(self.v[name])
        raise _Missing(name)

    def __eq__(self, other):
        return isinstance(other, _Obj) and self.v == other.v

    __hash__ = None


def wrap(v):
    if isinstance(v, dict):
        return _Obj(v)
    if isinstance(v, list):
        return [wrap(x) for x in v]
    return v


def _has(thunk):
    try:
        thunk()
        return True
    except _Missing:
        return False


def _size(v):
    if isinstance(v, _Obj):
        return len(v.v)
    return len(v)


CEL_TOKEN = re.compile(r"\s*(?:(\d+)|('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")|(&&|\|\||==|!=|<=|>=|[()!.,<>\[\]])|"
                       r"([A-Za-z_][A-Za-z0-9_]*))")


def _closing(toks, i):
    """The index of the parenthesis closing the one at toks[i]."""
    depth = 0
    for j in range(i, len(toks)):
        depth += toks[j] == "("
        depth -= toks[j] == ")"
        if depth == 0:
            return j
    raise ValueError("CEL: an unclosed parenthesis")


def cel_to_python(expr):
    """Translate the subset of CEL the project's matchConditions use (field
    access, has(), size(), exists(), all(), in, ==, !=, <, >, &&, ||, !,
    string and integer literals) into a Python expression; anything else
    raises ValueError, so an expression is never half understood."""
    toks = []
    pos = 0
    while pos < len(expr):
        m = CEL_TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            if expr[pos:].strip() == "":
                break
            raise ValueError("CEL: cannot read %r" % expr[pos:pos + 20])
        pos = m.end()
        toks.append(m.group(0).strip())
    out = []
    i = 0
    while i < len(toks):
        t = toks[i]
        if t == "&&":
            out.append(" and ")
        elif t == "||":
            out.append(" or ")
        elif t == "!":
            out.append(" not ")
        elif t == "has":
            # has(a.b.c) -> _has(lambda: a.b.c)
            j = _closing(toks, i + 1)
            out.append("_has(lambda: %s)" % cel_to_python(" ".join(toks[i + 2:j])))
            i = j
        elif t == "." and i + 2 < len(toks) and toks[i + 1] in ("exists", "all") and toks[i + 2] == "(":
            # x.exists(v, e) -> any(e for v in x)
            j = _closing(toks, i + 2)
            var = toks[i + 3]
            if toks[i + 4] != ",":
                raise ValueError("CEL: %s without a variable" % toks[i + 1])
            body = cel_to_python(" ".join(toks[i + 5:j]))
            chain = []
            while out and (out[-1] == "." or re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", out[-1])):
                chain.insert(0, out.pop())
            recv = "".join(chain)
            fn = "any" if toks[i + 1] == "exists" else "all"
            out.append("%s((%s) for %s in %s)" % (fn, body, var, recv))
            i = j
        elif t == "size":
            out.append("_size")
        elif t in ("true", "false", "null"):
            out.append({"true": "True", "false": "False", "null": "None"}[t])
        elif t in ("in", "(", ")", ",", ".", "==", "!=", "<", ">", "<=", ">=", "[", "]") or \
                t[0].isdigit() or t[0] in "'\"" or re.match(r"[A-Za-z_]", t):
            out.append(t)
        else:
            raise ValueError("CEL: unsupported %r" % t)
        i += 1
    return "".join(out)


def cel_eval(expr, variables):
    py = cel_to_python(expr)
    env = {"_has": _has, "_size": _size, "__builtins__": {"any": any, "all": all}}
    env.update({k: wrap(v) for k, v in variables.items()})
    try:
        return bool(eval(py, env))  # noqa: S307 - the project's own expressions, translated above
    except _Missing as e:
        raise ValueError("no such key: %s" % e)


# --- selectors ----------------------------------------------------------------------------------------------

def label_selector_match(sel, labels):
    """A metav1.LabelSelector (matchLabels, matchExpressions)."""
    if sel is None:
        return True
    labels = labels or {}
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or []:
        k, op, vals = e.get("key"), e.get("operator"), e.get("values") or []
        if op == "In" and labels.get(k) not in vals:
            return False
        if op == "NotIn" and k in labels and labels[k] in vals:
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
    return True


def parse_label_query(q):
    """labelSelector query text: a=b, a!=b, a, !a, a in (x,y)."""
    reqs = []
    for part in re.findall(r"[^,(]+(?:\([^)]*\))?", q or ""):
        part = part.strip().strip(",").strip()
        if not part:
            continue
        m = re.match(r"^([^\s!=]+)\s+(in|notin)\s+\((.*)\)$", part)
        if m:
            reqs.append((m.group(1), m.group(2), [x.strip() for x in m.group(3).split(",")]))
        elif "!=" in part:
            k, v = part.split("!=", 1)
            reqs.append((k.strip(), "!=", v.strip()))
        elif "==" in part or "=" in part:
            k, v = re.split("==?", part, 1)
            reqs.append((k.strip(), "=", v.strip()))
        elif part.startswith("!"):
            reqs.append((part[1:].strip(), "!", None))
        else:
            reqs.append((part, "exists", None))
    return reqs


def label_query_match(reqs, labels):
    labels = labels or {}
    for k, op, v in reqs:
        if op == "=" and labels.get(k) != v:
            return False
        if op == "!=" and labels.get(k) == v:
            return False
        if op == "in" and labels.get(k) not in v:
            return False
        if op == "notin" and labels.get(k) in v:
            return False
        if op == "exists" and k not in labels:
            return False
        if op == "!" and k in labels:
            return False
    return True


FIELDS = {"metadata.name": lambda o: o["metadata"].get("name", ""),
          "metadata.namespace": lambda o: o["metadata"].get("namespace", ""),
          "spec.nodeName": lambda o: (o.get("spec") or {}).get("nodeName", ""),
          "spec.driver": lambda o: (o.get("spec") or {}).get("driver", ""),
          "status.phase": lambda o: (o.get("status") or {}).get("phase", ""),
          "involvedObject.name": lambda o: (o.get("involvedObject") or {}).get("name", ""),
          "regarding.name": lambda o: (o.get("regarding") or {}).get("name", "")}


def parse_field_query(q):
    reqs = []
    for part in (q or "").split(","):
        part = part.strip()
        if not part:
            continue
        if "!=" in part:
            k, v = part.split("!=", 1)
            op = "!="
        else:
            k, v = re.split("==?", part, 1)
            op = "="
        if k not in FIELDS:
            raise bad_request('"%s" is not a known field selector: only "metadata.name", "metadata.namespace"'
                              % k)
        reqs.append((k, op, v))
    return reqs


def field_query_match(reqs, obj):
    for k, op, v in reqs:
        got = FIELDS[k](obj)
        if (op == "=") != (got == v):
            return False
    return True


# --- the server -----------------------------------------------------------------------------------------------

class _Threading(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def handle_error(self, request, client_address):
        # A client gone mid-request (a guard killed by a test) is not an
        # error of the fake's; the rest is in env.log().
        pass


class FakeEnv(envtest.Client):
    """EnvTest's interface (tests/e2e/envtest.py) on a fake API server."""

    real = False

    def __init__(self, identities=None, tokens=None, audit=False, extra_args=(), etcd_quota=None,
                 etcd_dir=None):
        self.dir = tempfile.mkdtemp(prefix="dra-guard-fakeapi-")
        self.identities = dict(identities or {})
        self.tokens = dict(tokens or {})
        self.audit = audit
        self.extra_args = list(extra_args)
        self.proxies = []
        self.port = envtest.free_port()
        self.url = "https://127.0.0.1:%d" % self.port
        self.bookmark_interval = BOOKMARK_INTERVAL
        # The WatchList feature: on, a WATCH with sendInitialEvents=true is a
        # streaming list; off, it is refused as a server with the gate off
        # refuses it (422).
        self.watch_list = True
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.rv = 1000
        self.compacted = 0
        self.store = {}        # (group, plural, ns, name) -> object
        self.kinds = {}        # (group, plural) -> {(group, plural, ns, name): object}, the same objects
        self.events = []       # (rv, group, plural, ns, type, object)
        self.sa_tokens = {}    # token -> (user, groups, uid)
        self.requests = []     # (verb, group, resource, subresource, namespace, name, user, 0 or 403) of every request
        self.log_lines = []
        self.generation = 0    # a restart bumps it; streams of an older generation end
        self.httpd = None
        self.serving = False
        self.conns = set()
        self._audit_file = None
        self._certs()

    # --- setup, as EnvTest ------------------------------------------------------------------------------

    def path(self, name):
        return os.path.join(self.dir, name)

    def _openssl(self, *args):
        subprocess.run(["openssl"] + list(args), cwd=self.dir, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def _client_cert(self, name, user, groups):
        subj = "/CN=%s" % user + "".join("/O=%s" % g for g in groups)
        self._openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                      "-keyout", name + ".key", "-subj", subj, "-out", name + ".csr")
        self._openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                      "-CAcreateserial", "-days", "2", "-out", name + ".crt")

    def _certs(self):
        self._openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                      "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=fakeapi-ca")
        with open(self.path("san.ext"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
        self._openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                      "-keyout", "apiserver.key", "-subj", "/CN=kube-apiserver", "-out", "apiserver.csr")
        self._openssl("x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                      "-CAcreateserial", "-days", "2", "-extfile", "san.ext", "-out", "apiserver.crt")
        self._client_cert("admin", "envtest-admin", ["system:masters"])
        for name, (user, groups) in self.identities.items():
            self._client_cert(name, user, groups)
        with open(self.path("ca.crt")) as f:
            self.ca_pem = f.read()

    def start(self):
        self._seed()
        self._serve()
        return self

    def _seed(self):
        """What a new cluster has: the default, kube-system, kube-public and
        kube-node-lease namespaces."""
        for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            with self.lock:
                if ("", "namespaces", None, ns) in self.store:
                    continue
                self._put_new("", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace",
                                                       "metadata": {"name": ns}})

    def _serve(self):
        env = self
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.path("apiserver.crt"), self.path("apiserver.key"))
        ctx.load_verify_locations(self.path("ca.crt"))
        ctx.verify_mode = ssl.CERT_OPTIONAL

        class Handler(_Handler):
            fake = env

        httpd = _Threading(("127.0.0.1", self.port), Handler)
        httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True, do_handshake_on_connect=False)
        self.httpd = httpd
        self.serving = True
        self.generation += 1
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def log(self):
        return "\n".join(self.log_lines[-200:])

    def note(self, msg):
        self.log_lines.append("%s %s" % (now_micro(), msg))

    def stop_apiserver(self):
        if self.httpd:
            self.serving = False
            with self.cond:
                self.generation += 1
                self.cond.notify_all()
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None
            with self.lock:
                conns, self.conns = list(self.conns), set()
            for c in conns:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def restart_apiserver(self, down_seconds=0.0):
        """Every connection cut (watches end), the data kept, as a real
        API server restarting over the same etcd."""
        self.stop_apiserver()
        time.sleep(down_seconds)
        self._serve()

    def compact(self):
        """Every resourceVersion older than now is gone: a watch or a continue
        token from before answers 410."""
        with self.cond:
            self.compacted = self.rv
            self.events = []
            return self.rv

    def stop(self):
        for p in self.proxies:
            p.close()
        self.stop_apiserver()
        if self._audit_file:
            self._audit_file.close()
        if not os.environ.get("KEEP_ENVTEST"):
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        if exc[0] is not None:
            sys.stderr.write("--- fake API server log (tail) ---\n%s\n" % self.log()[-3000:])
        self.stop()
        return False

    # --- the store ------------------------------------------------------------------------------------------

    def _set(self, key, obj):
        """Store obj (lock held), in the store and its kind's index."""
        self.store[key] = obj
        self.kinds.setdefault(key[:2], {})[key] = obj

    def _del(self, key):
        del self.store[key]
        self.kinds.get(key[:2], {}).pop(key, None)

    def of_kind(self, group, plural):
        """The (key, object) pairs of one resource (lock held)."""
        return list(self.kinds.get((group, plural), {}).items())

    def _next_rv(self):
        self.rv += 1
        return self.rv

    def _emit(self, group, plural, ns, typ, obj):
        self.events.append((int(obj["metadata"]["resourceVersion"]), group, plural, ns, typ, copy.deepcopy(obj)))
        self.cond.notify_all()

    def _put_new(self, group, plural, ns, obj):
        """Store a new object (lock held): the fields the API server sets."""
        kind, _, version, _ = RESOURCES[(group, plural)]
        md = obj.setdefault("metadata", {})
        md.setdefault("uid", str(uuid.uuid4()))
        md.setdefault("creationTimestamp", now_rfc3339())
        md["resourceVersion"] = str(self._next_rv())
        if ns:
            md["namespace"] = ns
        if kind in GENERATION:
            md["generation"] = 1
        if kind == "Namespace":
            md.setdefault("labels", {})["kubernetes.io/metadata.name"] = md["name"]
            obj.setdefault("spec", {"finalizers": ["kubernetes"]})
            obj["status"] = {"phase": "Active"}
        obj["apiVersion"] = (group + "/" if group else "") + version
        obj["kind"] = kind
        self._set((group, plural, ns, md["name"]), obj)
        self._emit(group, plural, ns, "ADDED", obj)
        return obj

    def _defaults(self, group, plural, obj, old=None):
        """What the 1.36 API server's defaulting and its default admission
        plugins add on create, as its recorded answers show
        (tests/fixtures/replay/audit.log): a Pod's defaults, ServiceAccount
        and DefaultTolerationSeconds; a Node's not-ready taint
        (TaintNodesByCondition) and zero status; a claim's empty status."""
        if (group, plural) == ("resource.k8s.io", "resourceclaims") and old is None:
            obj["status"] = {}
        if (group, plural) == ("", "nodes") and old is None:
            spec = obj.setdefault("spec", {})
            taints = spec.setdefault("taints", [])
            if not any(t.get("key") == "node.kubernetes.io/not-ready" for t in taints):
                taints.append({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"})
            obj["status"] = {"daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
                             "nodeInfo": {"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "",
                                          "osImage": "", "containerRuntimeVersion": "", "kubeletVersion": "",
                                          "kubeProxyVersion": "", "operatingSystem": "", "architecture": ""}}
        if (group, plural) == ("", "pods") and old is None:
            spec = obj.setdefault("spec", {})
            spec.setdefault("restartPolicy", "Always")
            spec.setdefault("terminationGracePeriodSeconds", 30)
            spec.setdefault("dnsPolicy", "ClusterFirst")
            spec.setdefault("schedulerName", "default-scheduler")
            spec.setdefault("enableServiceLinks", True)
            spec.setdefault("priority", 0)
            spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
            spec.setdefault("securityContext", {})
            for c in spec.get("containers") or []:
                c.setdefault("terminationMessagePath", "/dev/termination-log")
                c.setdefault("terminationMessagePolicy", "File")
                c.setdefault("imagePullPolicy", "IfNotPresent")
                c.setdefault("resources", {})
            st = {"phase": "Pending", "qosClass": "BestEffort"}
            reqs = [c.get("resources", {}) for c in spec.get("containers") or []]
            if any(r.get("requests") or r.get("limits") for r in reqs):
                st["qosClass"] = "Burstable"
            if spec.get("schedulingGates"):
                st["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
                                     "message": "Scheduling is blocked due to non-empty scheduling gates",
                                     "lastProbeTime": None, "lastTransitionTime": now_rfc3339()}]
            obj["status"] = st
        return obj

    def _admission_defaults(self, group, plural, obj):
        """The default admission plugins' additions (after managedFields
        are computed: the plugins' fields are nobody's)."""
        if (group, plural) == ("", "pods"):
            spec = obj.setdefault("spec", {})
            spec.setdefault("serviceAccountName", "default")
            spec.setdefault("serviceAccount", spec["serviceAccountName"])
            tol = spec.setdefault("tolerations", [])
            for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
                if not any(t.get("key") == key and t.get("effect") in (None, "", "NoExecute") for t in tol):
                    tol.append({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})
        return obj


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake = None

    def log_message(self, fmt, *args):
        pass

    def setup(self):
        super().setup()
        # Headers and body go out in two writes: without TCP_NODELAY, Nagle
        # and the client's delayed ACK hold each answer ~40 ms.
        try:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        with self.fake.lock:
            self.fake.conns.add(self.connection)

    def finish(self):
        try:
            super().finish()
        except OSError:
            pass
        with self.fake.lock:
            self.fake.conns.discard(self.connection)

    def handle(self):
        try:
            self.connection.do_handshake()
        except (ssl.SSLError, OSError):
            return
        try:
            super().handle()
        except (ConnectionError, ssl.SSLError, OSError):
            pass

    # --- plumbing ---------------------------------------------------------------------------------------------

    def send_json(self, code, obj, headers=()):
        body = json.dumps(obj, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Audit-Id", self.audit_id)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.resp_code = code
        self.resp_obj = obj

    def send_status(self, st):
        self.send_json(st["code"], st)

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                data += self.rfile.read(size)
                self.rfile.readline()
            return data
        return self.rfile.read(n) if n else b""

    def user(self):
        f = self.fake
        auth = self.headers.get("Authorization") or ""
        if auth.startswith("Bearer "):
            tok = auth[7:].strip()
            if tok in f.tokens:
                u, g = f.tokens[tok]
                return u, list(g) + ["system:authenticated"], {}
            if tok in f.sa_tokens:
                u, g, extra = f.sa_tokens[tok]
                return u, list(g), extra
            return None
        try:
            cert = self.connection.getpeercert()
        except (ValueError, OSError):
            cert = None
        if cert:
            cn, groups = None, []
            for rdn in cert.get("subject", ()):
                for k, v in rdn:
                    if k == "commonName":
                        cn = v
                    elif k == "organizationName":
                        groups.append(v)
            if cn:
                return cn, groups + ["system:authenticated"], {}
        return "system:anonymous", ["system:unauthenticated"], {}

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def dispatch(self, method):
        f = self.fake
        self.audit_id = str(uuid.uuid4())
        self.resp_code, self.resp_obj = 0, None
        self.audit_annotations = {}
        self.req_obj = None
        self.info = None
        self.t0 = now_micro()
        url = urllib.parse.urlsplit(self.path)
        self.query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        body = self.read_body() if method in ("POST", "PUT", "PATCH", "DELETE") else b""
        who = self.user()
        if who is None:
            self.send_json(401, status(401, "Unauthorized", "Unauthorized"))
            return
        self.who = who
        self.warnings = []
        try:
            if not f.serving:
                raise ApiError(status(503, "ServiceUnavailable", "apiserver is shutting down"))
            self.route(method, url.path, body)
        except ApiError as e:
            self.send_status(e.status)
        except (ConnectionError, ssl.SSLError, BrokenPipeError):
            raise
        except Exception as e:  # noqa: BLE001 - a bug here is a 500 with its text, as the real server
            f.note("internal error: %r" % e)
            import traceback
            f.note(traceback.format_exc())
            self.send_status(status(500, "InternalError", "Internal error occurred: %s" % e))
        finally:
            self.write_audit(method, url)

    # --- audit ------------------------------------------------------------------------------------------------

    def write_audit(self, method, url):
        f = self.fake
        if not f.audit or self.info is None:
            return
        info = self.info
        ev = {"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "auditID": self.audit_id,
              "stage": "ResponseComplete", "requestURI": self.path, "verb": info["verb"],
              "user": {"username": self.who[0], "groups": self.who[1]},
              "sourceIPs": ["127.0.0.1"], "userAgent": self.headers.get("User-Agent") or "",
              "responseStatus": {"metadata": {}, "code": self.resp_code},
              "requestReceivedTimestamp": self.t0, "stageTimestamp": now_micro(),
              "annotations": dict({"authorization.k8s.io/decision": "allow",
                                   "authorization.k8s.io/reason": ""}, **self.audit_annotations)}
        if info.get("plural"):
            ref = {"resource": info["plural"], "apiVersion": info["version"]}
            if info["group"]:
                ref["apiGroup"] = info["group"]
            if info.get("ns"):
                ref["namespace"] = info["ns"]
            name = info.get("name")
            if not name and info["verb"] == "create" and isinstance(self.req_obj, dict):
                # A create names its object in the body (generateName: the
                # answer's name).
                name = (self.req_obj.get("metadata") or {}).get("name") or \
                    ((self.resp_obj or {}).get("metadata") or {}).get("name") if self.resp_code == 201 else \
                    (self.req_obj.get("metadata") or {}).get("name")
            if name:
                ref["name"] = name
            if info.get("sub"):
                ref["subresource"] = info["sub"]
            ev["objectRef"] = ref
        if isinstance(f.audit, str) and info["verb"] not in ("get", "list", "watch"):
            ev["level"] = "RequestResponse"
            if self.req_obj is not None:
                ev["requestObject"] = self.req_obj
            if self.resp_obj is not None:
                ev["responseObject"] = self.resp_obj
        with f.lock:
            if f._audit_file is None:
                f._audit_file = open(f.path("audit.log"), "a")
            f._audit_file.write(json.dumps(ev, separators=(",", ":")) + "\n")
            f._audit_file.flush()

    # --- routing ----------------------------------------------------------------------------------------------

    def route(self, method, path, body):
        f = self.fake
        if path in ("/readyz", "/healthz", "/livez"):
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
            return
        if path == "/version":
            self.send_json(200, {"major": "1", "minor": "36", "gitVersion": "v1.36.2-fakeapi",
                                 "platform": "linux/amd64"})
            return
        parts = [p for p in path.split("/") if p]
        if not parts or parts[0] not in ("api", "apis"):
            self.nonresource(method, path)
            return
        if parts[0] == "api":
            if len(parts) == 1:
                self.send_json(200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:%d" % f.port}]})
                return
            group, version, rest = "", parts[1], parts[2:]
        else:
            if len(parts) == 1:
                self.send_json(200, self.group_list())
                return
            if len(parts) == 2:
                g = self.group(parts[1])
                if not g:
                    raise ApiError(status(404, "NotFound", "the server could not find the requested resource"))
                self.send_json(200, g)
                return
            group, version, rest = parts[1], parts[2], parts[3:]
        served = {v for (g, _), (_, _, v, _) in RESOURCES.items() if g == group} | \
                 ({"v1"} if (group in {g for g, _ in REVIEWS}) else set())
        if version not in served:
            if version in GROUP_VERSIONS.get(group, ()):
                raise ApiError(status(404, "NotFound", "the server could not find the requested resource "
                                      "(fakeapi serves %s at v1 only: no conversion)" % group))
            raise ApiError(status(404, "NotFound", "the server could not find the requested resource"))
        if not rest:
            self.send_json(200, self.resource_list(group, version))
            return
        ns = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            ns, rest = rest[1], rest[2:]
        plural = rest[0]
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if (group, plural) in REVIEWS:
            self.review(method, group, version, plural, body)
            return
        if (group, plural) not in RESOURCES:
            raise ApiError(status(404, "NotFound", "the server could not find the requested resource"))
        kind, namespaced, _, subs = RESOURCES[(group, plural)]
        # A namespaced resource is read across namespaces without one; it
        # is written only inside one. A cluster-scoped one has none.
        if (not namespaced and ns) or (namespaced and ns is None and not (name is None and method == "GET")):
            raise ApiError(status(404, "NotFound", "the server could not find the requested resource"))
        if sub and sub not in subs:
            raise ApiError(status(404, "NotFound", "the server could not find the requested resource"))
        verb = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]
        if name is None and method == "GET":
            verb = "watch" if self.query.get("watch") in ("true", "1") else "list"
        if name is None and method == "DELETE":
            verb = "deletecollection"
        authz_name = name
        if verb in ("list", "watch") and self.query.get("fieldSelector"):
            for k, op, v in parse_field_query(self.query["fieldSelector"]):
                if k == "metadata.name" and op == "=":
                    authz_name = v
        self.info = {"verb": verb, "group": group, "version": version, "plural": plural, "ns": ns, "name": name,
                     "sub": sub}
        # Recorded as authorized (the name a list or watch selects by field
        # included), with the code: 403, or 0 for allowed (a watch has no end).
        ok = authorize(f, self.who[0], self.who[1], verb, group, plural, sub, ns, authz_name)
        with f.lock:
            f.requests.append((verb, group, plural, sub, ns, authz_name, self.who[0], 0 if ok else 403))
        if not ok:
            raise forbidden(self.who[0], verb, group, plural, sub, ns, name)
        if verb == "get":
            self.send_json(200, self.get_object(group, plural, ns, name, sub))
        elif verb == "list":
            self.list(group, plural, ns)
        elif verb == "watch":
            self.watch(group, plural, ns)
        elif verb == "create":
            self.create(group, plural, ns, name, sub, body)
        elif verb == "update":
            self.update(group, plural, ns, name, sub, body)
        elif verb == "patch":
            self.patch(group, plural, ns, name, sub, body)
        elif verb == "delete":
            self.delete(group, plural, ns, name, body)
        elif verb == "deletecollection":
            self.delete_collection(group, plural, ns)

    def nonresource(self, method, path):
        f = self.fake
        self.info = {"verb": method.lower(), "group": "", "version": "", "plural": None, "path": path}
        if not authorize_nonresource(f, self.who[0], self.who[1], method.lower(), path):
            raise ApiError(status(403, "Forbidden", 'forbidden: User "%s" cannot %s path "%s"'
                                  % (self.who[0], method.lower(), path), {}))
        raise ApiError(status(404, "NotFound", "the server could not find the requested resource"))

    def group_list(self):
        groups = sorted({g for g, _ in RESOURCES if g} | {g for g, _ in REVIEWS})
        return {"kind": "APIGroupList", "apiVersion": "v1",
                "groups": [self.group(g) for g in groups]}

    def group(self, g):
        if g not in {x for x, _ in RESOURCES} | {x for x, _ in REVIEWS}:
            return None
        versions = GROUP_VERSIONS.get(g, ["v1"])
        return {"kind": "APIGroup", "apiVersion": "v1", "name": g,
                "versions": [{"groupVersion": "%s/%s" % (g, v), "version": v} for v in versions],
                "preferredVersion": {"groupVersion": "%s/v1" % g, "version": "v1"}}

    def resource_list(self, group, version):
        res = []
        for (g, plural), (kind, namespaced, v, subs) in sorted(RESOURCES.items()):
            if g != group or v != version:
                continue
            res.append({"name": plural, "singularName": kind.lower(), "namespaced": namespaced, "kind": kind,
                        "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update",
                                  "watch"]})
            for s in subs:
                res.append({"name": plural + "/" + s, "singularName": "", "namespaced": namespaced,
                            "kind": kind, "verbs": ["get", "patch", "update"]})
        return {"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": (group + "/" if group else "") + version, "resources": res}

    # --- reads ------------------------------------------------------------------------------------------------

    def get_object(self, group, plural, ns, name, sub=None):
        f = self.fake
        with f.lock:
            obj = f.store.get((group, plural, ns, name))
            if obj is None:
                raise not_found(group, plural, name)
            return copy.deepcopy(obj)

    def matching(self, group, plural, ns, labels, fields):
        f = self.fake
        out = []
        for (g, p, n, _), obj in sorted(f.of_kind(group, plural), key=lambda kv: (kv[0][2] or "", kv[0][3])):
            if ns and n != ns:
                continue
            if labels and not label_query_match(labels, obj["metadata"].get("labels")):
                continue
            if fields and not field_query_match(fields, obj):
                continue
            out.append(obj)
        return out

    def list(self, group, plural, ns):
        f = self.fake
        kind = RESOURCES[(group, plural)][0]
        labels = parse_label_query(self.query.get("labelSelector"))
        fields = parse_field_query(self.query.get("fieldSelector"))
        limit = int(self.query.get("limit") or 0)
        cont = self.query.get("continue")
        rv_param = self.query.get("resourceVersion")
        with f.lock:
            items = self.matching(group, plural, ns, labels, fields)
            list_rv = f.rv
            start = ""
            if cont:
                try:
                    tok = json.loads(base64.b64decode(cont))
                    list_rv, start = int(tok["rv"]), tok["start"]
                except (ValueError, KeyError, TypeError):
                    raise bad_request("continue key is not valid: illegal base64 data at input byte 0")
                if list_rv == -1:
                    list_rv = f.rv     # a token handed out with a 410: the list at the latest
                elif list_rv <= f.compacted:
                    # As the etcd store answers a compacted page: a 410 whose
                    # metadata carries a token that continues at the latest
                    # revision (rv -1), inconsistently.
                    st = status(410, "Expired", "The provided continue parameter is too old to display a "
                                          "consistent list result. You can start a new list without the continue "
                                          "parameter, or use the continue token in this response to retrieve the "
                                          "remainder of the results. Continuing with the provided token results "
                                          "in an inconsistent list - objects that were created, modified, or "
                                          "deleted between the time the first chunk was returned and now may "
                                          "show up in the list.")
                    st["metadata"] = {"continue": base64.b64encode(json.dumps(
                        {"v": "meta.k8s.io/v1", "rv": -1, "start": start}, separators=(",", ":")).encode()).decode()}
                    raise ApiError(st)
            # A LIST at resourceVersion=0 is served from the watch cache,
            # which pages nothing: the limit is ignored.
            if rv_param == "0" and not cont:
                limit = 0

            def key(o):
                return (o["metadata"].get("namespace") or "") + "/" + o["metadata"]["name"]
            if start:
                items = [o for o in items if key(o) >= start]
            md = {"resourceVersion": str(list_rv)}
            if limit and len(items) > limit:
                rest = items[limit:]
                items = items[:limit]
                md["continue"] = base64.b64encode(json.dumps(
                    {"v": "meta.k8s.io/v1", "rv": list_rv, "start": key(rest[0])},
                    separators=(",", ":")).encode()).decode()
                md["remainingItemCount"] = len(rest)
            items = [strip_type(copy.deepcopy(o)) for o in items]
        api = (group + "/" if group else "") + "v1"
        self.send_json(200, {"kind": kind + "List", "apiVersion": api, "metadata": md, "items": items})

    def watch(self, group, plural, ns):
        f = self.fake
        kind = RESOURCES[(group, plural)][0]
        api = (group + "/" if group else "") + "v1"
        labels = parse_label_query(self.query.get("labelSelector"))
        fields = parse_field_query(self.query.get("fieldSelector"))
        timeout = float(self.query.get("timeoutSeconds") or 1800)
        bookmarks = self.query.get("allowWatchBookmarks") in ("true", "1")
        initial = self.query.get("sendInitialEvents") in ("true", "1")
        rv_param = self.query.get("resourceVersion") or ""
        if initial and not f.watch_list:
            raise ApiError(status(422, "Invalid", 'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: '
                                  "Forbidden: sendInitialEvents is forbidden for watch unless the WatchList "
                                  "feature gate is enabled",
                                  {"group": "meta.k8s.io", "kind": "ListOptions",
                                   "causes": [{"reason": "FieldValueForbidden",
                                               "message": "Forbidden: sendInitialEvents is forbidden for watch "
                                                          "unless the WatchList feature gate is enabled",
                                               "field": "sendInitialEvents"}]}))
        if initial and self.query.get("allowWatchBookmarks") not in ("true", "1"):
            raise ApiError(status(422, "Invalid", 'ListOptions.meta.k8s.io "" is invalid: allowWatchBookmarks: '
                                  "Forbidden: allowWatchBookmarks must be set to true when sendInitialEvents is "
                                  "true", {"group": "meta.k8s.io", "kind": "ListOptions"}))
        gen = f.generation
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Audit-Id", self.audit_id)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.resp_code = 200

        def write(ev):
            data = json.dumps(ev, separators=(",", ":")).encode() + b"\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def bookmark(rv, annotations=None):
            # An empty object of the kind (its Go zero value as JSON) with
            # only the resourceVersion set.
            md = {"resourceVersion": str(rv), "creationTimestamp": None}
            if annotations:
                md["annotations"] = annotations
            obj = {"kind": kind, "apiVersion": api, "metadata": md}
            obj.update(copy.deepcopy(ZERO.get(kind, {})))
            write({"type": "BOOKMARK", "object": obj})

        def matches(obj):
            if labels and not label_query_match(labels, obj["metadata"].get("labels")):
                return False
            return not fields or field_query_match(fields, obj)

        deadline = time.time() + timeout
        # The watch cache sends its last bookmark about 2 s before the
        # watch's deadline (cacheWatcher.nextBookmarkTime).
        last_bm = deadline - 2.0
        try:
            with f.lock:
                if initial:
                    items = self.matching(group, plural, ns, labels, fields)
                    pos = f.rv
                    pending = [("ADDED", copy.deepcopy(o)) for o in items]
                elif rv_param in ("", "0"):
                    pos = f.rv
                    pending = []
                    if rv_param == "0":
                        pending = [("ADDED", copy.deepcopy(o)) for o in self.matching(group, plural, ns, labels,
                                                                                      fields)]
                else:
                    pos = int(rv_param)
                    pending = []
                    if pos < f.compacted:
                        err = status(410, "Expired", "too old resource version: %d (%d)" % (pos, f.compacted + 1))
                        pending = None
            if pending is None:
                write({"type": "ERROR", "object": err})
                self.wfile.write(b"0\r\n\r\n")
                self.close_connection = True
                return
            for typ, obj in pending:
                write({"type": typ, "object": obj})
            if initial:
                bookmark(pos, {"k8s.io/initial-events-end": "true"})
            next_bm = time.time() + f.bookmark_interval
            while True:
                out = []
                with f.cond:
                    while True:
                        if f.generation != gen or not f.serving:
                            raise ConnectionAbortedError()
                        first = bisect.bisect_right(f.events, pos, key=lambda e: e[0])
                        out = [e for e in f.events[first:] if e[1] == group and e[2] == plural and
                               (not ns or e[3] == ns)]
                        if not out and first < len(f.events):
                            # Only other resources' events: nothing of
                            # this watch's is older than the newest.
                            pos = f.events[-1][0]
                        due = min(deadline, next_bm, last_bm) if bookmarks else deadline
                        if out or time.time() >= due:
                            break
                        f.cond.wait(max(0.0, due - time.time()))
                for rv, _, _, _, typ, obj in out:
                    pos = rv
                    if matches(obj):
                        write({"type": typ, "object": obj})
                now = time.time()
                if now >= deadline:
                    break
                if bookmarks and (now >= next_bm or now >= last_bm):
                    if now >= last_bm:
                        last_bm = deadline + 1     # once

                    with f.lock:
                        # Nothing of this resource since pos: the watch may
                        # resume from the newest revision.
                        pos = max(pos, f.rv)
                    bookmark(pos)
                    next_bm = now + f.bookmark_interval
            self.wfile.write(b"0\r\n\r\n")
        except (ConnectionError, ssl.SSLError, OSError):
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    # --- writes -----------------------------------------------------------------------------------------------

    def parse_body(self, body):
        try:
            obj = json.loads(body) if body else None
        except ValueError as e:
            raise bad_request("the body of the request was in an unknown format - accepted media types "
                              "include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
                              " (%s)" % e)
        self.req_obj = obj
        return obj

    def dry_run(self):
        return self.query.get("dryRun") == "All"

    def create(self, group, plural, ns, name, sub, body):
        f = self.fake
        obj = self.parse_body(body)
        if not isinstance(obj, dict):
            raise bad_request("Object 'Kind' is missing in '%s'" % body[:80].decode(errors="replace"))
        if sub == "token":
            self.token_request(ns, name, obj)
            return
        if sub == "binding":
            self.binding(ns, name, obj)
            return
        if name is not None:
            raise ApiError(status(405, "MethodNotAllowed", "the server does not allow this method on the "
                                  "requested resource"))
        kind, namespaced, version, _ = RESOURCES[(group, plural)]
        md = obj.setdefault("metadata", {})
        if namespaced:
            if md.get("namespace") and md["namespace"] != ns:
                raise bad_request("the namespace of the provided object does not match the namespace sent on "
                                  "the request")
            with f.lock:
                if ("", "namespaces", None, ns) not in f.store:
                    raise not_found("", "namespaces", ns)
        if not md.get("name"):
            if md.get("generateName"):
                md["name"] = md["generateName"] + secrets.token_hex(3)[:5]
            else:
                raise invalid(kind, group, "", [{"field": "metadata.name",
                                                 "message": "Required value: name or generateName is required"}])
        for k in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "generation"):
            md.pop(k, None)
        if namespaced:
            md["namespace"] = ns
        obj["apiVersion"] = (group + "/" if group else "") + version
        obj["kind"] = kind
        if (group, plural) in (("resource.k8s.io", "resourceclaims"),):
            obj.pop("status", None)
        f._defaults(group, plural, obj)
        md.pop("managedFields", None)
        managed_fields(obj, self.manager(), obj["apiVersion"], None)
        f._admission_defaults(group, plural, obj)
        obj = self.admit("CREATE", group, plural, ns, md["name"], None, obj, None, "CreateOptions",
                         stage="mutating")
        # The storage's BeforeCreate fills the system fields between the
        # mutating and the validating webhooks: validating ones see a uid.
        md = obj["metadata"]
        md["uid"] = str(uuid.uuid4())
        md["creationTimestamp"] = now_rfc3339()
        if kind in GENERATION:
            md["generation"] = 1
        obj = self.admit("CREATE", group, plural, ns, md["name"], None, obj, None, "CreateOptions",
                         stage="validating")
        with f.lock:
            key = (group, plural, ns if namespaced else None, obj["metadata"]["name"])
            if key in f.store:
                raise already_exists(group, plural, obj["metadata"]["name"])
            if self.dry_run():
                out = copy.deepcopy(obj)
            else:
                out = copy.deepcopy(f._put_new(group, plural, ns if namespaced else None, obj))
        self.send_json(201, out, self.warning_headers())

    def token_request(self, ns, name, obj):
        f = self.fake
        with f.lock:
            sa = f.store.get(("", "serviceaccounts", ns, name))
            if sa is None:
                raise not_found("", "serviceaccounts", name)
            tok = "fakeapi." + secrets.token_urlsafe(32)
            f.sa_tokens[tok] = ("system:serviceaccount:%s:%s" % (ns, name),
                                ["system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"],
                                {})
        secs = int(((obj or {}).get("spec") or {}).get("expirationSeconds") or 3600)
        exp = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=secs)
        out = {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
               "metadata": {"name": name, "namespace": ns, "creationTimestamp": None},
               "spec": {"audiences": ["https://kubernetes.default.svc"], "expirationSeconds": secs,
                        "boundObjectRef": None},
               "status": {"token": tok, "expirationTimestamp": exp.strftime("%Y-%m-%dT%H:%M:%SZ")}}
        self.send_json(201, out)

    def binding(self, ns, name, obj):
        f = self.fake
        target = (obj or {}).get("target") or {}
        node = target.get("name")
        for _ in range(10):
            cur = self.get_object("", "pods", ns, name)
            if cur["spec"].get("nodeName"):
                raise ApiError(status(409, "Conflict", 'Operation cannot be fulfilled on pods/binding "%s": pod %s '
                                      'is already assigned to node "%s"' % (name, name, cur["spec"]["nodeName"]),
                                      {"name": name, "kind": "pods/binding"}))
            new = copy.deepcopy(cur)
            new["spec"]["nodeName"] = node
            conds = [c for c in (new.get("status") or {}).get("conditions") or [] if c.get("type") != "PodScheduled"]
            conds.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                          "lastTransitionTime": now_rfc3339()})
            new.setdefault("status", {})["conditions"] = conds
            binding = {"kind": "Binding", "apiVersion": "v1", "metadata": {"name": name, "namespace": ns},
                       "target": target}
            self.admit("CREATE", "", "pods", ns, name, "binding", binding, None, "CreateOptions",
                       kind=("", "v1", "Binding"))
            if self.commit("", "pods", ns, name, cur, new):
                self.send_json(201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                     "code": 201})
                return
        raise conflict("", "pods", name)

    def commit(self, group, plural, ns, name, cur, new):
        """Store new over cur unless another write came between (lock
        taken here); False on such a race."""
        f = self.fake
        with f.lock:
            key = (group, plural, ns, name)
            now = f.store.get(key)
            if now is None:
                raise not_found(group, plural, name)
            if now["metadata"]["resourceVersion"] != cur["metadata"]["resourceVersion"]:
                return False
            if self.dry_run():
                self.stored = new
                return True
            if new == now:
                self.stored = copy.deepcopy(now)
                return True
            if new.get("spec") != now.get("spec") and now["kind"] in GENERATION:
                new["metadata"]["generation"] = now["metadata"]["generation"] + 1
            new["metadata"]["resourceVersion"] = str(f._next_rv())
            # An object marked for deletion goes when its last finalizer does.
            if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers") and \
                    not (plural == "pods" and new["spec"].get("nodeName") and
                         new["metadata"].get("deletionGracePeriodSeconds")):
                f._del(key)
                f._emit(group, plural, ns, "DELETED", new)
            else:
                f._set(key, new)
                f._emit(group, plural, ns, "MODIFIED", new)
            self.stored = copy.deepcopy(new)
            return True

    def manager(self):
        """The field manager: the User-Agent up to its first '/'."""
        ua = self.headers.get("User-Agent") or ""
        return ua.split("/")[0] or "unknown"

    def merge_update(self, group, plural, sub, cur, obj):
        """What an update of the object or of its status subresource keeps."""
        new = self._merge_update(group, plural, sub, cur, obj)
        if new != cur:
            managed_fields(new, self.manager(), cur["apiVersion"], sub, old=cur)
        return new

    def _merge_update(self, group, plural, sub, cur, obj):
        _, _, _, subs = RESOURCES[(group, plural)]
        new = copy.deepcopy(obj)
        md = new.setdefault("metadata", {})
        for k in ("uid", "creationTimestamp", "namespace", "name", "generation", "deletionTimestamp",
                  "deletionGracePeriodSeconds", "managedFields"):
            if k in cur["metadata"]:
                md[k] = cur["metadata"][k]
            else:
                md.pop(k, None)
        md["resourceVersion"] = cur["metadata"]["resourceVersion"]
        new["apiVersion"], new["kind"] = cur["apiVersion"], cur["kind"]
        if sub == "status":
            # Only the status moves (and nothing of the metadata).
            keep = copy.deepcopy(cur)
            keep["status"] = new.get("status")
            if keep["status"] is None:
                keep.pop("status")
            return keep
        if "status" in subs:
            if "status" in cur:
                new["status"] = copy.deepcopy(cur["status"])
            else:
                new.pop("status", None)
        return new

    def update(self, group, plural, ns, name, sub, body):
        obj = self.parse_body(body)
        if not isinstance(obj, dict):
            raise bad_request("Object 'Kind' is missing")
        want_rv = (obj.get("metadata") or {}).get("resourceVersion")
        if (obj.get("metadata") or {}).get("name") not in (None, name):
            raise bad_request('the name of the object (%s) does not match the name on the URL (%s)'
                              % (obj["metadata"]["name"], name))
        for _ in range(10):
            cur = self.get_object(group, plural, ns, name)
            if want_rv and want_rv != cur["metadata"]["resourceVersion"]:
                raise conflict(group, plural, name)
            new = self.merge_update(group, plural, sub, cur, obj)
            new = self.admit("UPDATE", group, plural, ns, name, sub, new, cur, "UpdateOptions")
            if self.commit(group, plural, ns, name, cur, new):
                self.send_json(200, self.stored, self.warning_headers())
                return
            if want_rv:
                raise conflict(group, plural, name)
        raise conflict(group, plural, name)

    def patch(self, group, plural, ns, name, sub, body):
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        p = self.parse_body(body)
        if ctype not in ("application/merge-patch+json", "application/json-patch+json",
                         "application/strategic-merge-patch+json"):
            raise ApiError(status(415, "UnsupportedMediaType", "the body of the request was in an unknown format - "
                                  "accepted media types include: application/json-patch+json, "
                                  "application/merge-patch+json, application/apply-patch+yaml",
                                  {}))
        for _ in range(10):
            cur = self.get_object(group, plural, ns, name)
            if ctype == "application/merge-patch+json":
                patched = merge_patch(cur, p)
            elif ctype == "application/json-patch+json":
                patched = json_patch(cur, p)
            else:
                patched = strategic_patch(cur, p)
            want_rv = ((patched.get("metadata") or {}).get("resourceVersion"))
            if want_rv and want_rv != cur["metadata"]["resourceVersion"]:
                raise conflict(group, plural, name)
            new = self.merge_update(group, plural, sub, cur, patched)
            new = self.admit("UPDATE", group, plural, ns, name, sub, new, cur, "PatchOptions")
            if self.commit(group, plural, ns, name, cur, new):
                self.send_json(200, self.stored, self.warning_headers())
                return
        raise conflict(group, plural, name)

    def delete(self, group, plural, ns, name, body):
        opts = self.parse_body(body) or {}
        grace = opts.get("gracePeriodSeconds")
        if "gracePeriodSeconds" in self.query:
            grace = int(self.query["gracePeriodSeconds"])
        out = self.delete_one(group, plural, ns, name, grace)
        self.send_json(200, out, self.warning_headers())

    def delete_one(self, group, plural, ns, name, grace):
        f = self.fake
        for _ in range(10):
            cur = self.get_object(group, plural, ns, name)
            self.admit("DELETE", group, plural, ns, name, None, None, cur, "DeleteOptions")
            with f.lock:
                key = (group, plural, ns, name)
                now = f.store.get(key)
                if now is None:
                    raise not_found(group, plural, name)
                if now["metadata"]["resourceVersion"] != cur["metadata"]["resourceVersion"]:
                    continue
                if self.dry_run():
                    return copy.deepcopy(now)
                graceful = plural == "pods" and now["spec"].get("nodeName") and \
                    (grace if grace is not None else now["spec"].get("terminationGracePeriodSeconds", 30)) > 0
                if now["metadata"].get("finalizers") or graceful:
                    if now["metadata"].get("deletionTimestamp"):
                        return copy.deepcopy(now)
                    new = copy.deepcopy(now)
                    new["metadata"]["deletionTimestamp"] = now_rfc3339()
                    if now["kind"] in GENERATION:
                        new["metadata"]["generation"] = now["metadata"].get("generation", 0) + 1
                    new["metadata"]["deletionGracePeriodSeconds"] = int(grace if grace is not None else
                                                                        (30 if graceful else 0))
                    new["metadata"]["resourceVersion"] = str(f._next_rv())
                    f._set(key, new)
                    f._emit(group, plural, ns, "MODIFIED", new)
                    return copy.deepcopy(new)
                f._del(key)
                gone = copy.deepcopy(now)
                gone["metadata"]["resourceVersion"] = str(f._next_rv())
                f._emit(group, plural, ns, "DELETED", gone)
                return gone
        raise conflict(group, plural, name)

    def delete_collection(self, group, plural, ns):
        f = self.fake
        labels = parse_label_query(self.query.get("labelSelector"))
        fields = parse_field_query(self.query.get("fieldSelector"))
        grace = int(self.query["gracePeriodSeconds"]) if "gracePeriodSeconds" in self.query else None
        with f.lock:
            names = [(o["metadata"].get("namespace"), o["metadata"]["name"])
                     for o in self.matching(group, plural, ns, labels, fields)]
        items = []
        for n, name in names:
            try:
                items.append(strip_type(self.delete_one(group, plural, n, name, grace)))
            except ApiError as e:
                if e.status["code"] != 404:
                    raise
        kind = RESOURCES[(group, plural)][0]
        self.send_json(200, {"kind": kind + "List", "apiVersion": (group + "/" if group else "") + "v1",
                             "metadata": {"resourceVersion": str(f.rv)}, "items": items})

    # --- reviews ----------------------------------------------------------------------------------------------

    def review(self, method, group, version, plural, body):
        f = self.fake
        if method != "POST":
            raise ApiError(status(405, "MethodNotAllowed", "the server does not allow this method on the "
                                  "requested resource"))
        self.info = {"verb": "create", "group": group, "version": version, "plural": plural, "ns": None,
                     "name": None, "sub": None}
        obj = self.parse_body(body) or {}
        user, groups, _ = self.who
        kind = REVIEWS[(group, plural)]
        self_review = plural.startswith("self")
        ok = self_review or authorize(f, user, groups, "create", group, plural, None, None, None)
        with f.lock:
            f.requests.append(("create", group, plural, None, None, None, user, 0 if ok else 403))
        if not ok:
            raise forbidden(user, "create", group, plural, None, None)
        spec = obj.get("spec") or {}
        out = {"kind": kind, "apiVersion": "%s/v1" % group, "metadata": {"creationTimestamp": None},
               "spec": spec}
        if plural in ("selfsubjectaccessreviews", "subjectaccessreviews"):
            if plural == "subjectaccessreviews":
                u, g = spec.get("user", ""), list(spec.get("groups") or [])
            else:
                u, g = user, groups
            ra, nra = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
            if ra:
                ok = authorize(f, u, g, ra.get("verb", ""), ra.get("group", ""), ra.get("resource", ""),
                               ra.get("subresource") or None, ra.get("namespace") or None, ra.get("name") or None)
            elif nra:
                ok = authorize_nonresource(f, u, g, nra.get("verb", ""), nra.get("path", ""))
            else:
                ok = False
            out["status"] = {"allowed": ok}
            if ok:
                out["status"]["reason"] = "RBAC: allowed"
        elif plural == "selfsubjectrulesreviews":
            out["status"] = rules_review(f, user, groups, spec.get("namespace"))
        elif plural == "tokenreviews":
            tok = spec.get("token", "")
            st = {"authenticated": False}
            if tok in f.tokens:
                u, g = f.tokens[tok]
                st = {"authenticated": True, "user": {"username": u, "groups": list(g) + ["system:authenticated"]}}
            elif tok in f.sa_tokens:
                u, g, _ = f.sa_tokens[tok]
                st = {"authenticated": True, "user": {"username": u, "groups": list(g)},
                      "audiences": ["https://kubernetes.default.svc"]}
            out["status"] = st
        elif plural == "selfsubjectreviews":
            out["status"] = {"userInfo": {"username": user, "groups": groups}}
        self.send_json(201, out)

    # --- admission --------------------------------------------------------------------------------------------

    def warning_headers(self):
        return [("Warning", '299 - "%s"' % w.replace('"', "'")) for w in getattr(self, "warnings", [])]

    def admit(self, operation, group, plural, ns, name, sub, obj, old, options_kind, kind=None, stage=None):
        """Mutating, then validating webhooks, as the API server calls them
        (stage: only "mutating" or only "validating"). Returns the object the
        mutating webhooks left; raises the denial."""
        f = self.fake
        self.warnings = getattr(self, "warnings", [])
        res_kind, _, version, _ = RESOURCES[(group, plural)]
        gvk = kind or (group, version, res_kind)
        with f.lock:
            mutating = [copy.deepcopy(o) for _, o in sorted(
                f.of_kind("admissionregistration.k8s.io", "mutatingwebhookconfigurations"), key=lambda kv: kv[0][3])]
            validating = [copy.deepcopy(o) for _, o in sorted(
                f.of_kind("admissionregistration.k8s.io", "validatingwebhookconfigurations"), key=lambda kv: kv[0][3])]
            ns_labels = None
            if ns:
                nso = f.store.get(("", "namespaces", None, ns))
                ns_labels = (nso or {}).get("metadata", {}).get("labels") or {}
        # Webhooks never judge the webhook configurations themselves.
        if group == "admissionregistration.k8s.io":
            return obj
        for cfg_list, mutate in ((mutating, True), (validating, False)):
            if stage and stage != ("mutating" if mutate else "validating"):
                continue
            for cfg in cfg_list:
                for wh in cfg.get("webhooks") or []:
                    if not self.webhook_matches(wh, operation, group, version, plural, sub, ns, ns_labels, obj, old):
                        continue
                    req = self.admission_request(operation, group, version, plural, sub, ns, name, obj, old,
                                                 options_kind, gvk)
                    try:
                        if not self.match_conditions(wh, req):
                            continue
                    except ValueError as e:
                        f.note("webhook %s: matchCondition error: %s" % (wh["name"], e))
                        if wh.get("failurePolicy", "Fail") == "Fail":
                            raise ApiError(status(500, "InternalError", 'Internal error occurred: failed calling '
                                                  'webhook "%s": %s' % (wh["name"], e)))
                        continue
                    resp = self.call_webhook(wh, req)
                    if resp is None:
                        continue
                    for w in resp.get("warnings") or []:
                        self.warnings.append(w)
                    for k, v in (resp.get("auditAnnotations") or {}).items():
                        key = "%s/%s" % (wh["name"], k)
                        if len(key.split("/")) != 2:
                            # The real server's checkKeyFormat, logged as a warning.
                            f.note("Failed to set admission audit annotation %s to %s for webhook %s: annotation "
                                   "key has invalid format, the right format is a DNS subdomain prefix and '/' "
                                   "and key name." % (key, v, wh["name"]))
                            continue
                        self.audit_annotations[key] = v
                    if not resp.get("allowed"):
                        raise ApiError(denial(wh["name"], resp.get("status")))
                    if mutate and resp.get("patch") and obj is not None:
                        if resp.get("patchType") != "JSONPatch":
                            raise ApiError(status(500, "InternalError", 'Internal error occurred: failed calling '
                                                  'webhook "%s": unsupported patch type %r'
                                                  % (wh["name"], resp.get("patchType"))))
                        ops = json.loads(base64.b64decode(resp["patch"]))
                        obj = json_patch(obj, ops)
        return obj

    def webhook_matches(self, wh, operation, group, version, plural, sub, ns, ns_labels, obj, old):
        res = plural + ("/" + sub if sub else "")
        hit = False
        for r in wh.get("rules") or []:
            ops = r.get("operations") or []
            if "*" not in ops and operation not in ops and not (operation == "CONNECT" and "CONNECT" in ops):
                continue
            if "*" not in (r.get("apiGroups") or []) and group not in (r.get("apiGroups") or []):
                continue
            versions = r.get("apiVersions") or []
            if "*" not in versions and version not in versions and wh.get("matchPolicy", "Equivalent") != \
                    "Equivalent":
                continue
            rs = r.get("resources") or []
            ok = res in rs or "*/*" in rs or (not sub and "*" in rs) or (sub and "*/" + sub in rs) or \
                (plural + "/*" in rs)
            if not ok:
                continue
            scope = r.get("scope", "*")
            if scope == "Cluster" and ns or scope == "Namespaced" and not ns:
                continue
            hit = True
            break
        if not hit:
            return False
        if ns and ns_labels is not None and not label_selector_match(wh.get("namespaceSelector"), ns_labels):
            return False
        if plural == "namespaces" and obj is not None and \
                not label_selector_match(wh.get("namespaceSelector"), obj["metadata"].get("labels")):
            return False
        osel = wh.get("objectSelector")
        if osel:
            ok = any(label_selector_match(osel, (o or {}).get("metadata", {}).get("labels"))
                     for o in (obj, old) if o is not None)
            if not ok:
                return False
        return True

    def match_conditions(self, wh, req):
        for mc in wh.get("matchConditions") or []:
            variables = {"object": req.get("object"), "oldObject": req.get("oldObject"), "request": req}
            if not cel_eval(mc["expression"], variables):
                return False
        return True

    def admission_request(self, operation, group, version, plural, sub, ns, name, obj, old, options_kind, gvk):
        user, groups, extra = self.who
        g, v, k = gvk
        req = {"uid": str(uuid.uuid4()),
               "kind": {"group": g, "version": v, "kind": k},
               "resource": {"group": group, "version": version, "resource": plural},
               "requestKind": {"group": g, "version": v, "kind": k},
               "requestResource": {"group": group, "version": version, "resource": plural},
               "name": name or (obj or {}).get("metadata", {}).get("name", ""),
               "operation": operation,
               "userInfo": dict({"username": user, "groups": groups}, **({"extra": extra} if extra else {})),
               "object": obj, "oldObject": old,
               "dryRun": self.dry_run(),
               "options": {"kind": options_kind, "apiVersion": "meta.k8s.io/v1"}}
        if sub:
            req["subResource"] = sub
            req["requestSubResource"] = sub
        if ns:
            req["namespace"] = ns
        if options_kind == "PatchOptions":
            req["options"] = {"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1"}
        if options_kind == "DeleteOptions":
            req["options"] = {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1",
                              "propagationPolicy": "Background"}
        return req

    def call_webhook(self, wh, req):
        f = self.fake
        cc = wh.get("clientConfig") or {}
        url = cc.get("url")
        timeout = int(wh.get("timeoutSeconds") or 10)
        fail_open = wh.get("failurePolicy", "Fail") == "Ignore"
        if not url:
            err = "fakeapi calls webhooks by clientConfig.url only (no Services here)"
        else:
            try:
                ctx = ssl.create_default_context(cadata=base64.b64decode(cc.get("caBundle", "")).decode()
                                                 if cc.get("caBundle") else None)
                u = urllib.parse.urlsplit(url)
                conn = http.client.HTTPSConnection(u.hostname, u.port or 443, timeout=timeout, context=ctx)
                path = (u.path or "/") + ("?" + u.query + "&" if u.query else "?") + "timeout=%ds" % timeout
                review = {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": req}
                conn.request("POST", path, body=json.dumps(review, separators=(",", ":")),
                             headers={"Content-Type": "application/json", "Accept": "application/json"})
                r = conn.getresponse()
                data = r.read()
                conn.close()
                if r.status != 200:
                    raise ValueError("expected response code 200, got %d" % r.status)
                out = json.loads(data)
                resp = out.get("response")
                if not isinstance(resp, dict):
                    raise ValueError("webhook response was absent")
                if resp.get("uid") != req["uid"]:
                    raise ValueError("expected response.uid=%q, got %q" % (req["uid"], resp.get("uid")))
                return resp
            except (OSError, ValueError, http.client.HTTPException, ssl.SSLError) as e:
                err = str(e)
        f.note("webhook %s: %s" % (wh["name"], err))
        if fail_open:
            return None
        raise ApiError(status(500, "InternalError", 'Internal error occurred: failed calling webhook "%s": '
                              'failed to call webhook: %s' % (wh["name"], err)))


def denial(name, st):
    """What the API server answers when a webhook denies (the message
    prefixed with the webhook's name, a code below 400 raised to 400)."""
    st = dict(st or {})
    code = int(st.get("code") or 0)
    if code < 400:
        code = 400
    msg = st.get("message") or ""
    by = 'admission webhook "%s" denied the request' % name
    if msg:
        msg = "%s: %s" % (by, msg)
    elif st.get("reason"):
        msg = "%s: %s" % (by, st["reason"])
    else:
        msg = "%s without explanation" % by
    out = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": msg,
           "code": code}
    if st.get("reason"):
        out["reason"] = st["reason"]
    if st.get("details"):
        out["details"] = st["details"]
    return out


def fields_v1(v, key=None):
    """A FieldsV1 set of what v sets: keyed list items as k:{...}, other
    lists atomic."""
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if x is None or x == {}:
                continue    # an empty struct sets nothing
            out["f:" + k] = fields_v1(x, k)
        return out
    if isinstance(v, list) and MERGE_KEYS.get(key):
        mk = MERGE_KEYS[key]
        out = {".": {}} if v else {}
        for item in v:
            if isinstance(item, dict) and mk in item:
                f = fields_v1(item)
                f["."] = {}
                out["k:" + json.dumps({mk: item[mk]}, separators=(",", ":"))] = f
        return out
    return {}


def managed_fields(obj, manager, api_version, sub, old=None):
    """obj's metadata.managedFields after manager wrote it: its entry for
    (manager, Update, subresource) replaced, the others kept."""
    md = obj.setdefault("metadata", {})
    if obj.get("kind") == "Node":
        # The recorded answers carry no managedFields for a Node.
        return
    entries = [e for e in ((old or {}).get("metadata", {}).get("managedFields") or md.get("managedFields") or [])
               if not (e.get("manager") == manager and e.get("operation") == "Update" and
                       e.get("subresource") == sub)]
    if sub == "status":
        # A status writer owns the fields it changed (a field it removed is
        # nobody's).
        was = (old or {}).get("status") or {}
        changed = {k: v for k, v in (obj.get("status") or {}).items() if was.get(k) != v}
        owned = {"f:status": fields_v1(changed)}
    else:
        body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata", "status")}
        owned = fields_v1(body)
        meta = {k: md[k] for k in ("labels", "annotations", "ownerReferences", "finalizers", "generateName")
                if k in md}
        if meta:
            owned["f:metadata"] = fields_v1(meta)
    if owned and owned != {"f:status": {}}:
        # A manager that sets nothing any more owns nothing: no entry.
        e = {"manager": manager, "operation": "Update", "apiVersion": api_version, "time": now_rfc3339(),
             "fieldsType": "FieldsV1", "fieldsV1": owned}
        if sub:
            e["subresource"] = sub
        entries.append(e)
    if entries:
        md["managedFields"] = entries
    else:
        md.pop("managedFields", None)


def strip_type(o):
    """A LIST's items carry no apiVersion and kind."""
    o.pop("apiVersion", None)
    o.pop("kind", None)
    return o


# --- RBAC ---------------------------------------------------------------------------------------------------

BOOTSTRAP_AUTHENTICATED = [
    # system:basic-user and system:discovery, bound to system:authenticated.
    {"apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
     "verbs": ["create"]},
    {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"], "verbs": ["create"]},
    {"nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*",
                         "/readyz", "/version", "/version/"], "verbs": ["get"]},
]


def _subject_matches(s, user, groups):
    k = s.get("kind")
    if k == "User":
        return s.get("name") == user
    if k == "Group":
        return s.get("name") in groups
    if k == "ServiceAccount":
        return user == "system:serviceaccount:%s:%s" % (s.get("namespace"), s.get("name"))
    return False


def _rules_for(f, user, groups, ns):
    """Every rule granted to the user: cluster-wide (None) and in ns."""
    out = [(None, r) for r in BOOTSTRAP_AUTHENTICATED] if "system:authenticated" in groups else []
    with f.lock:
        bindings = f.of_kind("rbac.authorization.k8s.io", "clusterrolebindings") + \
            f.of_kind("rbac.authorization.k8s.io", "rolebindings")
        store = {k: o for k, o in f.of_kind("rbac.authorization.k8s.io", "clusterroles") +
                 f.of_kind("rbac.authorization.k8s.io", "roles")}
    for (g, p, n, name), b in bindings:
        if p == "rolebindings" and n != ns:
            continue
        if not any(_subject_matches(s, user, groups) for s in b.get("subjects") or []):
            continue
        ref = b.get("roleRef") or {}
        if ref.get("kind") == "ClusterRole":
            role = store.get(("rbac.authorization.k8s.io", "clusterroles", None, ref.get("name")))
        else:
            role = store.get(("rbac.authorization.k8s.io", "roles", n, ref.get("name")))
        for r in (role or {}).get("rules") or []:
            out.append((None if p == "clusterrolebindings" else n, r))
    return out


def authorize(f, user, groups, verb, group, plural, sub, ns, name):
    if "system:masters" in groups:
        return True
    res = plural + ("/" + sub if sub else "")
    for scope, r in _rules_for(f, user, groups, ns):
        if "nonResourceURLs" in r and not r.get("resources"):
            continue
        verbs = r.get("verbs") or []
        if "*" not in verbs and verb not in verbs:
            continue
        if "*" not in (r.get("apiGroups") or []) and group not in (r.get("apiGroups") or []):
            continue
        rs = r.get("resources") or []
        if "*" not in rs and res not in rs and not (sub and "*/" + sub in rs):
            continue
        names = r.get("resourceNames") or []
        if names and name not in names:
            continue
        return True
    return False


def authorize_nonresource(f, user, groups, verb, path):
    if "system:masters" in groups:
        return True
    for _, r in _rules_for(f, user, groups, None):
        verbs = r.get("verbs") or []
        if "*" not in verbs and verb not in verbs:
            continue
        for u in r.get("nonResourceURLs") or []:
            if u == path or u == "*" or (u.endswith("*") and path.startswith(u[:-1])):
                return True
    return False


def rules_review(f, user, groups, ns):
    if "system:masters" in groups:
        return {"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}], "incomplete": False}
    res, nonres = [], []
    for _, r in _rules_for(f, user, groups, ns):
        if r.get("nonResourceURLs"):
            nonres.append({"verbs": r.get("verbs") or [], "nonResourceURLs": r["nonResourceURLs"]})
        else:
            rr = {"verbs": r.get("verbs") or [], "apiGroups": r.get("apiGroups") or [],
                  "resources": r.get("resources") or []}
            if r.get("resourceNames"):
                rr["resourceNames"] = r["resourceNames"]
            res.append(rr)
    return {"resourceRules": res, "nonResourceRules": nonres, "incomplete": False}
