/* str.h - borrowed byte strings.
 *
 * Decoded objects point into the request body (or into the request's arena for
 * strings that needed unescaping) instead of copying: a struct str is a view,
 * never NUL-terminated, valid as long as what it points into. */
#ifndef DRA_GUARD_STR_H
#define DRA_GUARD_STR_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

struct str {
	const char *ptr;
	size_t len;
};

/* A view of a string literal. */
#define STR_LIT(s) ((struct str){ (s), sizeof(s) - 1 })
/* printf("%.*s", STR_FMT(s)) */
#define STR_FMT(s) (int)(s).len, (s).ptr

/* A view of a NUL-terminated string; NULL gives the empty string. */
struct str str_from_cstr(const char *s);

/* True when both views hold the same bytes. Inline: rules compare names in
 * every mapping of every device, and a literal's length folds away here. */
static inline bool str_eq(struct str a, struct str b)
{
	return a.len == b.len && (a.len == 0 || a.ptr == b.ptr || memcmp(a.ptr, b.ptr, a.len) == 0);
}

/* True when a holds exactly the bytes of the NUL-terminated c. */
static inline bool str_eq_cstr(struct str a, const char *c)
{
	size_t n = strlen(c);

	return a.len == n && (n == 0 || memcmp(a.ptr, c, n) == 0);
}

/* True when s begins with prefix. */
bool str_has_prefix(struct str s, const char *prefix);

/* Three-way byte comparison, shorter first on a common prefix. */
int str_cmp(struct str a, struct str b);

#endif
