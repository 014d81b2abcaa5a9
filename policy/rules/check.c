/* check.c - what a rule is given, and how it reports. */
#include "check.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mutant.h"

#define CHECK_TEXT_MAX 2048

/* A denial of something the stored object already holds would refuse every
 * later write of it (a driver's republish after the policy tightened)
 * while leaving what it objects to in place: it is warned instead. */
#define UNCHANGED_NOTE "unchanged from the stored object, so warned, not denied: "

static void record(struct check *c, enum rule_id id, struct str path, const char *msg, bool at_most_warn);

/* Every report of a rule: the message formatted once, recorded, and the
 * violation it added (if any: a rule the policy turned off adds none)
 * given its cause and whether the view's lag could explain it. */
static void vreport(struct check *c, enum rule_id id, uint8_t cause, bool view_lag, struct str path,
		    bool at_most_warn, const char *msg_fmt, va_list ap)
{
	char msg[CHECK_TEXT_MAX];
	uint32_t before = c->verdict->nviolations;

	if (c->error)
		return;
	vsnprintf(msg, sizeof(msg), msg_fmt, ap);
	record(c, id, path, msg, at_most_warn);
	if (c->verdict->nviolations > before) {
		c->verdict->violations[before].cause = cause;
		c->verdict->violations[before].view_lag = view_lag;
	}
}

void check_violation_cause(struct check *c, enum rule_id id, uint8_t cause, bool view_lag, struct str path,
			   const char *msg_fmt, ...)
{
	va_list ap;

	va_start(ap, msg_fmt);
	vreport(c, id, cause, view_lag, path, false, msg_fmt, ap);
	va_end(ap);
}

void check_warning_cause(struct check *c, enum rule_id id, uint8_t cause, struct str path, const char *msg_fmt, ...)
{
	va_list ap;

	va_start(ap, msg_fmt);
	vreport(c, id, cause, false, path, true, msg_fmt, ap);
	va_end(ap);
}

void check_undecided(struct check *c, enum rule_id id, uint8_t reason)
{
	struct verdict *v = c->verdict;

	if (v->nundecided < VERDICT_MAX_UNDECIDED)
		v->undecided[v->nundecided] = (struct undecided){ id, reason };
	v->nundecided++;
}

void check_claim_uid(struct check *c, struct str uid)
{
	struct verdict *v = c->verdict;
	struct str out;

	if (c->error || uid.len == 0)
		return;
	if (v->claim_uids.len && memmem(v->claim_uids.ptr, v->claim_uids.len, uid.ptr, uid.len))
		return;
	if (v->claim_uids.len > 4096)
		return;   /* enough for a log line */
	if (arena_printf(c->arena, &out, "%.*s%s%.*s", STR_FMT(v->claim_uids), v->claim_uids.len ? "," : "",
			 STR_FMT(uid)) != 0) {
		c->error = arena_error(c->arena);
		return;
	}
	v->claim_uids = out;
}

static void record(struct check *c, enum rule_id id, struct str path, const char *msg, bool at_most_warn)
{
	enum action action = policy_action(c->policy, id);
	const char *note = "";
	struct str message;
	int rc;

	if (c->error)
		return;
	if (c->preexisting && action == ACTION_DENY) {
		action = ACTION_WARN;
		note = UNCHANGED_NOTE;
	}
	if (at_most_warn && action == ACTION_DENY)
		action = ACTION_WARN;
#ifdef DRA_GUARD_MUTANT
	rc = mutant_action(id, action, c->verdict);
	if (rc < 0)
		return;
	action = (enum action)rc;
#endif
	if (path.len)
		rc = arena_printf(c->arena, &message, "%.*s: %s%s", STR_FMT(path), note, msg);
	else
		rc = arena_printf(c->arena, &message, "%s%s", note, msg);
	if (rc == 0)
		rc = verdict_add(c->verdict, c->arena, id, action, path, message);
	if (rc)
		c->error = rc;
}

void check_violation(struct check *c, enum rule_id id, const char *path, const char *msg_fmt, ...)
{
	va_list ap;

	va_start(ap, msg_fmt);
	vreport(c, id, 0, false, str_from_cstr(path), false, msg_fmt, ap);
	va_end(ap);
}

void check_violation_at(struct check *c, enum rule_id id, struct str path, const char *msg_fmt, ...)
{
	va_list ap;

	va_start(ap, msg_fmt);
	vreport(c, id, 0, false, path, false, msg_fmt, ap);
	va_end(ap);
}

struct str check_printf(struct check *c, const char *fmt, ...)
{
	char text[1024];
	struct str out = { "", 0 };
	va_list ap;
	int n;

	if (c->error)
		return out;
	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (n < 0)
		return out;
	if (arena_strdup(c->arena, text, (size_t)n < sizeof(text) ? (size_t)n : sizeof(text) - 1, &out))
		c->error = arena_error(c->arena);
	return out;
}

struct str check_names(struct check *c, const void *items, size_t n, size_t stride, size_t offset)
{
	char text[1024];
	size_t i, shown = n < CHECK_NAMES_SHOWN ? n : CHECK_NAMES_SHOWN, used = 0;
	struct str out = { "", 0 };
	int w;

	if (c->error)
		return out;
	if (n == 0)
		return STR_LIT("none");
	text[0] = '\0';
	for (i = 0; i < shown && used < sizeof(text); i++) {
		const struct str *name = (const struct str *)(const void *)((const char *)items + i * stride + offset);
		const char *sep = i == 0 ? "" : i + 1 == n ? " and " : ", ";

		w = snprintf(text + used, sizeof(text) - used, "%s%.*s", sep,
			     (int)(name->len > CHECK_NAME_MAX ? CHECK_NAME_MAX : name->len), name->ptr);
		if (w < 0)
			break;
		used += (size_t)w;
	}
	if (shown < n && used < sizeof(text))
		snprintf(text + used, sizeof(text) - used, " and %zu more", n - shown);
	if (arena_strdup(c->arena, text, strnlen(text, sizeof(text)), &out)) {
		c->error = arena_error(c->arena);
		return (struct str){ "", 0 };
	}
	return out;
}

struct str check_list_names(struct check *c, const struct string_list *l)
{
	return check_names(c, l->items, l->n, sizeof(*l->items), 0);
}

struct str check_who(struct check *c)
{
	const struct user_info *u = &c->req->user;
	const struct str *node;
	uint32_t n;

	node = model_user_extra(u, MODEL_EXTRA_NODE_NAME, &n);
	if (n == 1)
		return check_printf(c, "user \"%.*s\" (node-name \"%.*s\")", STR_FMT(u->username),
				    STR_FMT(node[0]));
	return check_printf(c, "user \"%.*s\"", STR_FMT(u->username));
}

void check_break_glass(struct check *c, const char *fmt, ...)
{
	char text[512];
	va_list ap;
	int n;

	if (c->error)
		return;
	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (c->verdict->break_glass)
		return;         /* the first bypass is the one reported */
	if (arena_strdup(c->arena, text, (size_t)n < sizeof(text) ? (size_t)n : sizeof(text) - 1,
			 &c->verdict->break_glass_detail)) {
		c->error = arena_error(c->arena);
		return;
	}
	c->verdict->break_glass = true;
}

bool check_user_is(const struct check *c, const struct string_list *users)
{
	return policy_list_has(users, c->req->user.username);
}

bool check_user_in(const struct check *c, const struct string_list *groups)
{
	uint32_t i;

	for (i = 0; i < c->req->user.ngroups; i++)
		if (policy_list_has(groups, c->req->user.groups[i]))
			return true;
	return false;
}

int check_shown(struct str s)
{
	return (int)(s.len > CHECK_SHOW_MAX ? CHECK_SHOW_MAX : s.len);
}
