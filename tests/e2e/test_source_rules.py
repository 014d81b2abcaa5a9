#!/usr/bin/env python3
"""Source rules the compiler cannot check, read off the tree.

- A pthread function returns its error and does not set errno: a failure
  of one is never answered with -errno.
- policy/ reads no clock, writes no log and opens no file: it is the pure
  engine dry-run, replay and the webhook share.
- A rule sees only struct check: check.h and the rule files do not include
  engine.h, and struct check is never filled positionally.
- The engine dispatches on the kind the decoder classified; it does not
  classify again.
- JSON is written through the one writer, policy/lib/jw.c: no string is
  quoted as JSON elsewhere, and no string literal of JSON ({", ," or ":
  without a space) is handed to a buffer, printf or jw_raw() to build a
  document by hand. Constant bodies kept whole in a table stay constants.
  The literals JW_KEY()/JW_LIT() copy unescaped need no escape.
- Kinds of Kubernetes object have one enum, enum object_kind
  (policy/model/model.h): no other enum of policy/, webhook/ or bench/
  names two or more kinds, and nothing casts to it (a kind is never made
  from another enum's number).
- FNV is written once, in policy/lib/hmap.h: every hash of the tree is
  hmap's (the benchmarks keep copies of the tables hmap replaced, to
  compare with).
- Every source lies in a folder of the Makefile's LAYERS, and includes only
  headers of its own folder and of the folders below it (the compiler's -I
  per folder enforces the same; this says which include broke it).
"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guard  # noqa: E402

ROOT = guard.ROOT


def sources(*dirs):
    """(path, text) of every .c and .h under dirs, folders included."""
    n = 0
    for d in dirs:
        for here, subdirs, names in os.walk(os.path.join(ROOT, d)):
            subdirs.sort()
            for name in sorted(names):
                if name.endswith((".c", ".h")):
                    path = os.path.relpath(os.path.join(here, name), ROOT)
                    with open(os.path.join(ROOT, path)) as f:
                        n += 1
                        yield path, f.read()
    guard.check(n, "no source under %s" % ", ".join(dirs))


def layers():
    """{folder: [folders it may include]} as the Makefile compiles them."""
    env = dict((k, v) for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"))
    p = subprocess.run(["make", "-s", "--no-print-directory", "print-layers"], cwd=ROOT, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    guard.check(p.returncode == 0, "make print-layers:\n" + p.stdout + p.stderr)
    out = {}
    for line in p.stdout.splitlines():
        d, _, below = line.partition(":")
        out[d.strip()] = below.split()
    guard.check(out, "make print-layers printed nothing")
    return out


INCLUDE = re.compile(r'^#\s*include\s+"([^"]+)"', re.M)


def layer_violations(files, allowed):
    """What in files ({path: text}) includes a header outside its folder and
    the folders below it, or lies outside every folder."""
    home = {}
    for p in files:
        home.setdefault(os.path.basename(p), []).append(os.path.dirname(p))
    bad = []
    for p, t in files.items():
        d = os.path.dirname(p)
        if d not in allowed:
            bad.append("%s: in no folder of the Makefile's LAYERS" % p)
            continue
        for inc in INCLUDE.findall(t):
            where = home.get(inc)
            if "/" in inc:
                # A path defeats the per-folder -I: the include is named by
                # its file alone, and the folder's layer decides.
                bad.append("%s includes \"%s\" by a path: name the header alone (\"%s\"); its folder "
                           "must be below %s" % (p, inc, os.path.basename(inc), d))
            elif not where:
                bad.append("%s includes %s, which no folder has" % (p, inc))
            elif len(where) > 1:
                bad.append("%s includes %s, which %s all have" % (p, inc, ", ".join(where)))
            elif where[0] != d and where[0] not in allowed[d]:
                bad.append("%s (%s) includes %s from %s, which is not below it" % (p, d, inc, where[0]))
    return bad


PTHREAD_ERRNO = re.compile(r"if \(pthread_\w+\([^;{]*\)[^;{]*\)\s*(\{[^}]*?)?return -errno;")


def test_pthread_failures_are_not_read_from_errno():
    bad = ["%s: %s" % (p, m.group(0).split("\n")[0]) for p, t in sources("webhook", "policy", "tests")
           for m in PTHREAD_ERRNO.finditer(t)]
    guard.check(not bad, "-errno after a pthread call (it returns its error):\n" + "\n".join(bad))
    sample = "\tif (pthread_sigmask(SIG_BLOCK, set, NULL) != 0)\n\t\treturn -errno;\n"
    guard.check(PTHREAD_ERRNO.search(sample), "the check does not see the pattern it is for")


IMPURE = re.compile(r"\b(clock_gettime|time|gettimeofday|fopen|open|printf|fprintf|syslog|getenv)\s*\(")


def test_policy_is_pure():
    bad = []
    for p, t in sources("policy"):
        code = re.sub(r"/\*.*?\*/", "", t, flags=re.S)
        code = re.sub(r'"(\\.|[^"\\])*"', '""', code)
        for m in IMPURE.finditer(code):
            bad.append("%s: %s()" % (p, m.group(1)))
    guard.check(not bad, "policy/ calls I/O or the clock:\n" + "\n".join(bad))


def test_rules_see_only_the_check():
    bad = []
    for p, t in sources("policy"):
        name = os.path.basename(p)
        if (name == "check.h" or name.endswith("_rules.c") or name.endswith("_rules.h")) \
                and re.search(r'#include "engine\.h"', t):
            bad.append("%s includes engine.h" % p)
        for m in re.finditer(r"struct check \w+ = \{\s*[^.\s}]", t):
            bad.append("%s fills struct check by position" % p)
    guard.check(not bad, "\n".join(bad))


def test_engine_does_not_classify_again():
    with open(os.path.join(ROOT, "policy", "rules", "engine.c")) as f:
        guard.check("decode_classify(" not in f.read(), "engine.c classifies the kind the decoder classified")


STRINGS = re.compile(r'"(\\.|[^"\\\n])*"')
EXPOSITION = re.compile(r"# HELP|# TYPE|\bdra_guard_[a-z]")


def exposition_writers(files):
    """Files other than prom.c whose string literals write exposition by hand."""
    bad = []
    for p, t in files:
        if p == os.path.join("webhook", "base", "prom.c"):
            continue
        code = re.sub(r"/\*.*?\*/", "", t, flags=re.S)
        for m in STRINGS.finditer(code):
            if EXPOSITION.search(m.group(0)):
                bad.append("%s: %s" % (p, m.group(0)[:60]))
                break
    return bad


def test_metric_families_come_from_the_table():
    # Every family's name, HELP and TYPE is a row of webhook/base/prom.c:
    # a HELP, TYPE or metric name in a string anywhere else is a family
    # written by hand, which docs/monitoring.md and the table do not see.
    bad = exposition_writers(sources("webhook", "policy"))
    guard.check(not bad, "exposition written by hand, not through prom.h:\n" + "\n".join(bad))
    probe = [("webhook/kube/probe.c", 'buf_add_cstr(out, "# HELP dra_guard_x X.\\n");\n'),
             ("webhook/kube/probe2.c", 'buf_printf(out, "dra_guard_x{a=\\"%s\\"} %d\\n", a, 1);\n'),
             ("webhook/kube/probe3.c", "/* # HELP in a comment */\n")]
    guard.check([b.split(":")[0] for b in exposition_writers(probe)] == ["webhook/kube/probe.c", "webhook/kube/probe2.c"],
                "the check does not see a family written by hand")


# Calls that append text to a buffer or a string, and jw's own calls that
# copy text as JSON without looking at it.
TEXT_WRITERS = re.compile(r"\b(buf_printf|buf_vprintf|buf_add_cstr|buf_add_str|buf_add|arena_printf|arena_strdup|"
                          r"snprintf|vsnprintf|jw_raw|jw_members)\s*\(")
# JSON syntax in a literal: an object opening on a key, a key after a comma,
# a key's colon with its value right after it (messages say `"x": why`).
JSON_SYNTAX = re.compile(r'\{\\"|,\\"|\\":[^ ]')


def call_text(code, open_paren):
    """The text of the call whose '(' is at open_paren, through its ')'."""
    depth, i = 0, open_paren
    while i < len(code):
        c = code[i]
        if c in "\"'":
            m = re.compile(r"%s(\\.|[^%s\\\n])*%s" % (c, c, c)).match(code, i)
            if m:
                i = m.end()
                continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return code[open_paren:i + 1]
        i += 1
    return code[open_paren:]


# JW_KEY() and JW_LIT() copy a literal without escaping it: the literal must
# need no escape (printable ASCII but " \\ < > &), and only they call the
# functions behind them.
JW_LITERAL = re.compile(r'\bJW_(?:KEY|LIT)\s*\([^,]*,\s*"((?:\\.|[^"\\\n])*)"\s*\)')
JW_VERBATIM = re.compile(r"\bjw_(?:key|string)_verbatim\s*\(")


def strip_comments(text):
    """text without its /* */ comments, each kept as its line breaks, so
    that an offset in the result is on the line it was on in text."""
    return re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def json_by_hand(files):
    """Places other than jw.c that quote JSON strings or build JSON text by hand."""
    bad = []
    for p, t in files:
        if p in (os.path.join("policy", "lib", "jw.c"), os.path.join("policy", "lib", "jw.h")):
            continue
        code = strip_comments(t)
        m = re.search(r"\bbuf_add_json_str", code)
        if m:
            bad.append("%s:%d: buf_add_json_str" % (p, line_of(code, m.start())))
        if JW_VERBATIM.search(code):
            bad.append("%s: jw_*_verbatim() called, not through JW_KEY()/JW_LIT()" % p)
        for m in JW_LITERAL.finditer(code):
            if not re.fullmatch(r"[ !#-%'-;=?-\[\]-~]*", m.group(1)):
                bad.append("%s: %s: the literal needs escaping" % (p, m.group(0)))
        for m in TEXT_WRITERS.finditer(code):
            lits = [s.group(0) for s in STRINGS.finditer(call_text(code, m.end() - 1))]
            hit = next((x for x in lits if JSON_SYNTAX.search(x)), None)
            if hit:
                bad.append("%s:%d: %s(%s" % (p, line_of(code, m.start()), m.group(1), hit[:60]))
    return bad


def test_json_is_written_through_jw():
    # jw places the commas, escapes every string and keeps its first error;
    # a body written by hand beside it escapes differently or not at all
    # (a "%s" of a name) and fails halfway with half a document.
    bad = json_by_hand(sources("webhook", "policy"))
    guard.check(not bad, "JSON written by hand, not through jw.h:\n" + "\n".join(bad))
    probe = [("policy/rules/probe.c", 'buf_printf(out, ",\\"code\\":%d}", c);\n'),
             ("policy/rules/probe2.c", "rc = buf_add_json_str(out, s, n);\n"),
             ("webhook/kube/probe3.c", 'arena_printf(a, &p, "[{\\"op\\":\\"remove\\"}]");\n'),
             ("webhook/kube/probe4.c", 'jw_raw(&w, "{\\"a\\":1}", 7);\n'),
             ("webhook/kube/probe5.c", 'snprintf(m, n, "field \\"%s\\": %s", k, why);\n'
                                       "/* buf_add_json_str() in a comment */\n"
                                       'static const char body[] = "{\\"ready\\":true}";\n'
                                       'JW_KEY(&w, "apiVersion"); JW_LIT(w, "admission.k8s.io/v1");\n'),
             ("webhook/kube/probe6.c", 'JW_KEY(w, "a<b");\n'),
             ("webhook/kube/probe7.c", 'JW_LIT(w, "say \\"hi\\"");\n'),
             ("webhook/kube/probe8.c", "jw_key_verbatim(w, name, n);\n")]
    guard.check([b.split(":")[0] for b in json_by_hand(probe)] ==
                ["policy/rules/probe.c", "policy/rules/probe2.c", "webhook/kube/probe3.c", "webhook/kube/probe4.c",
                 "webhook/kube/probe6.c", "webhook/kube/probe7.c", "webhook/kube/probe8.c"],
                "the check does not see JSON written by hand: %s" % json_by_hand(probe))


# An enumerator that names a kind once the enum's common prefix is cut:
# VIEW_SLICES, VK_POD, RES_CONFIGMAP, METRICS_RES_RESOURCECLAIMS.
KIND_WORD = re.compile(r"^(RESOURCE_?)?(SLICE|CLAIM|POD|NODE|CONFIG_?MAP)S?$")
ENUM = re.compile(r"\benum\s+(\w+)\s*\{([^}]*)\}")
KIND_CAST = re.compile(r"\(\s*enum\s+(object_kind|view_index)\s*\)")


def kind_enums(files):
    """Enums other than object_kind whose enumerators name two kinds or more,
    and casts to enum object_kind or view_index."""
    bad = []
    for p, t in files:
        code = re.sub(r"/\*.*?\*/", "", t, flags=re.S)
        code = re.sub(r"//[^\n]*", "", code)
        for m in ENUM.finditer(code):
            if m.group(1) == "object_kind":
                continue
            names = [e.split("=")[0].strip() for e in m.group(2).split(",") if e.strip()]
            if len(names) < 2:
                continue
            parts = [n.split("_") for n in names]
            cut = 0
            while all(len(q) > cut + 1 and q[cut] == parts[0][cut] for q in parts):
                cut += 1
            kinds = {KIND_WORD.match("_".join(q[cut:])).group(2).replace("_", "")
                     for q in parts if KIND_WORD.match("_".join(q[cut:]))}
            if len(kinds) >= 2:
                bad.append("%s: enum %s names %s" % (p, m.group(1), ", ".join(sorted(kinds))))
        for m in KIND_CAST.finditer(code):
            bad.append("%s: a cast to enum %s" % (p, m.group(1)))
    return bad


def test_one_kind_enum():
    # The view, the cluster view's watches, replay and audit, dumps and
    # the metrics' resource label name kinds by enum object_kind; a second
    # enum of them, bridged by casts, is how they drifted apart before.
    bad = kind_enums(sources("policy", "webhook", "bench"))
    guard.check(not bad, "a second enum of object kinds, or a cast to one:\n" + "\n".join(bad))
    probe = [("policy/view/probe.h", "enum view_resource {\n\tVIEW_SLICES = 0,\n\tVIEW_CLAIMS,\n\tVIEW_PODS,\n"
              "\tVIEW_NODES,\n\tVIEW_RESOURCE_COUNT\n};\n"),
             ("policy/view/probe2.c", "enum vkind { VK_SLICE = 0, VK_CLAIM, VK_POOL, VK_COUNT };\n"),
             ("webhook/base/probe3.h", "enum m { METRICS_RES_RESOURCESLICES, METRICS_RES_PODS, METRICS_RES_OTHER };\n"),
             ("webhook/kube/probe4.c", "x->res = view_apply(b, (enum object_kind)k);\n"),
             ("policy/model/probe5.h", "enum rule_id { RULE_SLICE_WRITER_NODE, RULE_POD_NODE_NAME, RULE_COUNT };\n"
              "enum scope { SCOPE_ANY, SCOPE_NODE };\n/* enum old { OLD_PODS, OLD_NODES }; */\n")]
    guard.check([b.split(":")[0] for b in kind_enums(probe)] == ["policy/view/probe.h", "policy/view/probe2.c",
                                                               "webhook/base/probe3.h", "webhook/kube/probe4.c"],
                "the check does not see a second enum of kinds: %s" % kind_enums(probe))


# FNV's primes, 32 and 64 bits, as a hand-written FNV spells them.
FNV_PRIME = re.compile(r"\b(16777619|0x0*1000193|1099511628211|0x0*100000001b3)(u|ul|ull|lu|llu)?\b", re.I)


def fnv_writers(files):
    """Files other than hmap.h that multiply by an FNV prime."""
    keep = os.path.join("policy", "lib", "hmap.h")
    return ["%s:%d: %s" % (p, line_of(code, m.start()), m.group(0)) for p, t in files if p != keep
            for code in [strip_comments(t)] for m in [FNV_PRIME.search(code)] if m]


def test_hashes_are_hmaps():
    # One hash function: a table or a signature hashes with hmap_hash*(),
    # so the function, its mix and its test vectors live in one place.
    bad = fnv_writers(sources("webhook", "policy"))
    guard.check(not bad, "FNV written by hand, not through hmap.h:\n" + "\n".join(bad))
    probe = [("policy/ledger/probe.c", "h = (h ^ c) * 16777619u;\n"),
             ("webhook/base/probe2.c", "h *= 0x100000001b3ULL;\n"),
             ("policy/lib/probe3.c", "/* FNV's prime is 16777619 */\n"),
             ("policy/lib/hmap.h", "h = (h ^ c) * 16777619u;\n")]
    guard.check([b.split(":")[0] for b in fnv_writers(probe)] == ["policy/ledger/probe.c", "webhook/base/probe2.c"],
                "the check does not see an FNV written by hand")


def test_folders_include_only_downwards():
    allowed = layers()
    # The table itself: acyclic, policy/ never above webhook/, every folder
    # of the tree in it.
    for d, below in allowed.items():
        guard.check(d not in below, "%s lists itself" % d)
        for b in below:
            guard.check(b in allowed, "%s lists %s, which is not a folder of the table" % (d, b))
            guard.check(d not in allowed[b], "%s and %s may include each other" % (d, b))
        if d.startswith("policy/"):
            guard.check(all(b.startswith("policy/") for b in below), "%s may include %s" % (d, below))
    for top in ("policy", "webhook"):
        for name in os.listdir(os.path.join(ROOT, top)):
            path = os.path.join(top, name)
            guard.check(os.path.isdir(os.path.join(ROOT, path)), "%s lies outside every folder" % path)
            guard.check(path in allowed, "%s is not in the Makefile's LAYERS" % path)
    files = dict(sources("policy", "webhook"))
    bad = layer_violations(files, allowed)
    guard.check(not bad, "\n".join(bad))
    # The check sees what it is for: an arrow pointing up is reported.
    probe = dict(files)
    probe["policy/lib/probe.c"] = '#include "engine.h"\n'
    guard.check(any("probe.c" in b for b in layer_violations(probe, allowed)),
                "an include of the engine from policy/lib went unnoticed")
    probe = {"policy/lib/probe.c": '#include "../../webhook/base/clock.h"\n', "webhook/base/clock.h": ""}
    guard.check(any("by a path" in b for b in layer_violations(probe, allowed)),
                "an include by a relative path went unnoticed: %s" % layer_violations(probe, allowed))
    print("     %d folders, %d files, every include points down" % (len(allowed), len(files)))


if __name__ == "__main__":
    guard.run_tests([
        test_pthread_failures_are_not_read_from_errno,
        test_policy_is_pure,
        test_rules_see_only_the_check,
        test_engine_does_not_classify_again,
        test_folders_include_only_downwards,
        test_metric_families_come_from_the_table,
        test_json_is_written_through_jw,
        test_hashes_are_hmaps,
        test_one_kind_enum,
    ])
