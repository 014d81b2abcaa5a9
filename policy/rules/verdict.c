/* verdict.c - what the engine decides about one request. */
#include "verdict.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"

#define VERDICT_MAX_AUDIT 64
/* The API server keeps a few KiB of warnings per response; past this many the
 * rest are summed up in one line. */
#define VERDICT_MAX_WARNINGS 16
/* Status.message is shown by kubectl; the full list is in the audit log. */
#define VERDICT_MESSAGE_MAX (16 * 1024)
#define VERDICT_AUDIT_VALUE_MAX 1024

void verdict_init(struct verdict *v, uint32_t max_violations)
{
	memset(v, 0, sizeof(*v));
	v->allowed = true;
	v->max_violations = max_violations;
}

int verdict_add(struct verdict *v, struct arena *a, enum rule_id rule, enum action action,
		struct str path, struct str message)
{
	struct violation *nv;

	if (v->nviolations >= v->max_violations)
		return -E2BIG;
	/* Grow by doubling; arena_grow extends in place when nothing came after. */
	if (v->nviolations == 0 || (v->nviolations >= 8 && (v->nviolations & (v->nviolations - 1)) == 0)) {
		size_t old_n = v->nviolations, new_n = old_n ? old_n * 2 : 8;

		nv = arena_grow(a, v->violations, old_n * sizeof(*nv), new_n * sizeof(*nv));
		if (!nv)
			return arena_error(a);
		v->violations = nv;
	}
	nv = &v->violations[v->nviolations++];
	nv->rule = rule;
	nv->action = action;
	nv->path = path;
	nv->message = message;
	nv->cause = 0;
	nv->view_lag = false;
	return 0;
}

static bool alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool verdict_audit_key_valid(struct str key)
{
	size_t i;

	if (key.len == 0 || key.len > VERDICT_AUDIT_KEY_MAX || !alnum(key.ptr[0]) || !alnum(key.ptr[key.len - 1]))
		return false;
	for (i = 0; i < key.len; i++)
		if (!alnum(key.ptr[i]) && key.ptr[i] != '-' && key.ptr[i] != '_' && key.ptr[i] != '.')
			return false;
	return true;
}

int verdict_audit(struct verdict *v, struct arena *a, struct str key, struct str value)
{
	struct audit_annotation *na;

	if (!verdict_audit_key_valid(key))
		return -EINVAL;
	if (v->naudit >= VERDICT_MAX_AUDIT)
		return -E2BIG;
	if (v->naudit == 0) {
		v->audit = arena_calloc(a, VERDICT_MAX_AUDIT, sizeof(*v->audit));
		if (!v->audit)
			return arena_error(a);
	}
	na = &v->audit[v->naudit++];
	na->key = key;
	na->value = value;
	return 0;
}

/* Cut s to at most max bytes on a UTF-8 boundary, ending in "..." when cut. */
static int shorten(struct arena *a, const char *s, size_t n, size_t max, struct str *out)
{
	size_t keep;
	char *p;

	if (n <= max)
		return arena_strdup(a, s, n, out);
	keep = max - 3;
	while (keep > 0 && ((unsigned char)s[keep] & 0xc0) == 0x80)
		keep--;
	p = arena_alloc(a, keep + 4);
	if (!p)
		return arena_error(a);
	memcpy(p, s, keep);
	memcpy(p + keep, "...", 4);
	out->ptr = p;
	out->len = keep + 3;
	return 0;
}

/* The text of b (a buffer in the arena), or "" when nothing was added. */
static struct str buf_str(const struct buf *b)
{
	return (struct str){ buf_cstr(b), buf_len(b) };
}

static int add_warning(struct verdict *v, struct arena *a, const struct violation *vi)
{
	char line[512];
	int n;

	n = snprintf(line, sizeof(line), "[%s] %.*s", rule_name(vi->rule), STR_FMT(vi->message));
	if (n < 0)
		return -EINVAL;
	return shorten(a, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1,
		       VERDICT_WARNING_MAX, &v->warnings[v->nwarnings++]);
}

/* One audit annotation per dry-run rule: its first message and a count. */
static int add_dryrun_audit(struct verdict *v, struct arena *a, uint32_t idx)
{
	const struct violation *vi = &v->violations[idx];
	uint32_t i, count = 0;
	struct str key, value = { "", 0 };
	char text[VERDICT_AUDIT_VALUE_MAX + 64];
	int n, rc;

	for (i = 0; i < idx; i++)
		if (v->violations[i].rule == vi->rule && v->violations[i].action == ACTION_DRYRUN)
			return 0;       /* already annotated */
	for (i = idx; i < v->nviolations; i++)
		if (v->violations[i].rule == vi->rule && v->violations[i].action == ACTION_DRYRUN)
			count++;
	key = str_from_cstr(rule_name(vi->rule));
	if (count > 1)
		n = snprintf(text, sizeof(text), "%.*s (and %u more)",
			     (int)(vi->message.len > VERDICT_AUDIT_VALUE_MAX ? VERDICT_AUDIT_VALUE_MAX
									     : vi->message.len),
			     vi->message.ptr, count - 1);
	else
		n = snprintf(text, sizeof(text), "%.*s",
			     (int)(vi->message.len > VERDICT_AUDIT_VALUE_MAX ? VERDICT_AUDIT_VALUE_MAX
									     : vi->message.len),
			     vi->message.ptr);
	if (n < 0)
		return -EINVAL;
	rc = arena_strdup(a, text, (size_t)n < sizeof(text) ? (size_t)n : sizeof(text) - 1, &value);
	if (rc)
		return rc;
	return verdict_audit(v, a, key, value);
}

static int denial_annotations(struct verdict *v, struct arena *a, const char *policy_hash)
{
	struct buf rules;
	uint32_t i, j;
	int rc = 0;

	buf_init_in(&rules, 4096, a);
	for (i = 0; i < v->nviolations && rc == 0; i++) {
		const struct violation *vi = &v->violations[i];
		bool seen = false;

		if (vi->action != ACTION_DENY)
			continue;
		for (j = 0; j < i && !seen; j++)
			seen = v->violations[j].action == ACTION_DENY && v->violations[j].rule == vi->rule;
		if (!seen)
			rc = buf_printf(&rules, "%s%s", buf_len(&rules) ? "," : "", rule_name(vi->rule));
	}
	if (rc == 0)
		rc = verdict_audit(v, a, STR_LIT("denied-rules"), buf_str(&rules));
	if (rc == 0 && policy_hash)
		rc = verdict_audit(v, a, STR_LIT("policy-hash"), str_from_cstr(policy_hash));
	return rc;
}

static int denial_message(struct verdict *v, struct arena *a, const char *object_desc)
{
	struct buf msg;
	uint32_t i, shown = 0, ndeny = 0;
	int rc;

	for (i = 0; i < v->nviolations; i++)
		ndeny += v->violations[i].action == ACTION_DENY;
	buf_init_in(&msg, VERDICT_MESSAGE_MAX + 256, a);
	rc = buf_printf(&msg, "%s denied by dra-guard: ", object_desc && *object_desc ? object_desc : "request");
	for (i = 0; i < v->nviolations && rc == 0; i++) {
		const struct violation *vi = &v->violations[i];

		if (vi->action != ACTION_DENY)
			continue;
		if (buf_len(&msg) + vi->message.len + 64 > VERDICT_MESSAGE_MAX)
			break;
		rc = buf_printf(&msg, "%s[%s] %.*s", shown ? "; " : "", rule_name(vi->rule),
				STR_FMT(vi->message));
		shown++;
	}
	if (rc == 0 && shown < ndeny)
		rc = buf_printf(&msg, "; and %u more violations (the audit log has the rule ids)",
				ndeny - shown);
	if (rc == 0)
		v->message = buf_str(&msg);
	return rc;
}

int verdict_finish(struct verdict *v, struct arena *a, const char *object_desc,
		   const char *policy_hash)
{
	uint32_t i, nwarn = 0;
	int rc = 0;

	for (i = 0; i < v->nviolations; i++) {
		if (v->violations[i].action == ACTION_DENY)
			v->allowed = false;
		else if (v->violations[i].action == ACTION_WARN)
			nwarn++;
	}
	if (nwarn) {
		uint32_t slots = nwarn > VERDICT_MAX_WARNINGS ? VERDICT_MAX_WARNINGS + 1 : nwarn;

		v->warnings = arena_calloc(a, slots, sizeof(*v->warnings));
		if (!v->warnings)
			return arena_error(a);
		for (i = 0; i < v->nviolations && rc == 0; i++) {
			if (v->violations[i].action != ACTION_WARN)
				continue;
			if (v->nwarnings == VERDICT_MAX_WARNINGS) {
				rc = arena_printf(a, &v->warnings[v->nwarnings++],
						  "dra-guard: %u more warnings not shown",
						  nwarn - VERDICT_MAX_WARNINGS);
				break;
			}
			rc = add_warning(v, a, &v->violations[i]);
		}
	}
	for (i = 0; i < v->nviolations && rc == 0; i++)
		if (v->violations[i].action == ACTION_DRYRUN)
			rc = add_dryrun_audit(v, a, i);
	if (rc == 0 && !v->allowed) {
		v->code = 403;
		rc = denial_message(v, a, object_desc);
		if (rc == 0)
			rc = denial_annotations(v, a, policy_hash);
	}
	return rc;
}

int verdict_fail(struct verdict *v, struct arena *a, int32_t code, const char *message)
{
	uint32_t max = v->max_violations;
	int rc;

	verdict_init(v, max);
	v->allowed = false;
	v->code = code;
	rc = arena_strdup(a, message, strlen(message), &v->message);
	if (rc)
		v->message = str_from_cstr("dra-guard could not decide this request");
	return rc;
}
