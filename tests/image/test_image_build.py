#!/usr/bin/env python3
"""The container image, built from the Dockerfile and run (`make image`).

There is no Docker daemon and no registry here. Debian's podman builds the
Dockerfile and buildah runs what it built, as root, with the chroot isolation
(`podman run` needs crun, which cannot set rlimits in this VM) and the vfs
storage driver, in a storage of their own under build/image/ (IMAGE_DIR).

The base images. The Dockerfile builds FROM debian:12 and runs on
debian:12-slim, both from a registry this machine cannot reach. The test
makes a Debian 12 root filesystem instead, with mmdebstrap from the Debian
mirror (variant minbase: the Essential packages and apt; suites bookworm,
bookworm-updates and bookworm-security, the sources debian:12 has), imports
it as localhost/dra-guard-test/debian-bookworm-minbase:<date it was made>,
and passes that to both stages through the Dockerfile's BUILD_IMAGE and
RUNTIME_IMAGE arguments. It is tagged for what it is: it is not the
registry's debian:12 (which is built the same way, minbase plus a few
settings) nor debian:12-slim (which also drops documentation and locales),
so the release image's byte sizes differ, but the Debian release, the
package set the Dockerfile adds and everything checked below are the same.
The root filesystem is kept in IMAGE_DIR and remade when it is older than
IMAGE_BASE_DAYS (7) days, so a warm run does not download it again.

Checks, in order (a failed step fails the ones that need it):
- the base is Debian 12;
- both stages build, with VERSION from `git describe`; the build stage's
  image is tagged from the build's own log;
- the build stage made the release build (profile-guided: the training ran)
  and the runtime stage holds that very binary;
- the image's configuration: the binary as ENTRYPOINT, `serve` as CMD, user
  65532:65532, ports 8443 and 9090;
- `dra-guard version` in the runtime stage prints the version built;
- it runs as the numeric non-root user: `id` in the image, and the uid and
  gid of the serving process;
- `serve`, with the image's default certificate paths (a mounted
  development pair) and built-in policy, answers reviews over TLS: a denial
  naming its rule, an allowed slice with its patch, /readyz on the metrics
  port; SIGTERM stops it with status 0;
- the image holds nothing but what the Dockerfile says: the packages it adds
  to the base are the runtime stage's apt list and what those depend on,
  nothing removed; the apt list is exactly the packages of the libraries the
  binary links (its NEEDED entries, resolved by ldd inside the image, mapped
  with dpkg there), less the C runtime; and every file added or changed
  against the base is the binary, a file of an added package, or package
  manager state (and the empty mount points /etc/hosts, /etc/hostname,
  /etc/resolv.conf the engine may leave).

Standard library only; the tools are podman, buildah, mmdebstrap, readelf
and dpkg-query (tools/deps.sh image installs them).
"""

import datetime
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import ssl
import stat
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import guard  # noqa: E402
import test_image as dockerfile  # noqa: E402  (the Dockerfile reader)
from guard import check, fail  # noqa: E402

ROOT = guard.ROOT
IMAGE_DIR = os.path.abspath(os.environ.get("IMAGE_DIR") or os.path.join(ROOT, "build", "image"))
BASE_DAYS = float(os.environ.get("IMAGE_BASE_DAYS") or 7)
JOBS = os.environ.get("IMAGE_JOBS") or "2"
MIRROR_SOURCES = [
    "deb http://deb.debian.org/debian bookworm main",
    "deb http://deb.debian.org/debian bookworm-updates main",
    "deb http://deb.debian.org/debian-security bookworm-security main",
]
BASE_REPO = "localhost/dra-guard-test/debian-bookworm-minbase"
IMAGE_REPO = "localhost/dra-guard-test/dra-guard"
BINARY = "/usr/local/bin/dra-guard"
UID = 65532
# In every Debian image, slim included: the C library and the GCC runtime.
BASE_LEVEL = {"libc6", "libgcc-s1"}
# Where the container engine mounts its own files when a command runs; an
# empty file may be left behind as the mount point.
MOUNT_POINTS = {"/etc/hosts", "/etc/hostname", "/etc/resolv.conf"}
# What installing packages writes besides the packages' own files.
PACKAGE_STATE = re.compile(r"^/(var/lib/dpkg|var/lib/apt|var/cache/apt|var/cache/debconf|var/cache/ldconfig|"
                           r"var/log)(/|$)|^/etc/ld\.so\.cache$")
# Bounds for one step: exceeding one is a failure, never a measurement.
BUILD_TIMEOUT = 3600
STEP_TIMEOUT = 600
SERVE_TIMEOUT = 60

state = {}
timings = []


def storage_opts():
    return ["--root", os.path.join(IMAGE_DIR, "storage"), "--runroot", os.path.join(IMAGE_DIR, "run"),
            "--storage-driver", "vfs"]


def sh(cmd, timeout=STEP_TIMEOUT, ok=(0,), log=None, stdin=None):
    """Run cmd; (code, stdout, stderr) as text. With log, output goes to that
    file instead (stdout and stderr are then empty)."""
    if log:
        with open(log, "ab") as f:
            f.write(("$ %s\n" % " ".join(cmd)).encode())
            f.flush()
            p = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=timeout, input=stdin)
        out = err = ""
    else:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=stdin)
        out, err = p.stdout, p.stderr
    if ok is not None and p.returncode not in ok:
        tail = ""
        if log:
            with open(log, "rb") as f:
                tail = f.read()[-3000:].decode("utf-8", "replace")
        fail("%s exited %d\n%s%s%s" % (" ".join(cmd), p.returncode, out[-2000:], err[-2000:], tail))
    return p.returncode, out, err


def podman(*args, **kw):
    return sh(["podman"] + storage_opts() + list(args), **kw)


def buildah(*args, **kw):
    return sh(["buildah"] + storage_opts() + list(args), **kw)


def timed(what, fn):
    t0 = time.time()
    r = fn()
    timings.append((what, time.time() - t0))
    return r


def need(key):
    if key not in state:
        fail("an earlier step failed (no %s)" % key)
    return state[key]


# --- working containers: a stage's files and a place to run its programs -------------


def container(image):
    """A buildah working container of image, mounted; (name, root path)."""
    _, out, _ = buildah("from", "--pull=never", image)
    name = out.strip().splitlines()[-1]
    state.setdefault("containers", []).append(name)
    _, out, _ = buildah("mount", name)
    return name, out.strip()


def run_in(name, *cmd, ok=(0,), volumes=(), timeout=STEP_TIMEOUT):
    args = ["run", "--isolation", "chroot"]
    for v in volumes:
        args += ["-v", v]
    return buildah(*(args + [name, "--"] + list(cmd)), ok=ok, timeout=timeout)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# --- dpkg, read from an image's own database -----------------------------------------------


def owners(root, paths):
    """{path: package} for paths inside the image at root, from its dpkg
    database; /lib and /usr/lib spellings (merged /usr) and symlink targets
    are all asked."""
    cands = {}
    for path in paths:
        real = os.path.realpath(os.path.join(root, path.lstrip("/")))
        real = "/" + os.path.relpath(real, root)
        for p in (path, real):
            for q in (p, p[len("/usr"):] if p.startswith("/usr/") else "/usr" + p):
                cands.setdefault(q, path)
    _, out, _ = sh(["dpkg-query", "--admindir", os.path.join(root, "var/lib/dpkg"), "-S"] + sorted(cands),
                   ok=None)
    found = {}
    for line in out.splitlines():
        pkgs, _, file = line.partition(": ")
        if file in cands:
            names = {e.strip().split(":")[0] for e in pkgs.split(",")}
            check(len(names) == 1, "%s belongs to several packages: %s" % (file, names))
            found.setdefault(cands[file], names.pop())
    for path in paths:
        check(path in found, "no package in the image ships %s" % path)
    return found


def package_files(root, pkgs):
    """Every path the packages ship (dpkg -L), in the image at root."""
    if not pkgs:
        return set()
    _, out, _ = sh(["dpkg-query", "--admindir", os.path.join(root, "var/lib/dpkg"), "-L"] + sorted(pkgs))
    return {line.strip() for line in out.splitlines() if line.startswith("/")}


def tree(root):
    """{path: (kind, mode, uid, gid, size, link target)} of every entry."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            rel = "/" + os.path.relpath(full, root)
            link = os.readlink(full) if stat.S_ISLNK(st.st_mode) else None
            out[rel] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, st.st_size, link)
    return out


def changed(base_root, image_root):
    """(added, changed, removed) paths of the image against the base."""
    a, b = tree(base_root), tree(image_root)
    added = sorted(set(b) - set(a))
    removed = sorted(set(a) - set(b))
    diff = []
    for p in sorted(set(a) & set(b)):
        if a[p] != b[p]:
            diff.append(p)
        elif a[p][0] == stat.S_IFREG and sha256(os.path.join(base_root, p[1:])) != \
                sha256(os.path.join(image_root, p[1:])):
            diff.append(p)
    return added, diff, removed


# --- steps -------------------------------------------------------------------------------------


def test_base_is_a_debian_12_root_filesystem_from_the_mirror():
    os.makedirs(IMAGE_DIR, exist_ok=True)
    tar = os.path.join(IMAGE_DIR, "debian-bookworm-minbase.tar")
    fresh = os.path.exists(tar) and time.time() - os.path.getmtime(tar) < BASE_DAYS * 86400
    if not fresh:
        log = os.path.join(IMAGE_DIR, "mmdebstrap.log")
        part = tar + ".part"
        timed("base: mmdebstrap", lambda: sh(["mmdebstrap", "--variant=minbase", "--mode=root", "--format=tar",
                                              "bookworm", part] + MIRROR_SOURCES, log=log, timeout=STEP_TIMEOUT))
        os.replace(part, tar)
    made = datetime.datetime.fromtimestamp(os.path.getmtime(tar), datetime.timezone.utc)
    tag = "%s:%s" % (BASE_REPO, made.strftime("%Y%m%d-%H%M%S"))
    if podman("image", "exists", tag, ok=(0, 1))[0] != 0:
        timed("base: podman import", lambda: podman(
            "import", "--change", "CMD [\"/bin/bash\"]", "--message",
            "Debian 12 minbase by mmdebstrap from the Debian mirror (not the registry's debian:12)", tar, tag))
    name, root = container(tag)
    release = open(os.path.join(root, "etc/os-release")).read()
    check('VERSION_ID="12"' in release and "bookworm" in release, "the base is not Debian 12:\n%s" % release)
    sources = open(os.path.join(root, "etc/apt/sources.list")).read()
    for s in MIRROR_SOURCES:
        check(s in sources, "the base's apt sources lack %r:\n%s" % (s, sources))
    state["base"] = tag
    state["base_root"] = root
    print("     base %s (%s)" % (tag, "reused" if fresh else "made now"))


def test_both_stages_build():
    base = need("base")
    _, version, _ = sh(["git", "-C", ROOT, "describe", "--always", "--dirty"], ok=None)
    version = version.strip() or "dev"
    log = os.path.join(IMAGE_DIR, "build.log")
    open(log, "w").close()
    timed("podman build", lambda: podman(
        "build", "--isolation", "chroot", "--pull=never", "--layers",
        "--build-arg", "BUILD_IMAGE=" + base, "--build-arg", "RUNTIME_IMAGE=" + base,
        "--build-arg", "VERSION=" + version, "--build-arg", "JOBS=" + JOBS,
        "-f", os.path.join(ROOT, "Dockerfile"), "-t", IMAGE_REPO + ":runtime", ROOT, log=log, timeout=BUILD_TIMEOUT))
    # The build stage's image is the last step's before the runtime stage
    # starts (podman prints each step's image as "--> ID"); tagged, so its
    # files can be read. Building it again with --target would cost as much
    # as the whole build with the vfs driver, cache or not.
    text = open(log, encoding="utf-8", errors="replace").read()
    build_part = re.split(r"^\[2/2\] STEP 1/", text, flags=re.M)[0]
    ids = re.findall(r"^--> ([0-9a-f]{11,64})$", build_part, re.M)
    check(ids and re.search(r"^\[1/2\] STEP \d+/\d+: RUN make ", build_part, re.M),
          "no build stage in the build log %s" % log)
    podman("tag", ids[-1], IMAGE_REPO + ":build")
    state["version"] = version
    state["built"] = True
    print("     %s:build and :runtime, VERSION=%s (log: %s)" % (IMAGE_REPO, version, os.path.relpath(log, ROOT)))


def test_build_stage_made_the_release_build_and_the_runtime_holds_it():
    need("built")
    _, build_root = container(IMAGE_REPO + ":build")
    _, run_root = container(IMAGE_REPO + ":runtime")
    state["run_root"] = run_root
    release = os.path.join(build_root, "src/build/release/dra-guard")
    check(os.path.isfile(release), "the build stage has no build/release/dra-guard")
    check(os.path.isfile(os.path.join(build_root, "src/build/pgo-data/.trained")),
          "the build stage did not run the profile training")
    shipped = os.path.join(run_root, BINARY[1:])
    check(os.path.isfile(shipped), "the runtime stage has no %s" % BINARY)
    check(sha256(release) == sha256(shipped), "the runtime's %s is not the build stage's release build" % BINARY)
    st = os.stat(shipped)
    check(st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o755,
          "%s is owned by %d, mode %o (want root, 0755: the user cannot replace it)"
          % (BINARY, st.st_uid, stat.S_IMODE(st.st_mode)))


def test_image_configuration():
    need("built")
    _, out, _ = podman("image", "inspect", IMAGE_REPO + ":runtime")
    cfg = json.loads(out)[0]["Config"]
    check(cfg.get("Entrypoint") == [BINARY], "Entrypoint %r" % cfg.get("Entrypoint"))
    check(cfg.get("Cmd") == ["serve"], "Cmd %r" % cfg.get("Cmd"))
    check(cfg.get("User") == "%d:%d" % (UID, UID), "User %r" % cfg.get("User"))
    check(set(cfg.get("ExposedPorts") or {}) == {"8443/tcp", "9090/tcp"}, "ports %r" % cfg.get("ExposedPorts"))


def test_version_in_the_runtime_stage():
    need("built")
    name, _ = container(IMAGE_REPO + ":runtime")
    state["run_ctr"] = name
    _, out, _ = run_in(name, BINARY, "version")
    check(need("version") in out, "dra-guard version printed %r, built as %s" % (out, state["version"]))
    print("     %s" % out.strip())


def test_runs_as_the_numeric_non_root_user():
    name = need("run_ctr")
    _, uid, _ = run_in(name, "id", "-u")
    _, gid, _ = run_in(name, "id", "-g")
    check(uid.strip() == str(UID) and gid.strip() == str(UID), "runs as uid %s gid %s" % (uid.strip(), gid.strip()))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_process(marker, timeout, proc, log):
    """The pid of the serving dra-guard (its command line holds marker)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            with open(log, "rb") as f:
                fail("serve exited with %s:\n%s" % (proc.returncode, f.read()[-3000:].decode("utf-8", "replace")))
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if argv and argv[0] == BINARY.encode() and marker.encode() in argv:
                return int(pid)
        time.sleep(0.1)
    fail("no %s process with %s within %ss" % (BINARY, marker, timeout))


def ids(pid):
    with open("/proc/%d/status" % pid) as f:
        text = f.read()
    uid = re.search(r"^Uid:\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", text, re.M).groups()
    gid = re.search(r"^Gid:\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", text, re.M).groups()
    return set(uid), set(gid)


def post(port, ca, review, endpoint):
    ctx = ssl.create_default_context(cafile=ca)
    req = urllib.request.Request("https://localhost:%d/%s?timeout=10s" % (port, endpoint),
                                 data=json.dumps(review).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
        check(r.status == 200, "POST /%s: HTTP %d" % (endpoint, r.status))
        return json.loads(r.read())["response"]


def test_serve_answers_reviews_over_tls():
    name = need("run_ctr")
    certs = tempfile.mkdtemp(prefix="dra-guard-image-")
    proc = None
    try:
        guard.make_certs(certs)
        # The serving pair alone, as a Secret volume with fsGroup gives it: a
        # directory anyone may enter, files only the guard's user may read.
        tls = os.path.join(certs, "volume")
        os.mkdir(tls, 0o755)
        for f in ("tls.crt", "tls.key"):
            shutil.copy(os.path.join(certs, f), os.path.join(tls, f))
            os.chown(os.path.join(tls, f), UID, UID)
            os.chmod(os.path.join(tls, f), 0o400)
        port, mport = free_port(), free_port()
        listen = "127.0.0.1:%d" % port
        cmd = ["buildah"] + storage_opts() + ["run", "--isolation", "chroot", "-v",
                                              "%s:/etc/dra-guard/tls:ro" % tls, name, "--", BINARY, "serve",
                                              "--listen", listen, "--metrics-listen", "127.0.0.1:%d" % mport]
        log_path = os.path.join(IMAGE_DIR, "serve.log")
        log = open(log_path, "wb")
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        pid = find_process(listen, SERVE_TIMEOUT, proc, log_path)
        deadline = time.time() + SERVE_TIMEOUT
        while True:
            try:
                status, body = guard.http_get(mport, "/readyz")
                if status == 200:
                    break
            except OSError:
                pass
            check(proc.poll() is None, "serve exited with %s" % proc.returncode)
            check(time.time() < deadline, "serve not ready within %ss" % SERVE_TIMEOUT)
            time.sleep(0.2)
        check(json.loads(body).get("ready") is True, "/readyz: %s" % body)
        uids, gids = ids(pid)
        check(uids == {str(UID)} and gids == {str(UID)},
              "the serving process runs as uid %s gid %s, want %d" % (uids, gids, UID))
        ca = os.path.join(certs, "ca.crt")
        with open(os.path.join(ROOT, "tests", "golden", "cases", "slice-mapping-name-pods.json")) as f:
            denied = json.load(f)["review"]
        resp = post(port, ca, denied, "validate")
        check(resp["allowed"] is False and resp["status"]["code"] == 403, "not denied: %s" % resp)
        check("[slice.mapping.name]" in resp["status"]["message"], "message %r" % resp["status"]["message"])
        check(resp["uid"] == denied["request"]["uid"], "uid not echoed")
        resp = post(port, ca, guard.slice_review(), "mutate")
        check(resp["allowed"] is True and guard.decode_patch(resp), "the fixture slice: %s" % resp)
        os.kill(pid, signal.SIGTERM)
        code = proc.wait(timeout=SERVE_TIMEOUT)
        proc = None
        check(code == 0, "serve exited %d after SIGTERM" % code)
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()
        shutil.rmtree(certs, ignore_errors=True)


def test_image_holds_only_what_the_dockerfile_says():
    base_root, run_root = need("base_root"), need("run_root")
    runtime_stage = dockerfile.stages()[-1]
    wanted = dockerfile.apt_installs(runtime_stage)
    check(wanted, "the runtime stage installs no packages")
    # Packages: the apt list and its Depends, added to the base (which may
    # have some already: apt needs libgnutls30); none removed.
    base_db = dockerfile.installed_packages(os.path.join(base_root, "var/lib/dpkg"))
    db = dockerfile.installed_packages(os.path.join(run_root, "var/lib/dpkg"))
    added = set(db) - set(base_db)
    check(not set(base_db) - set(db), "packages of the base removed: %s" % sorted(set(base_db) - set(db)))
    check(set(wanted) <= set(db), "not installed: %s" % sorted(set(wanted) - set(db)))
    extra = added - dockerfile.closure(db, wanted)
    check(not extra, "installed, but no runtime package depends on them: %s" % sorted(extra))
    # The apt list: exactly the packages of the libraries the binary links.
    _, out, _ = sh(["readelf", "-d", os.path.join(run_root, BINARY[1:])])
    direct = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)
    check(direct, "readelf found no NEEDED entries")
    _, out, _ = run_in(need("run_ctr"), "ldd", BINARY)
    check("not found" not in out, "ldd in the image:\n%s" % out)
    libs = dict(re.findall(r"^\s*(\S+)\s+=>\s+(\S+)\s+\(", out, re.M))
    for soname in direct:
        check(soname in libs, "ldd did not resolve %s in the image" % soname)
    owner = owners(run_root, [libs[s] for s in direct])
    need_pkgs = {owner[libs[s]] for s in direct} - BASE_LEVEL
    check(set(wanted) == need_pkgs, "the runtime stage installs %s; the binary links %s"
          % (sorted(wanted), sorted(need_pkgs)))
    # Files: the binary, the added packages' files, package manager state.
    new, diff, gone = changed(base_root, run_root)
    shipped = package_files(run_root, added)
    # Merged /usr: dpkg may list /lib/x, the file is at /usr/lib/x.
    shipped |= {"/usr" + p for p in shipped if re.match(r"^/(lib|lib64|bin|sbin)/", p)}
    parents = set()
    for p in shipped | {BINARY}:
        d = os.path.dirname(p)
        while d != "/" and d not in parents:
            parents.add(d)
            d = os.path.dirname(d)
    def mount_point(p):
        full = os.path.join(run_root, p[1:])
        return p in MOUNT_POINTS and (not os.path.lexists(full) or (os.path.isfile(full) and
                                                                    os.path.getsize(full) == 0))
    unexplained = [p for p in new + diff if p != BINARY and p not in shipped and p not in parents
                   and not PACKAGE_STATE.search(p) and not mount_point(p)]
    check(not unexplained, "files no package, binary or package state explains: %s" % unexplained[:40])
    gone = [p for p in gone if not PACKAGE_STATE.search(p) and not mount_point(p)]
    check(not gone, "files of the base removed: %s" % gone[:40])
    print("     packages added: %d (%s, and what they depend on); files added %d, changed %d"
          % (len(added), " ".join(sorted(wanted)), len(new), len(diff)))


def cleanup():
    for name in state.get("containers", []):
        sh(["buildah"] + storage_opts() + ["umount", name], ok=None)
        sh(["buildah"] + storage_opts() + ["rm", name], ok=None)
    # Layers of earlier builds no tag uses (vfs keeps a full copy of each).
    podman("image", "prune", "-f", ok=None)


def main():
    t0 = time.time()
    try:
        guard.run_tests([
            test_base_is_a_debian_12_root_filesystem_from_the_mirror,
            test_both_stages_build,
            test_build_stage_made_the_release_build_and_the_runtime_holds_it,
            test_image_configuration,
            test_version_in_the_runtime_stage,
            test_runs_as_the_numeric_non_root_user,
            test_serve_answers_reviews_over_tls,
            test_image_holds_only_what_the_dockerfile_says,
        ])
    finally:
        cleanup()
        for what, secs in timings:
            print("     %-32s %7.1fs" % (what, secs))
        print("     image test %.1fs in all" % (time.time() - t0))


if __name__ == "__main__":
    main()
