/* mutation.h - the patch the mutating endpoint returns for a ResourceSlice.
 *
 * Every slice that carries mappings gets the label dra-guard.io/mappings set
 * to a short fingerprint of its mappings, so
 *   kubectl get resourceslices -L dra-guard.io/mappings
 * shows which mapping version every node runs. The fingerprint is the first
 * 16 hex digits of SHA-256 over a canonical form of the mappings: devices by
 * name, mappings by resource, quantities by value (2Gi and 2048Mi agree),
 * a missing multiplier as its API default of 1. A slice without mappings
 * loses a stale label. Pure. */
#ifndef DRA_GUARD_MUTATION_H
#define DRA_GUARD_MUTATION_H

#include "arena.h"
#include "model.h"

#define MUTATION_LABEL "dra-guard.io/mappings"
#define MUTATION_FINGERPRINT_LEN 16

/* The fingerprint of s's mappings into out (NUL-terminated). 0, -ENOMEM or
 * -E2BIG (arena). */
int mutation_fingerprint(const struct resource_slice *s, struct arena *a,
			 char out[MUTATION_FINGERPRINT_LEN + 1]);

/* The JSONPatch (a JSON array as text) that brings obj's label up to date,
 * or an empty view when nothing needs to change. obj must be a decoded
 * ResourceSlice. 0 or the arena's error. */
int mutation_slice_patch(const struct k8s_object *obj, struct arena *a, struct str *patch);

#endif
