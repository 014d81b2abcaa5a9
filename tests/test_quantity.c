/* test_quantity.c - resource.Quantity parsing, comparison, arithmetic and
 * printing, against the behaviour of k8s.io/apimachinery pkg/api/resource
 * (quantity.go, suffix.go, amount.go, math.go and the cases of
 * quantity_test.go). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quantity.h"
#include "testquantity.h"

#define DSI QUANTITY_DECIMAL_SI
#define BSI QUANTITY_BINARY_SI
#define DEX QUANTITY_DECIMAL_EXPONENT

/* Parse a NUL-terminated test string, failing the test on error. */
static struct quantity must_parse(const char *s)
{
	struct quantity q;
	int rc = quantity_parse(s, strlen(s), &q);

	if (rc != 0)
		fail_msg("\"%s\": parse returned %d", s, rc);
	return q;
}

static void assert_formats_as(const struct quantity *q, const char *want, const char *what)
{
	char buf[QUANTITY_STR_MAX];

	quantity_format(q, buf);
	if (strcmp(buf, want) != 0)
		fail_msg("%s: printed \"%s\", want \"%s\"", what, buf, want);
}

/* ---- valid spellings --------------------------------------------------- */

struct valid_row {
	const char *in;
	const char *canonical;      /* quantity_format() */
	const char *normal;         /* quantity_normal(), i.e. the exact value */
	enum quantity_format format;
};

static const struct valid_row valid_rows[] = {
	/* Zeros in every family keep their family (TestQuantityParse). */
	{ "0", "0", "0", DSI },
	{ "0n", "0", "0", DSI },
	{ "0u", "0", "0", DSI },
	{ "0m", "0", "0", DSI },
	{ "0Ki", "0", "0", BSI },
	{ "0k", "0", "0", DSI },
	{ "0Mi", "0", "0", BSI },
	{ "0M", "0", "0", DSI },
	{ "0Gi", "0", "0", BSI },
	{ "0G", "0", "0", DSI },
	{ "0Ti", "0", "0", BSI },
	{ "0T", "0", "0", DSI },
	{ "-0", "0", "0", DSI },
	{ "00", "0", "0", DSI },
	{ "0e5", "0", "0", DEX },
	/* Binary suffixes. */
	{ "1", "1", "1e0", DSI },
	{ "1Ki", "1Ki", "1024e0", BSI },
	{ "8Ki", "8Ki", "8192e0", BSI },
	{ "7Mi", "7Mi", "7340032e0", BSI },
	{ "6Gi", "6Gi", "6442450944e0", BSI },
	{ "5Ti", "5Ti", "549755813888e1", BSI },
	{ "4Pi", "4Pi", "4503599627370496e0", BSI },
	{ "3Ei", "3Ei", "3458764513820540928e0", BSI },
	{ "10Ti", "10Ti", "1099511627776e1", BSI },
	{ "100Ti", "100Ti", "1099511627776e2", BSI },
	{ "8Gi", "8Gi", "8589934592e0", BSI },
	{ "1024Mi", "1Gi", "1073741824e0", BSI },
	{ "2048Mi", "2Gi", "2147483648e0", BSI },
	{ "307200Ki", "300Mi", "3145728e2", BSI },
	{ "1025024Mi", "1001Gi", "1074815565824e0", BSI },
	{ "1025Ki", "1025Ki", "10496e2", BSI },
	/* Decimal suffixes. */
	{ "5n", "5n", "5e-9", DSI },
	{ "4u", "4u", "4e-6", DSI },
	{ "3m", "3m", "3e-3", DSI },
	{ "9", "9", "9e0", DSI },
	{ "8k", "8k", "8e3", DSI },
	{ "50k", "50k", "5e4", DSI },
	{ "7M", "7M", "7e6", DSI },
	{ "6G", "6G", "6e9", DSI },
	{ "5T", "5T", "5e12", DSI },
	{ "40T", "40T", "4e13", DSI },
	{ "300T", "300T", "3e14", DSI },
	{ "2P", "2P", "2e15", DSI },
	{ "1E", "1E", "1e18", DSI },
	{ "12E", "12E", "12e18", DSI },
	{ "100E", "100E", "1e20", DSI },
	{ "1000", "1k", "1e3", DSI },
	{ "1000M", "1G", "1e9", DSI },
	{ "0.001T", "1G", "1e9", DSI },
	/* Decimal exponents; "E" alone is exa, "E<n>" an exponent. */
	{ "1E-3", "1e-3", "1e-3", DEX },
	{ "1e3", "1e3", "1e3", DEX },
	{ "1E6", "1e6", "1e6", DEX },
	{ "1e9", "1e9", "1e9", DEX },
	{ "1E12", "1e12", "1e12", DEX },
	{ "1e15", "1e15", "1e15", DEX },
	{ "1E18", "1e18", "1e18", DEX },
	{ "1e14", "100e12", "1e14", DEX },
	{ "1e13", "10e12", "1e13", DEX },
	{ "1e+3", "1e3", "1e3", DEX },
	{ "1e0003", "1e3", "1e3", DEX },
	{ "1e100", "10e99", "1e100", DEX },
	{ ".001e12", "1e9", "1e9", DEX },
	{ "0.001e0", "1e-3", "1e-3", DEX },
	{ "1000e-12", "1e-9", "1e-9", DEX },
	{ "1e1000000", "10e999999", "1e1000000", DEX },
	/* Things that look like floating point. */
	{ "100.035k", "100035", "100035e0", DSI },
	{ "0.001", "1m", "1e-3", DSI },
	{ "0.0005k", "500m", "5e-1", DSI },
	{ "0.005", "5m", "5e-3", DSI },
	{ "0.05", "50m", "5e-2", DSI },
	{ "0.5", "500m", "5e-1", DSI },
	{ "0.00050k", "500m", "5e-1", DSI },
	{ "0.00500", "5m", "5e-3", DSI },
	{ "0.05000", "50m", "5e-2", DSI },
	{ "0.50000", "500m", "5e-1", DSI },
	{ "0.5e0", "500e-3", "5e-1", DEX },
	{ "0.5e-1", "50e-3", "5e-2", DEX },
	{ "0.5e-2", "5e-3", "5e-3", DEX },
	{ "10.035M", "10035k", "10035e3", DSI },
	{ "1.2e3", "1200", "12e2", DEX },
	{ "1.3E+6", "1300e3", "13e5", DEX },
	{ "1.40e9", "1400e6", "14e8", DEX },
	{ "1.53E12", "1530e9", "153e10", DEX },
	{ "1.6e15", "1600e12", "16e14", DEX },
	{ "1.7E18", "1700e15", "17e17", DEX },
	{ "9.01", "9010m", "901e-2", DSI },
	{ "8.1k", "8100", "81e2", DSI },
	{ "7.123456M", "7123456", "7123456e0", DSI },
	{ "6.987654321G", "6987654321", "6987654321e0", DSI },
	{ "5.444T", "5444G", "5444e9", DSI },
	{ "40.1T", "40100G", "401e11", DSI },
	{ "300.2T", "300200G", "3002e11", DSI },
	{ "2.5P", "2500T", "25e14", DSI },
	{ "1.01E", "1010P", "101e16", DSI },
	{ "1.5", "1500m", "15e-1", DSI },
	{ "1.08", "1080m", "108e-2", DSI },
	{ "1080000000n", "1080m", "108e-2", DSI },
	{ "1.2345", "1234500u", "12345e-4", DSI },
	{ "1000u", "1m", "1e-3", DSI },
	/* Rounding of anything finer than 1n, away from zero. */
	{ "3.001n", "4n", "4e-9", DSI },
	{ "1.1E-9", "2e-9", "2e-9", DEX },
	{ "0.0000000001", "1n", "1e-9", DSI },
	{ "0.0000000005", "1n", "1e-9", DSI },
	{ "0.00000000050", "1n", "1e-9", DSI },
	{ "0.5e-9", "1e-9", "1e-9", DEX },
	{ "0.9n", "1n", "1e-9", DSI },
	{ "-0.9n", "-1n", "-1e-9", DSI },
	{ "0.00000012345", "124n", "124e-9", DSI },
	{ "0.00000012354", "124n", "124e-9", DSI },
	{ "1e-12", "1e-9", "1e-9", DEX },
	{ "-.484785E-7466", "-1e-9", "-1e-9", DEX },
	{ ".484785E-7466", "1e-9", "1e-9", DEX },
	{ "1e-2147483647", "1e-9", "1e-9", DEX },
	{ "0.9999999999", "1", "1e0", DSI },
	{ "1.0000000001", "1000000001n", "1000000001e-9", DSI },
	{ "1.00000000000000000000000000000000000001", "1000000001n", "1000000001e-9", DSI },
	{ "9.5000000001Gi", "10200547328107374183n", "10200547328107374183e-9", BSI },
	{ "-9.5000000001Gi", "-10200547328107374183n", "-10200547328107374183e-9", BSI },
	/* The binary-SI cap at 2^63-1 ("The max is just a simple cap"). */
	{ "8Ei", "9223372036854775807", "9223372036854775807e0", BSI },
	{ "9Ei", "9223372036854775807", "9223372036854775807e0", BSI },
	{ "-9Ei", "-9223372036854775807", "-9223372036854775807e0", BSI },
	{ "9223372036854775807Ki", "9223372036854775807", "9223372036854775807e0", BSI },
	{ "7.99999999999Ei", "9223372036843246592953931531n", "9223372036843246592953931531e-9", BSI },
	{ "7.999999999999999999999Ei", "9223372036854775807", "9223372036854775807e0", BSI },
	{ "7Ei", "7Ei", "8070450532247928832e0", BSI },
	/* Fractional binary, printed in decimal SI when not whole. */
	{ "100.035Ki", "102435840m", "10243584e-2", BSI },
	{ "0.5Mi", "512Ki", "524288e0", BSI },
	{ "0.05Gi", "53687091200m", "536870912e-1", BSI },
	{ "0.025Ti", "27487790694400m", "274877906944e-1", BSI },
	{ "1.5Gi", "1536Mi", "1610612736e0", BSI },
	{ "0.5Ki", "512", "512e0", BSI },
	{ ".001Ki", "1024m", "1024e-3", BSI },
	{ ".000001Ki", "1024u", "1024e-6", DSI },
	{ ".000000001Ki", "1024n", "1024e-9", DSI },
	{ ".000000000001Ki", "2n", "2e-9", DSI },
	{ "0.000000000001Ki", "2n", "2e-9", DSI },
	{ "-1Ki", "-1Ki", "-1024e0", BSI },
	{ "-1023", "-1023", "-1023e0", DSI },
	/* Written by trolls: accepted by the server all the same. */
	{ ".001", "1m", "1e-3", DSI },
	{ ".0001k", "100m", "1e-1", DSI },
	{ "1.", "1", "1e0", DSI },
	{ "1.G", "1G", "1e9", DSI },
	{ "+5", "5", "5e0", DSI },
	{ "01Ki", "1Ki", "1024e0", BSI },
	{ "-999999999999999999.1", "-999999999999999999100m", "-9999999999999999991e-1", DSI },
	{ "1.0000000000000000001E", "1000000000000000000100m", "10000000000000000001e-1", DSI },
	{ "10.000000000000000001E", "10000000000000000001", "10000000000000000001e0", DSI },
	{ "10000000000000000000", "10E", "1e19", DSI },
	{ "9223372036854775808.1", "9223372036854775808100m", "92233720368547758081e-1", DSI },
	{ "18446744073709551616", "18446744073709551616", "18446744073709551616e0", DSI },
	/* Exponents past the decimal-SI table print in exponent notation. */
	{ "1000E", "1e21", "1e21", DSI },
	{ "5000E", "5e21", "5e21", DSI },
	{ "1000000E", "1e24", "1e24", DSI },
	/* No digit at all: zero where upstream's int64 fast path takes it. */
	{ "+", "0", "0", DSI },
	{ "-", "0", "0", DSI },
	{ ".", "0", "0", DSI },
	{ "-.", "0", "0", DSI },
	{ "m", "0", "0", DSI },
	{ "n", "0", "0", DSI },
	{ "Ki", "0", "0", BSI },
	{ "Ti", "0", "0", BSI },
	{ "e3", "0", "0", DEX },
	{ "E", "0", "0", DSI },
};

static void test_valid_spellings_parse_to_exact_value_and_print_canonically(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(valid_rows) / sizeof(valid_rows[0]); i++) {
		const struct valid_row *r = &valid_rows[i];
		struct quantity q = must_parse(r->in);
		char normal[QUANTITY_STR_MAX];

		assert_formats_as(&q, r->canonical, r->in);
		quantity_normal(&q, normal);
		if (strcmp(normal, r->normal) != 0)
			fail_msg("\"%s\": value %s, want %s", r->in, normal, r->normal);
		if (q.format != r->format)
			fail_msg("\"%s\": format %d, want %d", r->in, q.format, r->format);
	}
}

/* TestQuantityParse also parses every row with an explicit sign. */
static void test_explicit_signs_mirror_the_unsigned_value(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(valid_rows) / sizeof(valid_rows[0]); i++) {
		const struct valid_row *r = &valid_rows[i];
		char plus[64], minus[64];
		struct quantity q, p, m, neg;

		if (r->in[0] == '-' || r->in[0] == '+')
			continue;
		snprintf(plus, sizeof(plus), "+%s", r->in);
		snprintf(minus, sizeof(minus), "-%s", r->in);
		q = must_parse(r->in);
		p = must_parse(plus);
		m = must_parse(minus);
		assert_int_equal(quantity_cmp(&q, &p), 0);
		assert_int_equal(p.format, q.format);
		assert_int_equal(m.format, q.format);
		assert_int_equal(quantity_mul_int(&q, -1, &neg), 0);
		if (quantity_cmp(&m, &neg) != 0)
			fail_msg("\"%s\" is not the negation of \"%s\"", minus, r->in);
	}
}

/* ---- invalid spellings ------------------------------------------------- */

struct invalid_row {
	const char *in;
	int rc;
};

static const struct invalid_row invalid_rows[] = {
	{ "", -EINVAL },
	{ " ", -EINVAL },
	/* From TestQuantityParse. */
	{ "1.1.M", -EINVAL },
	{ "1+1.0M", -EINVAL },
	{ "0.1mi", -EINVAL },
	{ "0.1am", -EINVAL },
	{ "aoeu", -EINVAL },
	{ ".5i", -EINVAL },
	{ "1i", -EINVAL },
	{ "-3.01i", -EINVAL },
	{ "-3.01e-", -EINVAL },
	{ "Non-Numeric", -EINVAL },
	{ "invalid", -EINVAL },
	/* Exponents outside int32 (TestInterpretExponentInt32Bounds). */
	{ "1e4294967297", -EINVAL },
	{ "1E2147483648", -EINVAL },
	{ "1E-2147483648", -EINVAL },
	{ "1E8589934592", -EINVAL },
	{ "1E9223372036854775807", -EINVAL },
	{ "1E9223372036854775808", -EINVAL },
	/* Unknown or malformed suffixes, garbage. */
	{ "1 Ki", -EINVAL },
	{ "1KiB", -EINVAL },
	{ "1ki", -EINVAL },
	{ "1K", -EINVAL },
	{ "1mm", -EINVAL },
	{ "1e", -EINVAL },
	{ "1E+", -EINVAL },
	{ "ee3", -EINVAL },
	{ "1Ee3", -EINVAL },
	{ "1e3.5", -EINVAL },
	{ "1k5", -EINVAL },
	{ "1Ki2", -EINVAL },
	{ "+-5", -EINVAL },
	{ "--5", -EINVAL },
	{ "1+5", -EINVAL },
	{ "0x10", -EINVAL },
	{ "1_000", -EINVAL },
	{ "1,5", -EINVAL },
	{ "1..", -EINVAL },
	{ "..1", -EINVAL },
	{ "1.5.", -EINVAL },
	{ "\xd9\xa1", -EINVAL },        /* ARABIC-INDIC DIGIT ONE */
	{ "1\xc2", -EINVAL },           /* a broken UTF-8 sequence is not space */
	{ "\xe2\x80\x8b" "1", -EINVAL }, /* U+200B is not White_Space */
	{ "1\"", -EINVAL },
	{ "1\\u0030", -EINVAL },        /* escapes are not decoded by the server */
	/* No digit, and upstream's inf.Dec path has to read the number. */
	{ "Pi", -EINVAL },
	{ "Ei", -EINVAL },
	{ ".Pi", -EINVAL },
	{ "-Ei", -EINVAL },
	{ "e-10", -EINVAL },
	{ "-.e-10", -EINVAL },
	/* Valid, but not exactly representable here. */
	{ "1e1000001", -ERANGE },
	{ "1e2147483647", -ERANGE },
	{ "123456789012345678901234567890123456789", -ERANGE },
	{ "12345678901234567890123456789012.3456789", -ERANGE },
	{ "0.5e-2147483647", -ERANGE },  /* upstream's int32 scale wraps here */
};

static void test_invalid_spellings_are_rejected(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(invalid_rows) / sizeof(invalid_rows[0]); i++) {
		const struct invalid_row *r = &invalid_rows[i];
		struct quantity q;
		int rc;

		q.mant = 77;
		q.scale = 0;
		q.format = DEX;
		rc = quantity_parse(r->in, strlen(r->in), &q);
		if (rc != r->rc)
			fail_msg("\"%s\": parse returned %d, want %d", r->in, rc, r->rc);
		/* out is untouched on error */
		assert_true(q.mant == 77 && q.scale == 0 && q.format == DEX);
	}
}

static void test_embedded_nul_is_not_a_quantity(void **state)
{
	struct quantity q;

	(void)state;
	assert_int_equal(quantity_parse("1\0", 2, &q), -EINVAL);
	assert_int_equal(quantity_parse("\0" "1", 2, &q), -EINVAL);
	assert_int_equal(quantity_parse(NULL, 0, &q), -EINVAL);
}

/* ---- white space ------------------------------------------------------- */

struct space_row {
	const char *in;
	bool trimmed_ok;            /* quantity_parse */
	const char *canonical;
};

static const struct space_row space_rows[] = {
	{ " 1", true, "1" },
	{ "1 ", true, "1" },
	{ "  8Gi  ", true, "8Gi" },
	{ "\t\n\v\f\r1Gi\r\n", true, "1Gi" },
	{ "\xc2\xa0" "1Gi" "\xc2\xa0", true, "1Gi" },           /* U+00A0 */
	{ "\xc2\x85" "2", true, "2" },                          /* U+0085 */
	{ "\xe3\x80\x80" "3k" "\xe2\x80\x8a", true, "3k" },     /* U+3000, U+200A */
	{ "\xe1\x9a\x80" "1" "\xe2\x80\xa8\xe2\x80\xa9", true, "1" },
	{ "\xe2\x80\xaf" "1" "\xe2\x81\x9f", true, "1" },       /* U+202F, U+205F */
	{ " - 1", false, NULL },
	{ "1 k", false, NULL },
	{ "\xc2\xa1" "1", false, NULL },                        /* U+00A1 */
};

static void test_parse_trims_go_white_space_and_strict_parse_does_not(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(space_rows) / sizeof(space_rows[0]); i++) {
		const struct space_row *r = &space_rows[i];
		struct quantity q;
		int rc = quantity_parse(r->in, strlen(r->in), &q);

		if (!r->trimmed_ok) {
			if (rc != -EINVAL)
				fail_msg("row %zu: parse returned %d, want -EINVAL", i, rc);
		} else {
			if (rc != 0)
				fail_msg("row %zu: parse returned %d", i, rc);
			assert_formats_as(&q, r->canonical, r->canonical);
		}
		/* Every row has space at an end or inside: strict parse refuses. */
		assert_int_equal(quantity_parse_strict(r->in, strlen(r->in), &q), -EINVAL);
	}
}

static void test_strict_parse_is_parse_quantity_itself(void **state)
{
	struct quantity q;

	(void)state;
	assert_int_equal(quantity_parse_strict("2Mi", 3, &q), 0);
	assert_formats_as(&q, "2Mi", "2Mi");
	assert_int_equal(quantity_parse_strict("+", 1, &q), 0);
	assert_int_equal(quantity_sign(&q), 0);
	assert_int_equal(quantity_parse_strict("", 0, &q), -EINVAL);
	assert_int_equal(quantity_parse_strict("1e1000001", 9, &q), -ERANGE);
}

/* ---- spellings the server keeps verbatim ------------------------------- */

struct kept_row {
	const char *in;
	bool kept;
};

static const struct kept_row kept_rows[] = {
	{ "0", true },
	{ "1", true },
	{ "1Ki", true },
	{ "1Gi", true },
	{ "3Ti", true },
	{ "1025Ki", true },
	{ "8589934592", true },
	{ "100k", true },
	{ "1500m", true },
	{ "1n", true },
	{ "1e-9", true },
	{ "+1k", true },
	{ "01Ki", true },
	{ "007", true },
	{ "1.500", true },
	{ "12.345", true },
	{ "1E3", true },
	{ "1e+3", true },
	{ "1.G", true },
	{ "5E", true },
	{ " 1k ", true },               /* kept as the trimmed text */
	{ "-1Ki", true },
	{ "8Gi", false },               /* 8 is a multiple of 8 */
	{ "1024Mi", false },
	{ "1Pi", false },               /* past the fast path's precision */
	{ "1000", false },
	{ "1000k", false },
	{ "0.5", false },
	{ "1.5", false },
	{ "1e-12", false },
	{ "-0", false },
	{ "+", false },
	{ "Ki", false },
	{ "1234567890123456789", false }, /* 19 digits take the inf.Dec path */
	{ "x", false },
};

static void test_spelling_kept_matches_parse_quantity_cache(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(kept_rows) / sizeof(kept_rows[0]); i++) {
		const struct kept_row *r = &kept_rows[i];

		if (quantity_spelling_kept(r->in, strlen(r->in)) != r->kept)
			fail_msg("\"%s\": kept should be %d", r->in, r->kept);
	}
}

/* Where the spelling is kept and already canonical, the two agree. */
static void test_kept_canonical_spellings_equal_format(void **state)
{
	static const char *const in[] = { "1Ki", "8589934592", "100k", "1500m", "1e-9", "3Ti" };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		struct quantity q = must_parse(in[i]);

		assert_true(quantity_spelling_kept(in[i], strlen(in[i])));
		assert_formats_as(&q, in[i], in[i]);
	}
}

/* ---- comparison and normal form ---------------------------------------- */

struct cmp_row {
	const char *a, *b;
	int want;
};

static const struct cmp_row cmp_rows[] = {
	{ "0", "0", 0 },
	{ "100m", "50m", 1 },
	{ "50m", "100m", -1 },
	{ "10000T", "100Gi", 1 },
	{ "2Gi", "2048Mi", 0 },
	{ "2Gi", "2147483648", 0 },
	{ "2048Mi", "2147483648", 0 },
	{ "1.5", "1500m", 0 },
	{ "1E", "1e18", 0 },
	{ "1E", "1000P", 0 },
	{ "0", "-0", 0 },
	{ "0Ki", "0e9", 0 },
	{ "1n", "0", 1 },
	{ "-1n", "0", -1 },
	{ "-1n", "1n", -1 },
	{ "-2", "-1", -1 },
	{ "-1Gi", "-1G", -1 },
	{ "1Gi", "1G", 1 },
	{ "8Ei", "9223372036854775807", 0 },
	{ "9223372036854775808", "8Ei", 1 },
	{ "0.1", "100000001n", -1 },
	{ "999999999999999999999999999999999999", "1e36", -1 },
	{ "1e1000000", "99999999999999999999999999999999999999e999961", 1 },
	{ "-1e1000000", "-1", -1 },
	{ "1e-9", "1e1000000", -1 },
	{ "123456789e3", "123456789000", 0 },
	{ "123456789e3", "123456789001", -1 },
};

static void test_cmp_orders_by_value_across_formats(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cmp_rows) / sizeof(cmp_rows[0]); i++) {
		const struct cmp_row *r = &cmp_rows[i];
		struct quantity a = must_parse(r->a), b = must_parse(r->b);
		int ab = quantity_cmp(&a, &b), ba = quantity_cmp(&b, &a);

		if ((ab > 0) - (ab < 0) != r->want || (ba > 0) - (ba < 0) != -r->want)
			fail_msg("cmp(%s, %s) = %d, reverse %d, want %d", r->a, r->b, ab, ba, r->want);
	}
}

/* Each group holds spellings of one value; groups hold different values. */
static const char *const normal_groups[][10] = {
	{ "2Gi", "2048Mi", "2147483648", "2147483648000m", "2.147483648G", "2147483.648k",
	  "0.001953125Ti", "2147483648e0", "21474836.48e2", NULL },
	{ "1500m", "1.5", "1.5e0", "0.0015k", "1500000u", "1500000000n", "+1.50", NULL },
	{ "1E", "1e18", "1000P", "1000000T", "0.001e21", "1000000000000000000", NULL },
	{ "0", "-0", "0Ki", "0e5", "+0.000", "0n", ".", NULL },
	{ "8Ei", "9Ei", "9223372036854775807", "9223372036854775807Ki", NULL },
	{ "1n", "0.1n", "0.000000000000001", "1e-9", "1e-12", NULL },
	{ "-1Ki", "-1024", "-1.024k", "-0.0009765625Mi", NULL },
};

static void test_normal_form_is_equal_exactly_for_equal_values(void **state)
{
	size_t ng = sizeof(normal_groups) / sizeof(normal_groups[0]), g, h, i, j;
	char first[QUANTITY_STR_MAX], other[QUANTITY_STR_MAX];

	(void)state;
	for (g = 0; g < ng; g++) {
		struct quantity q0 = must_parse(normal_groups[g][0]);

		quantity_normal(&q0, first);
		for (i = 1; normal_groups[g][i]; i++) {
			struct quantity q = must_parse(normal_groups[g][i]);

			quantity_normal(&q, other);
			if (strcmp(first, other) != 0)
				fail_msg("%s -> %s but %s -> %s", normal_groups[g][0], first,
					 normal_groups[g][i], other);
			assert_int_equal(quantity_cmp(&q0, &q), 0);
		}
		for (h = g + 1; h < ng; h++) {
			for (j = 0; normal_groups[h][j]; j++) {
				struct quantity q = must_parse(normal_groups[h][j]);

				quantity_normal(&q, other);
				assert_string_not_equal(first, other);
				assert_int_not_equal(quantity_cmp(&q0, &q), 0);
			}
		}
	}
}

static void test_normal_form_parses_back_to_the_same_value(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(valid_rows) / sizeof(valid_rows[0]); i++) {
		struct quantity q = must_parse(valid_rows[i].in), back;
		char normal[QUANTITY_STR_MAX];

		quantity_normal(&q, normal);
		back = must_parse(normal);
		assert_int_equal(quantity_cmp(&q, &back), 0);
	}
}

/* ---- arithmetic -------------------------------------------------------- */

struct arith_row {
	const char *a, *b;
	int rc;
	const char *normal;         /* value of the result when rc == 0 */
	const char *canonical;      /* its canonical string, in a's format */
};

static const struct arith_row mul_rows[] = {
	{ "2Gi", "3", 0, "6442450944e0", "6Gi" },
	{ "1.5", "2", 0, "3e0", "3" },
	{ "1m", "1m", 0, "1e-6", "1u" },
	{ "1n", "1n", 0, "1e-18", "1e-18" },
	{ "1n", "1m", 0, "1e-12", "1e-12" },
	{ "1n", "10m", 0, "1e-11", "10e-12" },
	{ "1n", "100m", 0, "1e-10", "100e-12" },
	{ ".48478", "5E-7466", 0, "48478e-14", "484780e-15" },  /* fuzz: below 1n */
	{ "1E", "1000", 0, "1e21", "1e21" },
	{ "1Ei", "1024", 0, "1180591620717411303424e0", "1180591620717411303424" },
	{ "4Ei", "2", 0, "9223372036854775808e0", "8Ei" },
	{ "1Ki", "9765625e60", 0, "1e70", "10e69" },
	{ "1Ki", "19531250e60", 0, "2e70", "20e69" },
	{ "1Ki", "9765625e62", 0, "1e72", "1e72" },
	{ "8Ei", "8Ei", 0, "85070591730234615847396907784232501249e0",
	  "85070591730234615847396907784232501249" },
	{ "8Ei", "-8Ei", 0, "-85070591730234615847396907784232501249e0",
	  "-85070591730234615847396907784232501249" },
	{ "1152921504606846976", "88817841970012523233890533447265625", 0, "1024e50", "102400e48" },
	{ "2", "5", 0, "1e1", "10" },
	{ "0", "8Ei", 0, "0", "0" },
	{ "1Gi", "0", 0, "0", "0" },
	{ "-1Gi", "-1", 0, "1073741824e0", "1Gi" },
	{ "99999999999999999999999999999999999999", "3", -ERANGE, NULL, NULL },
	{ "85070591730234615847396907784232501249", "9223372036854775807", -ERANGE, NULL, NULL },
	/* Both mantissas in 64 bits (multiplied whole, zeros stripped on
	 * storing): past the 38 digits, and at them only once stripped. */
	{ "18446744073709551615", "18446744073709551615", -ERANGE, NULL, NULL },
	{ "10000000000000000000", "10000000000000000000", 0, "1e38", "100e36" },
	{ "1e600000", "1e600000", -ERANGE, NULL, NULL },
	{ "1e999999", "1e9", -ERANGE, NULL, NULL },
};

static void check_arith(const struct arith_row *rows, size_t n, const char *op,
			int (*fn)(const struct quantity *, const struct quantity *, struct quantity *))
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct arith_row *r = &rows[i];
		struct quantity a = must_parse(r->a), b = must_parse(r->b), out;
		char normal[QUANTITY_STR_MAX];
		int rc;

		out.mant = 5;
		out.scale = 0;
		out.format = DEX;
		rc = fn(&a, &b, &out);
		if (rc != r->rc)
			fail_msg("%s %s %s: rc %d, want %d", r->a, op, r->b, rc, r->rc);
		if (rc) {
			/* never a wrapped value: out is untouched */
			assert_true(out.mant == 5 && out.scale == 0 && out.format == DEX);
			continue;
		}
		quantity_normal(&out, normal);
		if (strcmp(normal, r->normal) != 0)
			fail_msg("%s %s %s = %s, want %s", r->a, op, r->b, normal, r->normal);
		assert_formats_as(&out, r->canonical, r->a);
	}
}

static void test_mul_is_exact_or_erange(void **state)
{
	(void)state;
	check_arith(mul_rows, sizeof(mul_rows) / sizeof(mul_rows[0]), "*", quantity_mul);
}

/* Parsing never goes below nano, but products do: squaring 1n doubles its
 * exponent until it passes -QUANTITY_SCALE_MAX. */
static void test_mul_erange_on_tiny_scale(void **state)
{
	struct quantity q = must_parse("1n"), prev;
	int i, rc = 0;

	(void)state;
	for (i = 0; i < 32 && rc == 0; i++) {
		prev = q;
		rc = quantity_mul(&q, &q, &q);
	}
	assert_int_equal(rc, -ERANGE);
	assert_int_equal(i, 17);                /* 9 * 2^17 > 1e6 */
	assert_int_equal(quantity_cmp(&q, &prev), 0);
	assert_int_equal(q.scale, -9 * 65536);
}

static void test_mul_8ei_cubed_is_erange_not_wrapped(void **state)
{
	struct quantity e8 = must_parse("8Ei"), sq, cube;

	(void)state;
	assert_int_equal(quantity_mul(&e8, &e8, &sq), 0);
	cube = sq;
	assert_int_equal(quantity_mul(&sq, &e8, &cube), -ERANGE);
	assert_int_equal(quantity_cmp(&cube, &sq), 0);
	/* aliasing: out may be an operand */
	assert_int_equal(quantity_mul(&e8, &e8, &e8), 0);
	assert_int_equal(quantity_cmp(&e8, &sq), 0);
}

struct mul_int_row {
	const char *a;
	int64_t n;
	int rc;
	const char *canonical;
};

static const struct mul_int_row mul_int_rows[] = {
	{ "1Gi", -1, 0, "-1Gi" },
	{ "1Gi", 0, 0, "0" },
	{ "500m", 3, 0, "1500m" },
	{ "2Mi", 2048, 0, "4Gi" },
	{ "8Ei", INT64_MIN, 0, "-73786976294838206456Ei" },
	{ "9223372036854775807", INT64_MIN, 0, "-85070591730234615856620279821087277056" },
	{ "-1", INT64_MIN, 0, "9223372036854775808" },
	{ "1e1000000", 10, -ERANGE, NULL },
	{ "99999999999999999999999999999999999999", 2, -ERANGE, NULL },
	{ "99999999999999999999999999999999999999", 10, 0, "999999999999999999999999999999999999990" },
};

static void test_mul_int_keeps_format_and_never_wraps(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(mul_int_rows) / sizeof(mul_int_rows[0]); i++) {
		const struct mul_int_row *r = &mul_int_rows[i];
		struct quantity a = must_parse(r->a), out;
		int rc = quantity_mul_int(&a, r->n, &out);

		if (rc != r->rc)
			fail_msg("%s * %lld: rc %d, want %d", r->a, (long long)r->n, rc, r->rc);
		if (rc == 0) {
			assert_int_equal(out.format, a.format);
			assert_formats_as(&out, r->canonical, r->a);
		}
	}
}

static const struct arith_row add_rows[] = {
	{ "1", "1m", 0, "1001e-3", "1001m" },
	{ "1Gi", "-1Gi", 0, "0", "0" },
	{ "8Ei", "8Ei", 0, "18446744073709551614e0", "18446744073709551614" },
	{ "1Gi", "1Gi", 0, "2147483648e0", "2Gi" },
	{ "1Gi", "1", 0, "1073741825e0", "1073741825" },
	{ "10", "1Ki", 0, "1034e0", "1034" },
	{ "50000Ki", "97M", 0, "1482e5", "148200000" },    /* fuzz: no 1024 factor */
	{ "0", "1Gi", 0, "1073741824e0", "1Gi" },       /* zero takes b's format */
	{ "1Gi", "0", 0, "1073741824e0", "1Gi" },
	{ "0m", "1500m", 0, "15e-1", "1500m" },
	{ "99999999999999999999999999999999999999", "1", 0, "1e38", "100e36" },
	{ "1e37", "1", 0, "10000000000000000000000000000000000001e0",
	  "10000000000000000000000000000000000001" },
	{ "1e1000000", "-1e1000000", 0, "0", "0" },
	{ "-1e1000000", "1e999999", 0, "-9e999999", "-9e999999" },
	{ "1e38", "-99999999999999999999999999999999999999", 0, "1e0", "1" },
	{ "99999999999999999999999999999999999999", "2", -ERANGE, NULL, NULL },
	{ "1e100", "1", -ERANGE, NULL, NULL },
	{ "1", "1e100", -ERANGE, NULL, NULL },
	{ "1e39", "-99999999999999999999999999999999999999", -ERANGE, NULL, NULL },
	{ "1n", "1e1000000", -ERANGE, NULL, NULL },
};

static void test_add_is_exact_or_erange(void **state)
{
	(void)state;
	check_arith(add_rows, sizeof(add_rows) / sizeof(add_rows[0]), "+", quantity_add);
}

static void test_add_and_mul_commute(void **state)
{
	size_t i, j, n = sizeof(valid_rows) / sizeof(valid_rows[0]);

	(void)state;
	for (i = 0; i < n; i += 3) {
		for (j = 0; j < n; j += 5) {
			struct quantity a = must_parse(valid_rows[i].in), b = must_parse(valid_rows[j].in);
			struct quantity ab, ba;
			int r1, r2;

			r1 = quantity_add(&a, &b, &ab);
			r2 = quantity_add(&b, &a, &ba);
			assert_int_equal(r1, r2);
			if (r1 == 0)
				assert_int_equal(quantity_cmp(&ab, &ba), 0);
			r1 = quantity_mul(&a, &b, &ab);
			r2 = quantity_mul(&b, &a, &ba);
			assert_int_equal(r1, r2);
			if (r1 == 0)
				assert_int_equal(quantity_cmp(&ab, &ba), 0);
		}
	}
}

struct multiple_row {
	const char *a, *b;
	bool want;
};

static const struct multiple_row multiple_rows[] = {
	{ "4Gi", "2Mi", true },
	{ "3Mi", "2Mi", false },
	{ "1Gi", "1Gi", true },
	{ "0", "1Gi", true },
	{ "-4Gi", "2Mi", true },
	{ "1Gi", "0", false },
	{ "1Gi", "-1Gi", false },
	{ "1", "500m", true },
	{ "1", "300m", false },
	{ "900m", "300m", true },
	{ "1e30", "3", false },
	{ "3e30", "3", true },
	{ "1e30", "1Ki", true },
	{ "100", "1Ki", false },
	{ "2k", "16", true },
	{ "1m", "1n", true },
	{ "1n", "1m", false },
	{ "7e40", "7", true },
	{ "1e40", "7", false },
	{ "2Mi", "0.5", true },
	{ "1e1000000", "1024", true },
	{ "1e1000000", "3", false },
	{ "5", "1e1000000", false },
	{ "1e-9", "1e-9", true },
	/* Mantissas at the top of 64 bits (taken in 64), and one past it. */
	{ "18446744073709551615", "4294967295", true },
	{ "18446744073709551615", "4294967296", false },
	{ "55340232221128654845", "18446744073709551615", true },
	{ "55340232221128654845", "18446744073709551614", false },
};

static void test_is_multiple_of(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(multiple_rows) / sizeof(multiple_rows[0]); i++) {
		const struct multiple_row *r = &multiple_rows[i];
		struct quantity a = must_parse(r->a), b = must_parse(r->b);

		if (quantity_is_multiple_of(&a, &b) != r->want)
			fail_msg("%s multiple of %s should be %d", r->a, r->b, r->want);
	}
}

struct int64_row {
	const char *in;
	int rc;
	int64_t want;
};

static const struct int64_row int64_rows[] = {
	{ "8Gi", 0, 8589934592LL },
	{ "0", 0, 0 },
	{ "-0", 0, 0 },
	{ "2000m", 0, 2 },
	{ "1E", 0, 1000000000000000000LL },
	{ "1e18", 0, 1000000000000000000LL },
	{ "9223372036854775807", 0, INT64_MAX },
	{ "8Ei", 0, INT64_MAX },
	{ "-9223372036854775808", 0, INT64_MIN },
	{ "-9223372036854775807", 0, -INT64_MAX },
	{ "9223372036854775808", -ERANGE, 0 },
	{ "-9223372036854775809", -ERANGE, 0 },
	{ "10E", -ERANGE, 0 },
	{ "1e19", -ERANGE, 0 },
	{ "1e1000000", -ERANGE, 0 },
	{ "1.5", -ERANGE, 0 },
	{ "1500m", -ERANGE, 0 },
	{ "1n", -ERANGE, 0 },
};

static void test_to_int64_only_for_whole_numbers_in_range(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(int64_rows) / sizeof(int64_rows[0]); i++) {
		const struct int64_row *r = &int64_rows[i];
		struct quantity q = must_parse(r->in);
		int64_t v = 42;
		int rc = testquantity_to_int64(&q, &v);

		if (rc != r->rc)
			fail_msg("%s: rc %d, want %d", r->in, rc, r->rc);
		if (rc == 0 && v != r->want)
			fail_msg("%s: %lld, want %lld", r->in, (long long)v, (long long)r->want);
		if (rc != 0)
			assert_int_equal(v, 42);
	}
}

static void test_sign_and_is_integer(void **state)
{
	struct quantity q;

	(void)state;
	q = must_parse("-1n");
	assert_int_equal(quantity_sign(&q), -1);
	assert_false(quantity_is_integer(&q));
	q = must_parse("0.0");
	assert_int_equal(quantity_sign(&q), 0);
	assert_true(quantity_is_integer(&q));
	q = must_parse("1500m");
	assert_int_equal(quantity_sign(&q), 1);
	assert_false(quantity_is_integer(&q));
	q = must_parse("2000m");
	assert_true(quantity_is_integer(&q));
	q = must_parse("1e1000000");
	assert_true(quantity_is_integer(&q));
	q = must_parse("0.5Ki");
	assert_true(quantity_is_integer(&q));
}

static void test_from_int_is_decimal_si(void **state)
{
	static const struct {
		int64_t n;
		const char *want;
	} rows[] = {
		{ 1, "1" }, { 1000, "1k" }, { 1234000, "1234k" }, { 0, "0" }, { -5, "-5" },
		{ INT64_MAX, "9223372036854775807" }, { INT64_MIN, "-9223372036854775808" },
		{ 1000000000, "1G" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct quantity q;
		int64_t back = 0; /* cmocka's asserts are not noreturn to the compiler */

		quantity_from_int(rows[i].n, &q);
		assert_int_equal(q.format, DSI);
		assert_formats_as(&q, rows[i].want, rows[i].want);
		assert_int_equal(testquantity_to_int64(&q, &back), 0);
		assert_true(back == rows[i].n);
	}
}

/* ---- printing ---------------------------------------------------------- */

/* TestQuantityString: values built directly, as upstream builds them. */
struct format_row {
	int64_t mant;
	int32_t scale;
	enum quantity_format format;
	const char *want;
};

static const struct format_row format_rows[] = {
	{ 1024 * 1024 * 1024, 0, BSI, "1Gi" },
	{ 300 * 1024 * 1024, 0, BSI, "300Mi" },
	{ 6 * 1024, 0, BSI, "6Ki" },
	{ 1001LL * 1024 * 1024 * 1024, 0, BSI, "1001Gi" },
	{ 1024LL * 1024 * 1024 * 1024, 0, BSI, "1Ti" },
	{ 5, 0, BSI, "5" },
	{ 500, -3, BSI, "500m" },
	{ 1, 9, DSI, "1G" },
	{ 1000, 6, DSI, "1G" },
	{ 1000000, 3, DSI, "1G" },
	{ 1000000000, 0, DSI, "1G" },
	{ 1, -3, DSI, "1m" },
	{ 80, -3, DSI, "80m" },
	{ 1080, -3, DSI, "1080m" },
	{ 108, -2, DSI, "1080m" },
	{ 10800, -4, DSI, "1080m" },
	{ 300, 6, DSI, "300M" },
	{ 1, 12, DSI, "1T" },
	{ 1, 18, DSI, "1E" },
	{ 1, 21, DSI, "1e21" },
	{ 5, 21, DSI, "5e21" },
	{ 1, 24, DSI, "1e24" },
	{ 1, 70, BSI, "10e69" },
	{ 2, 70, BSI, "20e69" },
	{ 1, 72, BSI, "1e72" },
	{ 1234567, 6, DSI, "1234567M" },
	{ 1234567, -3, BSI, "1234567m" },
	{ 3, 3, DSI, "3k" },
	{ 1025, 0, BSI, "1025" },
	{ 0, 0, DSI, "0" },
	{ 0, 0, BSI, "0" },
	{ 1, 9, DEX, "1e9" },
	{ 1, -3, DEX, "1e-3" },
	{ 1, -9, DEX, "1e-9" },
	{ 80, -3, DEX, "80e-3" },
	{ 300, 6, DEX, "300e6" },
	{ 1, 12, DEX, "1e12" },
	{ 1, 3, DEX, "1e3" },
	{ 3, 3, DEX, "3e3" },
	{ 0, 0, DEX, "0" },
	{ 1, -9, DSI, "1n" },
	{ 80, -9, DSI, "80n" },
	{ 1080, -9, DSI, "1080n" },
	{ 108, -8, DSI, "1080n" },
	{ 10800, -10, DSI, "1080n" },
	{ 1, -6, DSI, "1u" },
	{ 80, -6, DSI, "80u" },
	{ 1080, -6, DSI, "1080u" },
	{ 1, -12, DSI, "1e-12" },           /* TestQuantityStringBelowNano */
	{ 1, -10, DSI, "100e-12" },
	{ 2000, 0, BSI, "2000" },           /* TestBinarySIZeroExponentString */
	{ 1023, 0, BSI, "1023" },
	{ 1024, 0, BSI, "1Ki" },
	{ 10245, -1, BSI, "1024500m" },     /* not whole: decimal SI */
	{ 3, 60, BSI, "2602085213965210641617886722087860107421875Ei" },
};

static void test_format_matches_quantity_string(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(format_rows) / sizeof(format_rows[0]); i++) {
		const struct format_row *r = &format_rows[i];
		struct quantity q;
		char what[64], want[QUANTITY_STR_MAX];

		q.mant = r->mant;
		q.scale = r->scale;
		q.format = r->format;
		snprintf(what, sizeof(what), "row %zu", i);
		assert_formats_as(&q, r->want, what);
		/* The negated value prints with a sign, never "-0". */
		q.mant = -q.mant;
		snprintf(want, sizeof(want), "%s%s", r->mant ? "-" : "", r->want);
		assert_formats_as(&q, want, what);
	}
}

/* The longest string: a binary-SI value of 38 digits times 10^69 has 60
 * factors of two, so it prints as 89 digits and "Ei". */
static void test_longest_binary_si_string_fits(void **state)
{
	static const char want[] =
		"-86736173798840354720596224069595336913195138262011596452794037759304046630859375000000000Ei";
	struct quantity q;
	char buf[QUANTITY_STR_MAX];

	(void)state;
	assert_true(sizeof(want) <= QUANTITY_STR_MAX);
	q = must_parse("99999999999999999999999999999999999999");
	q.scale = 69;
	q.format = BSI;
	q.mant = -q.mant;
	quantity_format(&q, buf);
	assert_string_equal(buf, want);
	/* one more factor of ten has a 1024^7 and falls to exponent notation */
	q.scale = 70;
	quantity_format(&q, buf);
	assert_string_equal(buf, "-999999999999999999999999999999999999990e69");
}

/* Found by fuzzing: arithmetic can go below 1n and prints exactly, but its
 * string reads back rounded up to 1n, as upstream's would. */
static void test_sub_nano_results_print_exactly_but_parse_rounds(void **state)
{
	struct quantity a = must_parse(".48478"), b = must_parse("5E-7466"), p, back;
	char buf[QUANTITY_STR_MAX];

	(void)state;
	assert_int_equal(quantity_mul(&a, &b, &p), 0);
	quantity_format(&p, buf);
	assert_string_equal(buf, "484780e-15");
	back = must_parse(buf);
	assert_formats_as(&back, "1e-9", buf);
	assert_true(quantity_cmp(&back, &p) > 0);
}

/* Found by fuzzing: a binary-SI value with no factor of 1024 prints as a plain
 * integer (TestBinarySIZeroExponentString), which reads back as decimal SI
 * and then prints with a decimal suffix; the value survives, the string not. */
static void test_binary_si_without_1024_factor_reads_back_as_decimal(void **state)
{
	struct quantity a = must_parse("50000Ki"), b = must_parse("97M"), s, back;

	(void)state;
	assert_int_equal(quantity_add(&a, &b, &s), 0);
	assert_int_equal(s.format, BSI);
	assert_formats_as(&s, "148200000", "50000Ki + 97M");
	back = must_parse("148200000");
	assert_int_equal(back.format, DSI);
	assert_int_equal(quantity_cmp(&s, &back), 0);
	assert_formats_as(&back, "148200k", "148200000");
}

static void test_canonical_string_parses_back_to_the_same_value(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(valid_rows) / sizeof(valid_rows[0]); i++) {
		struct quantity q = must_parse(valid_rows[i].in), back;
		char buf[QUANTITY_STR_MAX];

		quantity_format(&q, buf);
		back = must_parse(buf);
		if (quantity_cmp(&q, &back) != 0)
			fail_msg("\"%s\" printed \"%s\", which reads back differently", valid_rows[i].in, buf);
	}
}

/* ---- very long inputs -------------------------------------------------- */

static char *repeat(const char *head, char c, size_t n, const char *tail)
{
	size_t hl = strlen(head), tl = strlen(tail);
	char *s = malloc(hl + n + tl + 1);

	assert_non_null(s);
	memcpy(s, head, hl);
	memset(s + hl, c, n);
	memcpy(s + hl + n, tail, tl + 1);
	return s;
}

struct long_row {
	const char *head;
	char fill;
	size_t n;
	const char *tail;
	int rc;
	const char *canonical;
};

static const struct long_row long_rows[] = {
	{ "0.", '0', 200, "1", 0, "1n" },
	{ "", '0', 200, "1", 0, "1" },
	{ "1", '0', 200, "", 0, "100e198" },
	{ "1", '0', 200, "Ki", 0, "9223372036854775807" },
	{ "-1", '0', 200, "Ki", 0, "-9223372036854775807" },
	{ "1.", '0', 200, "", 0, "1" },
	{ "1.", '0', 199, "1", 0, "1000000001n" },
	{ "", '9', 40, ".9999999999", 0, "10e39" },
	{ "0.", '9', 300, "", 0, "1" },
	{ "1", '0', 39, "1", -ERANGE, NULL },
	{ "", '0', 100000, "", 0, "0" },
	{ "-0.", '0', 100000, "1e-5", 0, "-1e-9" },
	{ "0.5", '0', 100, "1Ki", 0, "512000000001n" },
	{ "0.", '0', 5000, "1Ei", 0, "1n" },
	{ "1", '0', 1000000, "", 0, "10e999999" },
	{ "1", '0', 1000001, "", -ERANGE, NULL },
	{ "", '1', 38, "", 0, "11111111111111111111111111111111111111" },
	{ "", '1', 39, "", -ERANGE, NULL },
	{ "1", ' ', 3, "", -EINVAL, NULL },
};

static void test_very_long_digit_strings(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(long_rows) / sizeof(long_rows[0]); i++) {
		const struct long_row *r = &long_rows[i];
		char *s = repeat(r->head, r->fill, r->n, r->tail);
		struct quantity q;
		int rc = quantity_parse(s, strlen(s), &q);

		if (strcmp(r->tail, "") == 0 && r->fill == ' ')
			rc = quantity_parse_strict(s, strlen(s), &q);
		if (rc != r->rc)
			fail_msg("row %zu: rc %d, want %d", i, rc, r->rc);
		if (rc == 0)
			assert_formats_as(&q, r->canonical, r->head);
		free(s);
	}
}

/* floor(a / b): how many steps of a validRange fit under a bound. */
static void test_div_floor(void **state)
{
	static const struct {
		const char *a, *b;
		int rc;
		int64_t n;
	} rows[] = {
		{ "0", "1", 0, 0 },
		{ "62Gi", "8Gi", 0, 7 },
		{ "64Gi", "8Gi", 0, 8 },
		{ "70Gi", "1Gi", 0, 70 },
		{ "1", "3", 0, 0 },
		{ "1500m", "500m", 0, 3 },
		{ "1501m", "500m", 0, 3 },
		{ "1", "1n", 0, 1000000000 },
		{ "1e30", "1", -ERANGE, 0 },
		{ "9223372036854775807", "1", 0, INT64_MAX },
		{ "9223372036854775808", "1", -ERANGE, 0 },
		{ "1", "1e40", 0, 0 },
		{ "1m", "1n", 0, 1000000 },
		{ "1n", "1", 0, 0 },
		{ "3Ki", "1k", 0, 3 },
		{ "123456789", "1000", 0, 123456 },
		{ "-1", "1", -EINVAL, 0 },
		{ "1", "0", -EINVAL, 0 },
		{ "1", "-2", -EINVAL, 0 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct quantity a = must_parse(rows[i].a), b = must_parse(rows[i].b);
		int64_t n = -7;
		int rc = quantity_div_floor(&a, &b, &n);

		if (rc != rows[i].rc || (rc == 0 && n != rows[i].n))
			fail_msg("%s / %s: %d %lld, want %d %lld", rows[i].a, rows[i].b, rc, (long long)n, rows[i].rc,
				 (long long)rows[i].n);
	}
}

/* ---- scheduler units: ScaledValue rounds up ------------------------------- */

static void test_scaled_ceil_rounds_up_as_the_scheduler_counts(void **state)
{
	static const struct {
		const char *in;
		int scale;
		int64_t want;
	} rows[] = {
		{ "4", -3, 4000 },          /* MilliValue of 4 cpus */
		{ "1500m", -3, 1500 },
		{ "0.5m", -3, 1 },          /* a fraction of a millicore counts whole */
		{ "1500m", 0, 2 },          /* Value rounds up too */
		{ "8Gi", 0, 8589934592 },
		{ "1.5", 0, 2 },
		{ "0", -3, 0 },
		{ "1n", 0, 1 },
		{ "-1.5", 0, -1 },          /* toward +infinity */
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct quantity q = must_parse(rows[i].in);
		int64_t got = -99;

		assert_int_equal(quantity_scaled_ceil(&q, rows[i].scale, &got), 0);
		if (got != rows[i].want)
			fail_msg("%s at scale %d: %lld, want %lld", rows[i].in, rows[i].scale, (long long)got,
				 (long long)rows[i].want);
	}
	{
		struct quantity big = must_parse("100E");
		int64_t got;

		assert_int_equal(quantity_scaled_ceil(&big, -3, &got), -ERANGE);
	}
}

static void test_from_scaled_prints_as_the_scheduler_units_mean(void **state)
{
	struct quantity q;

	(void)state;
	quantity_from_scaled(1500, -3, DSI, &q);
	assert_formats_as(&q, "1500m", "1500 millicores");
	quantity_from_scaled(4000, -3, DSI, &q);
	assert_formats_as(&q, "4", "4000 millicores");
	quantity_from_scaled(17179869184, 0, BSI, &q);
	assert_formats_as(&q, "16Gi", "16Gi in bytes");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_spellings_parse_to_exact_value_and_print_canonically),
		cmocka_unit_test(test_explicit_signs_mirror_the_unsigned_value),
		cmocka_unit_test(test_invalid_spellings_are_rejected),
		cmocka_unit_test(test_embedded_nul_is_not_a_quantity),
		cmocka_unit_test(test_parse_trims_go_white_space_and_strict_parse_does_not),
		cmocka_unit_test(test_strict_parse_is_parse_quantity_itself),
		cmocka_unit_test(test_spelling_kept_matches_parse_quantity_cache),
		cmocka_unit_test(test_kept_canonical_spellings_equal_format),
		cmocka_unit_test(test_cmp_orders_by_value_across_formats),
		cmocka_unit_test(test_normal_form_is_equal_exactly_for_equal_values),
		cmocka_unit_test(test_normal_form_parses_back_to_the_same_value),
		cmocka_unit_test(test_mul_is_exact_or_erange),
		cmocka_unit_test(test_mul_erange_on_tiny_scale),
		cmocka_unit_test(test_mul_8ei_cubed_is_erange_not_wrapped),
		cmocka_unit_test(test_mul_int_keeps_format_and_never_wraps),
		cmocka_unit_test(test_add_is_exact_or_erange),
		cmocka_unit_test(test_add_and_mul_commute),
		cmocka_unit_test(test_is_multiple_of),
		cmocka_unit_test(test_div_floor),
		cmocka_unit_test(test_to_int64_only_for_whole_numbers_in_range),
		cmocka_unit_test(test_sign_and_is_integer),
		cmocka_unit_test(test_from_int_is_decimal_si),
		cmocka_unit_test(test_format_matches_quantity_string),
		cmocka_unit_test(test_longest_binary_si_string_fits),
		cmocka_unit_test(test_sub_nano_results_print_exactly_but_parse_rounds),
		cmocka_unit_test(test_binary_si_without_1024_factor_reads_back_as_decimal),
		cmocka_unit_test(test_canonical_string_parses_back_to_the_same_value),
		cmocka_unit_test(test_very_long_digit_strings),
		cmocka_unit_test(test_scaled_ceil_rounds_up_as_the_scheduler_counts),
		cmocka_unit_test(test_from_scaled_prints_as_the_scheduler_units_mean),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
