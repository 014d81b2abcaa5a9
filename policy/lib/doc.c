/* doc.c - YAML and JSON documents as a tree with source positions: the tree
 * and the builder both readers share. The readers are doc_yaml.c and
 * doc_json.c, streams read document by document doc_stream.c, the JSON
 * writer doc_write.c, paths doc_path.c.
 *
 * The builder keeps the children of every open container on one pending
 * stack; closing a container moves its entries into one arena array. Each
 * node is therefore copied once and building is linear in the input.
 * Duplicate keys are found when a map closes: pairwise for small maps, by
 * sorting for large ones, so a hostile map of many keys costs n log n. */
#include "doc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "doc_impl.h"

/* Maps up to this size are checked for duplicates pairwise. */
#define DOC_DUP_PAIRWISE_MAX 16
/* Keys longer than this are shortened in messages. */
#define DOC_QUOTE_MAX 64

void doc_limits_default(struct doc_limits *lim)
{
	lim->max_bytes = (size_t)16 << 20;
	lim->max_depth = DOC_DEPTH_MAX;
	lim->max_nodes = (size_t)4 << 20;
	lim->max_docs = 10000;
}

static size_t sat_add(size_t a, size_t b)
{
	return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

static size_t sat_mul(size_t a, size_t b)
{
	return b && a > SIZE_MAX / b ? SIZE_MAX : a * b;
}

/* The arena cap is a backstop behind the limits, never the limit that
 * trips first: per node a node, a member slot, an array slot and alignment
 * padding (well under 256 bytes); per input byte at most two bytes of
 * decoded text (numbers such as 1e20 grow, by a bounded amount per node,
 * which the per-node share covers). */
static size_t arena_cap_for(const struct doc_limits *lim)
{
	return sat_add(sat_add(sat_mul(lim->max_bytes, 2), sat_mul(lim->max_nodes, 256)),
		       (size_t)1 << 20);
}

void doc_quote(char *dst, size_t dstsz, const char *text, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0, i;

	if (dstsz == 0)
		return;
	for (i = 0; i < n && i < DOC_QUOTE_MAX && o + 8 < dstsz; i++) {
		unsigned char c = (unsigned char)text[i];

		if (i == 0)
			dst[o++] = '"';
		if (c == '"' || c == '\\') {
			dst[o++] = '\\';
			dst[o++] = (char)c;
		} else if (c < 0x20 || c >= 0x7f) {
			dst[o++] = '\\';
			dst[o++] = 'x';
			dst[o++] = hex[c >> 4];
			dst[o++] = hex[c & 0xf];
		} else {
			dst[o++] = (char)c;
		}
	}
	if (n == 0 && dstsz > 2)
		dst[o++] = '"';
	if (i < n && o + 4 < dstsz) {
		memcpy(dst + o, "...", 3);
		o += 3;
	}
	if (o + 1 < dstsz)
		dst[o++] = '"';
	dst[o] = '\0';
}

/* Move a 1-based line/column from text[from] to text[to]. Columns count
 * characters (UTF-8 lead bytes), and \r\n, \r and \n each end a line, as
 * libyaml counts them, so both readers report the same positions. */
void doc_advance_position(const char *text, size_t len, size_t from, size_t to,
			  uint32_t *line, uint32_t *col)
{
	size_t i;

	for (i = from; i < to && i < len; i++) {
		unsigned char ch = (unsigned char)text[i];

		if (ch == '\n' || (ch == '\r' && (i + 1 >= len || text[i + 1] != '\n'))) {
			(*line)++;
			*col = 1;
		} else if ((ch & 0xc0) != 0x80 && ch != '\r') {
			(*col)++;
		}
	}
}

void doc_position(const char *text, size_t len, size_t off, uint32_t *line, uint32_t *col)
{
	*line = 1;
	*col = 1;
	doc_advance_position(text, len, 0, off, line, col);
}

/* --- the builder ---------------------------------------------------------- */

int doc_build_fail(struct doc_builder *b, int rc, uint32_t line, uint32_t col,
		   const char *fmt, ...)
{
	va_list ap;

	if (b->failed)
		return rc;
	b->failed = true;
	if (rc == -ENOMEM)
		b->fatal = true;
	if (b->err) {
		va_start(ap, fmt);
		vsnprintf(b->err->msg, sizeof(b->err->msg), fmt, ap);
		va_end(ap);
		b->err->line = line;
		b->err->col = col;
		b->err->doc_index = b->set ? b->set->count : 0;
	}
	return rc;
}

int doc_build_fail_alloc(struct doc_builder *b, int rc, uint32_t line, uint32_t col)
{
	b->fatal = true;
	if (rc == -E2BIG)
		return doc_build_fail(b, rc, line, col,
				      "the documents need more memory than their limits allow");
	return doc_build_fail(b, -ENOMEM, line, col, "out of memory");
}

int doc_build_init(struct doc_builder *b, const struct doc_limits *lim, struct arena *mem,
		   struct doc_error *err)
{
	struct doc_set *set;
	int rc;

	memset(b, 0, sizeof(*b));
	if (lim)
		b->lim = *lim;
	else
		doc_limits_default(&b->lim);
	if (b->lim.max_depth > DOC_DEPTH_MAX)
		b->lim.max_depth = DOC_DEPTH_MAX;
	b->err = err;
	if (err) {
		err->msg[0] = '\0';
		err->line = 0;
		err->col = 0;
		err->doc_index = 0;
	}
	b->mem = mem;
	if (mem) {
		set = arena_calloc(mem, 1, sizeof(*set));
		if (!set) {
			b->fatal = true;
			return doc_build_fail_alloc(b, arena_error(mem), 0, 0);
		}
		set->arena = mem;
		set->borrowed = true;
		b->set = set;
		return 0;
	}
	set = calloc(1, sizeof(*set));
	if (!set)
		return doc_build_fail(b, -ENOMEM, 0, 0, "out of memory");
	rc = arena_new(arena_cap_for(&b->lim), &set->arena);
	if (rc) {
		free(set);
		return doc_build_fail(b, rc, 0, 0, "out of memory");
	}
	b->set = set;
	return 0;
}

void doc_build_release(struct doc_builder *b)
{
	doc_set_free(b->set);
	b->set = NULL;
	if (b->mem) {
		b->pending = NULL;
		b->frames = NULL;
		b->scratch = NULL;
		return;
	}
	free(b->pending);
	b->pending = NULL;
	free(b->frames);
	b->frames = NULL;
	free(b->scratch);
	b->scratch = NULL;
}

void doc_build_take(struct doc_builder *b, struct doc_set **out)
{
	*out = b->set;
	b->set = NULL;
}

int doc_build_size(struct doc_builder *b, size_t len)
{
	if (len <= b->lim.max_bytes)
		return 0;
	return doc_build_fail(b, -E2BIG, 0, 0, "input is %zu bytes, more than the limit of %zu", len,
			      b->lim.max_bytes);
}

int doc_build_parse(doc_reader_fn *read, const char *text, size_t len, const struct doc_limits *lim,
		    struct arena *mem, struct doc_set **out, struct doc_error *err)
{
	struct doc_builder b;
	int rc;

	*out = NULL;
	rc = doc_build_init(&b, lim, mem, err);
	if (rc)
		goto out;
	rc = doc_build_size(&b, len);
	if (rc == 0)
		rc = read(&b, text, len);
	if (rc == 0)
		doc_build_take(&b, out);
out:
	doc_build_release(&b);
	return rc;
}

/* Grow *arr (of elem-sized entries, *alloc of them) to hold need entries,
 * in mem when it is not NULL. */
static int grow(struct arena *mem, void **arr, size_t *alloc, size_t need, size_t elem)
{
	size_t n = *alloc ? *alloc : 16;
	void *p;

	if (need <= *alloc)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		n *= 2;
	}
	if (mem) {
		p = arena_grow(mem, *arr, *alloc * elem, n * elem);
		if (!p)
			return arena_error(mem);
	} else {
		p = realloc(*arr, n * elem);
		if (!p)
			return -ENOMEM;
	}
	*arr = p;
	*alloc = n;
	return 0;
}

static int count_node(struct doc_builder *b, uint32_t line, uint32_t col)
{
	if (b->nodes >= b->lim.max_nodes) {
		b->fatal = true;
		return doc_build_fail(b, -E2BIG, line, col,
				      "more than %zu nodes (the limit); split the input", b->lim.max_nodes);
	}
	b->nodes++;
	return 0;
}

static struct doc_node *new_node(struct doc_builder *b, enum doc_type type,
				 uint32_t line, uint32_t col)
{
	struct doc_node *n = arena_calloc(b->set->arena, 1, sizeof(*n));

	if (!n) {
		doc_build_fail_alloc(b, arena_error(b->set->arena), line, col);
		return NULL;
	}
	n->type = type;
	n->line = line;
	n->col = col;
	return n;
}

static int push_pending(struct doc_builder *b, const struct doc_member *m)
{
	int rc = grow(b->mem, (void **)&b->pending, &b->pending_alloc, b->npending + 1, sizeof(*b->pending));

	if (rc)
		return doc_build_fail_alloc(b, rc, m->line, m->col);
	b->pending[b->npending++] = *m;
	return 0;
}

/* Hang a finished node under the innermost open container, or make it the
 * document's root. */
static int attach(struct doc_builder *b, const struct doc_node *n)
{
	struct doc_frame *f;
	struct doc_member m = { { NULL, 0 }, n->line, n->col, n };

	if (b->depth == 0) {
		if (!b->in_doc || b->root)
			return doc_build_fail(b, -EINVAL, n->line, n->col,
					      "a document holds more than one root node");
		b->root = n;
		return 0;
	}
	f = &b->frames[b->depth - 1];
	if (f->node->type == DOC_SEQ)
		return push_pending(b, &m);
	if (!f->want_value)
		return doc_build_fail(b, -EINVAL, n->line, n->col, "a map value has no key");
	b->pending[b->npending - 1].value = n;
	f->want_value = false;
	return 0;
}

bool doc_build_want_key(const struct doc_builder *b)
{
	const struct doc_frame *f;

	if (b->depth == 0)
		return false;
	f = &b->frames[b->depth - 1];
	return f->node->type == DOC_MAP && !f->want_value;
}

/* The set's next document; error NULL for one that parsed. */
static int add_root(struct doc_builder *b, const struct doc_node *root, const struct doc_error *error)
{
	struct doc_set *set = b->set;
	size_t alloc = set->roots_alloc;

	int rc = grow(b->mem, (void **)&set->roots, &set->roots_alloc, set->count + 1, sizeof(*set->roots));

	if (rc == 0)
		rc = grow(b->mem, (void **)&set->errors, &alloc, set->roots_alloc, sizeof(*set->errors));
	if (rc)
		return doc_build_fail_alloc(b, rc, 0, 0);
	set->roots[set->count] = root;
	set->errors[set->count] = error;
	set->count++;
	b->in_doc = false;
	b->root = NULL;
	return 0;
}

int doc_build_begin_doc(struct doc_builder *b, uint32_t line, uint32_t col)
{
	if (b->set->count >= b->lim.max_docs) {
		b->fatal = true;
		return doc_build_fail(b, -E2BIG, line, col,
				      "more than %zu documents in one stream (the limit)", b->lim.max_docs);
	}
	b->in_doc = true;
	b->root = NULL;
	return 0;
}

int doc_build_end_doc(struct doc_builder *b)
{
	struct doc_set *set = b->set;
	const struct doc_node *root = b->root;

	if (!b->in_doc || b->depth != 0)
		return doc_build_fail(b, -EINVAL, 0, 0, "a document ended inside a container");
	if (!root) {
		root = new_node(b, DOC_NULL, 0, 0);
		if (!root)
			return arena_error(set->arena);
	}
	return add_root(b, root, NULL);
}

int doc_build_scalar(struct doc_builder *b, enum doc_type type, const char *text,
		     size_t len, bool boolean, uint32_t line, uint32_t col)
{
	struct doc_node *n;
	int rc;

	if (doc_build_want_key(b))
		return doc_build_fail(b, -EINVAL, line, col, "a map key is missing");
	rc = count_node(b, line, col);
	if (rc)
		return rc;
	n = new_node(b, type, line, col);
	if (!n)
		return arena_error(b->set->arena);
	n->boolean = boolean;
	if (type == DOC_NUMBER || type == DOC_STRING) {
		rc = arena_strdup(b->set->arena, text, len, &n->text);
		if (rc)
			return doc_build_fail_alloc(b, rc, line, col);
	}
	return attach(b, n);
}

int doc_build_key(struct doc_builder *b, const char *key, size_t len,
		  uint32_t line, uint32_t col)
{
	struct doc_member m = { { NULL, 0 }, line, col, NULL };
	int rc;

	if (!doc_build_want_key(b))
		return doc_build_fail(b, -EINVAL, line, col, "a key outside a map");
	rc = count_node(b, line, col);
	if (rc)
		return rc;
	rc = arena_strdup(b->set->arena, key, len, &m.key);
	if (rc)
		return doc_build_fail_alloc(b, rc, line, col);
	rc = push_pending(b, &m);
	if (rc)
		return rc;
	b->frames[b->depth - 1].want_value = true;
	return 0;
}

int doc_build_open(struct doc_builder *b, enum doc_type type, uint32_t line, uint32_t col)
{
	struct doc_node *n;
	int rc;

	if (doc_build_want_key(b))
		return doc_build_fail(b, -EINVAL, line, col,
				      "a map key is a %s; keys must be scalars (strings, numbers or booleans)",
				      doc_type_name(type));
	rc = count_node(b, line, col);
	if (rc)
		return rc;
	if (b->depth >= b->lim.max_depth)
		return doc_build_fail(b, -E2BIG, line, col,
				      "maps and sequences nested more than %u deep (the limit)",
				      b->lim.max_depth);
	rc = grow(b->mem, (void **)&b->frames, &b->frames_alloc, (size_t)b->depth + 1, sizeof(*b->frames));
	if (rc)
		return doc_build_fail_alloc(b, rc, line, col);
	n = new_node(b, type, line, col);
	if (!n)
		return arena_error(b->set->arena);
	b->frames[b->depth].node = n;
	b->frames[b->depth].base = b->npending;
	b->frames[b->depth].want_value = false;
	b->depth++;
	return 0;
}

static int member_cmp(const void *pa, const void *pb)
{
	const struct doc_member *a = *(const struct doc_member *const *)pa;
	const struct doc_member *b = *(const struct doc_member *const *)pb;
	int c = str_cmp(a->key, b->key);

	if (c)
		return c;
	return a < b ? -1 : a > b;
}

static int report_duplicate(struct doc_builder *b, const struct doc_member *dup,
			    const struct doc_member *first)
{
	char q[DOC_QUOTE_MAX * 4 + 8];

	doc_quote(q, sizeof(q), dup->key.ptr, dup->key.len);
	return doc_build_fail(b, -EINVAL, dup->line, dup->col,
			      "duplicate key %s (first at line %u, column %u); each key may appear once",
			      q, first->line, first->col);
}

/* Report the earliest member (in document order) whose key appeared before. */
static int check_duplicates(struct doc_builder *b, const struct doc_member *m, size_t n)
{
	const struct doc_member *dup = NULL, *first = NULL;
	size_t i, j, group;
	int rc;

	if (n <= DOC_DUP_PAIRWISE_MAX) {
		for (j = 1; j < n; j++)
			for (i = 0; i < j; i++)
				if (str_eq(m[i].key, m[j].key))
					return report_duplicate(b, &m[j], &m[i]);
		return 0;
	}
	rc = grow(b->mem, (void **)&b->scratch, &b->scratch_alloc, n, sizeof(*b->scratch));
	if (rc)
		return doc_build_fail_alloc(b, rc, m[0].line, m[0].col);
	for (i = 0; i < n; i++)
		b->scratch[i] = &m[i];
	qsort(b->scratch, n, sizeof(*b->scratch), member_cmp);
	for (group = 0, i = 1; i < n; i++) {
		if (!str_eq(b->scratch[i]->key, b->scratch[group]->key)) {
			group = i;
			continue;
		}
		if (!dup || b->scratch[i] < dup) {
			dup = b->scratch[i];
			first = b->scratch[group];
		}
	}
	return dup ? report_duplicate(b, dup, first) : 0;
}

int doc_build_close(struct doc_builder *b)
{
	struct doc_frame *f;
	struct doc_node *n;
	size_t count, i;
	int rc;

	if (b->depth == 0)
		return doc_build_fail(b, -EINVAL, 0, 0, "a container closed that was not open");
	f = &b->frames[b->depth - 1];
	n = f->node;
	count = b->npending - f->base;
	if (n->type == DOC_MAP) {
		struct doc_member *members;

		if (f->want_value)
			return doc_build_fail(b, -EINVAL, n->line, n->col, "a map key has no value");
		if (count) {
			rc = check_duplicates(b, b->pending + f->base, count);
			if (rc)
				return rc;
			members = arena_alloc(b->set->arena, count * sizeof(*members));
			if (!members)
				return doc_build_fail_alloc(b, arena_error(b->set->arena), n->line, n->col);
			memcpy(members, b->pending + f->base, count * sizeof(*members));
			n->members = members;
		}
	} else if (count) {
		const struct doc_node **items;

		items = arena_alloc(b->set->arena, count * sizeof(*items));
		if (!items)
			return doc_build_fail_alloc(b, arena_error(b->set->arena), n->line, n->col);
		for (i = 0; i < count; i++)
			items[i] = b->pending[f->base + i].value;
		n->items = items;
	}
	n->n = count;
	b->npending = f->base;
	b->depth--;
	return attach(b, n);
}

/* Hang a node under the innermost open container as salvage does: no
 * checks, nothing reported. */
static int salvage_attach(struct doc_builder *b, const struct doc_node *n)
{
	struct doc_frame *f;
	struct doc_member m = { { NULL, 0 }, n->line, n->col, n };

	if (b->depth == 0) {
		if (!b->root)
			b->root = n;
		return 0;
	}
	f = &b->frames[b->depth - 1];
	if (f->node->type == DOC_SEQ) {
		int rc = grow(b->mem, (void **)&b->pending, &b->pending_alloc, b->npending + 1,
			      sizeof(*b->pending));

		if (rc)
			return rc;
		b->pending[b->npending++] = m;
	} else if (f->want_value) {
		b->pending[b->npending - 1].value = n;
		f->want_value = false;
	}
	return 0;
}

int doc_build_salvage(struct doc_builder *b)
{
	struct arena *a = b->set->arena;
	const struct doc_node *root;
	struct doc_node *null_root;
	struct doc_error *e;
	int rc;

	while (b->depth) {
		struct doc_frame *f = &b->frames[b->depth - 1];
		struct doc_node *n = f->node;
		size_t count, i;

		if (n->type == DOC_MAP && f->want_value)
			b->npending--;          /* a key whose value never came */
		count = b->npending - f->base;
		if (count && n->type == DOC_MAP) {
			struct doc_member *members = arena_alloc(a, count * sizeof(*members));

			if (!members)
				return -ENOMEM;
			memcpy(members, b->pending + f->base, count * sizeof(*members));
			n->members = members;
		} else if (count) {
			const struct doc_node **items = arena_alloc(a, count * sizeof(*items));

			if (!items)
				return -ENOMEM;
			for (i = 0; i < count; i++)
				items[i] = b->pending[f->base + i].value;
			n->items = items;
		}
		n->n = count;
		b->npending = f->base;
		b->depth--;
		rc = salvage_attach(b, n);
		if (rc)
			return rc;
	}
	root = b->root;
	if (!root) {
		null_root = arena_calloc(a, 1, sizeof(*null_root));
		if (!null_root)
			return -ENOMEM;
		null_root->type = DOC_NULL;
		if (b->err) {
			null_root->line = b->err->line;
			null_root->col = b->err->col;
		}
		root = null_root;
	}
	e = arena_calloc(a, 1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	if (b->err)
		*e = *b->err;
	else
		snprintf(e->msg, sizeof(e->msg), "the document does not parse");
	e->doc_index = b->set->count;
	rc = add_root(b, root, e);
	if (rc)
		return rc;
	b->failed = false;
	b->npending = 0;
	return 0;
}

/* --- the set -------------------------------------------------------------- */

void doc_set_free(struct doc_set *set)
{
	if (!set || set->borrowed)
		return;
	arena_free(set->arena);
	free(set->roots);
	free(set->errors);
	free(set);
}

size_t doc_set_count(const struct doc_set *set)
{
	return set ? set->count : 0;
}

const struct doc_node *doc_set_root(const struct doc_set *set, size_t i)
{
	return set && i < set->count ? set->roots[i] : NULL;
}

const struct doc_error *doc_set_error(const struct doc_set *set, size_t i)
{
	return set && i < set->count ? set->errors[i] : NULL;
}

const struct doc_node *doc_map_get(const struct doc_node *n, const char *key)
{
	size_t i;

	if (!n || n->type != DOC_MAP)
		return NULL;
	for (i = 0; i < n->n; i++)
		if (str_eq_cstr(n->members[i].key, key))
			return n->members[i].value;
	return NULL;
}

const char *doc_type_name(enum doc_type t)
{
	switch (t) {
	case DOC_NULL:
		return "null";
	case DOC_BOOL:
		return "boolean";
	case DOC_NUMBER:
		return "number";
	case DOC_STRING:
		return "string";
	case DOC_SEQ:
		return "sequence";
	case DOC_MAP:
		return "map";
	}
	return "unknown";
}

int doc_parse_in(const char *text, size_t len, const struct doc_limits *lim, struct arena *a,
		 struct doc_set **out, struct doc_error *err)
{
	size_t i = 0;

	while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n'))
		i++;
	if (i < len && (text[i] == '{' || text[i] == '['))
		return doc_parse_json_in(text, len, lim, a, out, err);
	return doc_parse_yaml_in(text, len, lim, a, out, err);
}

int doc_parse(const char *text, size_t len, const struct doc_limits *lim,
	      struct doc_set **out, struct doc_error *err)
{
	return doc_parse_in(text, len, lim, NULL, out, err);
}
