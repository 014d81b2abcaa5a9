/* mutant.h - the seam `make mutation-check` uses to break one rule at a time.
 *
 * Only a build with -DDRA_GUARD_MUTANT (the Makefile's "mutant" flavour, used by
 * nothing but the mutation check) sees these declarations and the two calls to
 * them (check.c, engine.c); every other build compiles them out, so the
 * server, dry-run and the benchmarks carry no trace of them. The functions are
 * defined by the test program linked against the mutant build
 * (tests/test_engine.c), which picks the one mutant of a run; policy/ itself
 * stays free of I/O and globals. Called from any thread; must be pure. */
#ifndef DRA_GUARD_MUTANT_H
#define DRA_GUARD_MUTANT_H

#ifdef DRA_GUARD_MUTANT

#include <stdbool.h>

#include "model.h"
#include "rules.h"
#include "verdict.h"

/* The action a new violation of rule id gets, given the one the policy
 * resolved and the verdict so far: resolved itself when the mutant leaves the
 * rule alone, another action, or -1 to drop the violation. */
int mutant_action(enum rule_id id, enum action resolved, const struct verdict *so_far);

/* True when rule id must report a violation on every request of kind. */
bool mutant_fires(enum rule_id id, enum object_kind kind);

#endif

#endif
