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
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guard  # noqa: E402

ROOT = guard.ROOT


def sources(*dirs):
    for d in dirs:
        for name in sorted(os.listdir(os.path.join(ROOT, d))):
            if name.endswith((".c", ".h")):
                path = os.path.join(d, name)
                with open(os.path.join(ROOT, path)) as f:
                    yield path, f.read()


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
    with open(os.path.join(ROOT, "policy", "engine.c")) as f:
        guard.check("decode_classify(" not in f.read(), "engine.c classifies the kind the decoder classified")


if __name__ == "__main__":
    guard.run_tests([
        test_pthread_failures_are_not_read_from_errno,
        test_policy_is_pure,
        test_rules_see_only_the_check,
        test_engine_does_not_classify_again,
    ])
