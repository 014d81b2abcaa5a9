#!/usr/bin/env python3
"""The commands of README.md and docs/*.md run as written, in a fresh copy of
the repository, and print what the docs show.

The conventions the docs keep (README.md, "Commands in these docs"):

- A fenced block tagged `sh`, or any fenced block with a line starting with
  "$ ", holds commands. Other blocks (YAML, JSON, synopses, output) do not.
- `<!-- docs-test: skip REASON -->` on the line before the fence: the block is
  not run (it needs a cluster, a registry, a running server, minutes). The
  test prints every such block with its reason, so nothing is left out
  silently; a skip without a reason fails.
- A block with "$ " lines: each "$ " line (with its "\\"-continued lines) is a
  command, and the lines up to the next "$ " line are what it prints (stdout
  and stderr, as a terminal shows them), compared line by line; a line "..."
  stands for any number of lines.
- A block without "$ " lines is run whole as one bash script. Every command in
  it must succeed, except that a dra-guard command may exit 1: that is its
  verdict (something denied, NO-GO), not a failure.

The copy holds the repository's files (tracked and new, not ignored), with the
built binary as ./dra-guard (what `make` leaves) and as dra-guard on PATH
(what `make install` gives).

The freeze runbook's example hash is checked too: the hash `policy lint`
prints for the base's policy ConfigMap with the freeze of the runbook's start
command.
"""

import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

ROOT = os.environ.get("DRA_GUARD_ROOT", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BIN = os.environ.get("DRA_GUARD_BIN", os.path.join(ROOT, "build", "rel", "dra-guard"))
TIMEOUT = 120

FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
SKIP = re.compile(r"^\s*<!--\s*docs-test:\s*skip\b\s*(.*?)\s*-->\s*$")
MARKER = re.compile(r"<!--\s*docs-test\b")


def doc_files():
    return ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))


class Block:
    def __init__(self, path, line, lang, lines, skip):
        self.path, self.line, self.lang, self.lines, self.skip = path, line, lang, lines, skip

    @property
    def where(self):
        return "%s:%d" % (self.path, self.line)

    @property
    def prompted(self):
        return any(l.startswith("$ ") for l in self.lines)

    @property
    def is_commands(self):
        return self.lang == "sh" or self.prompted


def read_text(path):
    """The file at path (from the repository's root), closed again."""
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


def blocks(path):
    """Every fenced block of path, its lines without the fence's indent."""
    with open(os.path.join(ROOT, path)) as f:
        lines = f.read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2)
        j = i + 1
        while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
            j += 1
        body = [l[len(indent):] if l.startswith(indent) else l.lstrip() for l in lines[i + 1:j]]
        skip = None
        if i > 0:
            s = SKIP.match(lines[i - 1])
            if s:
                skip = s.group(1)
            elif MARKER.search(lines[i - 1]):
                skip = ""          # a marker the test does not understand: fails below
        out.append(Block(path, i + 1, lang, body, skip))
        i = j + 1
    return out


def prompted_commands(b):
    """[(command, [expected stdout lines])] of a "$ " block."""
    cmds, i, lines = [], 0, b.lines
    while i < len(lines):
        if not lines[i].startswith("$ "):
            i += 1
            continue
        cmd = [lines[i][2:]]
        while cmd[-1].endswith("\\") and i + 1 < len(lines):
            i += 1
            cmd.append(lines[i])
        i += 1
        out = []
        while i < len(lines) and not lines[i].startswith("$ "):
            out.append(lines[i])
            i += 1
        while out and out[-1] == "":
            out.pop()
        cmds.append(("\n".join(cmd), out))
    return cmds


def matches(want, got):
    """want's lines against got's; a want line "..." takes any number of lines."""
    if not want:
        return not got
    if want[0] == "...":
        return any(matches(want[1:], got[k:]) for k in range(len(got) + 1))
    return bool(got) and want[0] == got[0] and matches(want[1:], got[1:])


def fresh_copy():
    """The repository's files in a new directory, with the binary as make and
    make install leave it; (directory, environment)."""
    tmp = tempfile.mkdtemp(prefix="dra-guard-docs-")
    repo = os.path.join(tmp, "dra-guard")
    try:
        files = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                               capture_output=True).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        # No git (a source tarball): the tree but what a build leaves.
        files = []
        for d, dirs, names in os.walk(ROOT):
            rel_d = os.path.relpath(d, ROOT)
            dirs[:] = [x for x in dirs if not (rel_d == "." and (x in (".git", "build") or x.startswith("build-")))]
            files += [os.path.normpath(os.path.join(rel_d, n)) for n in names
                      if not (rel_d == "." and n == "dra-guard") and not n.endswith((".o", ".d"))]
    for rel in filter(None, files):
        src = os.path.join(ROOT, rel)
        if not os.path.lexists(src):
            continue                      # deleted in the work tree, not yet in git
        dst = os.path.join(repo, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(src, dst, follow_symlinks=False)
    shutil.copy2(BIN, os.path.join(repo, "dra-guard"))
    bindir = os.path.join(tmp, "bin")
    os.makedirs(bindir)
    shutil.copy2(BIN, os.path.join(bindir, "dra-guard"))
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""), LC_ALL="C")
    return tmp, repo, env


# Runs a block as a script: any failing command stops it with status 99 and
# names itself, but for a dra-guard command's verdict (status 1).
PRELUDE = r"""set -o pipefail
__docs_test_err() {
	s=$1; c=$2
	case "$c" in
	dra-guard\ *|./dra-guard\ *|*"| dra-guard "*|*"| ./dra-guard "*) [ "$s" -eq 1 ] && return 0 ;;
	esac
	echo "docs-test: '$c' exited $s" >&2
	exit 99
}
trap '__docs_test_err $? "$BASH_COMMAND"' ERR
"""


class DocsCommands(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp, cls.repo, cls.env = fresh_copy()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def bash(self, script, merged=False):
        """Run script; on a timeout its whole process group goes, so a
        command that serves is not left behind. merged: stderr into stdout,
        as a terminal shows them."""
        p = subprocess.Popen(["bash", "-c", script], cwd=self.repo, env=self.env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT if merged else subprocess.PIPE, text=True,
                             start_new_session=True)
        try:
            out, err = p.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            self.fail("%s: still running after %d s" % (script.split("\n")[-2][:200], TIMEOUT))
        finally:
            try:
                os.killpg(p.pid, signal.SIGKILL)      # anything it left in the background
            except ProcessLookupError:
                pass
        return subprocess.CompletedProcess(p.args, p.returncode, out, err or "")

    def all_blocks(self):
        return [b for p in doc_files() for b in blocks(p) if b.is_commands]

    def test_every_command_block_runs_or_says_why_not(self):
        ran, skipped = 0, []
        for b in self.all_blocks():
            with self.subTest(block=b.where):
                if b.skip is not None:
                    self.assertTrue(b.skip, "%s: a docs-test marker without a reason (<!-- docs-test: skip "
                                    "REASON -->)" % b.where)
                    skipped.append(b)
                    continue
                ran += 1
                if b.prompted:
                    for cmd, want in prompted_commands(b):
                        p = self.bash(cmd, merged=True)
                        got = p.stdout.rstrip("\n").split("\n") if p.stdout.strip() else []
                        if want and not matches(want, got):
                            self.fail("%s: `%s` printed (exit %d):\n%s\nstderr: %s\nthe doc shows:\n%s" % (
                                b.where, cmd, p.returncode, p.stdout, p.stderr[-2000:], "\n".join(want)))
                        if not want:
                            self.assertIn(p.returncode, (0, 1) if "dra-guard" in cmd else (0,),
                                          "%s: `%s` exited %d: %s" % (b.where, cmd, p.returncode, p.stderr[-2000:]))
                else:
                    p = self.bash(PRELUDE + "\n".join(b.lines) + "\nexit 0\n")
                    self.assertEqual(p.returncode, 0, "%s: the block failed (exit %d):\n%s\nstdout: %s" % (
                        b.where, p.returncode, p.stderr[-3000:], p.stdout[-2000:]))
        print("\n%d command blocks run; %d not run:" % (ran, len(skipped)), file=sys.stderr)
        for b in skipped:
            first = next((l for l in b.lines if l.strip() and not l.startswith("#")), "")
            print("  %-28s %s\n  %-28s   (%s)" % (b.where, first[:90], "", b.skip), file=sys.stderr)
        self.assertGreater(ran, 5)

    def test_the_markers_are_on_command_blocks(self):
        # A skip marker before a block that holds no commands hides nothing
        # and would only mislead.
        for p in doc_files():
            for b in blocks(p):
                if b.skip is not None:
                    self.assertTrue(b.is_commands, "%s: a docs-test marker before a block that is not commands"
                                    % b.where)

    def test_readme_readiness_example_runs_as_written(self):
        readme = [b for b in blocks("README.md") if any("dra-guard readiness" in l for l in b.lines)]
        self.assertEqual(len(readme), 1)
        self.assertIsNone(readme[0].skip)
        self.assertTrue(readme[0].prompted)
        cmds = prompted_commands(readme[0])
        self.assertTrue(any("| Criterion | Verdict | Evidence |" in l for _, out in cmds for l in out))

    def test_matcher(self):
        self.assertTrue(matches(["a", "...", "d"], ["a", "b", "c", "d"]))
        self.assertTrue(matches(["a", "..."], ["a"]))
        self.assertFalse(matches(["a", "d"], ["a", "b", "d"]))
        self.assertFalse(matches(["a"], []))


class FreezeRunbookHash(unittest.TestCase):
    """The hash the runbook shows for "freeze on" is the hash of the base's
    policy with the freeze of the runbook's start command."""

    def test_freeze_on_hash_is_the_frozen_policys(self):
        with open(os.path.join(ROOT, "docs", "operations.md")) as f:
            ops = f.read()
        runbook = ops[ops.index("## Freeze runbook"):]
        runbook = runbook[:runbook.index("\n## ", 1)]
        # The start command of the "**Start**" block (the checklist's has a
        # placeholder reason).
        block = runbook[runbook.index("**Start** (the reason"):]
        start = re.search(r"""-p '(\{"data":\{"freeze":"true".*?\}\})'""", block)
        self.assertTrue(start, "no start command in the runbook")
        data = json.loads(start.group(1))["data"]
        shown = re.findall(r"valid \(policy hash ([0-9a-f]{12}), freeze on\)", runbook)
        self.assertTrue(shown, "no freeze-on hash in the runbook")
        with open(os.path.join(ROOT, "manifests", "base", "policy-configmap.yaml")) as f:
            cm = f.read()
        frozen = re.sub(r'(?m)^  freeze: "false"$', "  freeze: %s" % json.dumps(data["freeze"]), cm, count=1)
        frozen = re.sub(r'(?m)^  freeze-reason: ""$', lambda _: "  freeze-reason: %s" % json.dumps(data["freeze-reason"]),
                        frozen, count=1)
        self.assertNotEqual(frozen, cm)
        p = subprocess.run([BIN, "policy", "lint", "-"], input=frozen, capture_output=True, text=True, timeout=60)
        m = re.search(r"policy hash ([0-9a-f]{12}), freeze on", p.stdout)
        self.assertTrue(m, p.stdout + p.stderr)
        for h in shown:
            self.assertEqual(h, m.group(1), "the runbook shows %s for freeze on; the frozen policy's is %s"
                             % (h, m.group(1)))
        # Every hash the runbook quotes (metrics, /readyz) is that one.
        for h in re.findall(r'hash"?[=:]"?([0-9a-f]{12})', runbook):
            self.assertEqual(h, m.group(1))
        for word in ("mandatory", "GitOps", "kubectl apply", "/usr/local/bin/dra-guard", "True"):
            self.assertIn(word, runbook)
        checklist = runbook[runbook.index("**Checklist**"):]
        steps = re.findall(r"^(\d)\. \*\*(\w+)", checklist, re.M)[:5]
        self.assertEqual(steps, [("1", "Start"), ("2", "Verify"), ("3", "Export"), ("4", "End"), ("5", "Verify")])


# The subcommands whose flags come from a table (webhook/base/options.h): --help
# lists every flag of the table, so it stands for the table here.
FLAG_COMMANDS = ("serve", "dry-run", "ledger", "replay", "readiness", "vap", "pending")


def help_flags(command):
    """{flag: its [$VARIABLE; default: ...] note or ""} of COMMAND --help."""
    p = subprocess.run([BIN, command, "--help"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, (command, p.stderr)
    flags = {}
    for m in re.finditer(r"^  --([a-z0-9-]+)[^\n]*\n((?: {20,}[^\n]*\n)*)", p.stdout, re.M):
        note = re.search(r"^ +(\[[^\n]*\])$", m.group(2), re.M)
        flags[m.group(1)] = note.group(1) if note else ""
    flags.pop("help", None)
    return flags


class Flags(unittest.TestCase):
    """The docs and the flag tables agree: every flag is documented, and
    every flag the docs give a command is one of its flags."""

    def test_every_flag_is_documented(self):
        text = "\n".join(read_text(p) for p in doc_files())
        for command in FLAG_COMMANDS:
            for flag in help_flags(command):
                self.assertRegex(text, r"(?<![\w-])--%s(?![\w-])" % re.escape(flag),
                                 "dra-guard %s --%s is in no doc" % (command, flag))

    def test_every_documented_flag_exists(self):
        known = {c: set(help_flags(c)) | {"help"} for c in FLAG_COMMANDS}
        pattern = re.compile(r"dra-guard (%s)\b" % "|".join(re.escape(c) for c in FLAG_COMMANDS))
        for path in doc_files():
            lines = read_text(path).split("\n")
            i = 0
            while i < len(lines):
                line, j = lines[i], i
                while line.endswith("\\") and j + 1 < len(lines):
                    j += 1
                    line = line[:-1] + " " + lines[j]
                for m in pattern.finditer(line):
                    # The command's own words: up to a pipe, the end of the
                    # code span, a sentence or another command.
                    words = re.split(r"\||;|&&|`|\)|,\s|\. ", line[m.end():])[0]
                    for flag in re.findall(r"(?<![\w-])--([a-z0-9][a-z0-9-]*)", words):
                        self.assertIn(flag, known[m.group(1)], "%s:%d: dra-guard %s has no --%s"
                                      % (path, i + 1, m.group(1), flag))
                i = j + 1

    def test_serve_flags_table_is_the_table(self):
        """docs/operations.md's table of serve's flags: one row per flag of
        the table, with the variable --help names."""
        doc = read_text(os.path.join("docs", "operations.md"))
        section = doc[doc.index("### Flags"):]
        section = section[:section.index("\n#", 5)]
        rows = dict(re.findall(r"^\| `--([a-z0-9-]+)[^|]*\| `(\w+)`", section, re.M))
        flags = help_flags("serve")
        self.assertEqual(sorted(rows), sorted(flags))
        for flag, note in flags.items():
            self.assertTrue(note.startswith("[$%s;" % rows[flag]) or note == "[$%s]" % rows[flag],
                            "--%s: the docs say $%s, --help %s" % (flag, rows[flag], note))


if __name__ == "__main__":
    unittest.main(verbosity=1)
