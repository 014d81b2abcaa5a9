/* testrealloc.h - realloc that fails on demand, for a test binary
 * linked with -Wl,--wrap=realloc (TEST_LDFLAGS_<name> in the Makefile).
 * Include it in that test's one source file: it defines the wrapper.
 *
 * After realloc_budget successful calls (when set, >= 0) every call of the
 * code under test fails; -1 (the start) lets every call through. */
#ifndef DRA_GUARD_TESTREALLOC_H
#define DRA_GUARD_TESTREALLOC_H

#include <stddef.h>

void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);
static int realloc_budget = -1;

void *__wrap_realloc(void *p, size_t n)
{
	if (realloc_budget == 0)
		return NULL;
	if (realloc_budget > 0)
		realloc_budget--;
	return __real_realloc(p, n);
}

#endif
