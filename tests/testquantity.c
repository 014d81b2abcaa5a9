/* testquantity.c - quantity helpers for tests (see testquantity.h). */
#include "testquantity.h"

#include <errno.h>

#include "quantity_impl.h"

int testquantity_to_int64(const struct quantity *q, int64_t *out)
{
	struct qv v = quantity_qv_get(q);
	u128 limit;

	quantity_strip_zeros(&v);
	if (v.mag == 0) {
		*out = 0;
		return 0;
	}
	if (v.scale < 0 || v.scale > 18)
		return -ERANGE;
	limit = v.neg ? (u128)INT64_MAX + 1 : (u128)INT64_MAX;
	if (v.mag > limit / quantity_pow10[v.scale])
		return -ERANGE;
	v.mag *= quantity_pow10[v.scale];
	if (v.mag > limit)
		return -ERANGE;
	*out = v.neg ? -(int64_t)(v.mag - 1) - 1 : (int64_t)v.mag;
	return 0;
}
