/* audit.h - one line of a Kubernetes audit log (audit.k8s.io/v1 Event, as
 * the API server's log backend writes them, one JSON object a line).
 *
 * The reader keeps what a replay needs of a write the guard reads (stage,
 * verb, requestURI's dryRun, objectRef, user, responseStatus.code, requestObject,
 * responseObject, stageTimestamp, auditID) and stops as early as it can on
 * every other event: the API server writes the members in the Event
 * struct's order (stage, verb, user, objectRef come before the objects), so
 * a read of a ConfigMap or a watch of Leases costs a few hundred bytes of
 * scanning whatever its size. A skipped event is not validated past the
 * member that made it skipped; an event that is read is validated whole.
 *
 * Everything returned borrows from the line (strings are the raw bytes
 * between the quotes, escapes and all, as JSON text may carry them on);
 * nothing is allocated. Pure; thread-safe. */
#ifndef DRA_GUARD_AUDIT_H
#define DRA_GUARD_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "str.h"

enum audit_verb {
	AUDIT_VERB_OTHER = 0,
	AUDIT_CREATE,
	AUDIT_UPDATE,
	AUDIT_PATCH,
	AUDIT_DELETE,
};

struct audit_event {
	int64_t stage_ns;              /* stageTimestamp, ns since the epoch */
	enum audit_verb verb;
	enum object_kind kind;         /* of objectRef's resource; OBJECT_OTHER: one the replay does not read */
	struct str audit_id;           /* raw JSON string contents */
	struct str api_group, api_version, resource_name, subresource, namespace, name;
	struct str user;               /* the "user" member's JSON text (an object) */
	struct str impersonated;       /* "impersonatedUser": whom admission saw, or len 0 */
	int32_t code;                  /* responseStatus.code; 0 when absent */
	bool dry_run;                  /* requestURI has a dryRun parameter: nothing was stored */
	struct str request_object;     /* JSON text, or len 0 when absent or null */
	struct str response_object;
};

/* Longest message audit_parse() writes. */
#define AUDIT_ERROR_MAX 256

/* Read the event in line[0..len) (no newline). Returns 0 with *out filled
 * for a ResponseComplete write (create, update, patch, delete) of a
 * resource the replay reads, with an objectRef.name (a create may have
 * none: its object was named by generateName) and a stageTimestamp;
 * 1 for any other event (skipped: *out holds what was read); -EBADMSG for a
 * line that is not JSON or not an Event as the API server writes it (a
 * member of the wrong type, a duplicate of a member read, a bad
 * timestamp), with err saying where and what. */
int audit_parse(const char *line, size_t len, struct audit_event *out, char *err, size_t n);

/* "create", ..., "" for OTHER. Static storage. */
const char *audit_verb_name(enum audit_verb v);

#endif
