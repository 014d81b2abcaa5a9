/* buf.h - a growable byte buffer with a hard cap.
 *
 * Every append checks the cap set at buf_init(); going over fails with -E2BIG
 * and leaves the contents as they were before the call (never a truncated
 * append). The buffer keeps a NUL after the contents, so buf_cstr() is always
 * a C string. JSON is written onto a buffer by jw.h. */
#ifndef DRA_GUARD_BUF_H
#define DRA_GUARD_BUF_H

#include <stdarg.h>
#include <stddef.h>

#include "str.h"

struct arena;

struct buf {                 /* fields are private; use the functions below */
	char *data;
	size_t len;
	size_t alloc;
	size_t cap;
	struct arena *arena;         /* where data lives; NULL: the heap */
};

/* An empty buffer that will hold at most cap bytes (plus the NUL). No allocation. */
void buf_init(struct buf *b, size_t cap);

/* buf_init() of a buffer whose memory comes from arena a (borrowed; it must
 * outlive the buffer's contents): it grows the arena's last allocation in
 * place while nothing else was allocated since, and buf_free() only forgets
 * it. For text that ends up in a request's arena anyway, or a parse that
 * must stay inside the request's memory. Over the arena's cap: -E2BIG. */
void buf_init_in(struct buf *b, size_t cap, struct arena *a);

/* Free the memory; the buffer is empty and usable again. */
void buf_free(struct buf *b);

/* Empty the buffer but keep its memory. */
void buf_reset(struct buf *b);

/* Make room for n more bytes (and the NUL) in one allocation, so the appends
 * that follow do not grow the buffer step by step: for a body whose length
 * is declared. 0, -E2BIG when n more bytes would pass the cap, -ENOMEM. */
int buf_presize(struct buf *b, size_t n);

/* Grow the contents by n bytes the caller then writes at *p (before any
 * other call on b): for a writer that knows a token's length, one check of
 * the cap for the whole token. 0, -E2BIG over the cap (nothing changed),
 * -ENOMEM. */
int buf_extend(struct buf *b, size_t n, char **p);

/* Append bytes. 0, -E2BIG over the cap, -ENOMEM. */
int buf_add(struct buf *b, const void *p, size_t n);
int buf_add_str(struct buf *b, struct str s);
int buf_add_cstr(struct buf *b, const char *s);
int buf_add_char(struct buf *b, char c);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* buf_printf() with a va_list (ap is consumed). */
int buf_vprintf(struct buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* Steal the contents: *out gets a malloc'd NUL-terminated string (free with
 * free()), *len its length; the buffer is left empty. -ENOMEM if empty and
 * allocation fails; -EINVAL for a buffer in an arena (its contents are the
 * arena's). */
int buf_take(struct buf *b, char **out, size_t *len);

/* Borrow the contents. */
const char *buf_cstr(const struct buf *b);
size_t buf_len(const struct buf *b);

/* Bytes the buffer holds allocated (0 before the first append): what it
 * costs, whatever its contents. */
size_t buf_allocated(const struct buf *b);

/* Drop everything after the first n bytes (n <= len). */
void buf_truncate(struct buf *b, size_t n);

#endif
