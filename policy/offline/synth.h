/* synth.h - the admission request the API server would send for a write,
 * made up offline: what dry-run decides bare objects with.
 *
 * A manifest is only an object. To decide it as the webhook would, dry-run
 * needs the request around it: the operation (CREATE, or UPDATE against the
 * stored namesake), the subresource, the namespace and the user who writes.
 * This module builds that request, says which rules a request made up this
 * way cannot exercise (no user given: the identity rules; a main-resource
 * write of a claim or Pod: the status rules), and decides whether an update
 * can only be a status write. Pure; everything lives in the caller's arena. */
#ifndef DRA_GUARD_SYNTH_H
#define DRA_GUARD_SYNTH_H

#include <stdbool.h>
#include <stddef.h>

#include "arena.h"
#include "doc.h"
#include "model.h"
#include "rules.h"

struct synth_extra {
	struct str key;
	struct str value;
};

/* Who writes. A key given twice in extras is one key with two values, as
 * --extra KEY=A --extra KEY=B means. */
struct synth_identity {
	struct str user;                 /* "" for none */
	const struct str *groups;
	size_t ngroups;
	const struct synth_extra *extras;
	size_t nextras;
};

struct synth_write {
	enum admission_op op;            /* CREATE, UPDATE or DELETE */
	struct str subresource;          /* "" or "status" */
	struct str namespace;            /* the effective namespace */
	const struct k8s_object *object; /* what is written, or what goes on DELETE */
	const struct k8s_object *old;    /* UPDATE: the stored object */
};

/* Fill *out with the request for w by who: uid "dry-run", kind and resource
 * from the object, dryRun true. The request borrows the objects and the
 * identity's strings; its arrays live in a. Returns 0, or -E2BIG/-ENOMEM
 * when a cannot hold the identity: then *out must not be used (a request
 * with part of the groups or extras dropped would be decided for someone
 * else). -EINVAL for an UPDATE without old or an unknown operation. */
int synth_request(const struct synth_identity *who, const struct synth_write *w,
		  struct arena *a, struct admission_request *out);

/* Rules a made-up request does not exercise, and why. */
struct synth_skip {
	const char *reason;              /* a sentence; static storage */
	enum rule_id rules[4];
	size_t nrules;
};

#define SYNTH_SKIP_MAX 3

/* What of the engine's rules for req cannot run (identity_given false: no
 * user was named, so the engine skips the identity rules; view_given
 * false: no cluster view, so the rules that read one do not run). Fills
 * out[] and returns how many entries; 0 when every rule for the request
 * ran. */
size_t synth_skipped(const struct admission_request *req, bool identity_given, bool view_given,
		     struct synth_skip out[SYNTH_SKIP_MAX]);

/* True when an update from old to obj (both object maps) can only be a
 * status write: something under status differs, and nothing else does but
 * the fields the API server keeps itself (metadata.resourceVersion,
 * generation, uid, creationTimestamp, managedFields, selfLink). The API
 * server resets status on a write of the main resource and everything else
 * on a write of status, so such a change is made through status or not at
 * all. Map member order does not matter. */
bool synth_only_status_differs(const struct doc_node *obj, const struct doc_node *old);

#endif
