#!/usr/bin/env python3
"""The build a maintainer lives in: checked on a copy of the tree.

- a plain `make` after touching one file rebuilds that file and relinks, and
  nothing when nothing changed; output is one line per target, V=1 shows the
  commands;
- the version comes from one generated file: a new VERSION recompiles only
  that file and `dra-guard version` says it;
- each folder is compiled with -I for itself and the folders below it: a
  policy/ file that includes a webhook/ header, or a policy/lib file that
  includes the engine's, does not compile;
- `make release` builds with the profile of a training run made in the tree
  it runs in (a copied tree writes no profile into the original's
  directory); a missing profile or a profile that no longer matches the
  source fails the build instead of quietly building without one.

The copy lives in a temporary directory beside nothing: it also shows the
build needs no ../shared.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guard  # noqa: E402

ROOT = guard.ROOT
STATE = {}


def tree():
    """A copy of the tracked files (and the working copy's edits) in a temp dir."""
    if "dir" in STATE:
        return STATE["dir"]
    base = tempfile.mkdtemp(prefix="dra-guard-build-")
    dst = os.path.join(base, "src")
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=ROOT, check=True, stdout=subprocess.PIPE).stdout.split(b"\0")
    for f in files:
        if not f:
            continue
        rel = f.decode()
        src = os.path.join(ROOT, rel)
        if not os.path.isfile(src):
            continue
        os.makedirs(os.path.dirname(os.path.join(dst, rel)), exist_ok=True)
        shutil.copy2(src, os.path.join(dst, rel))
    # The rel objects `make test` has built already, times kept: the copy
    # starts as a maintainer's tree does, built, and the tests below see
    # what one touched file costs without compiling the tree once more.
    # Objects older than their sources are rebuilt as usual.
    rel = os.path.join(ROOT, "build", "rel")
    if os.path.isdir(rel):
        shutil.copytree(rel, os.path.join(dst, "build", "rel"), symlinks=True,
                        ignore=shutil.ignore_patterns("tests", "bench"))
    STATE["dir"] = dst
    STATE["base"] = base
    return dst


def make(*args, ok=True, env=None):
    e = dict(os.environ)
    for k in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "V", "VERSION"):
        e.pop(k, None)
    e.update(env or {})
    p = subprocess.run(["make", "--no-print-directory"] + list(args), cwd=tree(), env=e,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if ok and p.returncode != 0:
        guard.fail("make %s failed:\n%s" % (" ".join(args), p.stdout[-3000:]))
    return p


def compiled(out):
    return re.findall(r"^  CC\s+(\S+)$", out, re.M)


def test_touching_one_file_rebuilds_only_it():
    make("VERSION=t1")
    out = make("VERSION=t1").stdout
    guard.check(compiled(out) == [] and "LINK" not in out, "a second make did work:\n" + out)
    os.utime(os.path.join(tree(), "policy", "lib", "str.c"))
    out = make("VERSION=t1").stdout
    guard.check(compiled(out) == ["build/rel/policy/lib/str.o"], "touching policy/lib/str.c compiled %s" % compiled(out))
    guard.check("  LINK     build/rel/dra-guard" in out, "no relink after the change:\n" + out)


def test_output_is_quiet_and_v1_shows_commands():
    os.utime(os.path.join(tree(), "policy", "lib", "str.c"))
    out = make("VERSION=t1").stdout
    guard.check(not re.search(r"^cc ", out, re.M), "the default output shows commands:\n" + out)
    os.utime(os.path.join(tree(), "policy", "lib", "str.c"))
    out = make("VERSION=t1", "V=1").stdout
    # The command, then what a failure of it prints (the folder's layer).
    guard.check(re.search(r"^cc .* -c -o build/rel/policy/lib/str.o policy/lib/str.c"
                          r"( \|\| \{ echo \"note: policy/lib may include .*)?$", out, re.M),
                "V=1 does not show the compile command:\n" + out)


def test_version_is_one_generated_file():
    out = make("VERSION=t2").stdout
    guard.check(compiled(out) == ["build/rel/gen/version.o"], "a new version compiled %s" % compiled(out))
    v = subprocess.run([os.path.join(tree(), "dra-guard"), "version"], stdout=subprocess.PIPE, text=True).stdout
    guard.check(v.strip() == "dra-guard t2", "version says %r after VERSION=t2" % v)


def test_an_include_pointing_up_does_not_compile():
    for folder, header, what in (("rules", "log.h", "a policy/ file including a webhook/ header"),
                                 ("lib", "engine.h", "a policy/lib file including the engine's header"),
                                 ("view", "policy.h", "a policy/view file including policy/config's header")):
        path = os.path.join(tree(), "policy", folder, "zz_arrow.c")
        with open(path, "w") as f:
            f.write('#include "%s"\nint zz_arrow(void);\nint zz_arrow(void) { return 0; }\n' % header)
        try:
            p = make("VERSION=t2", "build/rel/policy/%s/zz_arrow.o" % folder, ok=False)
            guard.check(p.returncode != 0 and header in p.stdout, "%s compiled:\n%s" % (what, p.stdout))
            # The failure names the rule, not only the missing file.
            guard.check("note: policy/%s may include headers of its own folder" % folder in p.stdout,
                        "%s: the failure does not say what the folder may include:\n%s" % (what, p.stdout))
        finally:
            os.unlink(path)
    # The same include where the layer allows it compiles.
    path = os.path.join(tree(), "policy", "offline", "zz_arrow.c")
    with open(path, "w") as f:
        f.write('#include "engine.h"\nint zz_arrow(void);\nint zz_arrow(void) { return 0; }\n')
    try:
        make("VERSION=t2", "build/rel/policy/offline/zz_arrow.o")
    finally:
        os.unlink(path)


def test_field_table_over_the_seen_mask_does_not_compile():
    # A decoder's field table marks members seen in a 32-bit mask; a 33rd
    # entry would alias bit 0 and let a key given twice through.
    for n, want_ok in ((32, True), (33, False)):
        path = os.path.join(tree(), "policy", "model", "zz_fields.c")
        with open(path, "w") as f:
            f.write('#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n'
                    '#include "decode_impl.h"\nstatic const struct field t[%d];\n'
                    'int zz_fields(void);\nint zz_fields(void) { return COUNT(t); }\n' % n)
        try:
            p = make("VERSION=t2", "build/rel/policy/model/zz_fields.o", ok=want_ok)
            if not want_ok:
                guard.check(p.returncode != 0 and "seen mask" in p.stdout,
                            "a 33-entry field table compiled:\n" + p.stdout)
        finally:
            os.unlink(path)


def gcda(directory):
    return [f for f in os.listdir(directory) if f.endswith(".gcda")] if os.path.isdir(directory) else []


def test_release_trains_in_its_own_tree_and_fails_without_a_profile():
    before = set(gcda(os.path.join(ROOT, "build", "pgo-data")))
    make("VERSION=t3", "release")
    data = os.path.join(tree(), "build", "pgo-data")
    mine = gcda(data)
    guard.check(mine, "no profile in the copy's build/pgo-data")
    mangled = tree().replace("/", "#")
    guard.check(all(f.startswith(mangled) for f in mine), "profiles named after another tree: %s" % mine[:3])
    guard.check(set(gcda(os.path.join(ROOT, "build", "pgo-data"))) == before,
                "the copy's training wrote into the original tree")
    guard.check(os.access(os.path.join(tree(), "build", "release", "dra-guard"), os.X_OK), "no release binary")
    # A profile gone while the training stamp stays: the object must not build.
    victim = [f for f in mine if f.endswith("#policy#lib#str.c.gcda")]
    guard.check(victim, "no profile for policy/lib/str.c")
    os.unlink(os.path.join(data, victim[0]))
    p = make("VERSION=t3", "-o", os.path.join(tree(), "build", "pgo-data", ".trained"), "-W", "policy/lib/str.c", "build/release/policy/lib/str.o",
             ok=False)
    guard.check(p.returncode != 0 and "missing-profile" in p.stdout,
                "a release object built without its profile:\n" + p.stdout[-2000:])
    # A profile that no longer matches the source (train again first: the
    # stamp is gone, so the profiles are all written anew).
    os.unlink(os.path.join(data, ".trained"))
    make("VERSION=t3", "release")
    src = os.path.join(tree(), "policy", "lib", "str.c")
    text = open(src).read()
    with open(src, "w") as f:
        f.write(text.replace("\tif (a.len == b.len)\n\t\treturn 0;",
                             "\tif (a.len == b.len)\n\t\treturn 0;\n\tif (a.len > 4096)\n\t\treturn 2;"))
    p = make("VERSION=t3", "-o", os.path.join(tree(), "build", "pgo-data", ".trained"), "build/release/policy/lib/str.o", ok=False)
    with open(src, "w") as f:
        f.write(text)
    guard.check(p.returncode != 0 and "coverage-mismatch" in p.stdout,
                "a release object built with a stale profile:\n" + p.stdout[-2000:])


def cleanup():
    if "base" in STATE:
        shutil.rmtree(STATE["base"], ignore_errors=True)


if __name__ == "__main__":
    try:
        guard.run_tests([
            test_touching_one_file_rebuilds_only_it,
            test_output_is_quiet_and_v1_shows_commands,
            test_version_is_one_generated_file,
            test_an_include_pointing_up_does_not_compile,
            test_field_table_over_the_seen_mask_does_not_compile,
            test_release_trains_in_its_own_tree_and_fails_without_a_profile,
        ])
    finally:
        cleanup()
