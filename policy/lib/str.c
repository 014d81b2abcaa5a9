/* str.c - borrowed byte strings. */
#include "str.h"

struct str str_from_cstr(const char *s)
{
	struct str r = { "", 0 };

	if (s) {
		r.ptr = s;
		r.len = strlen(s);
	}
	return r;
}

bool str_has_prefix(struct str s, const char *prefix)
{
	size_t n = strlen(prefix);

	return s.len >= n && memcmp(s.ptr, prefix, n) == 0;
}

int str_cmp(struct str a, struct str b)
{
	size_t n = a.len < b.len ? a.len : b.len;
	int c = n ? memcmp(a.ptr, b.ptr, n) : 0;

	if (c != 0)
		return c;
	if (a.len == b.len)
		return 0;
	return a.len < b.len ? -1 : 1;
}
