/* view_dump.h - a cluster view built from files: the output of
 *   kubectl get resourceslices,resourceclaims,pods,nodes -A -o json
 * (a List of mixed kinds, decoded as a LIST is: one object at a time, none
 * kept) or a single JSON object; and objects one by one with a time, for
 * YAML read by the manifest reader and for tests that replay what the
 * watch would deliver.
 *
 * A dump is one moment: every object is taken as ADDED at the time given,
 * so no pool has restarted within the settle window, no mapping has just
 * changed, and every claim's allocation is first observed then (its
 * charges computed from the slices in the dump, whatever order they come
 * in). Kinds the view does not hold are counted and skipped. Pure. */
#ifndef DRA_GUARD_VIEW_DUMP_H
#define DRA_GUARD_VIEW_DUMP_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "view.h"

struct view_dump_stats {
	uint64_t objects[OBJECT_KIND_COUNT];     /* applied, by kind (view_holds_kind()) */
	uint64_t other;                          /* of kinds the view does not hold */
	uint64_t refused;                        /* did not decode, or a cap refused them */
	char first_error[512];                   /* why the first was refused */
};

/* Decode one object (its own apiVersion and kind) from json[0..len) and
 * apply it as event ev at now_ns. a is scratch (reset here). 0 when
 * applied; 1 when it is of a kind the view does not hold; -EPROTO (not an
 * object the guard decodes), -EINVAL, -E2BIG or -ENOMEM with err (n
 * bytes) saying why. */
int view_builder_apply_json(struct view_builder *b, enum view_event ev, const char *json, size_t len,
			    struct arena *a, int64_t now_ns, char *err, size_t n);

/* Load a JSON dump (a List, or one object) into b, every object ADDED at
 * now_ns; then every resource counts as heard of at now_ns. Objects that
 * do not decode or pass a cap are counted in st, not fatal. 0; -EPROTO
 * for text that does not start as a JSON object (YAML: read it with the
 * manifest reader and view_builder_apply_json()); -EBADMSG for JSON that
 * is not what kubectl prints (err says where); -ENOMEM. */
int view_dump_load(struct view_builder *b, const char *text, size_t len, int64_t now_ns,
		   struct view_dump_stats *st, char *err, size_t n);

#endif
