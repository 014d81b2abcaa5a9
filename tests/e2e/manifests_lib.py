"""Helpers for the deployment tests (test_manifests.py, test_image.py):
rendering kustomizations with kubectl, reading the result with the guard's
own loader (`dra-guard convert`), label selectors, durations, a runner.

Standard library only.

Rendering: `kubectl kustomize`. The manifests keep to what kustomize v2.0.3
(embedded in Debian 12's kubectl 1.20, package kubernetes-client) and v5
(current kubectl) both render to the same objects, so whichever kubectl the
machine has renders them for real; there is no stand-in renderer. KUBECTL
picks a particular kubectl (e.g. to run the test against both).
"""

import base64
import json
import os
import re
import shutil
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("DRA_GUARD_ROOT") or os.path.dirname(os.path.dirname(HERE))
MANIFESTS = os.path.join(ROOT, "manifests")
EXAMPLE_POLICY = os.path.join(ROOT, "examples", "policy-configmap.yaml")

# Upper bound for one command: exceeding it is a failure, never a measurement.
COMMAND_TIMEOUT = 60


def fail(msg):
    raise AssertionError(msg)


def check(cond, msg):
    if not cond:
        fail(msg)


def binary():
    path = os.environ.get("DRA_GUARD_BIN") or os.path.join(ROOT, "build", "rel", "dra-guard")
    if not os.access(path, os.X_OK):
        fail("DRA_GUARD_BIN: no executable at %s (make builds it; set DRA_GUARD_BIN)" % path)
    return path


def run(cmd, stdin=None, cwd=None, env=None, ok=(0,)):
    """Run cmd; returns (code, stdout, stderr) as text; fails unless code in ok."""
    p = subprocess.run(cmd, input=stdin, cwd=cwd, env=env, capture_output=True, text=True,
                       timeout=COMMAND_TIMEOUT)
    if ok is not None and p.returncode not in ok:
        fail("%s exited %d\nstdout: %s\nstderr: %s" % (" ".join(cmd), p.returncode, p.stdout[-2000:],
                                                      p.stderr[-2000:]))
    return p.returncode, p.stdout, p.stderr


# --- reading YAML with the guard's own loader ---------------------------------------


def convert(text, what):
    """Every document of a YAML/JSON stream, as dra-guard convert reads it.
    Empty documents (a stream ending in ---) come back as None and are dropped."""
    code, out, err = run([binary(), "convert", "-"], stdin=text, ok=None)
    if code != 0:
        fail("%s: dra-guard convert refused it (exit %d): %s" % (what, code, err.strip()))
    docs = []
    for i, line in enumerate(out.splitlines()):
        try:
            docs.append(json.loads(line))
        except ValueError as e:
            fail("%s: document %d: convert printed a line that is not JSON (%s): %.200s" % (what, i, e, line))
    return [d for d in docs if d is not None]


def load_file(path):
    with open(path) as f:
        return convert(f.read(), os.path.relpath(path, ROOT))


# --- kubectl kustomize ----------------------------------------------------------------


def kubectl():
    path = os.environ.get("KUBECTL") or shutil.which("kubectl")
    if not path:
        fail("no kubectl: install one (Debian 12: apt-get install kubernetes-client) or set KUBECTL")
    return path


def kustomize_version(kc):
    """The kustomize version kubectl embeds, as it reports it; kubectl before
    1.21 (Debian 12's 1.20) embeds v2.0.3 and does not say."""
    code, out, _ = run([kc, "version", "--client"], ok=None)
    m = re.search(r"Kustomize Version:\s*(\S+)", out)
    if m:
        return m.group(1)
    m = re.search(r'GitVersion:"v1\.(\d+)\.', out) or re.search(r"Client Version:\s*v1\.(\d+)\.", out)
    if m and int(m.group(1)) < 21:
        return "v2.0.3 (embedded in kubectl 1.%s)" % m.group(1)
    return "unknown"


def render(directory):
    """kubectl kustomize DIRECTORY, read back with the guard's loader."""
    _, out, _ = run([kubectl(), "kustomize", directory])
    return convert(out, "kubectl kustomize %s" % os.path.relpath(directory, ROOT))


def overlay_workspace():
    """A temporary copy of manifests/ and certs/ laid out as in the
    repository, with the self-signed overlay's certificates made by its own
    gen-certs.sh; the caller removes it."""
    tmp = tempfile.mkdtemp(prefix="dra-guard-manifests-")
    shutil.copytree(MANIFESTS, os.path.join(tmp, "manifests"),
                    ignore=shutil.ignore_patterns("certs", "webhook-ca-bundle.yaml",
                                                  "run-gen-certs.sh-first.yaml"))
    shutil.copytree(os.path.join(ROOT, "certs"), os.path.join(tmp, "certs"))
    return tmp


# --- Kubernetes object helpers -------------------------------------------------------


def key(obj):
    m = obj.get("metadata") or {}
    return (obj.get("kind"), m.get("namespace", ""), m.get("name"))


def index(objs):
    out = {}
    for o in objs:
        k = key(o)
        check(k not in out, "object %s/%s/%s appears twice" % k)
        out[k] = o
    return out


def of_kind(objs, kind):
    return [o for o in objs if o.get("kind") == kind]


def one(objs, kind, name=None):
    found = [o for o in of_kind(objs, kind) if name is None or o["metadata"]["name"] == name]
    check(len(found) == 1, "want exactly one %s%s, found %d" % (kind, " " + name if name else "", len(found)))
    return found[0]


def selector_matches(selector, labels):
    """A metav1.LabelSelector against a label map. None matches everything,
    as an absent namespaceSelector does."""
    if selector is None:
        return True
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in selector.get("matchExpressions") or []:
        k, op, values = e["key"], e["operator"], e.get("values") or []
        if op == "In" and labels.get(k) not in values:
            return False
        if op == "NotIn" and k in labels and labels[k] in values:
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            fail("label selector operator %r" % op)
    return True


def parse_duration(text):
    """Seconds in a dra-guard duration: N, Ns, Nm or Nh."""
    m = re.fullmatch(r"(\d+)([smh]?)", text)
    check(m is not None, "duration %r" % text)
    return int(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def flag_values(args):
    """--flag=value and --flag value pairs of a container's args."""
    out = {}
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--"):
            if "=" in a:
                k, v = a[2:].split("=", 1)
            elif i + 1 < len(args) and not args[i + 1].startswith("--"):
                k, v = a[2:], args[i + 1]
                i += 1
            else:
                k, v = a[2:], ""
            check(k not in out, "flag --%s given twice" % k)
            out[k] = v
        i += 1
    return out


def b64decode(text):
    # Kubernetes (Go's base64) skips line breaks inside the value; so does this.
    return base64.b64decode("".join(text.split()), validate=True)


# --- running -------------------------------------------------------------------------

from guard import run_tests  # noqa: E402,F401  (one runner for every end-to-end file)
