/* test_jscan.c - the validating JSON scanner. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jscan.h"
#include "testutil.h"

#include "jscan_walk.h"

#define WALK_BAD_STRING JSCAN_WALK_BAD_STRING

static void walk_mismatch(int read_rc, int skip_rc, size_t offset)
{
	fail_msg("read %d, skip %d at offset %zu", read_rc, skip_rc, offset);
}

static const struct jscan_walk_hooks walk_hooks = { walk_mismatch };

/* Read the text through the pull API, decoding every string and key, and
 * skip every value on the side (jscan_walk.h). */
static int walk(const char *text, size_t len, unsigned max_depth, struct arena *a)
{
	return jscan_walk(text, len, max_depth, a, &walk_hooks);
}

static int skip_all(const char *text, size_t len, unsigned max_depth)
{
	struct jscan s;
	int rc;

	jscan_init(&s, text, len, max_depth);
	rc = jscan_skip(&s, NULL);
	if (rc == 0)
		rc = jscan_finish(&s);
	return rc;
}

struct doc_case {
	const char *name;
	const char *text;
	size_t len;          /* 0: strlen(text) */
	int skip_rc;         /* jscan_skip + jscan_finish */
	int walk_rc;         /* pull API with every string decoded */
	unsigned max_depth;  /* 0: default */
};

#define OK(n, t) { n, t, 0, 0, 0, 0 }
#define BAD(n, t) { n, t, 0, -EINVAL, -EINVAL, 0 }
#define BADSTR(n, t) { n, t, 0, 0, WALK_BAD_STRING, 0 }
#define BIN(n, t, rc) { n, t, sizeof(t) - 1, rc, rc, 0 }
#define DEEP(n, t, d, rc) { n, t, 0, rc, rc, d }

static const struct doc_case doc_cases[] = {
	/* values of every type, top level */
	OK("empty object", "{}"),
	OK("empty array", "[]"),
	OK("zero", "0"),
	OK("negative zero", "-0"),
	OK("integer", "123"),
	OK("negative integer", "-987654321"),
	OK("fraction", "1.5"),
	OK("negative fraction with exponent", "-1.5e10"),
	OK("exponent", "1e5"),
	OK("exponent upper with plus", "1E+5"),
	OK("exponent negative", "0.25e-5"),
	OK("zero fraction", "0.0"),
	OK("zero exponent", "0e0"),
	OK("huge integer is valid JSON", "123456789012345678901234567890"),
	OK("string", "\"abc\""),
	OK("empty string", "\"\""),
	OK("true", "true"),
	OK("false", "false"),
	OK("null", "null"),
	OK("whitespace everywhere", " \t\r\n{ \"a\" : [ 1 , 2 , { } , [ ] ] ,\n\"b\"\t:\r\"c\" }\n "),
	OK("nested containers", "{\"a\":{\"b\":[{\"c\":null,\"d\":[true,false]}]},\"e\":-0.5}"),
	OK("array of mixed values", "[1,\"x\",true,false,null,{},[],-2.5E-3]"),
	OK("duplicate keys pass the grammar", "{\"a\":1,\"a\":2}"),
	/* strings and escapes */
	OK("every simple escape", "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\""),
	OK("unicode escape ascii", "\"\\u0041\""),
	OK("unicode escape two bytes", "\"\\u00e9\""),
	OK("unicode escape upper hex", "\"\\u00E9\\uFFFF\""),
	OK("surrogate pair", "\"\\ud83d\\ude00\""),
	OK("highest surrogate pair", "\"\\udbff\\udfff\""),
	OK("escaped NUL", "\"a\\u0000b\""),
	OK("raw utf-8 two and four bytes", "\"caf\xc3\xa9 \xf0\x9f\x98\x80\""),
	OK("raw utf-8 three bytes", "\"\xe2\x82\xac\xef\xbf\xbf\""),
	OK("escape straddles an 8-byte word", "\"abcdefg\\nhijklmnop\\\"qrstuvw\""),
	OK("long string", "\"0123456789abcdef0123456789abcdef0123456789abcdef01234\""),
	OK("delete byte is allowed raw", "\"\x7f\""),
	OK("escaped key", "{\"\\u0061pi\":1}"),
	/* strings that pass the grammar but do not decode */
	BADSTR("lone high surrogate", "\"\\ud800\""),
	BADSTR("lone low surrogate", "\"\\udc00\""),
	BADSTR("high surrogate then ascii escape", "\"\\ud800\\u0041\""),
	BADSTR("high surrogate then text", "\"\\ud800xx\""),
	BADSTR("two high surrogates", "\"\\ud800\\ud800\""),
	BADSTR("truncated utf-8", "\"\xc3\""),
	BADSTR("bad continuation", "\"\xc3\x28\""),
	BADSTR("utf-8 surrogate", "\"\xed\xa0\x80\""),
	BADSTR("utf-8 past U+10FFFF", "\"\xf4\x90\x80\x80\""),
	BADSTR("utf-8 F5 lead", "\"\xf5\x80\x80\x80\""),
	BADSTR("overlong two bytes", "\"\xc0\xaf\""),
	BADSTR("overlong three bytes", "\"\xe0\x80\xaf\""),
	BADSTR("overlong four bytes", "\"\xf0\x80\x80\xaf\""),
	BADSTR("lone continuation", "\"abcdefghij\x80\""),
	BADSTR("byte ff", "\"\xff\""),
	BADSTR("invalid utf-8 in a key", "{\"\xfe\":1}"),
	/* grammar errors */
	BAD("empty input", ""),
	BAD("only whitespace", " \n\t "),
	BAD("open object", "{"),
	BAD("close object", "}"),
	BAD("open array", "["),
	BAD("close array", "]"),
	BAD("trailing comma in array", "[1,]"),
	BAD("leading comma in array", "[,1]"),
	BAD("double comma", "[1,,2]"),
	BAD("trailing comma in object", "{\"a\":1,}"),
	BAD("comma only object", "{,}"),
	BAD("key without value", "{\"a\"}"),
	BAD("key with colon but no value", "{\"a\":}"),
	BAD("missing colon", "{\"a\" 1}"),
	BAD("bare key", "{a:1}"),
	BAD("single quoted key", "{'a':1}"),
	BAD("number key", "{1:1}"),
	BAD("missing comma in array", "[1 2]"),
	BAD("missing comma in object", "{\"a\":1 \"b\":2}"),
	BAD("array closed by brace", "[}"),
	BAD("object closed by bracket", "{]"),
	BAD("array with value closed by brace", "[1}"),
	BAD("object with member closed by bracket", "{\"a\":1]"),
	BAD("interleaved brackets", "[{]}"),
	BAD("interleaved brackets in member", "{\"a\":[}]"),
	BAD("unclosed inner array", "[[]"),
	BAD("extra close", "[]]"),
	BAD("two values", "{} {}"),
	BAD("two numbers", "1 2"),
	BAD("trailing garbage", "{}x"),
	BAD("byte order mark", "\xef\xbb\xbf{}"),
	BAD("comment", "{} // no"),
	/* numbers */
	BAD("leading zero", "01"),
	BAD("negative leading zero", "-01"),
	BAD("leading zero in array", "[00]"),
	BAD("plus sign", "+1"),
	BAD("fraction without integer", ".5"),
	BAD("fraction without digits", "1."),
	BAD("fraction without digits before exponent", "1.e5"),
	BAD("exponent without digits", "1e"),
	BAD("exponent sign without digits", "1e+"),
	BAD("exponent with fraction", "1e5.5"),
	BAD("minus alone", "-"),
	BAD("double minus", "--1"),
	BAD("hex", "0x10"),
	BAD("two fractions", "1.5.5"),
	BAD("infinity", "Infinity"),
	BAD("negative infinity", "-Infinity"),
	BAD("nan", "NaN"),
	BAD("minus then space", "- 1"),
	/* literals */
	BAD("truncated true", "tru"),
	BAD("capital true", "True"),
	BAD("truncated null", "nul"),
	BAD("null with extra letter", "nulll"),
	BAD("false with suffix", "falsey"),
	BAD("single t", "t"),
	BAD("undefined", "undefined"),
	/* string grammar */
	BAD("unterminated string", "\"abc"),
	BAD("unterminated long string", "\"abcdefghijklmnopqrstuvwxyz"),
	BAD("backslash at end", "\"abc\\"),
	BAD("unknown escape", "\"\\x41\""),
	BAD("single quote escape", "\"\\'\""),
	BAD("short unicode escape", "\"\\u12\""),
	BAD("non-hex unicode escape", "\"\\u12G4\""),
	BAD("unicode escape cut by the end", "\"\\u00"),
	BAD("capital U escape", "\"\\U0041\""),
	BAD("raw control byte", "\"a\x01" "b\""),
	BAD("raw newline in string", "\"a\nb\""),
	BAD("raw tab in string", "\"a\tb\""),
	BAD("raw control byte after 8 bytes", "\"abcdefghijk\x1f\""),
	BAD("single quoted string", "'a'"),
	BIN("NUL byte inside a string", "\"ab\0cd\"", -EINVAL),
	BIN("NUL byte after a value", "1\0", -EINVAL),
	BIN("NUL byte between members", "{\"a\":1,\0\"b\":2}", -EINVAL),
	BIN("NUL byte as input", "\0", -EINVAL),
	BIN("NUL byte after a number (fuzz)", "-0.5\0", -EINVAL),
	BIN("NUL byte after a number in an array", "[1\0]", -EINVAL),
	BIN("NUL byte after a literal", "[true\0]", -EINVAL),
	/* a container skipped a 64-byte block at a time */
	OK("escaped quote across a block boundary",
	   "[\"0123456789012345678901234567890123456789012345678901234567890\\\"x\"]"),
	OK("even backslash run across a block boundary",
	   "[\"012345678901234567890123456789012345678901234567890123456789012\\\\\",1]"),
	BAD("odd backslash run hides the closing quote",
	    "[\"012345678901234567890123456789012345678901234567890123456789012\\\\\\\",1]"),
	BAD("bad escape in a key after a block boundary",
	    "{\"01234567890123456789012345678901234567890123456789012345678\":1,\"al\\ocation\":2}"),
	BAD("control byte in a string after a block boundary",
	    "[\"0123456789012345678901234567890123456789012345678901234567890123456789\x01\"]"),
	BAD("control byte between values in a long array",
	    "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,\x01 26]"),
	OK("whitespace of every kind in a long array",
	   "[1,\t2,\n3,\r4, 5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,\r\n\t 24 ]"),
	BAD("garbage after a string in a long array",
	    "[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\",\"j\",\"k\",\"l\",\"m\"x]"),
	BAD("garbage after a number in a long array",
	    "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26x]"),
	BAD("colon in a long array",
	    "[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\",\"j\",\"k\":\"l\"]"),
	BAD("member without a colon in a long object",
	    "{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,\"i\" 9}"),
	BAD("value without a key in a long object",
	    "{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,\"i\"}"),
	BAD("unterminated string in a long array",
	    "[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\",\"j\",\"k\",\"l\",\"m]"),
	BAD("mismatched close deep in a long array",
	    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]}]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"),
	/* depth */
	DEEP("depth at the limit", "[[[1]]]", 3, 0),
	DEEP("depth past the limit", "[[[[1]]]]", 3, -E2BIG),
	DEEP("object depth at the limit", "{\"a\":{\"b\":{}}}", 3, 0),
	DEEP("object depth past the limit", "{\"a\":{\"b\":{\"c\":{}}}}", 3, -E2BIG),
	DEEP("mixed depth past the limit", "[{\"a\":[{}]}]", 3, -E2BIG),
	DEEP("depth one rejects a nested array", "[1,2,[]]", 1, -E2BIG),
	DEEP("depth one flat object", "{\"a\":1}", 1, 0),
};

static void test_documents_table(void **state)
{
	struct arena *a = NULL;
	size_t i;

	(void)state;
	assert_int_equal(arena_new(1 << 20, &a), 0);
	for (i = 0; i < sizeof(doc_cases) / sizeof(doc_cases[0]); i++) {
		const struct doc_case *c = &doc_cases[i];
		size_t len = c->len ? c->len : strlen(c->text);
		int skip_rc = skip_all(c->text, len, c->max_depth);
		int walk_rc = walk(c->text, len, c->max_depth, a);

		if (skip_rc != c->skip_rc || walk_rc != c->walk_rc)
			fail_msg("%s: skip %d (want %d), walk %d (want %d)", c->name,
				 skip_rc, c->skip_rc, walk_rc, c->walk_rc);
		arena_reset(a);
	}
	arena_free(a);
}

static char *nested(unsigned n, char open, char close, const char *inner)
{
	size_t len = 2 * (size_t)n + strlen(inner);
	char *t = malloc(len + 1);
	unsigned i;

	assert_non_null(t);
	for (i = 0; i < n; i++) {
		t[i] = open;
		t[len - 1 - i] = close;
	}
	memcpy(t + n, inner, strlen(inner));
	t[len] = '\0';
	return t;
}

static void test_default_depth_limit(void **state)
{
	char *ok = nested(JSCAN_DEFAULT_MAX_DEPTH, '[', ']', "1");
	char *deep = nested(JSCAN_DEFAULT_MAX_DEPTH + 1, '[', ']', "1");
	struct arena *a = NULL;
	struct jscan s;
	char msg[128];

	(void)state;
	assert_int_equal(arena_new(1 << 16, &a), 0);
	assert_int_equal(skip_all(ok, strlen(ok), 0), 0);
	assert_int_equal(walk(ok, strlen(ok), 0, a), 0);
	assert_int_equal(skip_all(deep, strlen(deep), 0), -E2BIG);
	assert_int_equal(walk(deep, strlen(deep), 0, a), -E2BIG);
	jscan_init(&s, deep, strlen(deep), 0);
	assert_int_equal(jscan_skip(&s, NULL), -E2BIG);
	assert_int_equal(jscan_offset(&s), JSCAN_DEFAULT_MAX_DEPTH);
	jscan_describe(&s, msg, sizeof(msg));
	assert_non_null(strstr(msg, "deeper than 512 levels"));
	free(ok);
	free(deep);
	arena_free(a);
}

static void test_depth_limit_is_clamped_and_spans_bit_words(void **state)
{
	/* Past 64 levels the skip's bit stack uses a second word; an object
	 * deep inside arrays must still be told apart from an array. */
	char *ok = nested(JSCAN_DEPTH_LIMIT, '[', ']', "{\"a\":[]}");
	char *mismatch = nested(130, '[', ']', "{\"a\":1]");
	char *deep = nested(JSCAN_DEPTH_LIMIT + 1, '[', ']', "");

	(void)state;
	/* 10000 arrays plus the object and its array: over the limit. */
	assert_int_equal(skip_all(ok, strlen(ok), 100000), -E2BIG);
	free(ok);
	ok = nested(JSCAN_DEPTH_LIMIT - 2, '[', ']', "{\"a\":[]}");
	assert_int_equal(skip_all(ok, strlen(ok), 100000), 0);
	assert_int_equal(skip_all(mismatch, strlen(mismatch), 0), -EINVAL);
	assert_int_equal(skip_all(deep, strlen(deep), UINT32_MAX), -E2BIG);
	free(ok);
	free(mismatch);
	free(deep);
}

static void test_every_truncation_of_a_body_is_an_error(void **state)
{
	const char *path = testutil_fixture_path("resourceclaim-v1-allocated.json");
	struct arena *a = NULL;
	size_t len, n;
	char *body = testutil_read_file(path, &len);

	(void)state;
	assert_non_null(body);
	assert_int_equal(arena_new(1 << 20, &a), 0);
	while (len > 0 && body[len - 1] != '}')
		len--;
	assert_int_equal(skip_all(body, len, 0), 0);
	assert_int_equal(walk(body, len, 0, a), 0);
	for (n = 0; n < len; n++) {
		/* A copy of exactly n bytes, so ASan catches any read past it. */
		char *cut = malloc(n ? n : 1);
		struct jscan s;
		int rc;

		assert_non_null(cut);
		memcpy(cut, body, n);
		if (skip_all(cut, n, 0) != -EINVAL || walk(cut, n, 0, a) != -EINVAL)
			fail_msg("prefix of %zu bytes accepted", n);
		jscan_init(&s, cut, n, 0);
		rc = jscan_skip(&s, NULL);
		assert_int_equal(rc, -EINVAL);
		assert_true(jscan_offset(&s) <= n);
		free(cut);
		arena_reset(a);
	}
	free(body);
	arena_free(a);
}

/* The eight-bytes-at-a-time string scan must find exactly '"', '\\' and
 * bytes below 0x20, wherever they fall in a word, and nothing else. */
static void test_every_byte_at_every_string_position(void **state)
{
	char text[32];
	unsigned b, i;

	(void)state;
	for (b = 0; b < 256; b++) {
		for (i = 0; i < 20; i++) {
			bool ok = b >= 0x20 && b != '"' && b != '\\';
			struct jscan s;
			int rc;

			memset(text, 'a', sizeof(text));
			text[0] = '"';
			text[1 + i] = (char)b;
			text[22] = '"';
			jscan_init(&s, text, 23, 0);
			rc = jscan_skip(&s, NULL);
			if (rc == 0)
				rc = jscan_finish(&s);
			if ((rc == 0) != ok)
				fail_msg("byte 0x%02x at %u: %d", b, i, rc);
			if (b < 0x20 && jscan_offset(&s) != 1 + i)
				fail_msg("byte 0x%02x at %u reported at %zu", b, i, jscan_offset(&s));
		}
	}
}

struct pos_case {
	const char *text;
	size_t offset;
	const char *msg;     /* substring of the description */
};

static void test_errors_say_what_and_where(void **state)
{
	static const struct pos_case cases[] = {
		{ "{\n  \"a\" 1\n}", 8, "expected ':' after an object key, found '1' at line 2, column 7 (offset 8)" },
		{ "[1,\n2,\n}", 7, "expected a value, found '}' at line 3, column 1 (offset 7)" },
		{ "{\"a\":1 \"b\":2}", 7, "expected ',' or '}' after an object member, found '\"'" },
		{ "[1 2]", 3, "expected ',' or ']' after an array element" },
		{ "\"ab\\qc\"", 4, "invalid escape in string, found 'q'" },
		{ "\"ab\\u00x1\"", 7, "expected four hex digits after \\u, found 'x'" },
		{ "\"a\x01\"", 2, "control character in string (must be escaped), found byte 0x01" },
		{ "[\"abc", 5, "unexpected end of input inside a string at line 1, column 6 (offset 5)" },
		{ "{\"a\":", 5, "unexpected end of input at line 1" },
		{ "012", 0, "invalid number: leading zero" },
		{ "1.x", 2, "invalid number: expected a digit after '.'" },
		{ "1e+", 3, "unexpected end of input" },
		{ "[-a]", 2, "invalid number: expected a digit after '-'" },
		{ "[nul]", 1, "invalid literal" },
		{ "{} 1", 3, "expected end of input after the value, found '1'" },
		{ "{'a':1}", 1, "expected '\"' to begin an object key, found byte 0x27" },
		/* long enough to be skipped a block at a time */
		{ "[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\",\"j\",\"k\",\"l\",\"m\"x]", 52,
		  "expected ',' or ']' after an array element, found 'x'" },
		{ "{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,\n\"i\" 9}", 54,
		  "expected ':' after an object key, found '9' at line 2, column 5 (offset 54)" },
		{ "[\"0123456789012345678901234567890123456789012345678901234567890123\\x\"]", 67,
		  "invalid escape in string, found 'x'" },
		{ "[\"0123456789012345678901234567890123456789012345678901234567890123\\u12g4\"]", 70,
		  "expected four hex digits after \\u, found 'g'" },
		{ "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, -x]", 73,
		  "invalid number: expected a digit after '-'" },
		{ "[\"0123456789012345678901234567890123456789012345678901234567890123\x1f\"]", 66,
		  "control character in string (must be escaped), found byte 0x1f" },
		{ "[true, false, null, true, false, null, true, false, null, true, false, nul]", 71,
		  "invalid literal" },
		{ "{\"a\": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]", 73,
		  "unexpected end of input at line 1, column 74 (offset 73)" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct jscan s;
		char msg[256];

		jscan_init(&s, cases[i].text, strlen(cases[i].text), 0);
		if (jscan_skip(&s, NULL) == 0)
			jscan_finish(&s);
		assert_int_equal(jscan_error(&s), -EINVAL);
		jscan_describe(&s, msg, sizeof(msg));
		if (jscan_offset(&s) != cases[i].offset || !strstr(msg, cases[i].msg))
			fail_msg("%s: got offset %zu \"%s\", want %zu \"%s\"", cases[i].text,
				 jscan_offset(&s), msg, cases[i].offset, cases[i].msg);
	}
}

static void test_pull_api_reads_members_in_order(void **state)
{
	const char *text = " { \"kind\" : \"Pod\", \"n\": -42, \"list\": [1, \"two\", {\"x\": null}],"
			   " \"ok\": true, \"skipme\": {\"deep\": [[], {}]}, \"z\": false } ";
	struct jscan s;
	struct jscan_str key, val;
	/* initialised: cmocka's asserts are not noreturn to the compiler */
	struct str num = { NULL, 0 }, raw = { NULL, 0 };
	int64_t n = 0;
	bool b = false;

	(void)state;
	jscan_init(&s, text, strlen(text), 0);
	assert_int_equal(jscan_peek(&s), JSCAN_OBJECT);
	assert_int_equal(jscan_object_enter(&s), 0);
	assert_int_equal(jscan_object_next(&s, &key), 1);
	assert_true(jscan_str_is(&key, "kind"));
	assert_int_equal(jscan_peek(&s), JSCAN_STRING);
	assert_int_equal(jscan_string(&s, &val), 0);
	assert_true(jscan_str_is(&val, "Pod"));
	assert_false(val.escaped);
	assert_int_equal(jscan_object_next(&s, &key), 1);
	assert_true(jscan_str_is(&key, "n"));
	assert_int_equal(jscan_int64(&s, &n), 0);
	assert_int_equal(n, -42);
	assert_int_equal(jscan_object_next(&s, &key), 1);
	assert_true(jscan_str_is(&key, "list"));
	assert_int_equal(jscan_array_enter(&s), 0);
	assert_int_equal(jscan_array_next(&s), 1);
	assert_int_equal(jscan_number(&s, &num), 0);
	assert_true(str_eq_cstr(num, "1"));
	assert_int_equal(jscan_array_next(&s), 1);
	assert_int_equal(jscan_null(&s), 0);  /* a string, not null: nothing consumed */
	assert_int_equal(jscan_string(&s, &val), 0);
	assert_true(jscan_str_is(&val, "two"));
	assert_int_equal(jscan_array_next(&s), 1);
	assert_int_equal(jscan_object_enter(&s), 0);
	assert_int_equal(jscan_object_next(&s, &key), 1);
	assert_int_equal(jscan_null(&s), 1);
	assert_int_equal(jscan_object_next(&s, &key), 0);
	assert_int_equal(jscan_array_next(&s), 0);
	assert_int_equal(jscan_object_next(&s, &key), 1);
	assert_true(jscan_str_is(&key, "ok"));
	assert_int_equal(jscan_bool(&s, &b), 0);
	assert_true(b);
	assert_int_equal(jscan_object_next(&s, &key), 1);
	assert_true(jscan_str_is(&key, "skipme"));
	assert_int_equal(jscan_skip(&s, &raw), 0);
	assert_true(str_eq_cstr(raw, "{\"deep\": [[], {}]}"));
	assert_int_equal(jscan_object_next(&s, &key), 1);
	assert_int_equal(jscan_bool(&s, &b), 0);
	assert_false(b);
	assert_int_equal(jscan_object_next(&s, &key), 0);
	assert_int_equal(jscan_peek(&s), JSCAN_EOF);
	assert_int_equal(jscan_finish(&s), 0);
}

static void test_empty_containers_through_pull_api(void **state)
{
	const char *text = "[ {}, [ ], { } ]";
	struct jscan s;
	struct jscan_str key;

	(void)state;
	jscan_init(&s, text, strlen(text), 0);
	assert_int_equal(jscan_array_enter(&s), 0);
	assert_int_equal(jscan_array_next(&s), 1);
	assert_int_equal(jscan_object_enter(&s), 0);
	assert_int_equal(jscan_object_next(&s, &key), 0);
	assert_int_equal(jscan_array_next(&s), 1);
	assert_int_equal(jscan_array_enter(&s), 0);
	assert_int_equal(jscan_array_next(&s), 0);
	assert_int_equal(jscan_array_next(&s), 1);
	assert_int_equal(jscan_object_enter(&s), 0);
	assert_int_equal(jscan_object_next(&s, &key), 0);
	assert_int_equal(jscan_array_next(&s), 0);
	assert_int_equal(jscan_finish(&s), 0);
}

static void test_pull_api_rejects_mismatched_close(void **state)
{
	struct jscan s;
	struct jscan_str key;

	(void)state;
	jscan_init(&s, "{\"a\":1]", 7, 0);
	assert_int_equal(jscan_object_enter(&s), 0);
	assert_int_equal(jscan_object_next(&s, &key), 1);
	assert_int_equal(jscan_skip(&s, NULL), 0);
	assert_int_equal(jscan_object_next(&s, &key), -EINVAL);
	assert_int_equal(jscan_offset(&s), 6);

	jscan_init(&s, "[1}", 3, 0);
	assert_int_equal(jscan_array_enter(&s), 0);
	assert_int_equal(jscan_array_next(&s), 1);
	assert_int_equal(jscan_skip(&s, NULL), 0);
	assert_int_equal(jscan_array_next(&s), -EINVAL);

	/* next outside any container */
	jscan_init(&s, "}", 1, 0);
	assert_int_equal(jscan_object_next(&s, &key), -EINVAL);
	jscan_init(&s, "]", 1, 0);
	assert_int_equal(jscan_array_next(&s), -EINVAL);

	/* finish inside an open container */
	jscan_init(&s, "[", 1, 0);
	assert_int_equal(jscan_array_enter(&s), 0);
	assert_int_equal(jscan_finish(&s), -EINVAL);
}

struct int_case {
	const char *text;
	int rc;
	int64_t value;
};

static void test_int64_accepts_only_whole_numbers_in_range(void **state)
{
	static const struct int_case cases[] = {
		{ "0", 0, 0 },
		{ "-0", 0, 0 },
		{ "7", 0, 7 },
		{ "9223372036854775807", 0, INT64_MAX },
		{ "-9223372036854775808", 0, INT64_MIN },
		{ "9223372036854775808", -ERANGE, 0 },
		{ "-9223372036854775809", -ERANGE, 0 },
		{ "99999999999999999999", -ERANGE, 0 },
		{ "1.0", -EINVAL, 0 },
		{ "1e3", -EINVAL, 0 },
		{ "\"1\"", -EINVAL, 0 },
		{ "true", -EINVAL, 0 },
		{ "01", -EINVAL, 0 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct jscan s;
		int64_t v = 12345;
		int rc;

		jscan_init(&s, cases[i].text, strlen(cases[i].text), 0);
		rc = jscan_int64(&s, &v);
		if (rc != cases[i].rc || (rc == 0 && v != cases[i].value))
			fail_msg("%s: rc %d value %lld", cases[i].text, rc, (long long)v);
		if (rc == 0)
			assert_int_equal(jscan_finish(&s), 0);
	}
}

static void test_type_mismatch_is_sticky(void **state)
{
	struct jscan s;
	struct jscan_str str;
	bool b;
	char msg[128];

	(void)state;
	jscan_init(&s, " [1]", 4, 0);
	assert_int_equal(jscan_object_enter(&s), -EINVAL);
	assert_int_equal(jscan_offset(&s), 1);
	jscan_describe(&s, msg, sizeof(msg));
	assert_non_null(strstr(msg, "expected an object, found '['"));
	/* every later call returns the first error */
	assert_int_equal(jscan_array_enter(&s), -EINVAL);
	assert_int_equal(jscan_skip(&s, NULL), -EINVAL);
	assert_int_equal(jscan_peek(&s), JSCAN_INVALID);
	assert_int_equal(jscan_finish(&s), -EINVAL);
	assert_int_equal(jscan_offset(&s), 1);

	jscan_init(&s, "\"x\"", 3, 0);
	assert_int_equal(jscan_bool(&s, &b), -EINVAL);
	jscan_init(&s, "1", 1, 0);
	assert_int_equal(jscan_string(&s, &str), -EINVAL);
	jscan_init(&s, "", 0, 0);
	assert_int_equal(jscan_peek(&s), JSCAN_EOF);
	assert_int_equal(jscan_string(&s, &str), -EINVAL);
	jscan_describe(&s, msg, sizeof(msg));
	assert_non_null(strstr(msg, "unexpected end of input"));
}

static void test_caller_errors_are_recorded_once(void **state)
{
	struct jscan s;
	char msg[128];

	(void)state;
	jscan_init(&s, "{\"a\": \"b\"}", 10, 0);
	assert_int_equal(jscan_error(&s), 0);
	assert_int_equal(jscan_object_enter(&s), 0);
	assert_int_equal(jscan_fail(&s, -EPROTO, "not wanted here"), -EPROTO);
	assert_int_equal(jscan_fail(&s, -EINVAL, "second"), -EPROTO);
	assert_int_equal(jscan_offset(&s), 1);
	jscan_describe(&s, msg, sizeof(msg));
	assert_non_null(strstr(msg, "not wanted here"));
	assert_int_equal(jscan_skip(&s, NULL), -EPROTO);
}

static void test_skip_raw_excludes_leading_whitespace(void **state)
{
	const char *text = "[  {\"a\" : [1, 2]}  ,\t\"s\\\"q\" , 12.5e3 ]";
	struct jscan s;
	struct str raw;

	(void)state;
	jscan_init(&s, text, strlen(text), 0);
	assert_int_equal(jscan_array_enter(&s), 0);
	assert_int_equal(jscan_array_next(&s), 1);
	assert_int_equal(jscan_skip(&s, &raw), 0);
	assert_true(str_eq_cstr(raw, "{\"a\" : [1, 2]}"));
	assert_int_equal(jscan_array_next(&s), 1);
	assert_int_equal(jscan_skip(&s, &raw), 0);
	assert_true(str_eq_cstr(raw, "\"s\\\"q\""));
	assert_int_equal(jscan_array_next(&s), 1);
	assert_int_equal(jscan_skip(&s, &raw), 0);
	assert_true(str_eq_cstr(raw, "12.5e3"));
	assert_int_equal(jscan_array_next(&s), 0);
	assert_int_equal(jscan_finish(&s), 0);
}

static void test_skip_same_consumes_only_identical_values(void **state)
{
	const char *text = "[{\"a\":[1,2]}, {\"a\":[1,3]},\n  \"str\", 123, {\"a\":[1,2]}]";
	struct str known = STR_LIT("{\"a\":[1,2]}");
	struct jscan s;
	struct str raw;

	(void)state;
	jscan_init(&s, text, strlen(text), 0);
	assert_int_equal(jscan_array_enter(&s), 0);
	assert_int_equal(jscan_array_next(&s), 1);
	assert_int_equal(jscan_skip_same(&s, known), 1);
	assert_int_equal(jscan_array_next(&s), 1);
	/* different text: nothing consumed, the value is still there */
	assert_int_equal(jscan_skip_same(&s, known), 0);
	assert_int_equal(jscan_skip(&s, &raw), 0);
	assert_true(str_eq_cstr(raw, "{\"a\":[1,3]}"));
	assert_int_equal(jscan_array_next(&s), 1);
	/* leading whitespace is skipped first */
	assert_int_equal(jscan_skip_same(&s, STR_LIT("\"str\"")), 1);
	assert_int_equal(jscan_array_next(&s), 1);
	/* numbers are not self-delimiting: never taken */
	assert_int_equal(jscan_skip_same(&s, STR_LIT("12")), 0);
	assert_int_equal(jscan_skip_same(&s, STR_LIT("123")), 0);
	assert_int_equal(jscan_skip(&s, NULL), 0);
	assert_int_equal(jscan_array_next(&s), 1);
	/* known longer than what is left */
	assert_int_equal(jscan_skip_same(&s, STR_LIT("{\"a\":[1,2]}]]]")), 0);
	assert_int_equal(jscan_skip_same(&s, known), 1);
	assert_int_equal(jscan_array_next(&s), 0);
	assert_int_equal(jscan_finish(&s), 0);
	/* sticky errors */
	jscan_init(&s, "x", 1, 0);
	assert_int_equal(jscan_skip(&s, NULL), -EINVAL);
	assert_int_equal(jscan_skip_same(&s, known), -EINVAL);
}

struct decode_case {
	const char *json;    /* a JSON string literal, quotes included */
	int rc;
	const char *want;
	size_t want_len;
};

static void test_string_decoding(void **state)
{
	static const struct decode_case cases[] = {
		{ "\"plain\"", 0, "plain", 5 },
		{ "\"a\\\"b\\\\c\\/d\"", 0, "a\"b\\c/d", 7 },
		{ "\"\\b\\f\\n\\r\\t\"", 0, "\b\f\n\r\t", 5 },
		{ "\"\\u0041\\u00e9\\u20ac\"", 0, "A\xc3\xa9\xe2\x82\xac", 6 },
		{ "\"\\ud83d\\ude00!\"", 0, "\xf0\x9f\x98\x80!", 5 },
		{ "\"\\udbff\\udfff\"", 0, "\xf4\x8f\xbf\xbf", 4 },
		{ "\"x\\u0000y\"", 0, "x\0y", 3 },
		{ "\"caf\xc3\xa9\\n\"", 0, "caf\xc3\xa9\n", 6 },
		{ "\"\\ud800\"", -EINVAL, NULL, 0 },
		{ "\"\\udfff\"", -EINVAL, NULL, 0 },
		{ "\"\\ud83d\\u0041\"", -EINVAL, NULL, 0 },
		{ "\"\\ud83d\"", -EINVAL, NULL, 0 },
		{ "\"\xc3\\n\"", -EINVAL, NULL, 0 },
		{ "\"\xe2\x82\"", -EINVAL, NULL, 0 },
	};
	struct arena *a = NULL;
	size_t i;

	(void)state;
	assert_int_equal(arena_new(1 << 16, &a), 0);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct jscan s;
		struct jscan_str js;
		struct str out;
		int rc;

		jscan_init(&s, cases[i].json, strlen(cases[i].json), 0);
		assert_int_equal(jscan_string(&s, &js), 0);
		rc = jscan_str_decode(&js, a, &out);
		if (rc != cases[i].rc)
			fail_msg("%s: rc %d want %d", cases[i].json, rc, cases[i].rc);
		if (rc == 0) {
			assert_int_equal(out.len, cases[i].want_len);
			assert_memory_equal(out.ptr, cases[i].want, out.len);
			if (!js.escaped)
				assert_ptr_equal(out.ptr, js.ptr);  /* no copy */
			else
				assert_int_equal(out.ptr[out.len], '\0');
		}
	}
	arena_free(a);
}

static void test_decoding_reports_arena_exhaustion(void **state)
{
	struct arena *a = NULL;
	struct jscan s;
	struct jscan_str js;
	struct str out;
	const char *text = "\"\\n0123456789012345678901234567890123456789\"";

	(void)state;
	assert_int_equal(arena_new(16, &a), 0);
	jscan_init(&s, text, strlen(text), 0);
	assert_int_equal(jscan_string(&s, &js), 0);
	assert_int_equal(jscan_str_decode(&js, a, &out), -E2BIG);
	arena_free(a);
}

static void test_str_is_compares_decoded_text(void **state)
{
	static const struct {
		const char *json;
		const char *lit;
		bool want;
	} cases[] = {
		{ "\"apiVersion\"", "apiVersion", true },
		{ "\"apiVersion\"", "apiversion", false },
		{ "\"apiVersion\"", "apiVersio", false },
		{ "\"apiVersio\"", "apiVersion", false },
		{ "\"\\u0061piVersion\"", "apiVersion", true },
		{ "\"api\\u0056ersion\"", "apiVersion", true },
		{ "\"apiVersion\\u0000\"", "apiVersion", false },
		{ "\"a\\/b\"", "a/b", true },
		{ "\"\\ud800\"", "x", false },
		{ "\"\"", "", true },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct jscan s;
		struct jscan_str js;

		jscan_init(&s, cases[i].json, strlen(cases[i].json), 0);
		assert_int_equal(jscan_string(&s, &js), 0);
		if (jscan_str_is(&js, cases[i].lit) != cases[i].want)
			fail_msg("%s vs %s", cases[i].json, cases[i].lit);
	}
}

/* A string of every length from 0 to 80 with each kind of special byte at
 * each position, ending at each distance from the end of the text: the
 * sixteen-byte steps, the last bytes of the text and the 64-byte blocks
 * must all find the same closing quote and the same faults. Each text is
 * a copy of exactly its length, so ASan sees any read past the end. */
static void test_strings_of_every_length_and_position(void **state)
{
	static const struct {
		const char *bytes;      /* put at the position */
		const char *decoded;    /* what they decode to; NULL: grammar error */
		size_t fault;           /* offset of the error in the bytes */
	} specials[] = {
		{ "\\\"", "\"", 0 },
		{ "\\\\", "\\", 0 },
		{ "\\u00e9", "\xc3\xa9", 0 },
		{ "\xc3\xa9", "\xc3\xa9", 0 },
		{ "\x01", NULL, 0 },
		{ "\\x", NULL, 1 },
		{ "\\u0g00", NULL, 3 },
	};
	struct arena *a = NULL;
	char body[160];
	size_t len, at, k, tail;

	(void)state;
	assert_int_equal(arena_new(1 << 16, &a), 0);
	for (len = 0; len <= 80; len++) {
		for (k = 0; k < sizeof(specials) / sizeof(specials[0]); k++) {
			for (at = 0; at <= len; at += (len > 20 ? 3 : 1)) {
				for (tail = 0; tail < 20; tail += 7) {
					size_t n = strlen(specials[k].bytes), total;
					char *text;
					struct jscan s;
					struct jscan_str js;
					struct str out;
					int rc;

					/* ["aaa<special>aaa"] and tail spaces */
					memset(body, 'a', sizeof(body));
					body[0] = '[';
					body[1] = '"';
					memcpy(body + 2 + at, specials[k].bytes, n);
					body[2 + len + n] = '"';
					body[3 + len + n] = ']';
					memset(body + 4 + len + n, ' ', tail);
					total = 4 + len + n + tail;
					text = malloc(total);
					assert_non_null(text);
					memcpy(text, body, total);
					rc = skip_all(text, total, 0);
					if (specials[k].decoded == NULL) {
						jscan_init(&s, text, total, 0);
						if (rc != -EINVAL || jscan_skip(&s, NULL) != -EINVAL ||
						    jscan_offset(&s) != 2 + at + specials[k].fault)
							fail_msg("len %zu special %zu at %zu tail %zu: rc %d offset %zu",
								 len, k, at, tail, rc, jscan_offset(&s));
					} else {
						assert_int_equal(rc, 0);
						jscan_init(&s, text, total, 0);
						assert_int_equal(jscan_array_enter(&s), 0);
						assert_int_equal(jscan_array_next(&s), 1);
						assert_int_equal(jscan_string(&s, &js), 0);
						assert_int_equal(js.len, len + n);
						assert_int_equal(jscan_str_decode(&js, a, &out), 0);
						assert_int_equal(out.len, len + strlen(specials[k].decoded));
						assert_memory_equal(out.ptr + at, specials[k].decoded,
								    strlen(specials[k].decoded));
						assert_int_equal(jscan_array_next(&s), 0);
						assert_int_equal(jscan_finish(&s), 0);
					}
					free(text);
					arena_reset(a);
				}
			}
		}
	}
	arena_free(a);
}

/* Runs of whitespace of every length between values, with a control byte
 * at each position of some: the sixteen-byte whitespace steps and the
 * blocks must stop where the byte-at-a-time scan stops. */
static void test_whitespace_runs_of_every_length(void **state)
{
	static const char ws[] = " \t\n\r";
	char text[512];
	size_t run, bad, n, i;

	(void)state;
	for (run = 0; run <= 70; run++) {
		for (bad = 0; bad <= run; bad += run < 20 ? 1 : 7) {
			bool has_bad = bad < run;
			struct jscan s;
			int rc;

			/* [1,<run>2,<run>"x"<run>,{}<run>] */
			n = 0;
			text[n++] = '[';
			for (i = 0; i < 4; i++) {
				size_t j;

				if (i == 0) {
					text[n++] = '1';
					text[n++] = ',';
				} else if (i == 1) {
					text[n++] = '2';
					text[n++] = ',';
				} else if (i == 2) {
					memcpy(text + n, "\"x\"", 3);
					n += 3;
				} else {
					memcpy(text + n, ",{}", 3);
					n += 3;
				}
				for (j = 0; j < run; j++)
					text[n++] = ws[(j * 7 + i) % 4];
				if (i == 2 && has_bad)
					text[n - run + bad] = '\x0b';
			}
			text[n++] = ']';
			rc = skip_all(text, n, 0);
			if ((rc == 0) == has_bad)
				fail_msg("run %zu bad %zu: rc %d", run, bad, rc);
			jscan_init(&s, text, n, 0);
			if (has_bad && (jscan_skip(&s, NULL) != -EINVAL ||
					jscan_offset(&s) != 1 + 2 + 2 * (run + 1) + 3 + bad))
				fail_msg("run %zu bad %zu: offset %zu", run, bad, jscan_offset(&s));
		}
	}
}

/* Runs of backslashes before a quote, at every offset around the 16- and
 * 64-byte boundaries, inside keys and values: the escape carried from one
 * block to the next must agree with jansson. */
static void test_backslash_runs_across_block_boundaries(void **state)
{
	char text[256];
	size_t off, run, n;
	unsigned shape;

	(void)state;
	for (shape = 0; shape < 3; shape++) {
		for (off = 40; off < 140; off++) {
			for (run = 1; run <= 5; run++) {
				json_error_t jerr;
				json_t *j;
				int rc;

				n = 0;
				text[n++] = shape == 0 ? '[' : '{';
				text[n++] = '"';
				while (n < off)
					text[n++] = 'a';
				memset(text + n, '\\', run);
				n += run;
				text[n++] = '"';
				if (shape == 0) {
					memcpy(text + n, "x\",1]", 5);
					n += 5;
				} else if (shape == 1) {
					memcpy(text + n, "\":1}", 4);
					n += 4;
				} else {
					memcpy(text + n, "\":\"\\\"\\\\\"}", 9);
					n += 9;
				}
				rc = skip_all(text, n, 0);
				j = json_loadb(text, n, JSON_DECODE_ANY, &jerr);
				if ((j != NULL) != (rc == 0))
					fail_msg("shape %u offset %zu run %zu: jscan %d, jansson %s: %.*s", shape,
						 off, run, rc, j ? "valid" : jerr.text, (int)n, text);
				json_decref(j);
			}
		}
	}
}

/* A body cut at each 16- and 64-byte boundary and one byte either side
 * is not JSON, unless only whitespace was cut off; the error is inside
 * the text, and skipping and walking agree. */
static void truncate_at_boundaries(const char *path, struct arena *a, size_t *count)
{
	size_t len, base, n;
	char *body = testutil_read_file(path, &len);

	assert_non_null(body);
	if (skip_all(body, len, 2000) != 0) {
		free(body);
		return;
	}
	for (base = 0; base <= len + 1; base += 16) {
		for (n = base ? base - 1 : 0; n <= base + 1 && n < len; n++) {
			char *cut = malloc(n ? n : 1);
			bool rest_ws = true;
			struct jscan s;
			size_t i;
			int rc;

			assert_non_null(cut);
			memcpy(cut, body, n);
			for (i = n; i < len; i++)
				rest_ws = rest_ws && (body[i] == ' ' || body[i] == '\n' ||
						      body[i] == '\r' || body[i] == '\t');
			jscan_init(&s, cut, n, 2000);
			rc = jscan_skip(&s, NULL);
			if (rc == 0)
				rc = jscan_finish(&s);
			if ((rc == 0) != rest_ws || jscan_offset(&s) > n)
				fail_msg("%s cut at %zu: rc %d at %zu", path, n, rc, jscan_offset(&s));
			/* The walk decodes every string: one in 32 cuts of the
			 * big bodies. */
			if ((len < 20000 || (n & 0x1ff) == 0) && walk(cut, n, 2000, a) != rc &&
			    rc != 0)
				fail_msg("%s cut at %zu: skip %d, walk differs", path, n, rc);
			arena_reset(a);
			free(cut);
			(*count)++;
		}
	}
	free(body);
}

static void truncate_dir(const char *dir, struct arena *a, size_t *count)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4096];

	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name);

		if (l < 5 || strcmp(e->d_name + l - 5, ".json") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		truncate_at_boundaries(path, a, count);
	}
	closedir(d);
}

static void test_truncation_at_block_boundaries_is_an_error(void **state)
{
	const char *bench = getenv("DRA_GUARD_BENCH_BODIES");
	struct arena *a = NULL;
	size_t i, count = 0, own;

	(void)state;
	assert_int_equal(arena_new(64 << 20, &a), 0);
	for (i = 0; testutil_json_dirs[i]; i++)
		truncate_dir(testutil_repo_dir(testutil_json_dirs[i]), a, &count);
	own = count;
	if (bench && *bench)
		truncate_dir(bench, a, &count);
	arena_free(a);
	print_message("%zu cuts, %zu of them in the project's own documents\n", count, own);
	assert_true(own > 1000);
}

/* Everything a walk reads, in order, as text: keys, strings (decoded),
 * numbers, literals and brackets. */
static int record_value(struct jscan *s, struct arena *a, FILE *out)
{
	struct jscan_str js;
	struct str text, dec;
	bool b;
	int rc;

	switch (jscan_peek(s)) {
	case JSCAN_OBJECT:
		if ((rc = jscan_object_enter(s)) != 0)
			return rc;
		fputc('{', out);
		while ((rc = jscan_object_next(s, &js)) == 1) {
			if (jscan_str_decode(&js, a, &dec) != 0)
				return WALK_BAD_STRING;
			fprintf(out, "k%zu:%.*s", dec.len, (int)dec.len, dec.ptr);
			if ((rc = record_value(s, a, out)) != 0)
				return rc;
		}
		fputc('}', out);
		return rc;
	case JSCAN_ARRAY:
		if ((rc = jscan_array_enter(s)) != 0)
			return rc;
		fputc('[', out);
		while ((rc = jscan_array_next(s)) == 1)
			if ((rc = record_value(s, a, out)) != 0)
				return rc;
		fputc(']', out);
		return rc;
	case JSCAN_STRING:
		if ((rc = jscan_string(s, &js)) != 0)
			return rc;
		if (jscan_str_decode(&js, a, &dec) != 0)
			return WALK_BAD_STRING;
		fprintf(out, "s%zu:%.*s", dec.len, (int)dec.len, dec.ptr);
		return 0;
	case JSCAN_NUMBER:
		if ((rc = jscan_number(s, &text)) != 0)
			return rc;
		fprintf(out, "n%.*s;", (int)text.len, text.ptr);
		return 0;
	case JSCAN_TRUE:
	case JSCAN_FALSE:
		if ((rc = jscan_bool(s, &b)) != 0)
			return rc;
		fputs(b ? "T" : "F", out);
		return 0;
	case JSCAN_NULL:
		rc = jscan_null(s);
		fputs("N", out);
		return rc == 1 ? 0 : -EINVAL;
	default:
		return jscan_skip(s, NULL);
	}
}

static char *record(const char *text, size_t len, struct arena *a, size_t *n)
{
	char *buf = NULL;
	FILE *out = open_memstream(&buf, n);
	struct jscan s;
	int rc;

	assert_non_null(out);
	jscan_init(&s, text, len, 0);
	rc = record_value(&s, a, out);
	if (rc == 0)
		rc = jscan_finish(&s);
	fclose(out);
	assert_int_equal(rc, 0);
	arena_reset(a);
	return buf;
}

/* The same documents compact (the calls' quick paths) and pretty-printed
 * (whitespace everywhere: the precise paths) read the same. */
static void compact_and_pretty_in_dir(const char *dir, struct arena *a, size_t *docs)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[8192];

	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name), n1, n2;
		char *compact, *pretty, *r1, *r2;
		json_error_t jerr;
		json_t *j;

		if (l < 5 || strcmp(e->d_name + l - 5, ".json") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		j = json_load_file(path, JSON_DECODE_ANY, &jerr);
		if (!j)
			fail_msg("%s: not JSON (line %d: %s)", path, jerr.line, jerr.text);
		compact = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
		pretty = json_dumps(j, JSON_INDENT(3) | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
		assert_non_null(compact);
		assert_non_null(pretty);
		r1 = record(compact, strlen(compact), a, &n1);
		r2 = record(pretty, strlen(pretty), a, &n2);
		if (n1 != n2 || memcmp(r1, r2, n1) != 0)
			fail_msg("%s reads differently compact and pretty", path);
		free(r1);
		free(r2);
		free(compact);
		free(pretty);
		json_decref(j);
		(*docs)++;
	}
	closedir(d);
}

static void test_compact_and_pretty_text_read_the_same(void **state)
{
	struct arena *a = NULL;
	size_t i, docs = 0;

	(void)state;
	assert_int_equal(arena_new(64 << 20, &a), 0);
	for (i = 0; testutil_json_dirs[i]; i++)
		compact_and_pretty_in_dir(testutil_repo_dir(testutil_json_dirs[i]), a, &docs);
	assert_true(docs > 100);
	arena_free(a);
}

/* --- differential check against jansson ------------------------------- */

/* jansson rejects some valid JSON (integers past int64, reals past double,
 * NUL in keys) and checks duplicates and depth differently; those verdicts
 * are not compared. */
static bool jansson_verdict_comparable(const json_error_t *e)
{
	switch (json_error_code(e)) {
	case json_error_numeric_overflow:
	case json_error_duplicate_key:
	case json_error_null_byte_in_key:
	case json_error_stack_overflow:
		return false;
	default:
		return true;
	}
}

struct diff_stats {
	size_t docs;
	size_t valid;
	size_t compared;
};

static void diff_one(const char *text, size_t len, struct arena *a, struct diff_stats *st)
{
	json_error_t jerr;
	json_t *j;
	int skip_rc, walk_rc;
	bool jok;

	skip_rc = skip_all(text, len, 2000);
	walk_rc = walk(text, len, 2000, a);
	arena_reset(a);
	j = json_loadb(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &jerr);
	jok = j != NULL;
	json_decref(j);
	st->docs++;
	/* Skipping and decoding agree on grammar (a string that does not
	 * decode stops the walk early, before any later grammar error). */
	if (walk_rc != WALK_BAD_STRING && skip_rc != walk_rc)
		fail_msg("skip %d, walk %d on %zu bytes: %.*s", skip_rc, walk_rc, len,
			 (int)(len < 200 ? len : 200), text);
	if (walk_rc == 0)
		st->valid++;
	if (!jok && !jansson_verdict_comparable(&jerr))
		return;
	/* jansson takes a raw NUL byte right after a number or a literal as a
	 * delimiter ("[1\0]" loads); RFC 8259 does not. */
	if (jok && memchr(text, '\0', len))
		return;
	st->compared++;
	if (jok != (walk_rc == 0))
		fail_msg("jscan %d, jansson %s (%s) on %zu bytes: %.*s", walk_rc,
			 jok ? "valid" : "invalid", jok ? "" : jerr.text, len,
			 (int)(len < 200 ? len : 200), text);
}

static uint64_t rng_next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* One random edit of the kind that breaks JSON in interesting ways. */
static size_t mutate(char *buf, size_t len, size_t cap, uint64_t *rng)
{
	static const char alphabet[] = "{}[]\",:\\ 0123456789-+.eEtrufalsn\x01\x1f\x7f\x80\xc3\xed\xff/u";
	size_t at = len ? rng_next(rng) % len : 0;
	char c = alphabet[rng_next(rng) % (sizeof(alphabet) - 1)];

	switch (rng_next(rng) % 6) {
	case 0:  /* replace */
		if (len)
			buf[at] = c;
		return len;
	case 1:  /* delete */
		if (len) {
			memmove(buf + at, buf + at + 1, len - at - 1);
			len--;
		}
		return len;
	case 2:  /* insert */
		if (len < cap) {
			memmove(buf + at + 1, buf + at, len - at);
			buf[at] = c;
			len++;
		}
		return len;
	case 3:  /* truncate */
		return at;
	case 4: {  /* duplicate a short span */
		size_t n = 1 + rng_next(rng) % 16;

		if (at + n <= len && len + n <= cap) {
			memmove(buf + at + n, buf + at, len - at);
			len += n;
		}
		return len;
	}
	default:  /* insert an escape */
		if (len + 6 <= cap) {
			static const char *const escapes[] = { "\\u0000", "\\ud800", "\\udc00",
				"\\u00e9", "\\ud83d", "\\ude00", "\\n\\t\\\"", "\\uZZZZ" };
			const char *e = escapes[rng_next(rng) % 8];

			memmove(buf + at + strlen(e), buf + at, len - at);
			memcpy(buf + at, e, strlen(e));
			len += strlen(e);
		}
		return len;
	}
}

static void diff_file(const char *path, struct arena *a, struct diff_stats *st, uint64_t *rng)
{
	size_t len, cap, i, rounds;
	char *body = testutil_read_file(path, &len);
	char *work;

	assert_non_null(body);
	diff_one(body, len, a, st);
	cap = len + 256;
	work = malloc(cap);
	assert_non_null(work);
	/* Fewer rounds for big bodies: the grammar they exercise is the same. */
	rounds = len > 20000 ? 40 : 150;
	for (i = 0; i < rounds; i++) {
		size_t n = len, k, edits = 1 + rng_next(rng) % 3;

		memcpy(work, body, len);
		for (k = 0; k < edits; k++)
			n = mutate(work, n, cap, rng);
		diff_one(work, n, a, st);
	}
	free(work);
	free(body);
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static void diff_dir(const char *dir, struct arena *a, struct diff_stats *st, uint64_t *rng)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4096];

	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		if (!has_suffix(e->d_name, ".json"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		diff_file(path, a, st, rng);
	}
	closedir(d);
}

static void test_verdicts_match_jansson_on_mutated_bodies(void **state)
{
	struct diff_stats st = { 0, 0, 0 };
	struct arena *a = NULL;
	uint64_t rng = 0x9e3779b97f4a7c15ULL;
	const char *bench = getenv("DRA_GUARD_BENCH_BODIES");
	size_t i;

	(void)state;
	assert_int_equal(arena_new(64 << 20, &a), 0);
	for (i = 0; testutil_json_dirs[i]; i++)
		diff_dir(testutil_repo_dir(testutil_json_dirs[i]), a, &st, &rng);
	print_message("%zu documents, %zu valid, %zu verdicts compared with jansson\n",
		      st.docs, st.valid, st.compared);
	/* The fixtures are there and most mutations break them. */
	assert_true(st.docs > 10000);
	assert_true(st.valid > 100 && st.valid < st.docs / 2);
	assert_true(st.compared > st.docs * 9 / 10);
	/* The generated benchmark bodies (bench/gen.py) when they are there. */
	if (bench && *bench)
		diff_dir(bench, a, &st, &rng);
	arena_free(a);
	print_message("%zu documents in all, %zu valid, %zu verdicts compared with jansson\n",
		      st.docs, st.valid, st.compared);
	assert_true(st.compared > st.docs * 9 / 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_documents_table),
		cmocka_unit_test(test_default_depth_limit),
		cmocka_unit_test(test_depth_limit_is_clamped_and_spans_bit_words),
		cmocka_unit_test(test_every_truncation_of_a_body_is_an_error),
		cmocka_unit_test(test_every_byte_at_every_string_position),
		cmocka_unit_test(test_errors_say_what_and_where),
		cmocka_unit_test(test_pull_api_reads_members_in_order),
		cmocka_unit_test(test_empty_containers_through_pull_api),
		cmocka_unit_test(test_pull_api_rejects_mismatched_close),
		cmocka_unit_test(test_int64_accepts_only_whole_numbers_in_range),
		cmocka_unit_test(test_type_mismatch_is_sticky),
		cmocka_unit_test(test_caller_errors_are_recorded_once),
		cmocka_unit_test(test_skip_raw_excludes_leading_whitespace),
		cmocka_unit_test(test_skip_same_consumes_only_identical_values),
		cmocka_unit_test(test_string_decoding),
		cmocka_unit_test(test_decoding_reports_arena_exhaustion),
		cmocka_unit_test(test_str_is_compares_decoded_text),
		cmocka_unit_test(test_strings_of_every_length_and_position),
		cmocka_unit_test(test_whitespace_runs_of_every_length),
		cmocka_unit_test(test_backslash_runs_across_block_boundaries),
		cmocka_unit_test(test_truncation_at_block_boundaries_is_an_error),
		cmocka_unit_test(test_compact_and_pretty_text_read_the_same),
		cmocka_unit_test(test_verdicts_match_jansson_on_mutated_bodies),
#ifdef JSCAN_INTERNAL_TESTS
		JSCAN_INTERNAL_TESTS    /* see test_jscan_portable.c */
#endif
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
