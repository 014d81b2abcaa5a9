/* fuzz_quantity.c - libFuzzer target: quantity parsing, printing, comparison
 * and arithmetic agree with each other.
 *
 * The whole input is parsed; when it parses, its canonical string and its
 * normal form must read back to the same value and print the same again.
 * The input is also split at a byte chosen by its first byte into two
 * quantities, which must compare antisymmetrically, add and multiply
 * commutatively, and agree with their normal forms. Any disagreement
 * aborts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quantity.h"
#include "testquantity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int sgn(int v)
{
	return (v > 0) - (v < 0);
}

static void check(int cond)
{
	if (!cond)
		abort();
}

/* A printed string is bounded and reads back (strictly: no spaces) to the
 * same value, except where parsing itself changes values: below 1n (it
 * rounds up; only arithmetic makes such values) and binary SI past 2^63-1
 * (it caps). */
static void check_prints_back(const struct quantity *q)
{
	struct quantity back, cap;
	char buf[QUANTITY_STR_MAX], again[QUANTITY_STR_MAX];
	int rc;

	quantity_format(q, buf);
	check(strlen(buf) < QUANTITY_STR_MAX);
	rc = quantity_parse_strict(buf, strlen(buf), &back);
	check(rc == 0);
	if (q->mant != 0 && q->scale < -9)      /* normalized: finer than 1n */
		return;
	quantity_from_int(INT64_MAX, &cap);
	if (q->format == QUANTITY_BINARY_SI && quantity_cmp(q, &cap) > 0)
		return;
	quantity_mul_int(&cap, -1, &cap);
	if (q->format == QUANTITY_BINARY_SI && quantity_cmp(q, &cap) < 0)
		return;
	check(quantity_cmp(q, &back) == 0);
	/* The string is stable once its format is: a binary-SI value printed
	 * without a binary suffix ("148200000") reads back as decimal SI,
	 * which prints "148200k". */
	quantity_format(&back, again);
	check(back.format != q->format || strcmp(buf, again) == 0);

	quantity_normal(q, buf);
	check(strlen(buf) < QUANTITY_STR_MAX);
	check(quantity_parse_strict(buf, strlen(buf), &back) == 0);
	check(quantity_cmp(q, &back) == 0);
	quantity_normal(&back, again);
	check(strcmp(buf, again) == 0);
}

static void check_single(const struct quantity *q)
{
	struct quantity neg, r;
	int64_t v;

	check_prints_back(q);
	check(quantity_cmp(q, q) == 0);
	check(quantity_mul_int(q, -1, &neg) == 0);
	check(quantity_sign(&neg) == -quantity_sign(q));
	check(quantity_add(q, &neg, &r) == 0 && quantity_sign(&r) == 0);
	if (testquantity_to_int64(q, &v) == 0) {
		check(quantity_is_integer(q));
		quantity_from_int(v, &r);
		check(quantity_cmp(q, &r) == 0);
	}
	if (quantity_sign(q) > 0)
		check(quantity_is_multiple_of(q, q));
}

static void check_pair(const struct quantity *a, const struct quantity *b, int k)
{
	char na[QUANTITY_STR_MAX], nb[QUANTITY_STR_MAX];
	struct quantity r1, r2, nb_q, back;
	int c = quantity_cmp(a, b), rc1, rc2;

	check(sgn(c) == -sgn(quantity_cmp(b, a)));
	quantity_normal(a, na);
	quantity_normal(b, nb);
	check((strcmp(na, nb) == 0) == (c == 0));

	rc1 = quantity_add(a, b, &r1);
	rc2 = quantity_add(b, a, &r2);
	check(rc1 == rc2);
	if (rc1 == 0) {
		check(quantity_cmp(&r1, &r2) == 0);
		check(sgn(quantity_cmp(&r1, a)) == quantity_sign(b));
		check_prints_back(&r1);
		/* (a + b) - b == a */
		check(quantity_mul_int(b, -1, &nb_q) == 0);
		if (quantity_add(&r1, &nb_q, &back) == 0)
			check(quantity_cmp(&back, a) == 0);
	}

	rc1 = quantity_mul(a, b, &r1);
	rc2 = quantity_mul(b, a, &r2);
	check(rc1 == rc2);
	if (rc1 == 0) {
		check(quantity_cmp(&r1, &r2) == 0);
		check(quantity_sign(&r1) == quantity_sign(a) * quantity_sign(b));
		check(r1.format == a->format);
		check_prints_back(&r1);
	}

	if (quantity_sign(b) > 0) {
		if (quantity_mul_int(b, k, &r1) == 0)
			check(quantity_is_multiple_of(&r1, b));
		if (quantity_sign(a) > 0 && quantity_is_multiple_of(a, b) &&
		    quantity_is_multiple_of(b, a))
			check(c == 0);
		if (quantity_is_multiple_of(a, b) && c != 0 && quantity_sign(a) > 0)
			check(c > 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct quantity q, a, b;
	const char *s = (const char *)data;
	size_t cut;
	int ra, rb;

	if (quantity_parse(s, size, &q) == 0)
		check_single(&q);
	if (size < 2)
		return 0;
	cut = 1 + data[0] % (size - 1);
	ra = quantity_parse(s + 1, cut - 1, &a);
	rb = quantity_parse(s + cut, size - cut, &b);
	if (ra == 0)
		check_single(&a);
	if (ra == 0 && rb == 0)
		check_pair(&a, &b, (int)(data[0] % 7) - 3);
	return 0;
}
