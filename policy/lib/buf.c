/* buf.c - a growable byte buffer with a hard cap. */
#include "buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"

void buf_init(struct buf *b, size_t cap)
{
	b->data = NULL;
	b->len = 0;
	b->alloc = 0;
	b->cap = cap;
	b->arena = NULL;
}

void buf_init_in(struct buf *b, size_t cap, struct arena *a)
{
	buf_init(b, cap);
	b->arena = a;
}

void buf_free(struct buf *b)
{
	if (!b->arena)
		free(b->data);
	b->data = NULL;
	b->len = 0;
	b->alloc = 0;
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

/* Make room for n more bytes plus the NUL; exact when asked for (a declared
 * length), else doubling so appends stay amortised O(1). */
static int buf_reserve(struct buf *b, size_t n, bool exact)
{
	size_t want, alloc;
	char *p;

	if (n > b->cap || b->len > b->cap - n)
		return -E2BIG;
	want = b->len + n + 1;
	if (want <= b->alloc)
		return 0;
	alloc = b->alloc ? b->alloc : 256;
	if (exact)
		alloc = want;
	while (alloc < want)
		alloc = alloc > SIZE_MAX / 2 ? want : alloc * 2;
	if (alloc > b->cap + 1)
		alloc = b->cap + 1;
	if (b->arena) {
		p = arena_grow(b->arena, b->data, b->alloc, alloc);
		if (!p)
			return arena_error(b->arena);
		if (!b->data)
			p[0] = '\0';
	} else {
		p = realloc(b->data, alloc);
		if (!p)
			return -ENOMEM;
	}
	b->data = p;
	b->alloc = alloc;
	return 0;
}

int buf_presize(struct buf *b, size_t n)
{
	return buf_reserve(b, n, true);
}

int buf_add(struct buf *b, const void *p, size_t n)
{
	int rc = buf_reserve(b, n, false);

	if (rc)
		return rc;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int buf_add_str(struct buf *b, struct str s)
{
	return buf_add(b, s.ptr, s.len);
}

int buf_add_cstr(struct buf *b, const char *s)
{
	return buf_add(b, s, strlen(s));
}

int buf_add_char(struct buf *b, char c)
{
	return buf_add(b, &c, 1);
}

int buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
	va_list again;
	char small[256];
	int n, rc;

	va_copy(again, ap);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	if (n < 0 || (size_t)n < sizeof(small)) {
		va_end(again);
		return n < 0 ? -EINVAL : buf_add(b, small, (size_t)n);
	}
	rc = buf_reserve(b, (size_t)n, false);
	if (!rc) {
		vsnprintf(b->data + b->len, (size_t)n + 1, fmt, again);
		b->len += (size_t)n;
	}
	va_end(again);
	return rc;
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

/* Length of the valid UTF-8 sequence at s[0..n), or 0 if it is not one. */
static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len, i;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

/* The escaper of both literal forms: html adds <, > and & to what is
 * escaped, with \u00xx in lowercase for every control character; without
 * it \b and \f have their short forms and the rest \u00XX in uppercase. */
static int add_json_str(struct buf *b, const char *s, size_t n, bool html)
{
	const char *hex = html ? "0123456789abcdef" : "0123456789ABCDEF";
	const unsigned char *u = (const unsigned char *)s;
	size_t start_len = b->len, i = 0, run = 0;
	int rc = buf_add_char(b, '"');

	while (rc == 0 && i < n) {
		unsigned char c = u[i];
		char esc[8];
		size_t elen = 0, seq;

		if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80 && (!html || (c != '<' && c != '>' && c != '&'))) {
			run++;
			i++;
			continue;
		}
		if (run) {
			rc = buf_add(b, s + i - run, run);
			run = 0;
			if (rc)
				break;
		}
		if (c >= 0x80) {
			seq = utf8_seq_len(u + i, n - i);
			if (seq) {
				rc = buf_add(b, s + i, seq);
				i += seq;
			} else {
				rc = buf_add(b, "\\ufffd", 6);
				i++;
			}
			continue;
		}
		esc[elen++] = '\\';
		switch (c) {
		case '"': esc[elen++] = '"'; break;
		case '\\': esc[elen++] = '\\'; break;
		case '\n': esc[elen++] = 'n'; break;
		case '\r': esc[elen++] = 'r'; break;
		case '\t': esc[elen++] = 't'; break;
		case '\b':
		case '\f':
			if (!html) {
				esc[elen++] = c == '\b' ? 'b' : 'f';
				break;
			}
			/* fall through */
		default:
			esc[elen++] = 'u';
			esc[elen++] = '0';
			esc[elen++] = '0';
			esc[elen++] = hex[c >> 4];
			esc[elen++] = hex[c & 0xf];
			break;
		}
		rc = buf_add(b, esc, elen);
		i++;
	}
	if (rc == 0 && run)
		rc = buf_add(b, s + n - run, run);
	if (rc == 0)
		rc = buf_add_char(b, '"');
	if (rc)
		buf_truncate(b, start_len);
	return rc;
}

int buf_add_json_str(struct buf *b, const char *s, size_t n)
{
	return add_json_str(b, s, n, true);
}

int buf_add_json_str_plain(struct buf *b, const char *s, size_t n)
{
	return add_json_str(b, s, n, false);
}

int buf_take(struct buf *b, char **out, size_t *len)
{
	if (b->arena)
		return -EINVAL;
	if (!b->data) {
		b->data = malloc(1);
		if (!b->data)
			return -ENOMEM;
		b->data[0] = '\0';
	}
	*out = b->data;
	if (len)
		*len = b->len;
	b->data = NULL;
	b->len = 0;
	b->alloc = 0;
	return 0;
}

const char *buf_cstr(const struct buf *b)
{
	return b->data ? b->data : "";
}

size_t buf_allocated(const struct buf *b)
{
	return b->alloc;
}

size_t buf_len(const struct buf *b)
{
	return b->len;
}

void buf_truncate(struct buf *b, size_t n)
{
	if (n < b->len) {
		b->len = n;
		b->data[n] = '\0';
	}
}
