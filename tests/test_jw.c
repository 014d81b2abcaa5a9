/* test_jw.c - the JSON writer: commas and nesting, escaping as the
 * project escapes, numbers, misuse refused, the depth and buffer caps. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "jw.h"

/* A document written from a script: one letter a step.
 *   { } [ ]   begin / end an object or an array
 *   k         the next key of keys[] (in order)
 *   s         the next string of strs[] (with its length)
 *   r         the next string of strs[] as raw (already escaped) text
 *   i u       int64 -42, uint64 UINT64_MAX
 *   t f n     true, false, null
 *   d         1.0/3 with 3 decimals
 *   j         the raw JSON value {"a":[1]} */
struct jw_case {
	const char *name;
	const char *script;
	const char *keys[4];
	struct { const char *s; size_t n; } strs[4];
	int err;                   /* jw_finish() */
	const char *out;           /* NULL when err */
};

static int run_script(const struct jw_case *c, struct buf *b)
{
	struct jw w;
	const char *p;
	size_t k = 0, s = 0;

	jw_init(&w, b);
	for (p = c->script; *p; p++) {
		switch (*p) {
		case '{': jw_object_begin(&w); break;
		case '}': jw_object_end(&w); break;
		case '[': jw_array_begin(&w); break;
		case ']': jw_array_end(&w); break;
		case 'k': jw_key(&w, c->keys[k++]); break;
		case 's': jw_string(&w, c->strs[s].s, c->strs[s].n), s++; break;
		case 'r': jw_raw_string(&w, (struct str){ c->strs[s].s, c->strs[s].n }), s++; break;
		case 'i': jw_int(&w, -42); break;
		case 'u': jw_uint(&w, UINT64_MAX); break;
		case 't': jw_bool(&w, true); break;
		case 'f': jw_bool(&w, false); break;
		case 'n': jw_null(&w); break;
		case 'd': jw_fixed(&w, 1.0 / 3, 3); break;
		case 'j': jw_raw(&w, "{\"a\":[1]}", 9); break;
		default: fail_msg("bad script step %c", *p);
		}
	}
	return jw_finish(&w);
}

static void test_documents(void **state)
{
	static const struct jw_case cases[] = {
		{ "empty object", "{}", { 0 }, { { 0 } }, 0, "{}" },
		{ "empty array", "[]", { 0 }, { { 0 } }, 0, "[]" },
		{ "scalar alone", "i", { 0 }, { { 0 } }, 0, "-42" },
		{ "largest unsigned", "[u]", { 0 }, { { 0 } }, 0, "[18446744073709551615]" },
		{ "members get commas", "{kikt}", { "a", "b" }, { { 0 } }, 0, "{\"a\":-42,\"b\":true}" },
		{ "elements get commas", "[ifnd]", { 0 }, { { 0 } }, 0, "[-42,false,null,0.333]" },
		{ "nesting", "{k[{}[]{ks}]kj}", { "x", "y", "z" }, { { "v", 1 } }, 0,
		  "{\"x\":[{},[],{\"y\":\"v\"}],\"z\":{\"a\":[1]}}" },
		{ "control characters escaped", "[s]", { 0 }, { { "a\n\x01\x1f\"\\", 6 } }, 0,
		  "[\"a\\n\\u0001\\u001f\\\"\\\\\"]" },
		{ "invalid UTF-8 becomes U+FFFD", "[ss]", { 0 }, { { "bad\xff", 4 }, { "\xe2\x82", 2 } }, 0,
		  "[\"bad\\ufffd\",\"\\ufffd\\ufffd\"]" },
		{ "NUL inside a string", "[s]", { 0 }, { { "a\0b", 3 } }, 0, "[\"a\\u0000b\"]" },
		{ "HTML characters as Go writes them", "[s]", { 0 }, { { "<a&b>", 5 } }, 0,
		  "[\"\\u003ca\\u0026b\\u003e\"]" },
		{ "UTF-8 kept", "[s]", { 0 }, { { "caf\xc3\xa9", 5 } }, 0, "[\"caf\xc3\xa9\"]" },
		{ "raw string copied as it is", "[r]", { 0 }, { { "a\\u003cb\\n", 10 } }, 0, "[\"a\\u003cb\\n\"]" },
		{ "keys escaped", "{ki}", { "q\"<" }, { { 0 } }, 0, "{\"q\\\"\\u003c\":-42}" },
		{ "value without a key", "{i}", { 0 }, { { 0 } }, -EINVAL, NULL },
		{ "key in an array", "[k]", { "a" }, { { 0 } }, -EINVAL, NULL },
		{ "two keys in a row", "{kk}", { "a", "b" }, { { 0 } }, -EINVAL, NULL },
		{ "key without a value", "{k}", { "a" }, { { 0 } }, -EINVAL, NULL },
		{ "mismatched end", "{]", { 0 }, { { 0 } }, -EINVAL, NULL },
		{ "end with nothing open", "]", { 0 }, { { 0 } }, -EINVAL, NULL },
		{ "two values at the top", "{}{}", { 0 }, { { 0 } }, -EINVAL, NULL },
		{ "unclosed", "[{}", { 0 }, { { 0 } }, -EINVAL, NULL },
		{ "nothing written", "", { 0 }, { { 0 } }, -EINVAL, NULL },
		{ "the first error sticks", "[k]]", { "a" }, { { 0 } }, -EINVAL, NULL },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct buf b;
		int rc;

		buf_init(&b, 4096);
		rc = run_script(&cases[i], &b);
		if (rc != cases[i].err)
			fail_msg("%s: jw_finish %d, want %d", cases[i].name, rc, cases[i].err);
		if (cases[i].out) {
			json_t *j = json_loads(buf_cstr(&b), JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);

			if (strcmp(buf_cstr(&b), cases[i].out) != 0)
				fail_msg("%s: wrote %s, want %s", cases[i].name, buf_cstr(&b), cases[i].out);
			/* every whole document is valid JSON (jansson reads no integer past INT64_MAX) */
			if (!j && !strchr(cases[i].script, 'u'))
				fail_msg("%s: not valid JSON", cases[i].name);
			json_decref(j);
		}
		buf_free(&b);
	}
}

/* Nesting is capped: the container past JW_MAX_DEPTH is refused, and the
 * deepest allowed one still closes into a whole document. */
static void test_depth_cap(void **state)
{
	struct buf b;
	struct jw w;
	int i;

	(void)state;
	buf_init(&b, 4096);
	jw_init(&w, &b);
	for (i = 0; i < JW_MAX_DEPTH; i++)
		assert_int_equal(jw_array_begin(&w), 0);
	for (i = 0; i < JW_MAX_DEPTH; i++)
		assert_int_equal(jw_array_end(&w), 0);
	assert_int_equal(jw_finish(&w), 0);
	assert_int_equal(buf_len(&b), 2 * JW_MAX_DEPTH);

	buf_reset(&b);
	jw_init(&w, &b);
	for (i = 0; i < JW_MAX_DEPTH; i++)
		assert_int_equal(jw_array_begin(&w), 0);
	assert_int_equal(jw_object_begin(&w), -ELOOP);
	assert_int_equal(buf_len(&b), JW_MAX_DEPTH);   /* nothing written for it */
	assert_int_equal(jw_array_end(&w), -ELOOP);     /* sticky */
	assert_int_equal(jw_finish(&w), -ELOOP);
	buf_free(&b);
}

/* The buffer's cap stops the writer, and it stays stopped: nothing is
 * appended after the first refusal, so the output is a clean prefix. */
static void test_buffer_cap(void **state)
{
	struct buf b;
	struct jw w;
	size_t len;

	(void)state;
	buf_init(&b, 12);
	jw_init(&w, &b);
	assert_int_equal(jw_object_begin(&w), 0);
	assert_int_equal(jw_kuint(&w, "a", 1), 0);          /* {"a":1 */
	assert_int_equal(jw_kcstr(&w, "b", "long text"), -E2BIG);
	len = buf_len(&b);
	assert_int_equal(jw_kuint(&w, "c", 2), -E2BIG);
	assert_int_equal(jw_object_end(&w), -E2BIG);
	assert_int_equal(buf_len(&b), len);
	assert_int_equal(jw_finish(&w), -E2BIG);
	buf_free(&b);
}

static void test_numbers(void **state)
{
	struct buf b;
	struct jw w;

	(void)state;
	buf_init(&b, 4096);
	jw_init(&w, &b);
	jw_array_begin(&w);
	jw_int(&w, INT64_MIN);
	jw_uint(&w, 0);
	jw_fixed(&w, 2.5, 0);
	jw_fixed(&w, -0.0005, 3);
	jw_fixed(&w, 12.0, 1);
	jw_array_end(&w);
	assert_int_equal(jw_finish(&w), 0);
	/* as printf's %.Nf: the report's figures keep their format */
	assert_string_equal(buf_cstr(&b), "[-9223372036854775808,0,2,-0.001,12.0]");

	buf_reset(&b);
	jw_init(&w, &b);
	jw_array_begin(&w);
	assert_int_equal(jw_fixed(&w, NAN, 3), -EDOM);
	assert_int_equal(jw_finish(&w), -EDOM);
	buf_reset(&b);
	jw_init(&w, &b);
	jw_array_begin(&w);
	assert_int_equal(jw_fixed(&w, INFINITY, 3), -EDOM);
	buf_reset(&b);
	jw_init(&w, &b);
	assert_int_equal(jw_fixed(&w, 1.0, 10), -EINVAL);
	buf_free(&b);
}

static int part_ok(const void *ctx, struct buf *out)
{
	return buf_add_cstr(out, ctx);
}

static int part_nothing(const void *ctx, struct buf *out)
{
	(void)ctx;
	(void)out;
	return 0;
}

static int part_fails(const void *ctx, struct buf *out)
{
	(void)ctx;
	(void)out;
	return -ENOMEM;
}

/* A part another encoder appends in place takes a value's slot: commas
 * around it, its error the writer's; appending nothing is an error. */
static void test_parts(void **state)
{
	struct buf b;
	struct jw w;

	(void)state;
	buf_init(&b, 4096);
	jw_init(&w, &b);
	jw_object_begin(&w);
	jw_kuint(&w, "a", 1);
	jw_key(&w, "p");
	assert_int_equal(jw_part(&w, part_ok, "[1,{\"x\":2}]"), 0);
	jw_kbool(&w, "z", true);
	jw_object_end(&w);
	assert_int_equal(jw_finish(&w), 0);
	assert_string_equal(buf_cstr(&b), "{\"a\":1,\"p\":[1,{\"x\":2}],\"z\":true}");

	buf_reset(&b);
	jw_init(&w, &b);
	jw_array_begin(&w);
	assert_int_equal(jw_part(&w, part_nothing, NULL), -EINVAL);
	assert_int_equal(jw_finish(&w), -EINVAL);

	buf_reset(&b);
	jw_init(&w, &b);
	jw_array_begin(&w);
	assert_int_equal(jw_part(&w, part_fails, NULL), -ENOMEM);
	assert_int_equal(jw_array_end(&w), -ENOMEM);
	assert_int_equal(jw_finish(&w), -ENOMEM);

	/* in an object, a part needs its key first */
	buf_reset(&b);
	jw_init(&w, &b);
	jw_object_begin(&w);
	assert_int_equal(jw_part(&w, part_ok, "1"), -EINVAL);
	buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_documents),
		cmocka_unit_test(test_depth_cap),
		cmocka_unit_test(test_buffer_cap),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_parts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
