/* policy_read.c - typed values out of a doc tree, and the path errors name.
 *
 * Every reader checks the node's type and records an error with the line,
 * the column and the path of the node being read (pushed and popped by the
 * section loaders), so a policy error always says where it is. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy_impl.h"

/* --- errors and the path stack ------------------------------------------ */

void policy_fail(struct loader *l, uint32_t line, uint32_t col, const char *fmt, ...)
{
	struct policy_error *e;
	va_list ap;

	if (l->stop)
		return;
	if (!l->rc)
		l->rc = -EINVAL;
	if (l->nerr++ >= l->err_cap || !l->err)
		return;
	e = &l->err[l->nerr - 1];
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	snprintf(e->path, sizeof(e->path), "%s", l->path);
	snprintf(e->source, sizeof(e->source), "%s", l->source ? l->source : "");
	e->line = line;
	e->col = col;
}

void policy_fail_nomem(struct loader *l)
{
	if (l->stop)
		return;
	if (l->borrowed && arena_error(l->a) == -E2BIG) {
		policy_fail(l, 0, 0, "checking the policy needs more memory than the request may use");
		l->rc = -E2BIG;
	} else {
		policy_fail(l, 0, 0, "out of memory (or over the %d byte policy size limit)",
			    POLICY_STORAGE_CAP);
		l->rc = -ENOMEM;
	}
	l->stop = true;
}

static bool key_needs_brackets(struct str key)
{
	size_t i;

	if (key.len == 0)
		return true;
	for (i = 0; i < key.len; i++) {
		char c = key.ptr[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return true;
	}
	return false;
}

/* Append ".key" or "[\"key\"]"; returns the length to pop back to. A path
 * that would not fit ends in "..." rather than failing the load. */
size_t policy_path_push_key(struct loader *l, struct str key)
{
	size_t saved = l->path_len, room = sizeof(l->path) - l->path_len;
	int n;

	if (key_needs_brackets(key))
		n = snprintf(l->path + l->path_len, room, "[\"%.*s\"]", STR_FMT(key));
	else
		n = snprintf(l->path + l->path_len, room, "%s%.*s",
			     l->path_len ? "." : "", STR_FMT(key));
	if (n < 0 || (size_t)n >= room) {
		l->path_len = sizeof(l->path) - 4;
		memcpy(l->path + l->path_len, "...", 4);
		l->path_len += 3;
	} else {
		l->path_len += (size_t)n;
	}
	return saved;
}

size_t policy_path_push_index(struct loader *l, size_t i)
{
	size_t saved = l->path_len, room = sizeof(l->path) - l->path_len;
	int n = snprintf(l->path + l->path_len, room, "[%zu]", i);

	if (n > 0 && (size_t)n < room)
		l->path_len += (size_t)n;
	return saved;
}

void policy_path_pop(struct loader *l, size_t saved)
{
	l->path_len = saved;
	l->path[saved] = '\0';
}

/* --- typed readers --------------------------------------------------------- */

bool policy_expect(struct loader *l, const struct doc_node *n, enum doc_type t)
{
	if (n->type == t)
		return true;
	policy_fail(l, n->line, n->col, "expected a %s, got a %s", doc_type_name(t), doc_type_name(n->type));
	return false;
}

/* Report every member of map n whose name is not in allowed
 * (NULL-terminated); true when there is none. */
bool policy_check_keys(struct loader *l, const struct doc_node *n, const char *const *allowed)
{
	bool all_known = true;
	size_t i, j;

	for (i = 0; i < n->n; i++) {
		const struct doc_member *m = &n->members[i];
		char list[256];
		size_t len = 0;

		for (j = 0; allowed[j]; j++)
			if (str_eq_cstr(m->key, allowed[j]))
				break;
		if (allowed[j])
			continue;
		list[0] = '\0';
		for (j = 0; allowed[j] && len < sizeof(list); j++) {
			int w = snprintf(list + len, sizeof(list) - len, "%s%s", j ? ", " : "", allowed[j]);

			if (w < 0)
				break;
			len += (size_t)w;
		}
		policy_fail(l, m->line, m->col, "unknown key \"%.*s\" (accepted: %s)", STR_FMT(m->key), list);
		all_known = false;
	}
	return all_known;
}

bool policy_copy_str(struct loader *l, struct str in, struct str *out)
{
	if (arena_strdup(l->a, in.ptr, in.len, out) != 0) {
		policy_fail_nomem(l);
		return false;
	}
	return true;
}

bool policy_read_string(struct loader *l, const struct doc_node *n, struct str *out)
{
	if (!policy_expect(l, n, DOC_STRING))
		return false;
	if (memchr(n->text.ptr, '\0', n->text.len)) {
		policy_fail(l, n->line, n->col, "string holds a NUL byte");
		return false;
	}
	return policy_copy_str(l, n->text, out);
}

bool policy_read_nonempty_string(struct loader *l, const struct doc_node *n, struct str *out)
{
	if (!policy_read_string(l, n, out))
		return false;
	if (out->len == 0) {
		policy_fail(l, n->line, n->col, "must not be empty");
		return false;
	}
	return true;
}

static int str_ptr_cmp(const void *a, const void *b)
{
	return str_cmp(*(const struct str *)a, *(const struct str *)b);
}

/* The length of s before its first glob character; s.len when it has none. */
static size_t literal_prefix(struct str s)
{
	size_t i;

	for (i = 0; i < s.len; i++)
		if (s.ptr[i] == '*' || s.ptr[i] == '?' || s.ptr[i] == '[' || s.ptr[i] == '\\')
			return i;
	return s.len;
}

struct pattern_pair {
	struct str prefix;
	struct str pattern;
};

static int pattern_pair_cmp(const void *a, const void *b)
{
	return str_cmp(((const struct pattern_pair *)a)->prefix, ((const struct pattern_pair *)b)->prefix);
}

bool policy_index_list(struct loader *l, struct string_list *list, struct str *dup)
{
	struct str *sorted, *patterns, *prefixes;
	struct pattern_pair *pairs;
	size_t i, np = 0;

	list->sorted = NULL;
	list->patterns = NULL;
	list->prefixes = NULL;
	list->npatterns = 0;
	if (list->n == 0)
		return true;
	sorted = arena_calloc(l->a, list->n, sizeof(*sorted));
	patterns = arena_calloc(l->a, list->n, sizeof(*patterns));
	prefixes = arena_calloc(l->a, list->n, sizeof(*prefixes));
	pairs = arena_calloc(l->a, list->n, sizeof(*pairs));
	if (!sorted || !patterns || !prefixes || !pairs) {
		policy_fail_nomem(l);
		return false;
	}
	memcpy(sorted, list->items, list->n * sizeof(*sorted));
	qsort(sorted, list->n, sizeof(*sorted), str_ptr_cmp);
	for (i = 1; i < list->n; i++) {
		if (str_eq(sorted[i - 1], sorted[i])) {
			*dup = sorted[i];
			return false;
		}
	}
	for (i = 0; i < list->n; i++) {
		size_t plen = literal_prefix(list->items[i]);

		if (plen == list->items[i].len)
			continue;
		pairs[np].prefix.ptr = list->items[i].ptr;
		pairs[np].prefix.len = plen;
		pairs[np].pattern = list->items[i];
		np++;
	}
	qsort(pairs, np, sizeof(*pairs), pattern_pair_cmp);
	for (i = 0; i < np; i++) {
		prefixes[i] = pairs[i].prefix;
		patterns[i] = pairs[i].pattern;
	}
	list->sorted = sorted;
	list->patterns = patterns;
	list->prefixes = prefixes;
	list->npatterns = np;
	return true;
}

/* A sequence of distinct non-empty strings; null means an empty list.
 * Duplicates are found by sorting, so a list of many entries costs n log n. */
bool policy_read_string_list(struct loader *l, const struct doc_node *n,
			     struct string_list *out, item_check_fn check)
{
	struct str *items, dup = { NULL, 0 };
	bool all_ok = true;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (n->type == DOC_NULL)
		return true;
	if (!policy_expect(l, n, DOC_SEQ))
		return false;
	if (n->n > POLICY_LIST_MAX) {
		policy_fail(l, n->line, n->col, "%zu entries exceed the limit of %d", n->n, POLICY_LIST_MAX);
		return false;
	}
	items = arena_calloc(l->a, n->n ? n->n : 1, sizeof(*items));
	if (!items) {
		policy_fail_nomem(l);
		return false;
	}
	for (i = 0; i < n->n && !l->stop; i++) {
		const struct doc_node *it = n->items[i];
		size_t saved = policy_path_push_index(l, i);
		bool ok = policy_read_nonempty_string(l, it, &items[i]) &&
			  (!check || check(l, it, items[i]));

		policy_path_pop(l, saved);
		all_ok = all_ok && ok;
	}
	if (!all_ok || l->stop)
		return false;
	out->items = items;
	out->n = n->n;
	if (policy_index_list(l, out, &dup))
		return true;
	if (!l->stop)
		policy_fail_duplicates(l, n, items, "duplicate entry", "");
	memset(out, 0, sizeof(*out));
	return false;
}

struct indexed_str {
	struct str s;
	size_t i;
};

static int indexed_str_cmp(const void *a, const void *b)
{
	const struct indexed_str *x = a, *y = b;
	int c = str_cmp(x->s, y->s);

	return c ? c : (x->i > y->i) - (x->i < y->i);
}

void policy_fail_duplicates(struct loader *l, const struct doc_node *seq, const struct str *items,
			    const char *what, const char *after)
{
	struct indexed_str *v;
	bool *later;
	size_t i, n = seq->n;

	v = arena_calloc(l->a, n ? n : 1, sizeof(*v));
	later = arena_calloc(l->a, n ? n : 1, sizeof(*later));
	if (!v || !later) {
		policy_fail_nomem(l);
		return;
	}
	for (i = 0; i < n; i++) {
		v[i].s = items[i];
		v[i].i = i;
	}
	qsort(v, n, sizeof(*v), indexed_str_cmp);
	for (i = 1; i < n; i++)
		if (str_eq(v[i - 1].s, v[i].s))
			later[v[i].i] = true;
	/* Every occurrence after the first, where the reader's eye is. */
	for (i = 0; i < n; i++) {
		size_t saved;

		if (!later[i])
			continue;
		saved = policy_path_push_index(l, i);
		policy_fail(l, seq->items[i]->line, seq->items[i]->col, "%s \"%.*s\"%s%s", what, STR_FMT(items[i]),
			    *after ? " " : "", after);
		policy_path_pop(l, saved);
	}
}

bool policy_read_action(struct loader *l, const struct doc_node *n, enum action *out)
{
	struct str s;

	if (!policy_expect(l, n, DOC_STRING))
		return false;
	s = n->text;
	if (action_parse(s, out) == 0)
		return true;
	policy_fail(l, n->line, n->col, "unknown action \"%.*s\" (accepted: deny, warn, dryrun)", STR_FMT(s));
	return false;
}

bool policy_read_quantity(struct loader *l, const struct doc_node *n, struct quantity *out)
{
	int rc;

	if (n->type != DOC_STRING && n->type != DOC_NUMBER) {
		policy_fail(l, n->line, n->col, "expected a quantity (such as 64Gi or 2), got a %s",
		     doc_type_name(n->type));
		return false;
	}
	rc = quantity_parse(n->text.ptr, n->text.len, out);
	if (rc == -ERANGE) {
		policy_fail(l, n->line, n->col, "quantity \"%.*s\" is too large", STR_FMT(n->text));
		return false;
	}
	if (rc) {
		policy_fail(l, n->line, n->col, "\"%.*s\" is not a quantity (such as 64Gi, 500m or 2)",
		     STR_FMT(n->text));
		return false;
	}
	return true;
}


/* Parse s as h/m/s parts; -EINVAL for anything else, -ERANGE past limit_s. */
static int parse_duration(struct str s, uint64_t limit_s, uint64_t *out)
{
	static const struct {
		char unit;
		uint64_t seconds;
	} units[] = { { 'h', 3600 }, { 'm', 60 }, { 's', 1 } };
	uint64_t total = 0;
	size_t i = 0, u = 0;

	if (s.len == 0)
		return -EINVAL;
	while (i < s.len) {
		uint64_t v = 0;
		size_t digits = 0;

		while (i < s.len && s.ptr[i] >= '0' && s.ptr[i] <= '9') {
			if (v > limit_s)
				return -ERANGE;
			v = v * 10 + (uint64_t)(s.ptr[i++] - '0');
			digits++;
		}
		if (digits == 0 || i == s.len)
			return -EINVAL;
		/* Units in decreasing order, each once: "1h30m", never "30m1h". */
		while (u < sizeof(units) / sizeof(units[0]) && units[u].unit != s.ptr[i])
			u++;
		if (u == sizeof(units) / sizeof(units[0]))
			return -EINVAL;
		if (v > limit_s / units[u].seconds)
			return -ERANGE;
		total += v * units[u].seconds;
		if (total > limit_s)
			return -ERANGE;
		i++;
		u++;
	}
	*out = total;
	return 0;
}

bool policy_read_duration(struct loader *l, const struct doc_node *n, uint32_t min_s, uint32_t max_s,
			  uint32_t *out)
{
	uint64_t v = 0;
	int rc;

	if (n->type != DOC_STRING) {
		policy_fail(l, n->line, n->col, "expected a duration with a unit (such as 30m, 4h or 1h30m), got a %s",
		     doc_type_name(n->type));
		return false;
	}
	rc = parse_duration(n->text, max_s, &v);
	if (rc == -EINVAL) {
		policy_fail(l, n->line, n->col, "\"%.*s\" is not a duration (accepted: hours, minutes and "
		     "seconds in that order, such as 30m, 4h or 1h30m)", STR_FMT(n->text));
		return false;
	}
	if (rc == -ERANGE || v < min_s) {
		policy_fail(l, n->line, n->col, "duration \"%.*s\" is out of range (accepted: %us to %uh)",
		     STR_FMT(n->text), min_s, max_s / 3600);
		return false;
	}
	*out = (uint32_t)v;
	return true;
}
