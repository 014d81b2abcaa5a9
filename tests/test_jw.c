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

struct esc_case {
	const char *in;
	size_t len;
	const char *out;
};

static void test_json_escaping(void **state)
{
	static const struct esc_case cases[] = {
		{ "plain", 5, "\"plain\"" },
		{ "q\"b\\", 4, "\"q\\\"b\\\\\"" },
		{ "\n\t\r", 3, "\"\\n\\t\\r\"" },
		{ "\x01", 1, "\"\\u0001\"" },
		{ "<a&b>", 5, "\"\\u003ca\\u0026b\\u003e\"" },
		{ "caf\xc3\xa9", 5, "\"caf\xc3\xa9\"" },
		{ "bad\xff", 4, "\"bad\\ufffd\"" },
		{ "\xe2\x82", 2, "\"\\ufffd\\ufffd\"" },            /* truncated sequence */
		{ "\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\"" },   /* a surrogate in UTF-8 */
		{ "nul\0x", 5, "\"nul\\u0000x\"" },
		{ "", 0, "\"\"" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct buf b;
		struct jw w;
		json_t *j;

		buf_init(&b, 1024);
		jw_init(&w, &b);
		assert_int_equal(jw_string(&w, cases[i].in, cases[i].len), 0);
		assert_int_equal(jw_finish(&w), 0);
		assert_string_equal(buf_cstr(&b), cases[i].out);
		j = json_loads(buf_cstr(&b), JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		assert_non_null(j);                      /* always valid JSON */
		json_decref(j);
		buf_free(&b);
	}
}

/* An empty string may come as (NULL, 0), as an absent field's struct str
 * does: it is "" and touches no memory (UBSan checks the copies). */
static void test_empty_strings_with_no_text(void **state)
{
	struct buf b;
	struct jw w;

	(void)state;
	buf_init(&b, 1024);
	jw_init(&w, &b);
	jw_object_begin(&w);
	jw_key_str(&w, (struct str){ NULL, 0 });
	jw_string(&w, NULL, 0);
	jw_key_verbatim(&w, NULL, 0);
	jw_string_verbatim(&w, NULL, 0);
	jw_key(&w, "a");
	jw_array_begin(&w);
	jw_string(&w, NULL, 0);
	jw_array_end(&w);
	jw_object_end(&w);
	assert_int_equal(jw_finish(&w), 0);
	assert_string_equal(buf_cstr(&b), "{\"\":\"\",\"\":\"\",\"a\":[\"\"]}");
	buf_free(&b);
}

static void test_escape_over_cap_rolls_back(void **state)
{
	struct buf b;
	struct jw w;

	(void)state;
	buf_init(&b, 10);
	assert_int_equal(buf_add_cstr(&b, "ab"), 0);
	jw_init(&w, &b);
	assert_int_equal(jw_string(&w, "0123456789", 10), -E2BIG);
	assert_string_equal(buf_cstr(&b), "ab");
	/* the same past the short strings' one-append path */
	jw_init(&w, &b);
	assert_int_equal(jw_string(&w, "012345678\n", 10), -E2BIG);
	assert_string_equal(buf_cstr(&b), "ab");
	buf_free(&b);
}

/* Strings of every length, clean (one append) or with an escape at either
 * end (escaped piece by piece), come out the same. */
static void test_strings_of_every_length(void **state)
{
	char in[300], want[700];
	struct buf b;
	struct jw w;
	size_t n, k, i;

	(void)state;
	memset(in, 'a', sizeof(in));
	buf_init(&b, 4096);
	for (n = 0; n < sizeof(in); n++) {
		for (k = 0; k <= 2; k++) {
			/* k: nothing to escape, a '<' first, a '<' last */
			size_t len = 0;

			memset(in, 'a', n);
			if (k == 1 && n)
				in[0] = '<';
			if (k == 2 && n)
				in[n - 1] = '<';
			want[len++] = '"';
			for (i = 0; i < n; i++) {
				if (in[i] == '<') {
					memcpy(want + len, "\\u003c", 6);
					len += 6;
				} else {
					want[len++] = in[i];
				}
			}
			want[len++] = '"';
			want[len] = '\0';
			buf_reset(&b);
			jw_init(&w, &b);
			assert_int_equal(jw_string(&w, in, n), 0);
			assert_int_equal(jw_finish(&w), 0);
			if (strcmp(buf_cstr(&b), want) != 0)
				fail_msg("length %zu case %zu: wrote %s, want %s", n, k, buf_cstr(&b), want);
		}
	}
	buf_free(&b);
}

/* Members written apart and spliced into another object: commas at the
 * seam on either side, nothing for an empty part, the outer braces the
 * caller's. */
static void test_members(void **state)
{
	struct buf part, b;
	struct jw w;

	(void)state;
	buf_init(&part, 4096);
	buf_init(&b, 4096);
	jw_init_members(&w, &part);
	assert_int_equal(jw_finish(&w), 0);         /* no member is a whole part */
	jw_kcstr(&w, "user", "<u>");
	jw_key(&w, "groups");
	jw_array_begin(&w);
	jw_cstr(&w, "g");
	jw_array_end(&w);
	assert_int_equal(jw_finish(&w), 0);
	assert_string_equal(buf_cstr(&part), "\"user\":\"\\u003cu\\u003e\",\"groups\":[\"g\"]");
	assert_int_equal(jw_object_end(&w), -EINVAL);   /* the outer object is not its own */

	jw_init(&w, &b);
	jw_object_begin(&w);
	jw_key(&w, "spec");
	jw_object_begin(&w);
	assert_int_equal(jw_members(&w, buf_cstr(&part), buf_len(&part)), 0);
	jw_kcstr(&w, "verb", "get");
	jw_object_end(&w);
	jw_key(&w, "e");
	jw_object_begin(&w);
	assert_int_equal(jw_members(&w, "", 0), 0);
	jw_object_end(&w);
	jw_key(&w, "a");
	jw_object_begin(&w);
	jw_kint(&w, "x", 1);
	assert_int_equal(jw_members(&w, "\"y\":2", 5), 0);
	jw_object_end(&w);
	jw_object_end(&w);
	assert_int_equal(jw_finish(&w), 0);
	assert_string_equal(buf_cstr(&b), "{\"spec\":{\"user\":\"\\u003cu\\u003e\",\"groups\":[\"g\"],\"verb\":\"get\"},"
			    "\"e\":{},\"a\":{\"x\":1,\"y\":2}}");

	/* only where a member may go */
	buf_reset(&b);
	jw_init(&w, &b);
	jw_array_begin(&w);
	assert_int_equal(jw_members(&w, "\"y\":2", 5), -EINVAL);
	buf_reset(&b);
	jw_init(&w, &b);
	jw_object_begin(&w);
	jw_key(&w, "k");
	assert_int_equal(jw_members(&w, "\"y\":2", 5), -EINVAL);
	/* an unclosed container or a waiting key is no whole part */
	buf_reset(&part);
	jw_init_members(&w, &part);
	jw_key(&w, "k");
	assert_int_equal(jw_finish(&w), -EINVAL);
	jw_array_begin(&w);
	assert_int_equal(jw_finish(&w), -EINVAL);
	buf_free(&part);
	buf_free(&b);
}

/* A rewind undoes what was written since the mark, the error included, and
 * the writer goes on from there as if it never had. */
static void test_mark_and_rewind(void **state)
{
	struct jw_mark m;
	struct buf b;
	struct jw w;

	(void)state;
	buf_init(&b, 24);
	jw_init(&w, &b);
	jw_object_begin(&w);
	jw_kint(&w, "a", 1);
	jw_mark(&w, &m);
	assert_int_equal(jw_kcstr(&w, "b", "far too long for the cap"), -E2BIG);
	jw_rewind(&w, &m);
	assert_string_equal(buf_cstr(&b), "{\"a\":1");
	jw_mark(&w, &m);
	assert_int_equal(jw_kint(&w, "c", 2), 0);
	jw_rewind(&w, &m);                           /* a member that went well, undone too */
	jw_mark(&w, &m);
	jw_key(&w, "d");
	jw_array_begin(&w);
	jw_rewind(&w, &m);                           /* and an open container */
	assert_int_equal(jw_kint(&w, "e", 3), 0);
	jw_object_end(&w);
	assert_int_equal(jw_finish(&w), 0);
	assert_string_equal(buf_cstr(&b), "{\"a\":1,\"e\":3}");
	buf_free(&b);
}

/* The literal forms write what jw_key()/jw_cstr() write, in every layout. */
static void test_literals(void **state)
{
	static const unsigned indents[] = { 0, 2 };
	struct buf a, b;
	struct jw w;
	size_t i;

	(void)state;
	buf_init(&a, 4096);
	buf_init(&b, 4096);
	for (i = 0; i < sizeof(indents) / sizeof(indents[0]); i++) {
		buf_reset(&a);
		buf_reset(&b);
		jw_init_style(&w, &a, indents[i], 0);
		jw_object_begin(&w);
		JW_KEY(&w, "apiVersion");
		JW_LIT(&w, "admission.k8s.io/v1");
		JW_KEY(&w, "list");
		jw_array_begin(&w);
		JW_LIT(&w, "x");
		JW_LIT(&w, "");
		jw_array_end(&w);
		jw_object_end(&w);
		assert_int_equal(jw_finish(&w), 0);
		jw_init_style(&w, &b, indents[i], 0);
		jw_object_begin(&w);
		jw_kcstr(&w, "apiVersion", "admission.k8s.io/v1");
		jw_key(&w, "list");
		jw_array_begin(&w);
		jw_cstr(&w, "x");
		jw_cstr(&w, "");
		jw_array_end(&w);
		jw_object_end(&w);
		assert_int_equal(jw_finish(&w), 0);
		assert_string_equal(buf_cstr(&a), buf_cstr(&b));
	}
	assert_string_equal(buf_cstr(&a), "{\n  \"apiVersion\": \"admission.k8s.io/v1\",\n  \"list\": [\n    \"x\",\n    \"\"\n  ]\n}");
	/* misuse is refused as for the other forms */
	buf_reset(&a);
	jw_init(&w, &a);
	jw_array_begin(&w);
	assert_int_equal(JW_KEY(&w, "k"), -EINVAL);
	buf_reset(&a);
	jw_init(&w, &a);
	jw_object_begin(&w);
	assert_int_equal(JW_LIT(&w, "v"), -EINVAL);
	buf_free(&a);
	buf_free(&b);
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
	jw_int(&w, INT64_MAX);
	jw_int(&w, -1);
	jw_int(&w, 0);
	jw_uint(&w, 0);
	jw_fixed(&w, 2.5, 0);
	jw_fixed(&w, -0.0005, 3);
	jw_fixed(&w, 12.0, 1);
	jw_array_end(&w);
	assert_int_equal(jw_finish(&w), 0);
	/* as printf's %.Nf: the report's figures keep their format */
	assert_string_equal(buf_cstr(&b), "[-9223372036854775808,9223372036854775807,-1,0,0,2,-0.001,12.0]");

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

/* jansson's dump of text (read by jansson), with flags. */
static char *jansson_dump(const char *text, size_t flags)
{
	json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
	char *out;

	if (!j)
		fail_msg("jansson cannot read %s", text);
	out = json_dumps(j, flags | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
	json_decref(j);
	return out;
}

/* A styled writer lays out and escapes as jansson does, byte for byte:
 * dry-run's JSON output (indent 2) and its patch lines (compact) were
 * jansson's and scripts read them. Each text is re-written by jw_json() and
 * by jansson, indented and compact. */
static void test_style_as_jansson(void **state)
{
	static const char *const texts[] = {
		"{}", "[]", "[[],{}]", "\"x\"", "null", "true",
		"{\"a\":1,\"b\":[1,2,{\"c\":\"d\"}],\"e\":{},\"f\":[],\"g\":{\"h\":[[]]}}",
		"[{\"op\":\"add\",\"path\":\"/metadata/labels/a~1b\",\"value\":\"<x & y>\"}]",
		"[\"a\\n\\t\\b\\f\\r\\u0001\\u001f\\u007f\\\"\\\\/\"]",
		"[\"caf\\u00e9\",\"\\ud83d\\ude00\",\"\\u2028\"]",
		"{\"k\\u003c\\n\":\"v\"}",
		"[0,-0,1,-42,9223372036854775807,-9223372036854775808]",
		"[1.5,0.1,1e20,1E-5,-2.5e-300,1e300,123456789.125,100.0,3e0]",
	};
	static const struct { unsigned indent; size_t flags; } styles[] = {
		{ 2, JSON_INDENT(2) }, { 0, JSON_COMPACT }, { 4, JSON_INDENT(4) },
	};
	size_t i, k;

	(void)state;
	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		for (k = 0; k < sizeof(styles) / sizeof(styles[0]); k++) {
			char *want = jansson_dump(texts[i], styles[k].flags);
			struct buf b;
			struct jw w;

			buf_init(&b, 4096);
			jw_init_style(&w, &b, styles[k].indent, JW_PLAIN_ESCAPES);
			assert_int_equal(jw_json(&w, texts[i], strlen(texts[i])), 0);
			assert_int_equal(jw_finish(&w), 0);
			if (strcmp(buf_cstr(&b), want) != 0)
				fail_msg("%s (indent %u): wrote\n%s\nwant\n%s", texts[i], styles[k].indent,
					 buf_cstr(&b), want);
			free(want);
			buf_free(&b);
		}
	}
}

/* Strings through a plain writer and through jansson agree for every byte
 * jansson takes (UTF-8): random strings over the bytes that matter. */
static void test_plain_strings_as_jansson(void **state)
{
	static const char *const atoms[] = {
		"a", "<", ">", "&", "\"", "\\", "/", "\n", "\b", "\f", "\r", "\t", "\x01", "\x1f", "\x7f",
		"\xc3\xa9", "\xe2\x80\xa8", "\xf0\x9f\x98\x80", " ",
	};
	unsigned seed = 1;
	int round;

	(void)state;
	for (round = 0; round < 2000; round++) {
		char s[256], *want;
		size_t n = 0;
		int parts = (int)(seed % 12), p;
		json_t *j;
		struct buf b;
		struct jw w;

		for (p = 0; p < parts; p++) {
			const char *atom;

			seed = seed * 1103515245u + 12345u;
			atom = atoms[(seed >> 16) % (sizeof(atoms) / sizeof(atoms[0]))];
			memcpy(s + n, atom, strlen(atom));
			n += strlen(atom);
		}
		seed = seed * 1103515245u + 12345u;
		j = json_stringn(s, n);
		assert_non_null(j);
		want = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
		buf_init(&b, 4096);
		jw_init_style(&w, &b, 2, JW_PLAIN_ESCAPES);
		jw_string(&w, s, n);
		assert_int_equal(jw_finish(&w), 0);
		assert_string_equal(buf_cstr(&b), want);
		free(want);
		json_decref(j);
		buf_free(&b);
	}
}

/* An indented writer's own calls: keys with ": ", members on their lines,
 * empty containers closed at once; bad styles and bad text refused. */
static void test_style_calls(void **state)
{
	struct buf b;
	struct jw w;
	int i;

	(void)state;
	buf_init(&b, 4096);
	jw_init_style(&w, &b, 2, 0);
	jw_object_begin(&w);
	jw_kcstr(&w, "a", "<");
	jw_key(&w, "b");
	jw_array_begin(&w);
	jw_uint(&w, 1);
	jw_object_begin(&w);
	jw_object_end(&w);
	jw_array_end(&w);
	jw_key(&w, "c");
	jw_array_begin(&w);
	jw_array_end(&w);
	jw_object_end(&w);
	assert_int_equal(jw_finish(&w), 0);
	/* without JW_PLAIN_ESCAPES, strings escaped as jw_init()'s */
	assert_string_equal(buf_cstr(&b), "{\n  \"a\": \"\\u003c\",\n  \"b\": [\n    1,\n    {}\n  ],\n  \"c\": []\n}");

	buf_reset(&b);
	jw_init_style(&w, &b, JW_MAX_INDENT + 1, 0);
	assert_int_equal(jw_null(&w), -EINVAL);
	buf_reset(&b);
	jw_init_style(&w, &b, 2, 0x80);
	assert_int_equal(jw_finish(&w), -EINVAL);

	static const char *const bad[] = { "", "[1,]", "{\"a\"}", "[1] 2", "\"\\x\"", "01", "[1e999]",
					   "[99999999999999999999]" };
	for (i = 0; i < (int)(sizeof(bad) / sizeof(bad[0])); i++) {
		buf_reset(&b);
		jw_init_style(&w, &b, 2, JW_PLAIN_ESCAPES);
		if (jw_json(&w, bad[i], strlen(bad[i])) == 0 || jw_finish(&w) == 0)
			fail_msg("jw_json took %s", bad[i]);
	}

	/* the text's nesting counts with the writer's */
	buf_reset(&b);
	jw_init(&w, &b);
	for (i = 0; i < JW_MAX_DEPTH - 1; i++)
		jw_array_begin(&w);
	assert_int_equal(jw_json(&w, "[]", 2), 0);
	assert_int_equal(jw_json(&w, "[[]]", 4), -ELOOP);
	buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_documents),
		cmocka_unit_test(test_json_escaping),
		cmocka_unit_test(test_empty_strings_with_no_text),
		cmocka_unit_test(test_escape_over_cap_rolls_back),
		cmocka_unit_test(test_strings_of_every_length),
		cmocka_unit_test(test_members),
		cmocka_unit_test(test_mark_and_rewind),
		cmocka_unit_test(test_literals),
		cmocka_unit_test(test_depth_cap),
		cmocka_unit_test(test_buffer_cap),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_parts),
		cmocka_unit_test(test_style_as_jansson),
		cmocka_unit_test(test_plain_strings_as_jansson),
		cmocka_unit_test(test_style_calls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
