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

/* n more bytes and the NUL fit in what is allocated (then within the cap
 * too: no more than cap + 1 bytes are ever allocated): most appends. */
static bool has_room(const struct buf *b, size_t n)
{
	return b->alloc > b->len && n < b->alloc - b->len;
}

int buf_presize(struct buf *b, size_t n)
{
	return buf_reserve(b, n, true);
}

int buf_add(struct buf *b, const void *p, size_t n)
{
	int rc = has_room(b, n) ? 0 : buf_reserve(b, n, false);

	if (rc)
		return rc;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int buf_extend(struct buf *b, size_t n, char **p)
{
	int rc = has_room(b, n) ? 0 : buf_reserve(b, n, false);

	if (rc)
		return rc;
	*p = b->data + b->len;
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
	int rc = has_room(b, 1) ? 0 : buf_reserve(b, 1, false);

	if (rc)
		return rc;
	b->data[b->len++] = c;
	b->data[b->len] = '\0';
	return 0;
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
