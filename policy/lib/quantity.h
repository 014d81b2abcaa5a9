/* quantity.h - Kubernetes resource.Quantity: parse, compare, multiply, print.
 *
 * A quantity is an exact decimal: value = mant * 10^scale, with a signed
 * 128-bit mantissa of at most QUANTITY_DIGITS_MAX digits and a scale within
 * +-QUANTITY_SCALE_MAX, and the suffix family it was written in (which only
 * matters for printing). Parsing accepts exactly what the API server's
 * resource.ParseQuantity accepts, including its rounding of anything finer
 * than 1n up to the next nano unit (away from zero) and its silent cap of
 * binary-SI values above 2^63-1 ("8Ei" is 9223372036854775807); printing
 * gives the canonical string the API server would print. Values that cannot
 * be held exactly are -ERANGE, never rounded or wrapped.
 * No allocation; no global state; safe from any thread. */
#ifndef DRA_GUARD_QUANTITY_H
#define DRA_GUARD_QUANTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bounds of what a struct quantity holds: 38 significant digits and a
 * decimal exponent within +-1e6 (the API server has neither limit, but no
 * real quantity comes near them). */
#define QUANTITY_DIGITS_MAX 38
#define QUANTITY_SCALE_MAX 1000000

/* Longest string quantity_format() or quantity_normal() writes, NUL
 * included. The longest is a binary-SI value grown by arithmetic past 2^63
 * yet still printed with a binary suffix: up to 89 digits, a sign and "Ei". */
#define QUANTITY_STR_MAX 96

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

/* Parse s[0..len) as the API server decodes a quantity field: white space at
 * both ends is dropped first (Quantity.UnmarshalJSON calls strings.TrimSpace:
 * ASCII space, \t \n \v \f \r, and the Unicode spaces such as U+00A0), then
 * the rest must be an optional sign, digits with an optional fraction (".5"
 * and "5." included) and an optional suffix, as resource.ParseQuantity reads
 * them. Any length is accepted; time is linear in len and nothing is copied.
 * Returns 0, -EINVAL for text that is not a quantity, -ERANGE for a valid
 * quantity this type cannot hold exactly. out is untouched on error. */
int quantity_parse(const char *s, size_t len, struct quantity *out);

/* As quantity_parse() without dropping white space: resource.ParseQuantity
 * itself, for places where the API server calls it on raw text (the size in
 * a "hugepages-<size>" resource name). */
int quantity_parse_strict(const char *s, size_t len, struct quantity *out);

/* True when s parses (as quantity_parse() reads it) and the API server then
 * serializes the quantity as the trimmed text itself instead of the
 * canonical string of quantity_format(): ParseQuantity keeps its input when it
 * looks canonical, so "+1k", "01Ki", "1.500" and "1E3" come back verbatim
 * while "1000" becomes "1k" and "1024Mi" becomes "1Gi". */
bool quantity_spelling_kept(const char *s, size_t len);

/* The quantity n (decimal SI). */
void quantity_from_int(int64_t n, struct quantity *out);

/* <0, 0, >0 as a is less than, equal to, greater than b (by value; the format
 * does not matter, so 2Gi == 2048Mi == 2147483648). */
int quantity_cmp(const struct quantity *a, const struct quantity *b);

/* -1, 0 or 1. */
int quantity_sign(const struct quantity *q);

/* True when the value is a whole number. */
bool quantity_is_integer(const struct quantity *q);

/* True when a is a whole multiple of b: b > 0 and a / b is an integer (so 4Gi
 * of 2Mi, 0 of anything, -4Gi of 2Mi); false whenever b <= 0. */
bool quantity_is_multiple_of(const struct quantity *a, const struct quantity *b);

/* out = a * n, or out = a * b, exactly. The result keeps a's format. Returns
 * 0 or -ERANGE when the product cannot be held (out untouched). out may be a
 * or b. */
int quantity_mul_int(const struct quantity *a, int64_t n, struct quantity *out);
int quantity_mul(const struct quantity *a, const struct quantity *b, struct quantity *out);

/* out = a + b, exactly, with a's format, or b's when a is zero (as
 * Quantity.Add). 0 or -ERANGE (out untouched). out may be a or b. */
int quantity_add(const struct quantity *a, const struct quantity *b, struct quantity *out);

/* *n = floor(a / b) for a >= 0 and b > 0, exactly: 0, -EINVAL for a < 0 or
 * b <= 0, -ERANGE when the quotient passes INT64_MAX. How many steps of a
 * capacity's validRange fit under a bound. */
int quantity_div_floor(const struct quantity *a, const struct quantity *b, int64_t *n);

/* ceil(value / 10^scale) as an int64, as Quantity.ScaledValue(scale) gives
 * it (MilliValue() is scale -3, Value() scale 0): a fraction rounds up,
 * toward +infinity. 0, or -ERANGE when it does not fit. */
int quantity_scaled_ceil(const struct quantity *q, int scale, int64_t *out);

/* The quantity n * 10^scale in the format given. */
void quantity_from_scaled(int64_t n, int scale, enum quantity_format format, struct quantity *out);

/* The canonical string, as Quantity.String() prints a value it computed:
 * "8Gi", "1500m", "2k", "1e3", "9223372036854775807"; "0" for zero. Exponents
 * with no suffix of their family fall back to exponent notation instead of
 * losing magnitude ("1000E" prints "1e21"). */
void quantity_format(const struct quantity *q, char buf[static QUANTITY_STR_MAX]);

/* A spelling-independent string of the value alone: "<digits>e<exp>" with no
 * trailing zeros in digits ("0" for zero, "-" sign first), itself a valid
 * quantity. Equal values give equal strings whatever their format; used for
 * fingerprints. */
void quantity_normal(const struct quantity *q, char buf[static QUANTITY_STR_MAX]);

#endif
