/* quantity.h - Kubernetes resource.Quantity: parse, compare, multiply, print.
 *
 * A quantity is an exact decimal: value = mant * 10^scale, with a signed
 * 128-bit mantissa and a 32-bit scale, and the suffix family it was written in
 * (which only matters for printing). Parsing accepts exactly what the API
 * server's resource.ParseQuantity accepts, including its rounding of anything
 * finer than 1n up to the next nano unit (away from zero) and its cap of
 * binary-SI values above 2^63-1; printing gives the canonical string the API
 * server would print. Values that cannot be held exactly (a mantissa past 128
 * bits, a scale past +-1e6) are -ERANGE, never rounded or wrapped.
 * No allocation; no global state; safe from any thread. */
#ifndef DRA_GUARD_QUANTITY_H
#define DRA_GUARD_QUANTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest canonical string quantity_format() writes, NUL included. */
#define QUANTITY_STR_MAX 64
/* Longest text quantity_parse() looks at; longer input is -EINVAL. */
#define QUANTITY_TEXT_MAX 128

enum quantity_format {
	QUANTITY_DECIMAL_SI = 0,      /* n u m "" k M G T P E, and plain numbers */
	QUANTITY_BINARY_SI,           /* Ki Mi Gi Ti Pi Ei */
	QUANTITY_DECIMAL_EXPONENT,    /* 1e3, 1E-3 */
};

struct quantity {            /* read through the functions below */
	__int128 mant;
	int32_t scale;
	enum quantity_format format;
};

/* Parse s[0..len): an optional sign, digits with an optional fraction, and an
 * optional suffix, as resource.ParseQuantity does. Leading and trailing ASCII
 * spaces are ignored (the API server's JSON decoding trims them). Returns 0,
 * -EINVAL for text that is not a quantity, -ERANGE for a valid quantity too
 * large to hold exactly. */
int quantity_parse(const char *s, size_t len, struct quantity *out);

/* The quantity n (decimal SI). */
void quantity_from_int(int64_t n, struct quantity *out);

/* <0, 0, >0 as a is less than, equal to, greater than b (by value; the format
 * does not matter, so 2Gi == 2048Mi == 2147483648). */
int quantity_cmp(const struct quantity *a, const struct quantity *b);

/* -1, 0 or 1. */
int quantity_sign(const struct quantity *q);

/* True when the value is a whole number. */
bool quantity_is_integer(const struct quantity *q);

/* True when a is a whole multiple of b (b > 0); e.g. 4Gi of 2Mi. */
bool quantity_is_multiple_of(const struct quantity *a, const struct quantity *b);

/* out = a * n, or out = a * b. The result keeps a's format. Returns 0 or
 * -ERANGE on overflow (out untouched). */
int quantity_mul_int(const struct quantity *a, int64_t n, struct quantity *out);
int quantity_mul(const struct quantity *a, const struct quantity *b, struct quantity *out);

/* out = a + b, keeping a's format. 0 or -ERANGE. */
int quantity_add(const struct quantity *a, const struct quantity *b, struct quantity *out);

/* The value as an int64 when it is a whole number in range: 0, or -ERANGE. */
int quantity_to_int64(const struct quantity *q, int64_t *out);

/* The canonical string, as Quantity.String() prints it: "8Gi", "1500m", "2k",
 * "1e3", "9223372036854775807". */
void quantity_format(const struct quantity *q, char buf[static QUANTITY_STR_MAX]);

/* A spelling-independent string of the value alone: the shortest
 * "<digits>e<exp>" with no trailing zeros in digits ("0" for zero, "-" sign
 * first). Equal values give equal strings whatever their format; used for
 * fingerprints. */
void quantity_normal(const struct quantity *q, char buf[static QUANTITY_STR_MAX]);

#endif
