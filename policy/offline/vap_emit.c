/* vap_emit.c - the YAML of the policies and bindings, and the CEL literals
 * that carry policy values into expressions.
 *
 * Expressions go out as YAML literal block scalars (|-), which take text as
 * it is; everything a policy contributes to an expression is a CEL literal
 * escaped to printable ASCII first, so no value can end a string, a block or
 * a document early. */
#include "vap_impl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum section { SEC_NONE = 0, SEC_MATCH, SEC_VARIABLES, SEC_VALIDATIONS, SEC_AUDIT };

void vap_fail(struct vap_out *o, int rc)
{
	if (!o->rc)
		o->rc = rc;
}

/* --- CEL expressions ------------------------------------------------------------ */

void cel_init(struct cel *c)
{
	buf_init(&c->b, VAP_EXPR_MAX);
	c->rc = 0;
}

void cel_free(struct cel *c)
{
	buf_free(&c->b);
}

const char *cel_text(const struct cel *c)
{
	return buf_cstr(&c->b);
}

void cel_add(struct cel *c, const char *fmt, ...)
{
	va_list ap;

	if (c->rc)
		return;
	va_start(ap, fmt);
	c->rc = buf_vprintf(&c->b, fmt, ap);
	va_end(ap);
}

/* The code point of the UTF-8 sequence at s[*i], advancing *i; -1 when the
 * bytes are not UTF-8 (overlong forms and surrogates included). */
static long utf8_next(const unsigned char *s, size_t n, size_t *i)
{
	unsigned char c = s[*i];
	size_t len, k;
	long cp, min;

	if (c < 0x80) {
		(*i)++;
		return c;
	}
	if ((c & 0xe0) == 0xc0) {
		len = 2; cp = c & 0x1f; min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		len = 3; cp = c & 0x0f; min = 0x800;
	} else if ((c & 0xf8) == 0xf0) {
		len = 4; cp = c & 0x07; min = 0x10000;
	} else {
		return -1;
	}
	if (*i + len > n)
		return -1;
	for (k = 1; k < len; k++) {
		if ((s[*i + k] & 0xc0) != 0x80)
			return -1;
		cp = (cp << 6) | (s[*i + k] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return -1;
	*i += len;
	return cp;
}

void cel_str(struct cel *c, struct str s)
{
	const unsigned char *p = (const unsigned char *)s.ptr;
	size_t i = 0;

	if (c->rc)
		return;
	c->rc = buf_add_char(&c->b, '\'');
	while (!c->rc && i < s.len) {
		long cp = utf8_next(p, s.len, &i);

		if (cp < 0)
			c->rc = -EINVAL;
		else if (cp == '\'' || cp == '\\')
			c->rc = buf_printf(&c->b, "\\%c", (char)cp);
		else if (cp == '\n')
			c->rc = buf_add_cstr(&c->b, "\\n");
		else if (cp == '\t')
			c->rc = buf_add_cstr(&c->b, "\\t");
		else if (cp < 0x20 || cp == 0x7f)
			c->rc = buf_printf(&c->b, "\\x%02lx", cp);
		else if (cp < 0x80)
			c->rc = buf_add_char(&c->b, (char)cp);
		else if (cp <= 0xffff)
			c->rc = buf_printf(&c->b, "\\u%04lx", cp);
		else
			c->rc = buf_printf(&c->b, "\\U%08lx", cp);
	}
	if (!c->rc)
		c->rc = buf_add_char(&c->b, '\'');
}

void cel_cstr(struct cel *c, const char *s)
{
	cel_str(c, str_from_cstr(s));
}

void cel_str_list(struct cel *c, const struct string_list *l)
{
	size_t i;

	cel_add(c, "[");
	for (i = 0; i < l->n; i++) {
		if (i)
			cel_add(c, ", ");
		cel_str(c, l->items[i]);
	}
	cel_add(c, "]");
}

void cel_quantity(struct cel *c, const struct quantity *q)
{
	char text[QUANTITY_STR_MAX];

	quantity_format(q, text);
	cel_add(c, "quantity(");
	cel_cstr(c, text);
	cel_add(c, ")");
}

/* --- globs as regular expressions ------------------------------------------------ */

static bool glob_literal(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '.' || ch == '_' || ch == ':' || ch == '-';
}

static bool glob_range_end(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}

static const char *const glob_classes[] = {
	"alnum", "alpha", "blank", "cntrl", "digit", "graph", "lower", "print", "punct", "space",
	"upper", "xdigit", NULL
};

/* One bracket expression of s starting at s[*i] == '['; *i ends after ']'. */
static int glob_bracket(struct str s, size_t *i, struct buf *out)
{
	size_t j = *i + 1;
	bool dash = false, any = false;
	int rc;

	if ((rc = buf_add_char(out, '[')) != 0)
		return rc;
	if (j < s.len && (s.ptr[j] == '!' || s.ptr[j] == '^')) {
		if ((rc = buf_add_char(out, '^')) != 0)
			return rc;
		j++;
	}
	/* A ']' first would be a literal; node names never hold one. */
	if (j < s.len && s.ptr[j] == ']')
		return -ENOTSUP;
	while (j < s.len && s.ptr[j] != ']') {
		char ch = s.ptr[j];

		if (ch == '[') {
			const char *end;
			size_t k, nlen;

			if (j + 1 >= s.len || s.ptr[j + 1] != ':')
				return -ENOTSUP;     /* [= =], [. .], or a lone '[' */
			end = memchr(s.ptr + j + 2, ':', s.len - j - 2);
			if (!end || (size_t)(end - s.ptr) + 1 >= s.len || end[1] != ']')
				return -ENOTSUP;
			nlen = (size_t)(end - (s.ptr + j + 2));
			for (k = 0; glob_classes[k]; k++)
				if (strlen(glob_classes[k]) == nlen && memcmp(glob_classes[k], s.ptr + j + 2, nlen) == 0)
					break;
			if (!glob_classes[k])
				return -ENOTSUP;
			if ((rc = buf_printf(out, "[:%s:]", glob_classes[k])) != 0)
				return rc;
			j = (size_t)(end - s.ptr) + 2;
			any = true;
			continue;
		}
		if (ch == '-') {
			/* A '-' that does not make a range is a literal; it goes
			 * last, where both dialects read it so. */
			dash = true;
			j++;
			continue;
		}
		if (!glob_literal(ch))
			return -ENOTSUP;
		if (j + 2 < s.len && s.ptr[j + 1] == '-' && s.ptr[j + 2] != ']') {
			char hi = s.ptr[j + 2];

			if (!glob_range_end(ch) || !glob_range_end(hi) || hi < ch)
				return -ENOTSUP;
			if ((rc = buf_printf(out, "%c-%c", ch, hi)) != 0)
				return rc;
			j += 3;
		} else {
			if ((rc = buf_add_char(out, ch)) != 0)
				return rc;
			j++;
		}
		any = true;
	}
	if (j >= s.len)
		return -ENOTSUP;             /* unclosed: fnmatch reads '[' literally */
	if (!any && !dash)
		return -ENOTSUP;
	if (dash && (rc = buf_add_char(out, '-')) != 0)
		return rc;
	*i = j + 1;
	return buf_add_char(out, ']');
}

static int glob_one(struct str s, struct buf *out)
{
	size_t i = 0;
	int rc = 0;

	while (!rc && i < s.len) {
		char ch = s.ptr[i];

		if (ch == '*') {
			rc = buf_add_cstr(out, ".*");
			i++;
		} else if (ch == '?') {
			rc = buf_add_char(out, '.');
			i++;
		} else if (ch == '[') {
			rc = glob_bracket(s, &i, out);
		} else if (ch == '.') {
			rc = buf_add_cstr(out, "\\.");
			i++;
		} else if (glob_literal(ch)) {
			rc = buf_add_char(out, ch);
			i++;
		} else {
			rc = -ENOTSUP;
		}
	}
	return rc;
}

int vap_glob_regex(const struct string_list *globs, struct buf *out)
{
	size_t before = buf_len(out), i;
	int rc = buf_add_cstr(out, "^(");

	for (i = 0; !rc && i < globs->n; i++) {
		if (i)
			rc = buf_add_char(out, '|');
		if (!rc)
			rc = glob_one(globs->items[i], out);
	}
	if (!rc)
		rc = buf_add_cstr(out, ")$");
	if (rc)
		buf_truncate(out, before);
	return rc;
}

/* --- YAML ---------------------------------------------------------------------------- */

static void yaml_add(struct vap_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void yaml_add(struct vap_out *o, const char *fmt, ...)
{
	char text[1024];
	va_list ap;
	int n;

	if (o->rc)
		return;
	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(text)) {
		vap_fail(o, -EINVAL);
		return;
	}
	vap_fail(o, buf_add(o->yaml, text, (size_t)n));
}

/* A double-quoted YAML scalar. What the generator writes there (rule ids,
 * summaries, hashes, Kubernetes object names) is printable ASCII; anything
 * else is escaped byte by byte, which still gives valid YAML. */
static void yaml_quoted_str(struct vap_out *o, struct str s)
{
	size_t i;

	if (o->rc)
		return;
	vap_fail(o, buf_add_char(o->yaml, '"'));
	for (i = 0; i < s.len && !o->rc; i++) {
		unsigned char ch = (unsigned char)s.ptr[i];

		if (ch == '"' || ch == '\\')
			vap_fail(o, buf_printf(o->yaml, "\\%c", ch));
		else if (ch < 0x20 || ch >= 0x7f)
			vap_fail(o, buf_printf(o->yaml, "\\x%02x", ch));
		else
			vap_fail(o, buf_add_char(o->yaml, (char)ch));
	}
	vap_fail(o, buf_add_char(o->yaml, '"'));
}

static void yaml_quoted(struct vap_out *o, const char *s)
{
	yaml_quoted_str(o, str_from_cstr(s));
}

/* lead, then key: |- and the expression's lines. Every key of a list entry
 * sits in column 4, so the block's lines are indented by 6. */
static void yaml_block(struct vap_out *o, const char *lead, const char *key, const struct cel *e)
{
	const char *p = cel_text(e), *nl;

	if (e->rc) {
		vap_fail(o, e->rc);
		return;
	}
	yaml_add(o, "%s%s: |-\n", lead, key);
	while (!o->rc && *p) {
		nl = strchr(p, '\n');
		if (!nl)
			nl = p + strlen(p);
		vap_fail(o, buf_add_cstr(o->yaml, "      "));
		vap_fail(o, buf_add(o->yaml, p, (size_t)(nl - p)));
		vap_fail(o, buf_add_char(o->yaml, '\n'));
		p = *nl ? nl + 1 : nl;
	}
}

static void yaml_metadata(struct vap_out *o, enum rule_id id)
{
	char name[VAP_NAME_MAX];

	vap_object_name(id, name);
	yaml_add(o, "metadata:\n  name: %s\n", name);
	yaml_add(o, "  labels:\n    app.kubernetes.io/name: dra-guard\n"
		 "    app.kubernetes.io/component: admission-policy\n    dra-guard.io/rule: %s\n",
		 rule_name(id));
	yaml_add(o, "  annotations:\n    dra-guard.io/policy-hash: \"%s\"\n", o->p->hash);
}

/* Labels, annotations, ownerReferences, finalizers: no rule reads them, and
 * the engine lets an UPDATE that changes nothing else pass for whoever RBAC
 * let through (the garbage collector orphaning a slice, a controller adding
 * a finalizer). Everything but metadata is spec, and status on the status
 * subresources. A policy matching UPDATE declares this first among its
 * variables, and every validation passes when it holds; as a variable it
 * is worked out only when a validation fails (comparing two large objects
 * is most of what an UPDATE costs the API server otherwise). */
static void only_metadata_variable(struct vap_out *o)
{
	struct cel c;

	cel_init(&c);
	cel_add(&c, "request.operation == 'UPDATE' && object.spec == oldObject.spec");
	if (strstr(o->match->resource, "/status"))
		cel_add(&c, " &&\nhas(object.status) == has(oldObject.status) && "
			"(!has(object.status) || object.status == oldObject.status)");
	yaml_add(o, "  - name: onlyMetadata\n");
	yaml_block(o, "    ", "expression", &c);
	cel_free(&c);
}

static bool matches_update(const struct vap_out *o)
{
	return o->match && strstr(o->match->operations, "UPDATE") != NULL;
}

void vap_policy_begin(struct vap_out *o, enum rule_id id, const struct vap_match *m)
{
	yaml_add(o, "---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\n");
	yaml_metadata(o, id);
	yaml_add(o, "spec:\n  failurePolicy: %s\n", m->fail_open ? "Ignore" : "Fail");
	yaml_add(o, "  matchConstraints:\n    matchPolicy: Equivalent\n    resourceRules:\n"
		 "    - apiGroups: [\"%s\"]\n      apiVersions: [\"v1\"]\n      operations: %s\n"
		 "      resources: [\"%s\"]\n", m->group, m->operations, m->resource);
	if (m->params)
		yaml_add(o, "  paramKind:\n    apiVersion: v1\n    kind: ConfigMap\n");
	o->section = SEC_NONE;
	o->slice_unchanged_declared = false;
	o->match = m;
}

static void section(struct vap_out *o, int sec, const char *key)
{
	if (o->section > sec)
		vap_fail(o, -EINVAL);        /* out of order: a generator bug */
	if (sec >= SEC_VARIABLES && o->section < SEC_VARIABLES && matches_update(o)) {
		yaml_add(o, "  variables:\n");
		only_metadata_variable(o);
		o->section = SEC_VARIABLES;
	}
	if (o->section != sec)
		yaml_add(o, "  %s:\n", key);
	o->section = sec;
}

void vap_match_condition(struct vap_out *o, const char *name, const struct cel *expr)
{
	section(o, SEC_MATCH, "matchConditions");
	yaml_add(o, "  - name: %s\n", name);
	yaml_block(o, "    ", "expression", expr);
}

void vap_variable(struct vap_out *o, const char *name, const struct cel *expr)
{
	section(o, SEC_VARIABLES, "variables");
	yaml_add(o, "  - name: %s\n", name);
	yaml_block(o, "    ", "expression", expr);
}

void vap_validation(struct vap_out *o, enum rule_id id, const struct cel *expr, const struct cel *message_expr)
{
	char message[600];

	section(o, SEC_VALIDATIONS, "validations");
	if (matches_update(o)) {
		struct cel e;

		cel_init(&e);
		cel_add(&e, "(%s) || variables.onlyMetadata", cel_text(expr));
		if (expr->rc)
			e.rc = expr->rc;
		yaml_block(o, "  - ", "expression", &e);
		cel_free(&e);
	} else {
		yaml_block(o, "  - ", "expression", expr);
	}
	if (message_expr)
		yaml_block(o, "    ", "messageExpression", message_expr);
	snprintf(message, sizeof(message), "[%s] %s", rule_name(id), rule_summary(id));
	yaml_add(o, "    message: ");
	yaml_quoted(o, message);
	yaml_add(o, "\n    reason: Forbidden\n");
}

void vap_audit_annotation(struct vap_out *o, const char *key, const struct cel *expr)
{
	section(o, SEC_AUDIT, "auditAnnotations");
	yaml_add(o, "  - key: %s\n", key);
	yaml_block(o, "    ", "valueExpression", expr);
}

static const char *validation_actions(enum action a)
{
	switch (a) {
	case ACTION_DENY: return "[Deny]";
	case ACTION_WARN: return "[Warn]";
	case ACTION_DRYRUN: return "[Audit]";
	}
	return "[Deny]";
}

void vap_policy_end(struct vap_out *o, enum rule_id id, const struct vap_match *m)
{
	char name[VAP_NAME_MAX];

	if (o->section < SEC_VALIDATIONS)
		vap_fail(o, -EINVAL);        /* a policy without validations: a generator bug */
	vap_object_name(id, name);
	yaml_add(o, "---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\n");
	yaml_metadata(o, id);
	yaml_add(o, "spec:\n  policyName: %s\n  validationActions: %s\n", name,
		 validation_actions(policy_action(o->p, id)));
	if (m->params) {
		yaml_add(o, "  paramRef:\n    name: ");
		yaml_quoted_str(o, o->opt->param_name);
		yaml_add(o, "\n    namespace: ");
		yaml_quoted_str(o, o->opt->param_namespace);
		/* Deny: the policies' failurePolicy (Fail) then refuses, so a
		 * deleted ConfigMap does not lift a freeze. */
		yaml_add(o, "\n    parameterNotFoundAction: Deny\n");
	}
	o->section = SEC_NONE;
}
