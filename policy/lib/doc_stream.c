/* doc_stream.c - a YAML stream read document by document.
 *
 * Manifests are streams of many documents, and a syntax error stops libyaml
 * for the rest of a stream. So the stream is first cut at its document
 * markers (a line that begins with "---"), which YAML forbids inside any
 * content, and each piece is parsed on its own into one set: a document
 * that does not parse is kept as far as it was read, with its error, and
 * the documents after it are read all the same. Positions stay relative to
 * the whole stream. */
#include "doc.h"

#include <errno.h>
#include <string.h>

#include "doc_impl.h"

/* A marker at text[i], a line start: three of c ("---" starts a document,
 * "..." ends one) followed by a blank or the end of the line. */
static bool is_line_marker(const char *text, size_t len, size_t i, char c)
{
	char next;

	if (len - i < 3 || text[i] != c || text[i + 1] != c || text[i + 2] != c)
		return false;
	if (i + 3 == len)
		return true;
	next = text[i + 3];
	return next == ' ' || next == '\t' || next == '\n' || next == '\r';
}

static bool is_marker(const char *text, size_t len, size_t i)
{
	return is_line_marker(text, len, i, '-');
}

/* True when the line at text[i] holds document content: not blank, not a
 * comment, not a directive (%YAML, %TAG, which belong to the next marker). */
static bool has_content(const char *text, size_t len, size_t i)
{
	if (i == 0 && len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		i = 3;
	if (i < len && text[i] == '%')
		return false;
	while (i < len && (text[i] == ' ' || text[i] == '\t'))
		i++;
	return i < len && text[i] != '\n' && text[i] != '\r' && text[i] != '#';
}

/* The offset after the line break that ends the line at text[i] (\n, \r\n
 * or \r, as libyaml counts them), and whether there was one. */
static size_t next_line(const char *text, size_t len, size_t i, bool *broke)
{
	*broke = false;
	while (i < len && text[i] != '\n' && text[i] != '\r')
		i++;
	if (i < len) {
		*broke = true;
		if (text[i] == '\r' && i + 1 < len && text[i + 1] == '\n')
			i++;
		i++;
	}
	return i;
}

bool doc_next_span(const char *text, size_t len, size_t *pos, uint32_t *line, struct doc_span *out)
{
	size_t i = *pos;
	uint32_t l = *line;
	bool content = false, ended = false, broke;

	if (i >= len)
		return false;
	out->off = i;
	out->line = l;
	while (i < len) {
		if (is_marker(text, len, i)) {
			if (content)
				break;
			content = true;
		} else if (content && ended && text[i] == '%') {
			/* A directive after an end marker: it opens the next
			 * document (libyaml would find no "---" after it in this
			 * piece). Only there: elsewhere a "%" line may go on a
			 * plain scalar. */
			break;
		} else if (is_line_marker(text, len, i, '.')) {
			content = ended = true;
		} else if (has_content(text, len, i)) {
			content = true;
			ended = false;
		}
		i = next_line(text, len, i, &broke);
		if (broke && l < UINT32_MAX)
			l++;
	}
	out->len = i - out->off;
	*pos = i;
	*line = l;
	return true;
}

/* One JSON value: the text starts with '{' or '[' and no line begins with
 * a document marker (JSON cannot hold one: its strings cannot span lines).
 * JSON documents between "---" lines are a YAML stream. */
static bool is_json(const char *text, size_t len)
{
	size_t i = 0;
	bool broke;

	while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n'))
		i++;
	if (i == len || (text[i] != '{' && text[i] != '['))
		return false;
	for (i = 0; i < len; i = next_line(text, len, i, &broke))
		if (is_marker(text, len, i))
			return false;
	return true;
}

int doc_parse_stream(const char *text, size_t len, const struct doc_limits *lim,
		     struct doc_set **out, struct doc_error *err)
{
	struct doc_builder b;
	struct doc_error local;
	struct doc_span span;
	size_t pos = 0;
	uint32_t line = 1;
	int rc;

	*out = NULL;
	/* Salvaged documents keep their messages, so the builder always has
	 * somewhere to write them. */
	rc = doc_build_init(&b, lim, NULL, err ? err : &local);
	if (rc)
		goto out;
	rc = doc_build_size(&b, len);
	if (rc)
		goto out;
	if (is_json(text, len)) {
		rc = doc_json_read(&b, text, len);
		if (rc && !b.fatal)
			rc = doc_build_salvage(&b);
	} else {
		while (rc == 0 && doc_next_span(text, len, &pos, &line, &span)) {
			b.line_base = span.line - 1;
			rc = doc_yaml_read(&b, text + span.off, span.len);
			if (rc && !b.fatal)
				rc = doc_build_salvage(&b);
		}
	}
	if (rc == 0) {
		doc_build_take(&b, out);
		if (err)
			memset(err, 0, sizeof(*err));
	} else if (!b.fatal) {
		/* Salvage itself ran out of memory. */
		b.failed = false;
		rc = doc_build_fail(&b, -ENOMEM, 0, 0, "out of memory");
	}
out:
	doc_build_release(&b);
	return rc;
}
