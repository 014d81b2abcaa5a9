/* quantity_impl.h - what the files of the quantity module share. Private to
 * the module: nothing outside policy/quantity*.c includes it.
 *
 * quantity.c holds the representation and the arithmetic, quantity_parse.c
 * the parser, quantity_format.c the printer. All three work on a value in
 * sign-magnitude form with an unbounded scale (struct qv) and store it
 * normalized. Getting and storing one are small and on the request path
 * (every quantity parsed, compared or tested for a multiple), so they are
 * static inline here; quantity_strip_zeros() stays a call (quantity.c),
 * which measured cheaper than a copy of its loops in every caller. */
#ifndef DRA_GUARD_QUANTITY_IMPL_H
#define DRA_GUARD_QUANTITY_IMPL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "quantity.h"

typedef unsigned __int128 u128;

/* 10^0 .. 10^38 (quantity.c). */
extern const u128 quantity_pow10[QUANTITY_DIGITS_MAX + 1];

#define MANT_LIMIT quantity_pow10[QUANTITY_DIGITS_MAX]

/* A value in sign-magnitude form while it is computed. */
struct qv {
	bool neg;
	u128 mag;
	int64_t scale;
};

/* Move factors of ten from the mantissa into the scale (quantity.c). */
void quantity_strip_zeros(struct qv *v);

static inline unsigned quantity_ctz128(u128 v)
{
	uint64_t lo = (uint64_t)v;

	if (lo)
		return (unsigned)__builtin_ctzll(lo);
	return 64 + (unsigned)__builtin_ctzll((uint64_t)(v >> 64));
}

static inline struct qv quantity_qv_get(const struct quantity *q)
{
	struct qv v;

	v.neg = q->mant < 0;
	v.mag = v.neg ? -(u128)q->mant : (u128)q->mant;
	v.scale = q->scale;
	return v;
}

/* Normalize v and store it, or -ERANGE when it is out of bounds. */
static inline int quantity_qv_put(struct qv v, enum quantity_format format, struct quantity *out)
{
	quantity_strip_zeros(&v);
	if (v.mag >= MANT_LIMIT || v.scale > QUANTITY_SCALE_MAX || v.scale < -QUANTITY_SCALE_MAX)
		return -ERANGE;
	out->mant = v.neg ? -(__int128)v.mag : (__int128)v.mag;
	out->scale = (int32_t)v.scale;
	out->format = format;
	return 0;
}

#endif
