/* fieldcheck.h - unknown fields in the kinds the guard judges, found the way
 * the Kubernetes 1.36 API server's field validation finds them.
 *
 * The API server decodes a write strictly (?fieldValidation=Strict, what
 * kubectl asks for by default) or warns (Warn, the server's default): a
 * field its Go types do not have is dropped, so a misspelt
 * nodeAllocatableResourceMappings is simply not there. dry-run has no API
 * server, so it asks this module: one table (fieldcheck.c) holds the fields
 * of resource.k8s.io/v1 ResourceSlice and ResourceClaim as the 1.36 schema
 * has them, of a v1 Pod's status parts the guard reads and of a v1
 * ConfigMap; every object's metadata is checked against ObjectMeta.
 * Duplicate fields never reach this module: the document reader refuses
 * them (doc.h); fieldcheck_path_at() names the path of one for the message.
 *
 * Paths are written as the guard's messages write them: members by name
 * (spec.devices[0].name), map keys quoted when they hold anything but
 * letters, digits, '-' and '_' (attributes["dra.example.com/model"]).
 * Pure; no allocation; safe from any thread. */
#ifndef DRA_GUARD_FIELDCHECK_H
#define DRA_GUARD_FIELDCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "doc.h"
#include "str.h"

#define FIELDCHECK_PATH_MAX 512          /* longer paths end in "..." */
#define FIELDCHECK_NAME_MAX 64           /* a known field name, with the NUL */

struct fieldcheck_finding {
	char path[FIELDCHECK_PATH_MAX];       /* of the unknown field itself */
	char suggestion[FIELDCHECK_NAME_MAX]; /* a close known name, or "" */
	const char *note;                     /* why the name is not there, or NULL */
	uint32_t line, col;                   /* of the field's key */
};

/* True when the table covers objects of apiVersion/kind (e.g.
 * "resource.k8s.io/v1", "ResourceSlice"). */
bool fieldcheck_covers(struct str api_version, struct str kind);

/* Check the object root (apiVersion and kind read from it) against the
 * table: each unknown field, in document order, into out[0..max). Values
 * of the wrong type are left to the decoder. Returns how many unknown
 * fields there are (may exceed max: only max are written), 0 for a kind
 * the table does not cover. */
size_t fieldcheck_object(const struct doc_node *root, struct fieldcheck_finding *out, size_t max);

/* The known name closest to name[0..len) among names[0..n): one at edit
 * distance at most 2 (1 for names under 6 characters), or equal but for
 * case, and closer than any other. NULL when none is. */
const char *fieldcheck_closest(const char *name, size_t len, const char *const *names, size_t n);

/* The path of the map member whose key is at line:col under root, into
 * buf (NUL-terminated, truncated to n). False when no key is there. */
bool fieldcheck_path_at(const struct doc_node *root, uint32_t line, uint32_t col, char *buf, size_t n);

#endif
