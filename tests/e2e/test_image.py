#!/usr/bin/env python3
"""The Dockerfile, checked without a Docker engine (none runs here).

- Two stages: build on Debian 12, run on Debian 12 slim as a numeric non-root
  USER, the same uid as the Deployment's runAsUser; the runtime stage gets the
  binary from the build stage and nothing -dev.
- The runtime stage's apt packages are exactly the packages of the libraries
  the built binary links directly (its DT_NEEDED entries, resolved by ldd and
  mapped with dpkg -S), less the C runtime every Debian image has. Everything
  else ldd loads must come in through those packages' Depends, so apt installs
  it: that is checked too, against the dpkg database.
- The build stage installs what `make deps` (tools/deps.sh build) would, and
  python3 for the release build's training; it makes the release build.

These read the Dockerfile; `make image` builds the image and runs it
(tests/image/test_image_build.py).
"""

import json
import os
import re
import shlex
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import manifests_lib as ml  # noqa: E402
from manifests_lib import check, fail  # noqa: E402

DOCKERFILE = os.path.join(ml.ROOT, "Dockerfile")
DOCKERIGNORE = os.path.join(ml.ROOT, ".dockerignore")

# In every Debian image, slim included: the C library and the GCC runtime.
BASE_LEVEL = {"libc6", "libgcc-s1"}
BUILD_IMAGES = re.compile(r"^debian:(12|bookworm)(@sha256:[0-9a-f]{64})?$")
RUNTIME_IMAGES = re.compile(r"^debian:(12|bookworm)-slim(@sha256:[0-9a-f]{64})?$")


# --- reading the Dockerfile -----------------------------------------------------------


def instructions(text):
    """(INSTRUCTION, argument text) in order; continuation lines joined,
    comments and blank lines dropped."""
    out, cur = [], ""
    for line in text.split("\n"):
        s = line.strip()
        if not cur and (not s or s.startswith("#")):
            continue
        if cur and s.startswith("#"):
            continue
        if s.endswith("\\"):
            cur += s[:-1] + " "
            continue
        cur += s
        word, _, rest = cur.partition(" ")
        out.append((word.upper(), rest.strip()))
        cur = ""
    check(not cur, "Dockerfile ends inside a continued line")
    return out


def expand(text, args):
    """${NAME} and $NAME replaced by the ARG defaults declared before the
    first FROM; an unknown or default-less one is an error."""
    def one(m):
        name = m.group(1) or m.group(2)
        check(args.get(name) is not None, "FROM uses $%s, which has no default before the first FROM" % name)
        return args[name]
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", one, text)


def stages():
    """[{"from": image, "name": alias or None, "ins": [(INSTR, args)]}]; FROM
    images with the defaults of the ARGs before the first FROM (what a plain
    `docker build` uses)."""
    out, args = [], {}
    for word, rest in instructions(open(DOCKERFILE).read()):
        if word == "ARG" and not out:
            name, eq, value = rest.partition("=")
            args[name.strip()] = value.strip() if eq else None
        elif word == "FROM":
            parts = [p for p in expand(rest, args).split() if not p.startswith("--")]
            name = parts[2] if len(parts) == 3 and parts[1].upper() == "AS" else None
            out.append({"from": parts[0], "name": name, "ins": []})
        else:
            check(out or word == "ARG", "%s before the first FROM" % word)
            if out:
                out[-1]["ins"].append((word, rest))
    return out


def apt_installs(stage):
    """Packages named in `apt-get install` commands of a stage's RUN lines."""
    pkgs = []
    for word, rest in stage["ins"]:
        if word != "RUN":
            continue
        for cmd in re.split(r"&&|;|\|\|", rest):
            toks = shlex.split(cmd)
            if len(toks) >= 2 and toks[0] in ("apt-get", "apt") and "install" in toks:
                args = toks[toks.index("install") + 1:]
                pkgs += [t for t in args if not t.startswith("-")]
    return pkgs


def exec_form(rest):
    try:
        v = json.loads(rest)
    except ValueError:
        fail("not in exec form: %s" % rest)
    check(isinstance(v, list) and all(isinstance(x, str) for x in v), "not a string list: %s" % rest)
    return v


# --- what the binary links --------------------------------------------------------------


def ldd_libraries(path):
    """{soname: resolved path} for every library ldd loads."""
    _, out, _ = ml.run(["ldd", path])
    libs = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\S+)\s+=>\s+(\S+)\s+\(", line)
        if m:
            check(m.group(2) != "not", "ldd: %s not found" % m.group(1))
            libs[m.group(1)] = m.group(2)
    return libs


def needed(path):
    """DT_NEEDED sonames of an ELF file (readelf -d)."""
    _, out, _ = ml.run(["readelf", "-d", path])
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def packages_of(paths):
    """{path: the Debian package that ships it}, in one dpkg -S call. dpkg
    records some libraries under /lib and others under /usr/lib (merged
    /usr), soname links as well as their targets: each spelling is asked."""
    cands = {}
    for path in paths:
        for p in (path, os.path.realpath(path)):
            for q in (p, p[len("/usr"):] if p.startswith("/usr/") else "/usr" + p):
                cands.setdefault(q, path)
    _, out, _ = ml.run(["dpkg", "-S"] + sorted(cands), ok=None)
    found = {}
    for line in out.splitlines():
        pkgs, _, file = line.partition(": ")
        if file in cands:
            names = {e.strip().split(":")[0] for e in pkgs.split(",")}
            check(len(names) == 1, "%s belongs to several packages: %s" % (file, names))
            prev = found.setdefault(cands[file], names.pop())
            check(prev == found[cands[file]], "%s maps to two packages" % cands[file])
    for path in paths:
        check(path in found, "no Debian package ships %s" % path)
    return found


def installed_packages(admindir=None):
    """{package: [dependency alternatives]} of every installed package (of
    this machine, or of the dpkg database at admindir), from one dpkg-query;
    each alternative is a list of package names."""
    where = ["--admindir", admindir] if admindir else []
    _, out, _ = ml.run(["dpkg-query"] + where + ["-W", "-f=${Package}\t${Status}\t${Depends}, ${Pre-Depends}\n"])
    db = {}
    for line in out.splitlines():
        name, status, deps = line.split("\t")
        if "install ok installed" not in status:
            continue
        alts = []
        for alt in deps.split(","):
            names = [c.strip().split(" ")[0].split(":")[0] for c in alt.split("|")]
            names = [n for n in names if n]
            if names:
                alts.append(names)
        db[name] = alts
    return db


def closure(db, pkgs):
    """Every installed package of db reachable from pkgs through Depends and
    Pre-Depends (of alternatives, the installed one)."""
    seen, todo = set(), list(pkgs)
    while todo:
        p = todo.pop()
        if p in seen or p not in db:
            continue
        seen.add(p)
        for alt in db[p]:
            pick = [n for n in alt if n in db]
            if pick:
                todo.append(pick[0])
    return seen


# --- tests ---------------------------------------------------------------------------------


def test_dockerfile_has_a_debian_12_build_stage_and_a_slim_runtime():
    st = stages()
    check(len(st) >= 2, "want a multi-stage Dockerfile, found %d stage(s)" % len(st))
    build, runtime = st[0], st[-1]
    check(BUILD_IMAGES.match(build["from"]), "build stage FROM %s, want debian:12 / bookworm" % build["from"])
    check(build["name"], "the build stage has no name to copy from")
    check(RUNTIME_IMAGES.match(runtime["from"]), "runtime stage FROM %s, want debian:12-slim" % runtime["from"])
    copies = [rest for word, rest in runtime["ins"] if word == "COPY"]
    check(any(("--from=%s" % build["name"]) in c for c in copies), "the runtime stage copies nothing from the build")
    check(not any(w == "COPY" and "--from" not in r for w, r in runtime["ins"]),
          "the runtime stage copies from the build context")


def test_runtime_runs_as_a_numeric_non_root_user_matching_the_deployment():
    runtime = stages()[-1]
    users = [rest for word, rest in runtime["ins"] if word == "USER"]
    check(users, "the runtime stage sets no USER (it would run as root)")
    m = re.fullmatch(r"(\d+)(?::(\d+))?", users[-1])
    check(m is not None, "USER %r is not numeric (runAsNonRoot cannot check a name)" % users[-1])
    uid = int(m.group(1))
    check(uid != 0 and (m.group(2) is None or int(m.group(2)) != 0), "USER %s is root" % users[-1])
    objs = ml.load_file(os.path.join(ml.MANIFESTS, "base", "deployment.yaml"))
    pod = ml.one(objs, "Deployment")["spec"]["template"]["spec"]
    c = pod["containers"][0]
    run_as = (c.get("securityContext") or {}).get("runAsUser", (pod.get("securityContext") or {}).get("runAsUser"))
    check(run_as == uid, "the Deployment runs as %s, the image as %d" % (run_as, uid))


def test_entrypoint_is_the_binary_and_the_deployment_passes_a_subcommand():
    build, runtime = stages()[0], stages()[-1]
    ep = [exec_form(r) for w, r in runtime["ins"] if w == "ENTRYPOINT"]
    check(ep, "no ENTRYPOINT")
    dest = [r.split()[-1] for w, r in runtime["ins"] if w == "COPY" and "--from=%s" % build["name"] in r]
    check(ep[-1][0] in dest, "ENTRYPOINT %s is not the copied binary %s" % (ep[-1], dest))
    objs = ml.load_file(os.path.join(ml.MANIFESTS, "base", "deployment.yaml"))
    c = ml.one(objs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    check("command" not in c and (c.get("args") or [])[:1] == ["serve"],
          "the Deployment should keep the ENTRYPOINT and pass serve as its first argument")


def test_runtime_packages_are_exactly_what_the_binary_links():
    binary = ml.binary()
    libs = ldd_libraries(binary)
    direct = needed(binary)
    check(direct, "readelf found no NEEDED entries in %s" % binary)
    for soname in direct:
        check(soname in libs, "ldd did not resolve %s" % soname)
    owner = packages_of(list(libs.values()))
    want = {owner[libs[soname]] for soname in direct} - BASE_LEVEL
    runtime = stages()[-1]
    got = apt_installs(runtime)
    check(len(got) == len(set(got)), "a runtime package is listed twice: %s" % got)
    check(set(got) == want, "runtime stage installs %s; the binary links %s (missing %s, extra %s)"
          % (sorted(got), sorted(want), sorted(want - set(got)), sorted(set(got) - want)))
    bad = [p for p in got if p.endswith("-dev") or p in ("gcc", "make", "build-essential", "pkg-config")]
    check(not bad, "build tools in the runtime stage: %s" % bad)
    # What ldd loads beyond the direct libraries must arrive through apt.
    reach = closure(installed_packages(), set(got) | BASE_LEVEL)
    for soname, path in sorted(libs.items()):
        p = owner[path]
        check(p in reach, "%s (%s, needed by a dependency) is not pulled in by %s" % (soname, p, sorted(got)))
    print("     runtime packages: %s" % " ".join(sorted(got)))


def test_build_stage_installs_what_make_deps_installs():
    text = open(os.path.join(ml.ROOT, "tools", "deps.sh")).read()
    m = re.search(r'^\s*build\)\s*pkgs="\$pkgs ([^"]+)"', text, re.M)
    check(m is not None, "tools/deps.sh has no build group")
    need = set(m.group(1).split())
    got = set(apt_installs(stages()[0]))
    check(need <= got, "the build stage lacks %s (make would try apt-get inside the build)" % sorted(need - got))
    uses_no_recommends = all("--no-install-recommends" in r for w, r in stages()[0]["ins"]
                             if w == "RUN" and "apt-get install" in r)
    if uses_no_recommends:
        # gcc only recommends libc6-dev: without recommends it must be named.
        check("libc6-dev" in got, "gcc without libc6-dev cannot compile")


def test_build_stage_makes_the_release_build_with_what_it_runs():
    """The image ships the profile-guided release build, whose training runs
    tools/pgo_corpus.py: the build stage needs python3 for it."""
    build = stages()[0]
    makes = [shlex.split(cmd) for w, r in build["ins"] if w == "RUN"
             for cmd in re.split(r"&&|;|\|\|", r) if cmd.split()[:1] == ["make"]]
    check(makes, "the build stage runs no make")
    check(any("release" in m[1:] for m in makes), "the build stage makes %s, not the release build" % makes)
    first = open(os.path.join(ml.ROOT, "tools", "pgo_corpus.py")).readline()
    check("python3" in first, "tools/pgo_corpus.py is not a python3 script any more: %s" % first.strip())
    check("python3" in apt_installs(build), "the build stage has no python3 for tools/pgo_corpus.py")


def test_dockerignore_keeps_history_build_output_and_keys_out():
    check(os.path.isfile(DOCKERIGNORE), "no .dockerignore")
    lines = {l.strip() for l in open(DOCKERIGNORE) if l.strip() and not l.startswith("#")}
    for want in (".git", "build", "build-*", "**/*.key"):
        check(want in lines, ".dockerignore does not exclude %s" % want)
    # The build still has what make needs.
    for keep in ("Makefile", "policy", "webhook", "tools"):
        check(keep not in lines, ".dockerignore excludes %s, which the build needs" % keep)


def main():
    ml.run_tests([
        test_dockerfile_has_a_debian_12_build_stage_and_a_slim_runtime,
        test_runtime_runs_as_a_numeric_non_root_user_matching_the_deployment,
        test_entrypoint_is_the_binary_and_the_deployment_passes_a_subcommand,
        test_runtime_packages_are_exactly_what_the_binary_links,
        test_build_stage_installs_what_make_deps_installs,
        test_build_stage_makes_the_release_build_with_what_it_runs,
        test_dockerignore_keeps_history_build_output_and_keys_out,
    ])


if __name__ == "__main__":
    main()
