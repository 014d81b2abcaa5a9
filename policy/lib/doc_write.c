/* doc_write.c - a doc tree as compact JSON, and where each part of it went.
 *
 * The JSON is what the decoders read; a decoder's error names a byte offset
 * of that JSON. The locator remembers the byte range of every node and key,
 * so the offset can be told as the line and column of the YAML (or JSON) the
 * tree was read from: errors point at the value the user wrote. */
#include "doc.h"

#include <errno.h>
#include <stdlib.h>

#include "jw.h"

struct doc_json_span {
	size_t start, end;           /* [start, end) of the JSON text */
	uint32_t line, col;          /* of the source */
};

struct doc_locator {
	struct doc_json_span *spans;     /* pre-order: a node before what it holds */
	size_t n, alloc, cap;
	size_t base;                     /* buffer length when writing began */
};

/* Reserve the next span (its end is filled in when the part is written);
 * SIZE_MAX when there is no locator. */
static int loc_open(struct doc_locator *loc, const struct buf *out, uint32_t line, uint32_t col,
		    size_t *slot)
{
	*slot = SIZE_MAX;
	if (!loc)
		return 0;
	if (loc->n == loc->cap)
		return -E2BIG;
	if (loc->n == loc->alloc) {
		size_t alloc = loc->alloc ? loc->alloc * 2 : 64;
		struct doc_json_span *p;

		if (alloc > loc->cap)
			alloc = loc->cap;
		p = realloc(loc->spans, alloc * sizeof(*p));
		if (!p)
			return -ENOMEM;
		loc->spans = p;
		loc->alloc = alloc;
	}
	*slot = loc->n++;
	loc->spans[*slot].start = buf_len(out) - loc->base;
	loc->spans[*slot].end = loc->spans[*slot].start;
	loc->spans[*slot].line = line;
	loc->spans[*slot].col = col;
	return 0;
}

static void loc_close(struct doc_locator *loc, const struct buf *out, size_t slot)
{
	if (loc && slot != SIZE_MAX)
		loc->spans[slot].end = buf_len(out) - loc->base;
}

/* A string as jw writes it, as a one-value document of its own: the
 * tree's structure is laid out here because it nests (to DOC_DEPTH_MAX)
 * deeper than a jw's containers go. On failure out is as it was. */
static int add_string(struct buf *out, struct str s)
{
	struct jw w;

	jw_init(&w, out);
	jw_string(&w, s.ptr, s.len);
	return jw_finish(&w);
}

static int to_json(const struct doc_node *n, struct buf *out, unsigned depth, struct doc_locator *loc)
{
	size_t i, slot, key_slot;
	int rc = 0;

	if (depth > DOC_DEPTH_MAX)
		return -EINVAL;
	rc = loc_open(loc, out, n->line, n->col, &slot);
	if (rc)
		return rc;
	switch (n->type) {
	case DOC_NULL:
		rc = buf_add(out, "null", 4);
		break;
	case DOC_BOOL:
		rc = n->boolean ? buf_add(out, "true", 4) : buf_add(out, "false", 5);
		break;
	case DOC_NUMBER:
		rc = buf_add_str(out, n->text);
		break;
	case DOC_STRING:
		rc = add_string(out, n->text);
		break;
	case DOC_SEQ:
		rc = buf_add_char(out, '[');
		for (i = 0; rc == 0 && i < n->n; i++) {
			if (i)
				rc = buf_add_char(out, ',');
			if (rc == 0)
				rc = to_json(n->items[i], out, depth + 1, loc);
		}
		if (rc == 0)
			rc = buf_add_char(out, ']');
		break;
	case DOC_MAP:
		rc = buf_add_char(out, '{');
		for (i = 0; rc == 0 && i < n->n; i++) {
			const struct doc_member *m = &n->members[i];

			if (i)
				rc = buf_add_char(out, ',');
			if (rc == 0)
				rc = loc_open(loc, out, m->line, m->col, &key_slot);
			if (rc == 0)
				rc = add_string(out, m->key);
			loc_close(loc, out, key_slot);
			if (rc == 0)
				rc = buf_add_char(out, ':');
			if (rc == 0)
				rc = to_json(m->value, out, depth + 1, loc);
		}
		if (rc == 0)
			rc = buf_add_char(out, '}');
		break;
	default:
		rc = -EINVAL;
	}
	loc_close(loc, out, slot);
	return rc;
}

int doc_to_json(const struct doc_node *n, struct buf *out)
{
	size_t start = buf_len(out);
	int rc = to_json(n, out, 0, NULL);

	if (rc)
		buf_truncate(out, start);
	return rc;
}

int doc_to_json_located(const struct doc_node *n, struct buf *out, size_t max_spans,
			struct doc_locator **loc)
{
	size_t start = buf_len(out);
	struct doc_locator *l = calloc(1, sizeof(*l));
	int rc;

	*loc = NULL;
	if (!l)
		return -ENOMEM;
	l->cap = max_spans;
	l->base = start;
	rc = to_json(n, out, 0, l);
	if (rc) {
		buf_truncate(out, start);
		doc_locator_free(l);
		return rc;
	}
	*loc = l;
	return 0;
}

bool doc_locate(const struct doc_locator *loc, size_t offset, uint32_t *line, uint32_t *col)
{
	const struct doc_json_span *best = NULL;
	size_t i;

	if (!loc)
		return false;
	/* Pre-order: of the spans that hold the offset, the last is the
	 * innermost. Past every span's end (the decoder stopped after a value),
	 * the last span that began before it. */
	for (i = 0; i < loc->n; i++) {
		const struct doc_json_span *s = &loc->spans[i];

		if (s->start > offset)
			break;
		if (offset < s->end || !best || best->end <= offset)
			best = s;
	}
	if (!best)
		return false;
	*line = best->line;
	*col = best->col;
	return true;
}

void doc_locator_free(struct doc_locator *loc)
{
	if (!loc)
		return;
	free(loc->spans);
	free(loc);
}
