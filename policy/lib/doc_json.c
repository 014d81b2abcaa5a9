/* doc_json.c - the JSON reader: jscan tokens into the doc tree.
 *
 * Strict RFC 8259 (jscan), duplicate keys refused by the builder, strings
 * UTF-8 checked. Positions are computed from byte offsets with a cache that
 * only moves forward, so they cost O(n) over a document. */
#include "doc.h"

#include <errno.h>
#include <string.h>

#include "arena.h"
#include "doc_impl.h"
#include "jscan.h"



struct json_reader {
	struct doc_builder *b;
	struct jscan s;
	const char *text;
	size_t len;
	struct arena *scratch;       /* unescaped strings, until copied */
	size_t pos_off;              /* position cache: offsets only grow, */
	uint32_t pos_line, pos_col;  /* so positions cost O(n) in all */
};

static void json_position(struct json_reader *r, size_t off, uint32_t *line, uint32_t *col)
{
	if (off < r->pos_off) {
		r->pos_off = 0;
		r->pos_line = 1;
		r->pos_col = 1;
	}
	doc_advance_position(r->text, r->len, r->pos_off, off, &r->pos_line, &r->pos_col);
	r->pos_off = off;
	*line = r->pos_line;
	*col = r->pos_col;
}

/* The scanner's sticky error as ours. */
static int json_scan_fail(struct json_reader *r)
{
	char msg[DOC_ERROR_MAX], *at;
	uint32_t line, col;
	int rc = jscan_error(&r->s);

	jscan_describe(&r->s, msg, sizeof(msg));
	/* The position goes into err's fields, not into the text. */
	at = strstr(msg, " at line ");
	if (at)
		*at = '\0';
	doc_position(r->text, r->len, jscan_offset(&r->s), &line, &col);
	return doc_build_fail(r->b, rc ? rc : -EINVAL, line, col, "%s", msg);
}

/* Decode a string (UTF-8 checked) into the scratch arena. */
static int json_string(struct json_reader *r, const struct jscan_str *raw, struct str *out,
		       uint32_t line, uint32_t col)
{
	int rc;

	if (!r->b->mem)
		arena_reset(r->scratch);
	rc = jscan_str_decode(raw, r->scratch, out);
	if (rc == -EINVAL)
		return doc_build_fail(r->b, rc, line, col,
				      "string is not valid UTF-8 (or escapes a lone surrogate)");
	if (rc)
		return doc_build_fail_alloc(r->b, rc, line, col);
	return 0;
}

static int json_value(struct json_reader *r)
{
	struct jscan_str raw;
	struct str text;
	uint32_t line, col;
	bool bv;
	int rc;

	enum jscan_type t = jscan_peek(&r->s);

	json_position(r, jscan_offset(&r->s), &line, &col);
	switch (t) {
	case JSCAN_OBJECT:
		rc = doc_build_open(r->b, DOC_MAP, line, col);
		if (rc == 0 && jscan_object_enter(&r->s))
			return json_scan_fail(r);
		return rc;
	case JSCAN_ARRAY:
		rc = doc_build_open(r->b, DOC_SEQ, line, col);
		if (rc == 0 && jscan_array_enter(&r->s))
			return json_scan_fail(r);
		return rc;
	case JSCAN_STRING:
		if (jscan_string(&r->s, &raw))
			return json_scan_fail(r);
		rc = json_string(r, &raw, &text, line, col);
		if (rc)
			return rc;
		return doc_build_scalar(r->b, DOC_STRING, text.ptr, text.len, false, line, col);
	case JSCAN_NUMBER:
		if (jscan_number(&r->s, &text))
			return json_scan_fail(r);
		return doc_build_scalar(r->b, DOC_NUMBER, text.ptr, text.len, false, line, col);
	case JSCAN_TRUE:
	case JSCAN_FALSE:
		if (jscan_bool(&r->s, &bv))
			return json_scan_fail(r);
		return doc_build_scalar(r->b, DOC_BOOL, NULL, 0, bv, line, col);
	case JSCAN_NULL:
		if (jscan_null(&r->s) != 1)
			return json_scan_fail(r);
		return doc_build_scalar(r->b, DOC_NULL, NULL, 0, false, line, col);
	case JSCAN_EOF:
		return doc_build_fail(r->b, -EINVAL, line, col,
				      "unexpected end of input (expected a JSON value)");
	default:
		if (jscan_error(&r->s))
			return json_scan_fail(r);
		jscan_fail(&r->s, -EINVAL, "expected a value (object, array, string, number, true, false or null)");
		return json_scan_fail(r);
	}
}

/* One value, iteratively: after a container opens, each round either reads
 * the next member or element of the innermost open container, or closes it. */
static int json_read(struct json_reader *r)
{
	struct jscan_str key;
	struct str k;
	bool need_value = true;
	int rc;

	rc = doc_build_begin_doc(r->b, 1, 1);
	while (rc == 0) {
		if (need_value) {
			rc = json_value(r);
			need_value = false;
			continue;
		}
		if (r->b->depth == 0)
			break;
		if (r->b->frames[r->b->depth - 1].node->type == DOC_MAP) {
			uint32_t line, col;
			int more = jscan_object_next(&r->s, &key);

			if (more < 0)
				return json_scan_fail(r);
			if (more == 0) {
				rc = doc_build_close(r->b);
				continue;
			}
			json_position(r, (size_t)(key.ptr - 1 - r->text), &line, &col);
			rc = json_string(r, &key, &k, line, col);
			if (rc == 0)
				rc = doc_build_key(r->b, k.ptr, k.len, line, col);
			need_value = true;
		} else {
			int more = jscan_array_next(&r->s);

			if (more < 0)
				return json_scan_fail(r);
			if (more == 0)
				rc = doc_build_close(r->b);
			else
				need_value = true;
		}
	}
	if (rc)
		return rc;
	if (jscan_finish(&r->s))
		return json_scan_fail(r);
	return doc_build_end_doc(r->b);
}

int doc_json_read(struct doc_builder *b, const char *text, size_t len)
{
	struct json_reader r;
	int rc = 0;

	memset(&r, 0, sizeof(r));
	r.b = b;
	r.text = text ? text : "";
	r.len = len;
	r.pos_line = 1;
	r.pos_col = 1;
	/* In a borrowed arena the decoded strings stay until the arena goes:
	 * at most the text's size in all. */
	if (b->mem)
		r.scratch = b->mem;
	else
		rc = arena_new(len + 64, &r.scratch);
	if (rc) {
		b->fatal = true;
		return doc_build_fail(b, rc, 0, 0, "out of memory");
	}
	/* The builder's depth limit trips first and says more. */
	jscan_init(&r.s, r.text, len, DOC_DEPTH_MAX + 1);
	rc = json_read(&r);
	if (!b->mem)
		arena_free(r.scratch);
	return rc;
}

int doc_parse_json(const char *text, size_t len, const struct doc_limits *lim,
		   struct doc_set **out, struct doc_error *err)
{
	return doc_parse_json_in(text, len, lim, NULL, out, err);
}

int doc_parse_json_in(const char *text, size_t len, const struct doc_limits *lim, struct arena *mem,
		      struct doc_set **out, struct doc_error *err)
{
	return doc_build_parse(doc_json_read, text, len, lim, mem, out, err);
}
