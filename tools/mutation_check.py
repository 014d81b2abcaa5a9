#!/usr/bin/env python3
"""Prove the golden cases catch a broken rule: make mutation-check.

usage: mutation_check.py TEST_ENGINE ALLOWED [-v]

TEST_ENGINE is tests/test_engine built by the "mutant" flavour (-DDRA_GUARD_MUTANT,
policy/rules/mutant.h). `TEST_ENGINE --list-mutants` names every mutant, three per rule:

  drop:<rule>   the rule never reports (a rule disabled)
  flip:<rule>   its action flips: deny becomes warn, warn and dryrun become deny
  fire:<rule>   it reports on every request of its kind (a rule gone noisy)

Each mutant is one run of the golden suite with DRA_GUARD_MUTANT=<mutant>; it is
killed when at least one case fails. A mutant that survives fails the check unless
ALLOWED lists it ("<mutant> <reason>" per line, # comments); an ALLOWED entry for a
mutant that is killed, or that does not exist, fails it too, so the list stays true.
Prints killed/total, the survivors, and with -v how many cases kill each mutant.
"""

import os
import re
import subprocess
import sys
import time

RUN_TIMEOUT = 300             # seconds for one run of the suite: a failure bound
FAILED = re.compile(r"^\[  FAILED  \] (\S+)$")


def run(binary, mutant):
    env = dict(os.environ)
    env.pop("DRA_GUARD_MUTANT", None)
    if mutant:
        env["DRA_GUARD_MUTANT"] = mutant
    p = subprocess.run([binary], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=RUN_TIMEOUT, universal_newlines=True)
    failed = set()
    for line in p.stdout.splitlines():
        m = FAILED.match(line)
        if m:
            failed.add(m.group(1))
    if p.returncode not in (0, 1) or (p.returncode == 1) != bool(failed):
        sys.exit("mutation-check: %s with %s exited %d:\n%s" % (binary, mutant or "no mutant",
                                                               p.returncode, p.stdout[-2000:]))
    return failed


def read_allowed(path):
    allowed = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split(None, 1)
            if len(parts) != 2:
                sys.exit("%s:%d: want \"<mutant> <reason>\"" % (path, n))
            allowed[parts[0]] = parts[1]
    return allowed


def main():
    args = [a for a in sys.argv[1:] if a != "-v"]
    verbose = "-v" in sys.argv[1:]
    if len(args) != 2:
        sys.exit(__doc__.strip().splitlines()[2])
    binary, allowed_path = args
    allowed = read_allowed(allowed_path)
    listing = subprocess.run([binary, "--list-mutants"], stdout=subprocess.PIPE, universal_newlines=True,
                             check=True, timeout=RUN_TIMEOUT)
    mutants = listing.stdout.split()
    t0 = time.time()
    baseline = run(binary, None)
    if baseline:
        sys.exit("mutation-check: the suite fails with no mutant (%s); fix that first" % ", ".join(sorted(baseline)))
    survivors, kills = [], {}
    for m in mutants:
        kills[m] = run(binary, m)
        if not kills[m]:
            survivors.append(m)
        if verbose:
            print("  %-40s %s" % (m, "killed by %d cases" % len(kills[m]) if kills[m] else "SURVIVED"))
    problems = []
    for m in survivors:
        if m in allowed:
            print("  survivor %-40s allowed: %s" % (m, allowed[m]))
        else:
            problems.append("survivor %s: no golden case notices it (add one, or list it in %s with a reason)"
                            % (m, allowed_path))
    for m in sorted(allowed):
        if m not in kills:
            problems.append("%s lists %s, which is not a mutant" % (allowed_path, m))
        elif kills[m]:
            problems.append("%s lists %s, but %d cases kill it now: remove it" % (allowed_path, m, len(kills[m])))
    thin = sorted(m for m in mutants if len(kills[m]) == 1)
    print("mutation-check: %d of %d mutants killed, %d survivors (%d allowed), %.0fs" % (
        len(mutants) - len(survivors), len(mutants), len(survivors),
        len([m for m in survivors if m in allowed]), time.time() - t0))
    if thin:
        print("  killed by one case only: %s" % " ".join(thin))
    for p in problems:
        print("  " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
