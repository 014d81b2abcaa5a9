/* vap_impl.h - what the ValidatingAdmissionPolicy generator's files share;
 * policy/ only.
 *
 * vap_emit.c writes the YAML objects and the CEL literals that go into them
 * (strings, lists, quantities, the node-name globs as regular expressions);
 * vap_cel.c has the CEL building blocks every rule shares (exact quantity
 * tests, the device-chunk scans, what an UPDATE leaves as it was, who is
 * asking); vap_capacity.c works out capacity mode (the amounts a request
 * policy lets one allocation consume); vap_slice.c, vap_access.c and
 * vap_freeze.c write one policy per rule; vap.c decides which rules are
 * expressed under a policy and says why the others are not.
 *
 * Everything is written into buffers with a hard cap; the first failure
 * is kept in struct vap_out.rc and every later call does nothing, so a
 * writer can emit a whole policy and check once. Not part of vap.h. */
#ifndef DRA_GUARD_VAP_IMPL_H
#define DRA_GUARD_VAP_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "policy.h"
#include "vap.h"

/* The longest CEL expression one field may hold; the API server itself
 * accepts far more, but nothing generated comes near it. */
#define VAP_EXPR_MAX (256 * 1024)

/* Devices are judged in chunks of this many, one validation (and one
 * message) per chunk: each CEL expression has its own runtime cost limit
 * (1,000,000), and a slice of 128 devices with 256 mappings each would
 * spend most of it in one expression. Eight chunks of 16 stay far under
 * the limit of one expression and under the 10,000,000 of one policy. */
#define VAP_CHUNK 16
#define VAP_MAX_DEVICES 128

/* The identity extras a Pod-bound ServiceAccount token carries. */
#define VAP_EXTRA_NODE_NAME "authentication.kubernetes.io/node-name"
#define VAP_EXTRA_POD_NAME "authentication.kubernetes.io/pod-name"

/* The pod-name values of the request's token, a CEL list (empty when the
 * token has none). */
#define VAP_TOKEN_PODS "(has(request.userInfo.extra) && '" VAP_EXTRA_POD_NAME "' in request.userInfo.extra ? " \
	"request.userInfo.extra['" VAP_EXTRA_POD_NAME "'] : [])"

struct vap_out {
	struct buf *yaml;                 /* the stream being written */
	const struct policy *p;
	const struct vap_options *opt;
	int rc;                           /* first failure; later calls do nothing */
	int section;                      /* the spec list being written (vap_emit.c) */
	/* The policy being written passes what an UPDATE leaves as the stored
	 * slice had it (a slice rule at deny; see vap_slice_validation()). */
	bool ratchet;
	bool slice_unchanged_declared;    /* the variable sliceUnchanged */
	const struct vap_match *match;    /* of the policy being written */
};

/* A CEL expression under construction. */
struct cel {
	struct buf b;
	int rc;
};

/* What a policy matches. */
struct vap_match {
	const char *group;                /* "resource.k8s.io", "" */
	const char *resource;             /* "resourceslices", "resourceclaims/status" */
	const char *operations;           /* YAML flow list: "[CREATE, UPDATE]" */
	bool params;                      /* paramKind: the policy ConfigMap */
	bool fail_open;                   /* failurePolicy Ignore (else Fail) */
};

/* --- vap_emit.c -------------------------------------------------------------- */

void cel_init(struct cel *c);
void cel_free(struct cel *c);
const char *cel_text(const struct cel *c);

/* Append printf-formatted text. */
void cel_add(struct cel *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Append s as a CEL single-quoted string literal: quotes, backslashes,
 * controls and everything outside printable ASCII escaped (\', \\, \n,
 * \xHH, \uHHHH, \UHHHHHHHH), so the expression is plain ASCII whatever the
 * policy holds. Invalid UTF-8 is -EINVAL. */
void cel_str(struct cel *c, struct str s);
void cel_cstr(struct cel *c, const char *s);

/* ['a', 'b'] */
void cel_str_list(struct cel *c, const struct string_list *l);

/* quantity('64Gi'), spelled canonically. */
void cel_quantity(struct cel *c, const struct quantity *q);

/* Translate fnmatch() globs (flags 0, as policy_list_glob() calls it) into
 * one anchored regular expression that CEL's matches() (RE2) and POSIX
 * extended regexps read the same way: "^(a.*|b)$". Returns 0, or -ENOTSUP
 * for a glob that uses what is not translated exactly (a character outside
 * [A-Za-z0-9._:-] and the glob operators, an equivalence or collating
 * class, a backslash, a reversed range); nothing is written then. */
int vap_glob_regex(const struct string_list *globs, struct buf *out);

/* Start a policy for rule id: its metadata and spec down to matchConditions. */
void vap_policy_begin(struct vap_out *o, enum rule_id id, const struct vap_match *m);
/* spec.matchConditions[] entries; all before the first variable. */
void vap_match_condition(struct vap_out *o, const char *name, const struct cel *expr);
/* spec.variables[] entries; all after the match conditions. */
void vap_variable(struct vap_out *o, const char *name, const struct cel *expr);
/* spec.validations[] entries; message is the rule's summary, prefixed with
 * the rule id; message_expr may be NULL. */
void vap_validation(struct vap_out *o, enum rule_id id, const struct cel *expr, const struct cel *message_expr);
/* spec.auditAnnotations[] entries; after the validations. */
void vap_audit_annotation(struct vap_out *o, const char *key, const struct cel *expr);
/* Finish the policy and write its binding, with the validation actions
 * the policy gives the rule. */
void vap_policy_end(struct vap_out *o, enum rule_id id, const struct vap_match *m);

/* Record a failure (the first one stays). */
void vap_fail(struct vap_out *o, int rc);

/* --- vap_cel.c: shared building blocks ------------------------------------------ */

/* Exact quantity tests. CEL has no multiplication or rounding of
 * quantities, and isInteger() is false for whole numbers held with a
 * fractional scale (quantity('3000m'), any result of add()), so these take
 * a candidate from asApproximateFloat() and confirm it with an exact
 * compareTo(). Each is exact below its bound and false at or above it
 * ("cannot tell"): callers test the bound themselves where false must not
 * be read as "no". x and p are CEL expressions of type Quantity, >= 0,
 * evaluated more than once (a re-parse costs less than a bind). */
#define VAP_WHOLE_BOUND "9007199254740992"      /* 2^53 */
#define VAP_MILLI_BOUND "4000000000000"         /* 4e12: x * 1000 below 2^52 */
/* The multiplier and the hugepage size of mapping (k, m). */
#define VAP_AMOUNT "quantity(m.allocationMultiplier)"
#define VAP_PAGE "quantity(k.substring(10))"

/* The variables the tests read (quantity() of a literal is parsed on every
 * call; a variable once per evaluation): whole (2^53), milli (4e12), one,
 * int64 (2^63 - 1). Declare them in every policy that uses the tests. */
void vap_quantity_constants(struct vap_out *o);
/* x is a whole number (x < 2^53). */
void cel_is_whole(struct cel *c, const char *x);
/* x is a whole number of millis (x < 4e12). */
void cel_is_milli(struct cel *c, const char *x);
/* x is a whole number of p, p whole and 1 <= p (x, p < 2^53). */
void cel_is_multiple(struct cel *c, const char *x, const char *p);
/* p is a valid hugepage size: positive and whole (or 2^53 and more, which
 * cannot be told and is taken as valid). */
void cel_page_ok(struct cel *c, const char *p);

/* The request's user as the webhook names it in messages:
 * 'user "alice" (node-name "worker-1")'. A CEL string expression. */
void cel_who(struct cel *c);
/* The node-name values of the request's token, a CEL list (empty when the
 * token has none). */
void cel_token_nodes(struct cel *c);
/* The request's user is one of the listed names / in one of the listed
 * groups. */
void cel_user_in(struct cel *c, const struct string_list *users);
void cel_group_in(struct cel *c, const struct string_list *groups);

/* Variables chunk0..chunk7 and one validation each, for a rule judged on
 * each mapping: bad is a CEL condition over i (device index), d (device),
 * k (resource name) and m (the mapping); msg a CEL string over the same
 * naming the path and the value. The message names the first offence of
 * the chunk and how many more it holds. Call after every other variable
 * of the policy. */
void vap_mapping_chunks(struct vap_out *o, enum rule_id id, const char *bad, const char *msg);
/* The same where one expression gives a mapping's messages: msgs is a CEL
 * list of strings over i, d, k and m (empty when nothing is wrong), for a
 * rule whose test and message share what they work out. */
void vap_mapping_chunk_lists(struct vap_out *o, enum rule_id id, const char *msgs);
/* The same for a rule judged on each device (i, d). */
void vap_device_chunks(struct vap_out *o, enum rule_id id, const char *bad, const char *msg);

/* The CEL condition "the slice carries mappings" (on object, or x). */
#define VAP_SLICE_HAS_MAPPINGS_OF(x) \
	"has(" x ".spec.devices) && " x ".spec.devices.exists(d, has(d.nodeAllocatableResourceMappings) " \
	"&& size(d.nodeAllocatableResourceMappings) > 0)"
#define VAP_SLICE_HAS_MAPPINGS VAP_SLICE_HAS_MAPPINGS_OF("object")

/* What an UPDATE leaves as it was. A violation the stored slice already
 * holds is warned by the engine, not denied (slice_rules.c, "what an UPDATE
 * leaves as it was"). In a policy written with o->ratchet, the chunk scans
 * drop a device's offences when the device is unchanged (worked out only for
 * a device that has offences), and a slice-wide validation passes when the
 * slice's mappings, driver and node are unchanged (the variable
 * sliceUnchanged, read only when the validation fails). The engine's
 * warning for such a violation has no counterpart: a second policy bound to
 * Warn would judge every UPDATE twice. ok is what must hold. */
void vap_slice_validation(struct vap_out *o, enum rule_id id, const struct cel *ok, const struct cel *msg);
/* Declare sliceUnchanged (nothing unless ratcheting; once per policy): a
 * policy with slice-wide validations calls it before its first validation. */
void vap_slice_unchanged(struct vap_out *o);

/* "spec.devices[3].nodeAllocatableResourceMappings[\"memory\"]" as CEL. */
#define VAP_MAPPING_PATH \
	"'spec.devices[' + string(i) + '].nodeAllocatableResourceMappings[\"' + k + '\"]'"

/* The resource name k is one the scheduler accounts (slice.mapping.name's
 * test). */
void cel_name_ok(struct cel *c);

/* --- vap_capacity.c: capacity mode ------------------------------------------------
 *
 * Conditions and messages over a mapping with a capacityKey, inside the
 * mapping scan (i, d, k, m), mirroring slice_rules.c over the amounts the
 * capacity's requestPolicy lets one allocation consume. A condition holds
 * only where the engine certainly flags; a message is read only where its
 * condition holds. The policies using them declare vap_quantity_constants(). */

/* slice.mapping.units: the messages (a CEL list of strings, empty when
 * none) of the amounts one allocation can consume whose product with the
 * multiplier cannot be real. */
void vap_capacity_units_msgs(struct cel *c);
/* slice.mapping.units.open: claims pick any amount, and unit_bad (a
 * condition on the multiplier alone) holds; unit_why says why (a CEL
 * string over the same). */
void vap_units_open_bad(struct cel *c, const char *unit_bad);
void vap_units_open_msg(struct cel *c, const char *unit_why);
/* slice.mapping.bounds: the messages (a CEL list) where the most one
 * allocation can consume, bound as c (a quantity), times the multiplier,
 * bound as u, makes over true (over reads top, the driver's max, bound by
 * the caller); each message is the path and the amount, then tail (a CEL
 * string expression). */
void vap_capacity_bounds_msgs(struct cel *c, const char *over, const char *tail);

/* --- the rules ---------------------------------------------------------------------- */

/* Each writes the policy and binding of rule id when it is one of theirs
 * and has something to check under o->p (vap_rule_info() decides which
 * rules are asked for). */
void vap_slice_rule(struct vap_out *o, enum rule_id id);      /* vap_slice.c */
void vap_access_rule(struct vap_out *o, enum rule_id id);     /* vap_access.c */
void vap_freeze_rule(struct vap_out *o, enum rule_id id);     /* vap_freeze.c */

#endif
