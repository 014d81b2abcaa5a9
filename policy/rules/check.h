/* check.h - what a rule is given, and how it reports.
 *
 * A rule is a function over a struct check: it reads the typed request and
 * the policy and calls check_violation() for what it finds. It never
 * decides the verdict: the engine resolves each rule's action from the
 * policy, and verdict_finish() turns the violations into the answer.
 * Messages and paths are only formatted when a violation is reported, so a
 * clean request costs no formatting. */
#ifndef DRA_GUARD_CHECK_H
#define DRA_GUARD_CHECK_H

#include <stddef.h>

#include "arena.h"
#include "model.h"
#include "policy.h"
#include "verdict.h"

/* Filled by name (designated initialiser) by the engine; a rule reads only
 * these fields. */
struct check {
	const struct policy *policy;
	const struct view *view;     /* NULL without a cluster view */
	int64_t now_ns;
	bool frozen;                 /* the policy's freeze, or dry-run --freeze */
	struct str self_user;        /* the guard's own user: it may remove its scheduling gate */
	struct str self_name;        /* the guard's own policy ConfigMap */
	struct str self_namespace;
	const struct admission_request *req;
	struct arena *arena;
	struct verdict *verdict;
	int error;                   /* first failure (arena, cap): the engine fails closed */
	bool preexisting;            /* what is reported now is already in the stored
				      * object, unchanged by this UPDATE: a deny is
				      * reported as a warning (set by the rule) */
};

/* Record a violation of rule id at path (a fixed string, may be "") with a
 * message (printf format) that names the value and what would be accepted.
 * The stored message is "<path>: <message>". Failures are kept in c->error.
 * While c->preexisting is set, a violation whose action is deny is recorded
 * as warn, its message marked as unchanged from the stored object. */
void check_violation(struct check *c, enum rule_id id, const char *path, const char *msg_fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Like check_violation() but the path is given as an already formatted view. */
void check_violation_at(struct check *c, enum rule_id id, struct str path, const char *msg_fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* A violation with a sub-reason and whether a view a moment behind the API
 * server could be why (the server then decides again on a newer view). */
void check_violation_cause(struct check *c, enum rule_id id, uint8_t cause, bool view_lag, struct str path,
			   const char *msg_fmt, ...) __attribute__((format(printf, 6, 7)));

/* A finding the rule reports but must not refuse for (what the real writer
 * may do too): recorded at the policy's action, but never stricter than
 * warn, with a sub-reason. */
void check_warning_cause(struct check *c, enum rule_id id, uint8_t cause, struct str path, const char *msg_fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Rule id could not decide, for reason: allowed, and counted. */
void check_undecided(struct check *c, enum rule_id id, uint8_t reason);

/* Add a claim UID to the verdict's log field. */
void check_claim_uid(struct check *c, struct str uid);

/* Format into the arena; on failure records c->error and returns "". */
struct str check_printf(struct check *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A value from the request is quoted in a message up to CHECK_SHOW_MAX
 * bytes: check_shown(s) is the precision for "%.*s". */
#define CHECK_SHOW_MAX 64
int check_shown(struct str s);

/* At most this many names of a list go into a message, each at most
 * CHECK_NAME_MAX bytes. */
#define CHECK_NAMES_SHOWN 8
#define CHECK_NAME_MAX 64

/* "a, b and c": the names of a list, for messages that must say what they
 * count ("and 4 more" past CHECK_NAMES_SHOWN; "none" when n is 0). Item i's
 * name is the struct str at byte offset offset of element i (stride bytes
 * each) of items; use CHECK_NAMES(). In the arena; failures go to
 * c->error. */
struct str check_names(struct check *c, const void *items, size_t n, size_t stride, size_t offset);
#define CHECK_NAMES(c, items, n, type, member) \
	check_names((c), (items), (n), sizeof(type), offsetof(type, member))

/* check_names() of a policy list. */
struct str check_list_names(struct check *c, const struct string_list *l);

/* "user \"alice\"" plus ", node-name \"worker-1\"" when the token carries
 * one; for messages that must say who tried. */
struct str check_who(struct check *c);

/* Note that a bypass was used: the verdict says so (logged, counted, and an
 * audit annotation), the rule stays quiet. */
void check_break_glass(struct check *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* True when the request's user is one of the listed user names. */
bool check_user_is(const struct check *c, const struct string_list *users);

/* True when the request's user is in one of the listed groups. */
bool check_user_in(const struct check *c, const struct string_list *groups);

#endif
