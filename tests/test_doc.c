/* test_doc.c - YAML and JSON documents as a tree with positions. */
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
#include <sys/stat.h>

#include "doc.h"
#include "testutil.h"

#define OUT_CAP ((size_t)64 << 20)

/* Every document of a stream as compact JSON, one per line; NULL (with rc
 * and err set) when the stream does not parse. */
static char *stream_json(const char *in, size_t len, bool json, const struct doc_limits *lim,
			 int *rc, struct doc_error *err)
{
	struct doc_set *set = NULL;
	struct buf b;
	char *s = NULL;
	size_t i;

	*rc = json ? doc_parse_json(in, len, lim, &set, err) : doc_parse_yaml(in, len, lim, &set, err);
	if (*rc)
		return NULL;
	buf_init(&b, OUT_CAP);
	for (i = 0; i < doc_set_count(set); i++) {
		if (i)
			assert_int_equal(buf_add_char(&b, '\n'), 0);
		assert_int_equal(doc_to_json(doc_set_root(set, i), &b), 0);
	}
	assert_int_equal(buf_take(&b, &s, NULL), 0);
	doc_set_free(set);
	return s;
}

static char *yaml_json(const char *in, int *rc, struct doc_error *err)
{
	return stream_json(in, strlen(in), false, NULL, rc, err);
}

/* --- scalar resolution ---------------------------------------------------- */

struct scalar_row {
	const char *yaml;
	const char *json;
};

static const struct scalar_row scalar_rows[] = {
	/* null */
	{ "v: ~", "{\"v\":null}" },
	{ "v: null", "{\"v\":null}" },
	{ "v: Null", "{\"v\":null}" },
	{ "v: NULL", "{\"v\":null}" },
	{ "v:", "{\"v\":null}" },
	{ "v: nULL", "{\"v\":\"nULL\"}" },
	/* YAML 1.1 booleans, as go-yaml v2 spells them */
	{ "v: y", "{\"v\":true}" },
	{ "v: Y", "{\"v\":true}" },
	{ "v: yes", "{\"v\":true}" },
	{ "v: Yes", "{\"v\":true}" },
	{ "v: YES", "{\"v\":true}" },
	{ "v: true", "{\"v\":true}" },
	{ "v: True", "{\"v\":true}" },
	{ "v: TRUE", "{\"v\":true}" },
	{ "v: on", "{\"v\":true}" },
	{ "v: On", "{\"v\":true}" },
	{ "v: ON", "{\"v\":true}" },
	{ "v: n", "{\"v\":false}" },
	{ "v: N", "{\"v\":false}" },
	{ "v: no", "{\"v\":false}" },
	{ "v: No", "{\"v\":false}" },
	{ "v: NO", "{\"v\":false}" },
	{ "v: false", "{\"v\":false}" },
	{ "v: False", "{\"v\":false}" },
	{ "v: FALSE", "{\"v\":false}" },
	{ "v: off", "{\"v\":false}" },
	{ "v: Off", "{\"v\":false}" },
	{ "v: OFF", "{\"v\":false}" },
	{ "v: yEs", "{\"v\":\"yEs\"}" },
	{ "v: tRUE", "{\"v\":\"tRUE\"}" },
	{ "v: oN", "{\"v\":\"oN\"}" },
	/* integers: Go's ParseInt(s, 0, 64) after removing '_' */
	{ "v: 0", "{\"v\":0}" },
	{ "v: -0", "{\"v\":0}" },
	{ "v: +1", "{\"v\":1}" },
	{ "v: 1_000", "{\"v\":1000}" },
	{ "v: 1__0_", "{\"v\":10}" },
	{ "v: 0x1f", "{\"v\":31}" },
	{ "v: 0X1F", "{\"v\":31}" },
	{ "v: -0x1f", "{\"v\":-31}" },
	{ "v: 0x_1f", "{\"v\":31}" },
	{ "v: 0o17", "{\"v\":15}" },
	{ "v: 0777", "{\"v\":511}" },
	{ "v: 0b101", "{\"v\":5}" },
	{ "v: -0b101", "{\"v\":-5}" },
	{ "v: 0b-101", "{\"v\":-5}" },
	{ "v: 08", "{\"v\":8}" },
	{ "v: 9223372036854775807", "{\"v\":9223372036854775807}" },
	{ "v: -9223372036854775808", "{\"v\":-9223372036854775808}" },
	{ "v: 18446744073709551615", "{\"v\":18446744073709551615}" },
	{ "v: 18446744073709551616", "{\"v\":18446744073709551616}" },
	{ "v: -9223372036854775809", "{\"v\":-9223372036854775809}" },
	{ "v: 0xffffffffffffffffffff", "{\"v\":1208925819614629174706175}" },
	{ "v: -0x8000000000000001", "{\"v\":\"-0x8000000000000001\"}" },
	{ "v: 0x", "{\"v\":\"0x\"}" },
	{ "v: 0xg", "{\"v\":\"0xg\"}" },
	{ "v: 1:20", "{\"v\":\"1:20\"}" },
	{ "v: 2001-12-14", "{\"v\":\"2001-12-14\"}" },
	{ "v: 2001-12-14t21:59:43.10-05:00", "{\"v\":\"2001-12-14t21:59:43.10-05:00\"}" },
	{ "v: +", "{\"v\":\"+\"}" },
	{ "v: -x", "{\"v\":\"-x\"}" },
	/* floats: exact value, encoding/json's spelling */
	{ "v: 1.", "{\"v\":1}" },
	{ "v: 1.0", "{\"v\":1}" },
	{ "v: 1.50", "{\"v\":1.5}" },
	{ "v: .5", "{\"v\":0.5}" },
	{ "v: +.5", "{\"v\":0.5}" },
	{ "v: -.5e-3", "{\"v\":-0.0005}" },
	{ "v: 0.1", "{\"v\":0.1}" },
	{ "v: 0.1000000000000000000001", "{\"v\":0.1000000000000000000001}" },
	{ "v: 1e3", "{\"v\":1000}" },
	{ "v: 1E3", "{\"v\":1000}" },
	{ "v: 1.5e2", "{\"v\":150}" },
	{ "v: 1.e5", "{\"v\":100000}" },
	{ "v: 100e-2", "{\"v\":1}" },
	{ "v: 1e21", "{\"v\":1e+21}" },
	{ "v: 1e20", "{\"v\":100000000000000000000}" },
	{ "v: 123456789012345678901234", "{\"v\":1.23456789012345678901234e+23}" },
	{ "v: 0.000001", "{\"v\":0.000001}" },
	{ "v: 1e-7", "{\"v\":1e-7}" },
	{ "v: -0.0", "{\"v\":-0}" },
	{ "v: 1_0.5", "{\"v\":10.5}" },
	{ "v: .5_0", "{\"v\":0.5}" },
	{ "v: ._5", "{\"v\":\"._5\"}" },
	{ "v: .", "{\"v\":\".\"}" },
	{ "v: 1e-400", "{\"v\":0}" },
	{ "v: 1e400", "{\"v\":\"1e400\"}" },
	{ "v: -1e400", "{\"v\":\"-1e400\"}" },
	{ "v: 1.7976931348623157e308", "{\"v\":1.7976931348623157e+308}" },
	{ "v: 1.7976931348623159e308", "{\"v\":\"1.7976931348623159e308\"}" },
	{ "v: 0x1p3", "{\"v\":\"0x1p3\"}" },
	/* quoted and block scalars are strings */
	{ "v: \"yes\"", "{\"v\":\"yes\"}" },
	{ "v: '1'", "{\"v\":\"1\"}" },
	{ "v: \"\"", "{\"v\":\"\"}" },
	{ "v: ''", "{\"v\":\"\"}" },
	{ "v: \"null\"", "{\"v\":\"null\"}" },
	{ "v: |\n  yes\n", "{\"v\":\"yes\\n\"}" },
	{ "v: |-\n  12\n", "{\"v\":\"12\"}" },
	{ "v: >-\n  1\n  2\n", "{\"v\":\"1 2\"}" },
	{ "v: |+\n  a\n\n", "{\"v\":\"a\\n\\n\"}" },
	{ "v: \"\\u00e9\\t<&>\"", "{\"v\":\"\xc3\xa9\\t\\u003c\\u0026\\u003e\"}" },
	{ "v: \"\\0\"", "{\"v\":\"\\u0000\"}" },
	{ "v: plain text here", "{\"v\":\"plain text here\"}" },
	/* explicit core tags */
	{ "v: !!str yes", "{\"v\":\"yes\"}" },
	{ "v: !!str 0x10", "{\"v\":\"0x10\"}" },
	{ "v: !!int \"12\"", "{\"v\":12}" },
	{ "v: !!int '0x10'", "{\"v\":16}" },
	{ "v: !!float 3", "{\"v\":3}" },
	{ "v: !!float \"0.5\"", "{\"v\":0.5}" },
	{ "v: !!bool \"on\"", "{\"v\":true}" },
	{ "v: !!null ''", "{\"v\":null}" },
	{ "v: !<tag:yaml.org,2002:int> 0x10", "{\"v\":16}" },
	{ "v: !!seq [1]", "{\"v\":[1]}" },
	{ "v: !!map {a: 1}", "{\"v\":{\"a\":1}}" },
	/* keys become strings as sigs.k8s.io/yaml makes them */
	{ "1: a", "{\"1\":\"a\"}" },
	{ "yes: a", "{\"true\":\"a\"}" },
	{ "off: a", "{\"false\":\"a\"}" },
	{ "0x10: a", "{\"16\":\"a\"}" },
	{ "\"yes\": a", "{\"yes\":\"a\"}" },
	{ "!!str 1: a", "{\"1\":\"a\"}" },
	{ "y: 1", "{\"true\":1}" },
	{ "\"<<\": a", "{\"\\u003c\\u003c\":\"a\"}" },
	{ "v: <<", "{\"v\":\"\\u003c\\u003c\"}" },
};

static void test_plain_scalars_resolve_as_kubernetes_yaml(void **state)
{
	size_t i;

	(void)state;
	assert_true(sizeof(scalar_rows) / sizeof(scalar_rows[0]) >= 40);
	for (i = 0; i < sizeof(scalar_rows) / sizeof(scalar_rows[0]); i++) {
		const struct scalar_row *row = &scalar_rows[i];
		struct doc_error err;
		int rc;
		char *got = yaml_json(row->yaml, &rc, &err);

		if (!got || strcmp(got, row->json) != 0) {
			print_error("row %zu: %s\n  want %s\n  got  %s (rc %d: %s)\n", i, row->yaml,
				    row->json, got ? got : "-", rc, got ? "" : err.msg);
			free(got);
			fail();
		}
		free(got);
	}
}

static void test_numbers_are_number_nodes_and_quoted_are_strings(void **state)
{
	struct doc_set *set = NULL;
	struct doc_error err;
	const char *in = "a: 0x1f\nb: '0x1f'\nc: yes\nd: ~\ne: 1.5\n";
	const struct doc_node *root;

	(void)state;
	assert_int_equal(doc_parse_yaml(in, strlen(in), NULL, &set, &err), 0);
	root = doc_set_root(set, 0);
	assert_int_equal(doc_map_get(root, "a")->type, DOC_NUMBER);
	assert_string_equal(doc_map_get(root, "a")->text.ptr, "31");
	assert_int_equal(doc_map_get(root, "b")->type, DOC_STRING);
	assert_string_equal(doc_map_get(root, "b")->text.ptr, "0x1f");
	assert_int_equal(doc_map_get(root, "c")->type, DOC_BOOL);
	assert_true(doc_map_get(root, "c")->boolean);
	assert_int_equal(doc_map_get(root, "d")->type, DOC_NULL);
	assert_int_equal(doc_map_get(root, "e")->type, DOC_NUMBER);
	assert_null(doc_map_get(root, "f"));
	assert_null(doc_map_get(doc_map_get(root, "a"), "x"));
	assert_string_equal(doc_type_name(DOC_MAP), "map");
	assert_string_equal(doc_type_name(DOC_SEQ), "sequence");
	assert_string_equal(doc_type_name(DOC_STRING), "string");
	doc_set_free(set);
}

/* --- streams -------------------------------------------------------------- */

struct stream_row {
	const char *yaml;
	size_t docs;
	const char *json;       /* documents, one per line */
};

static const struct stream_row stream_rows[] = {
	{ "", 0, "" },
	{ "# only a comment\n", 0, "" },
	{ "a: 1", 1, "{\"a\":1}" },
	{ "---\na: 1\n---\nb: 2\n", 2, "{\"a\":1}\n{\"b\":2}" },
	{ "---\n---\n", 2, "null\nnull" },
	{ "---\n...\n", 1, "null" },
	{ "a: 1\n...\n---\nb: 2\n...\n", 2, "{\"a\":1}\n{\"b\":2}" },
	{ "--- 1\n--- 2\n--- 3\n", 3, "1\n2\n3" },
	{ "a: 1\n---\n", 2, "{\"a\":1}\nnull" },
	{ "---\n# empty\n---\nkind: List\n", 2, "null\n{\"kind\":\"List\"}" },
	{ "- 1\n- 2\n", 1, "[1,2]" },
	{ "plain", 1, "\"plain\"" },
	{ "{}", 1, "{}" },
	{ "[]\n", 1, "[]" },
	{ "a: {}\nb: []\n", 1, "{\"a\":{},\"b\":[]}" },
};

static void test_streams_hold_every_document(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(stream_rows) / sizeof(stream_rows[0]); i++) {
		const struct stream_row *row = &stream_rows[i];
		struct doc_set *set = NULL;
		struct doc_error err;
		char *got;
		int rc;

		assert_int_equal(doc_parse_yaml(row->yaml, strlen(row->yaml), NULL, &set, &err), 0);
		if (doc_set_count(set) != row->docs) {
			print_error("row %zu: %zu documents, want %zu\n", i, doc_set_count(set), row->docs);
			fail();
		}
		assert_null(doc_set_root(set, row->docs));
		doc_set_free(set);
		got = yaml_json(row->yaml, &rc, &err);
		assert_non_null(got);
		if (strcmp(got, row->json) != 0) {
			print_error("row %zu: want %s got %s\n", i, row->json, got);
			free(got);
			fail();
		}
		free(got);
	}
}

static void test_doc_parse_picks_the_reader_by_first_byte(void **state)
{
	struct doc_set *set = NULL;
	struct doc_error err;
	const char *json = " \n\t{\"a\": 1.0}";
	const char *yaml = "a: 1.0";

	(void)state;
	/* JSON numbers are kept verbatim, YAML floats are normalised. */
	assert_int_equal(doc_parse(json, strlen(json), NULL, &set, &err), 0);
	assert_string_equal(doc_map_get(doc_set_root(set, 0), "a")->text.ptr, "1.0");
	doc_set_free(set);
	assert_int_equal(doc_parse(yaml, strlen(yaml), NULL, &set, &err), 0);
	assert_string_equal(doc_map_get(doc_set_root(set, 0), "a")->text.ptr, "1");
	doc_set_free(set);
	/* JSON mode is strict: one value, no YAML. */
	assert_int_equal(doc_parse("{a: 1}", 6, NULL, &set, &err), -EINVAL);
	assert_null(set);
	assert_int_equal(doc_parse("", 0, NULL, &set, &err), 0);
	assert_int_equal(doc_set_count(set), 0);
	doc_set_free(set);
	doc_set_free(NULL);
}

/* --- positions ------------------------------------------------------------ */

static void assert_pos(const struct doc_node *n, uint32_t line, uint32_t col)
{
	assert_non_null(n);
	if (n->line != line || n->col != col) {
		print_error("node at %u:%u, want %u:%u\n", n->line, n->col, line, col);
		fail();
	}
}

static const struct doc_member *member(const struct doc_node *n, const char *key)
{
	size_t i;

	assert_int_equal(n->type, DOC_MAP);
	for (i = 0; i < n->n; i++)
		if (strcmp(n->members[i].key.ptr, key) == 0)
			return &n->members[i];
	fail_msg("no key %s", key);
	return NULL;
}

static void test_yaml_positions_of_nodes_and_keys(void **state)
{
	const char *in =
		"apiVersion: v1\n"
		"kind: ConfigMap\n"
		"data:\n"
		"  freeze: \"true\"\n"
		"  list:\n"
		"    - a\n"
		"    - {x: 1, z: [2]}\n";
	struct doc_set *set = NULL;
	struct doc_error err;
	const struct doc_node *root, *data, *list, *flow;
	const struct doc_member *m;

	(void)state;
	assert_int_equal(doc_parse_yaml(in, strlen(in), NULL, &set, &err), 0);
	root = doc_set_root(set, 0);
	assert_pos(root, 1, 1);
	m = member(root, "data");
	assert_int_equal(m->line, 3);
	assert_int_equal(m->col, 1);
	data = m->value;
	assert_pos(data, 4, 3);
	m = member(data, "freeze");
	assert_int_equal(m->line, 4);
	assert_int_equal(m->col, 3);
	assert_pos(m->value, 4, 11);
	list = member(data, "list")->value;
	assert_int_equal(list->type, DOC_SEQ);
	assert_int_equal(list->n, 2);
	assert_pos(list, 6, 5);
	assert_pos(list->items[0], 6, 7);
	flow = list->items[1];
	assert_pos(flow, 7, 7);
	m = member(flow, "x");
	assert_int_equal(m->line, 7);
	assert_int_equal(m->col, 8);
	assert_pos(m->value, 7, 11);
	assert_pos(member(flow, "z")->value, 7, 17);
	assert_pos(member(flow, "z")->value->items[0], 7, 18);
	doc_set_free(set);
}

static void test_second_document_positions_count_from_the_stream_start(void **state)
{
	const char *in = "a: 1\n---\nb:\n  c: 2\n";
	struct doc_set *set = NULL;
	struct doc_error err;
	const struct doc_node *root;

	(void)state;
	assert_int_equal(doc_parse_yaml(in, strlen(in), NULL, &set, &err), 0);
	assert_int_equal(doc_set_count(set), 2);
	root = doc_set_root(set, 1);
	assert_pos(root, 3, 1);
	assert_pos(member(root, "b")->value, 4, 3);
	assert_pos(member(member(root, "b")->value, "c")->value, 4, 6);
	doc_set_free(set);
}

static void test_json_positions_count_characters(void **state)
{
	const char *in =
		"{\"a\": 1,\n"
		" \"\xc3\xa9\": {\"b\": [true,\n"
		"   null]}}";
	struct doc_set *set = NULL;
	struct doc_error err;
	const struct doc_node *root, *inner, *seq;
	const struct doc_member *m;

	(void)state;
	assert_int_equal(doc_parse_json(in, strlen(in), NULL, &set, &err), 0);
	root = doc_set_root(set, 0);
	assert_pos(root, 1, 1);
	m = member(root, "a");
	assert_int_equal(m->line, 1);
	assert_int_equal(m->col, 2);
	assert_pos(m->value, 1, 7);
	m = member(root, "\xc3\xa9");
	assert_int_equal(m->line, 2);
	assert_int_equal(m->col, 2);
	inner = m->value;
	assert_pos(inner, 2, 7);
	m = member(inner, "b");
	assert_int_equal(m->col, 8);
	seq = m->value;
	assert_pos(seq, 2, 13);
	assert_pos(seq->items[0], 2, 14);
	assert_pos(seq->items[1], 3, 4);
	doc_set_free(set);
}

static void test_crlf_lines_count_once_in_both_readers(void **state)
{
	const char *yaml = "a: 1\r\nb: x\r\n";
	const char *json = "{\"a\": 1,\r\n\"b\": \"x\"}";
	struct doc_set *set = NULL;
	struct doc_error err;

	(void)state;
	assert_int_equal(doc_parse_yaml(yaml, strlen(yaml), NULL, &set, &err), 0);
	assert_int_equal(member(doc_set_root(set, 0), "b")->line, 2);
	assert_int_equal(member(doc_set_root(set, 0), "b")->col, 1);
	doc_set_free(set);
	assert_int_equal(doc_parse_json(json, strlen(json), NULL, &set, &err), 0);
	assert_int_equal(member(doc_set_root(set, 0), "b")->line, 2);
	assert_int_equal(member(doc_set_root(set, 0), "b")->col, 1);
	doc_set_free(set);
}

static void test_long_minified_json_positions(void **state)
{
	enum { N = 200000 };
	struct doc_set *set = NULL;
	struct doc_error err;
	char *in = malloc(2 * N + 2);
	const struct doc_node *root;
	size_t i, o = 0;

	(void)state;
	assert_non_null(in);
	in[o++] = '[';
	for (i = 0; i < N; i++) {
		in[o++] = '7';
		in[o++] = i + 1 < N ? ',' : ']';
	}
	assert_int_equal(doc_parse_json(in, o, NULL, &set, &err), 0);
	root = doc_set_root(set, 0);
	assert_int_equal(root->n, N);
	assert_pos(root->items[N - 1], 1, 2 * N);
	doc_set_free(set);
	free(in);
}

/* --- rejections ----------------------------------------------------------- */

enum { YAML, JSON };

struct reject_row {
	const char *in;
	int mode;
	struct doc_limits lim;       /* zero fields: the default */
	int rc;
	uint32_t line, col;
	const char *msg;             /* a part of the message */
};

#define L(b, d, n, k) { (b), (d), (n), (k) }
#define NOLIM L(0, 0, 0, 0)

static const struct reject_row reject_rows[] = {
	{ "a: &x 1", YAML, NOLIM, -EINVAL, 1, 4, "anchors (&x) are not allowed" },
	{ "a: &x [1]", YAML, NOLIM, -EINVAL, 1, 4, "anchors (&x) are not allowed" },
	{ "a: 1\nb: *x", YAML, NOLIM, -EINVAL, 2, 4, "aliases (*x) are not allowed" },
	{ "<<: {a: 1}", YAML, NOLIM, -EINVAL, 1, 1, "merge keys (<<) are not allowed" },
	{ "a: !foo 1", YAML, NOLIM, -EINVAL, 1, 4, "tag !foo is not allowed" },
	{ "a: !!binary aGk=", YAML, NOLIM, -EINVAL, 1, 4, "tag !!binary is not allowed" },
	{ "a: !!timestamp 2001-12-14", YAML, NOLIM, -EINVAL, 1, 4, "tag !!timestamp is not allowed" },
	{ "a: !!merge x", YAML, NOLIM, -EINVAL, 1, 4, "tag !!merge is not allowed" },
	{ "a: ! x", YAML, NOLIM, -EINVAL, 1, 4, "tag ! is not allowed" },
	{ "a: !!set {x}", YAML, NOLIM, -EINVAL, 1, 4, "tag !!set is not allowed" },
	{ "a: !!map [1]", YAML, NOLIM, -EINVAL, 1, 4, "tag !!map does not fit a sequence" },
	{ "a: !!str [1]", YAML, NOLIM, -EINVAL, 1, 4, "tag !!str does not fit a sequence" },
	{ "a: !!seq x", YAML, NOLIM, -EINVAL, 1, 4, "tag !!seq does not fit a scalar" },
	{ "a: !!int abc", YAML, NOLIM, -EINVAL, 1, 4, "\"abc\" reads as a string, not as !!int" },
	{ "a: !!int 1.5", YAML, NOLIM, -EINVAL, 1, 4, "reads as a float, not as !!int" },
	{ "a: !!bool 1", YAML, NOLIM, -EINVAL, 1, 4, "reads as an integer, not as !!bool" },
	{ "a: !!null 0", YAML, NOLIM, -EINVAL, 1, 4, "not as !!null" },
	{ "a: !!float 18446744073709551615", YAML, NOLIM, -EINVAL, 1, 4, "not as !!float" },
	{ "a: .inf", YAML, NOLIM, -EINVAL, 1, 4, "\".inf\" is not a number JSON can hold" },
	{ "a: -.Inf", YAML, NOLIM, -EINVAL, 1, 4, "not a number JSON can hold" },
	{ "a: .NaN", YAML, NOLIM, -EINVAL, 1, 4, "not a number JSON can hold" },
	{ "a: !!float .nan", YAML, NOLIM, -EINVAL, 1, 4, "not a number JSON can hold" },
	{ "a: 1\nb: 2\na: 3", YAML, NOLIM, -EINVAL, 3, 1,
	  "duplicate key \"a\" (first at line 1, column 1)" },
	{ "x:\n  a: 1\n  'a': 2", YAML, NOLIM, -EINVAL, 3, 3, "duplicate key \"a\" (first at line 2" },
	{ "1: a\n\"1\": b", YAML, NOLIM, -EINVAL, 2, 1, "duplicate key \"1\"" },
	{ "yes: a\ntrue: b", YAML, NOLIM, -EINVAL, 2, 1, "duplicate key \"true\"" },
	{ "{\"a\": 1,\n \"a\": 2}", JSON, NOLIM, -EINVAL, 2, 2,
	  "duplicate key \"a\" (first at line 1, column 2)" },
	{ "{\"a\": 1, \"\\u0061\": 2}", JSON, NOLIM, -EINVAL, 1, 10, "duplicate key \"a\"" },
	{ "? [a]\n: 1", YAML, NOLIM, -EINVAL, 1, 3, "a map key is a sequence" },
	{ "? {a: 1}\n: 1", YAML, NOLIM, -EINVAL, 1, 3, "a map key is a map" },
	{ "~: 1", YAML, NOLIM, -EINVAL, 1, 1, "map key \"~\" is null" },
	{ "1.5: a", YAML, NOLIM, -EINVAL, 1, 1, "map key \"1.5\" is a float" },
	{ "18446744073709551615: a", YAML, NOLIM, -EINVAL, 1, 1, "beyond 64-bit signed range" },
	{ "[[[[1]]]]", YAML, L(0, 3, 0, 0), -E2BIG, 1, 4, "nested more than 3 deep" },
	{ "a:\n b:\n  c:\n   d: 1", YAML, L(0, 3, 0, 0), -E2BIG, 4, 4, "nested more than 3 deep" },
	{ "[[[[1]]]]", JSON, L(0, 3, 0, 0), -E2BIG, 1, 4, "nested more than 3 deep" },
	{ "[1, 2, 3, 4, 5]", YAML, L(0, 0, 5, 0), -E2BIG, 1, 14, "more than 5 nodes" },
	{ "[1,2,3,4,5]", JSON, L(0, 0, 5, 0), -E2BIG, 1, 10, "more than 5 nodes" },
	{ "{a: 1, b: 2}", YAML, L(0, 0, 4, 0), -E2BIG, 1, 11, "more than 4 nodes" },
	{ "--- 1\n--- 2\n--- 3\n", YAML, L(0, 0, 0, 2), -E2BIG, 3, 1, "more than 2 documents" },
	{ "a: 12", YAML, L(4, 0, 0, 0), -E2BIG, 0, 0, "input is 5 bytes, more than the limit of 4" },
	{ "[12]", JSON, L(3, 0, 0, 0), -E2BIG, 0, 0, "input is 4 bytes" },
	{ "a: \xff", YAML, NOLIM, -EINVAL, 1, 4, "invalid leading UTF-8 octet (byte 0xff)" },
	{ "a: b\xc3", YAML, NOLIM, -EINVAL, 1, 5, "incomplete UTF-8 octet sequence" },
	{ "a: \xed\xa0\x80", YAML, NOLIM, -EINVAL, 1, 4, "invalid Unicode character" },
	{ "a: \"\x01\"", YAML, NOLIM, -EINVAL, 1, 5, "control characters are not allowed" },
	{ "{\"a\":\n \"\xff\"}", JSON, NOLIM, -EINVAL, 2, 2, "not valid UTF-8" },
	{ "{\"\xc0\xaf\": 1}", JSON, NOLIM, -EINVAL, 1, 2, "not valid UTF-8" },
	{ "[\"\\ud800\"]", JSON, NOLIM, -EINVAL, 1, 2, "lone surrogate" },
	{ "a:\n\tb: 1", YAML, NOLIM, -EINVAL, 2, 1, "tabs cannot indent YAML" },
	{ "a: \"abc", YAML, NOLIM, -EINVAL, 1, 8, "found unexpected end of stream while scanning a quoted scalar" },
	{ "a: 'abc\n", YAML, NOLIM, -EINVAL, 2, 1, "while scanning a quoted scalar" },
	{ "{\"a\": \"abc", JSON, NOLIM, -EINVAL, 1, 11, "unexpected end of input inside a string" },
	{ "a: b: c", YAML, NOLIM, -EINVAL, 1, 5, "mapping values are not allowed" },
	{ "a: [1, 2", YAML, NOLIM, -EINVAL, 2, 1, "while parsing a flow sequence (started at line 1, column 4)" },
	{ "{\"a\": 1,}", JSON, NOLIM, -EINVAL, 1, 9, "expected '\"' to begin an object key" },
	{ "{} x", JSON, NOLIM, -EINVAL, 1, 4, "expected end of input" },
	{ "", JSON, NOLIM, -EINVAL, 1, 1, "unexpected end of input" },
	{ "[01]", JSON, NOLIM, -EINVAL, 1, 2, "leading zero" },
	{ "[NaN]", JSON, NOLIM, -EINVAL, 1, 2, "expected a value" },
	{ "{'a': 1}", JSON, NOLIM, -EINVAL, 1, 2, "expected '\"' to begin an object key" },
};

static void test_rejections_name_the_problem_and_the_position(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(reject_rows) / sizeof(reject_rows[0]); i++) {
		const struct reject_row *row = &reject_rows[i];
		struct doc_limits lim;
		struct doc_set *set = (struct doc_set *)&lim;   /* must be reset */
		struct doc_error err;
		int rc;

		doc_limits_default(&lim);
		if (row->lim.max_bytes)
			lim.max_bytes = row->lim.max_bytes;
		if (row->lim.max_depth)
			lim.max_depth = row->lim.max_depth;
		if (row->lim.max_nodes)
			lim.max_nodes = row->lim.max_nodes;
		if (row->lim.max_docs)
			lim.max_docs = row->lim.max_docs;
		rc = row->mode == JSON ? doc_parse_json(row->in, strlen(row->in), &lim, &set, &err)
				       : doc_parse_yaml(row->in, strlen(row->in), &lim, &set, &err);
		if (rc != row->rc || set != NULL || err.line != row->line || err.col != row->col ||
		    !strstr(err.msg, row->msg)) {
			print_error("row %zu: %s\n  want rc %d at %u:%u \"%s\"\n  got  rc %d at %u:%u \"%s\"\n",
				    i, row->in, row->rc, row->line, row->col, row->msg, rc, err.line,
				    err.col, err.msg);
			fail();
		}
	}
}

static void test_error_names_the_document_of_a_stream(void **state)
{
	const char *in = "a: 1\n---\nb: 2\n---\nc: &x 3\n";
	struct doc_set *set = NULL;
	struct doc_error err;

	(void)state;
	assert_int_equal(doc_parse_yaml(in, strlen(in), NULL, &set, &err), -EINVAL);
	assert_int_equal(err.doc_index, 2);
	assert_int_equal(err.line, 5);
}

static char *repeat(const char *s, size_t n)
{
	size_t len = strlen(s), i;
	char *r = malloc(len * n + 1);

	assert_non_null(r);
	for (i = 0; i < n; i++)
		memcpy(r + i * len, s, len);
	r[len * n] = '\0';
	return r;
}

static void test_default_depth_limit_stops_deep_nesting_early(void **state)
{
	struct doc_set *set = NULL;
	struct doc_error err;
	char *deep = repeat("[", 100000);
	char *open, *close;
	struct buf ok;
	int rc;

	(void)state;
	rc = doc_parse_yaml(deep, strlen(deep), NULL, &set, &err);
	assert_int_equal(rc, -E2BIG);
	assert_int_equal(err.col, DOC_DEPTH_MAX + 1);
	rc = doc_parse_json(deep, strlen(deep), NULL, &set, &err);
	assert_int_equal(rc, -E2BIG);
	assert_int_equal(err.col, DOC_DEPTH_MAX + 1);
	free(deep);
	/* DOC_DEPTH_MAX levels are fine: a claim's opaque parameters nest deep. */
	open = repeat("[", DOC_DEPTH_MAX);
	close = repeat("]", DOC_DEPTH_MAX);
	buf_init(&ok, 4096);
	assert_int_equal(buf_add_cstr(&ok, open), 0);
	assert_int_equal(buf_add_cstr(&ok, close), 0);
	assert_int_equal(doc_parse_json(buf_cstr(&ok), buf_len(&ok), NULL, &set, &err), 0);
	doc_set_free(set);
	assert_int_equal(doc_parse_yaml(buf_cstr(&ok), buf_len(&ok), NULL, &set, &err), 0);
	doc_set_free(set);
	buf_free(&ok);
	free(open);
	free(close);
}

/* Duplicates in a large map are found by sorting; the report must still
 * name the earliest repeated key in document order. */
static void test_duplicates_in_large_maps_report_the_earliest(void **state)
{
	struct buf in, js;
	struct doc_set *set = NULL;
	struct doc_error err;
	int i;

	(void)state;
	buf_init(&in, 1 << 20);
	for (i = 0; i < 18; i++)
		assert_int_equal(buf_printf(&in, "k%d: %d\n", i, i), 0);
	assert_int_equal(buf_printf(&in, "k7: dup\n"), 0);     /* line 19 */
	assert_int_equal(buf_printf(&in, "k4: dup\n"), 0);     /* line 20 */
	assert_int_equal(doc_parse_yaml(buf_cstr(&in), buf_len(&in), NULL, &set, &err), -EINVAL);
	assert_int_equal(err.line, 19);
	assert_non_null(strstr(err.msg, "duplicate key \"k7\" (first at line 8, column 1)"));

	/* 20000 distinct keys are fine, and fast enough to not notice. */
	buf_init(&js, 1 << 22);
	assert_int_equal(buf_add_char(&js, '{'), 0);
	for (i = 0; i < 20000; i++)
		assert_int_equal(buf_printf(&js, "%s\"key-%d\":%d", i ? "," : "", i, i), 0);
	assert_int_equal(buf_add_char(&js, '}'), 0);
	assert_int_equal(doc_parse_json(buf_cstr(&js), buf_len(&js), NULL, &set, &err), 0);
	assert_int_equal(doc_set_root(set, 0)->n, 20000);
	doc_set_free(set);
	/* ... and one repeat among them is caught. */
	buf_truncate(&js, buf_len(&js) - 1);
	assert_int_equal(buf_add_cstr(&js, ",\"key-123\":0}"), 0);
	assert_int_equal(doc_parse_json(buf_cstr(&js), buf_len(&js), NULL, &set, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "duplicate key \"key-123\""));
	buf_free(&in);
	buf_free(&js);
}

static void test_hostile_keys_are_quoted_in_messages(void **state)
{
	const char *in = "\"a\\x1b[31m\": 1\n\"a\\x1b[31m\": 2\n";
	struct doc_set *set = NULL;
	struct doc_error err;

	(void)state;
	assert_int_equal(doc_parse_yaml(in, strlen(in), NULL, &set, &err), -EINVAL);
	assert_null(strchr(err.msg, 0x1b));
	assert_non_null(strstr(err.msg, "\"a\\x1b[31m\""));
}

/* --- JSON writer ---------------------------------------------------------- */

static void test_empty_json_containers(void **state)
{
	static const char *const in[] = { "{}", "[]", " { } ", "[{}, [], {\"a\": []}]" };
	static const char *const want[] = { "{}", "[]", "{}", "[{},[],{\"a\":[]}]" };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		char *got;
		struct doc_error err;
		int rc;

		got = stream_json(in[i], strlen(in[i]), true, NULL, &rc, &err);
		assert_non_null(got);
		assert_string_equal(got, want[i]);
		free(got);
	}
}

static void test_to_json_respects_the_buffer_cap_and_keeps_contents(void **state)
{
	const char *in = "{\"a\": [1, 2, \"three\"], \"b\": {\"c\": null}}";
	struct doc_set *set = NULL;
	struct doc_error err;
	struct buf b;

	(void)state;
	assert_int_equal(doc_parse_json(in, strlen(in), NULL, &set, &err), 0);
	buf_init(&b, 20);
	assert_int_equal(buf_add_cstr(&b, "prefix:"), 0);
	assert_int_equal(doc_to_json(doc_set_root(set, 0), &b), -E2BIG);
	assert_string_equal(buf_cstr(&b), "prefix:");
	buf_free(&b);
	buf_init(&b, 1024);
	assert_int_equal(doc_to_json(doc_set_root(set, 0), &b), 0);
	assert_string_equal(buf_cstr(&b), "{\"a\":[1,2,\"three\"],\"b\":{\"c\":null}}");
	buf_free(&b);
	doc_set_free(set);
}

/* --- fixtures against jansson --------------------------------------------- */

static int fixtures_checked;

/* json_equal(), except that numbers compare by value: the YAML reader
 * spells 1.0 as 1, the JSON reader keeps 1.0. */
static bool same_value(json_t *a, json_t *b)
{
	const char *key;
	json_t *v;
	size_t i;

	if (json_is_number(a) && json_is_number(b))
		return json_number_value(a) == json_number_value(b);
	if (json_is_object(a) && json_is_object(b)) {
		if (json_object_size(a) != json_object_size(b))
			return false;
		json_object_foreach(a, key, v)
			if (!json_object_get(b, key) || !same_value(v, json_object_get(b, key)))
				return false;
		return true;
	}
	if (json_is_array(a) && json_is_array(b)) {
		if (json_array_size(a) != json_array_size(b))
			return false;
		for (i = 0; i < json_array_size(a); i++)
			if (!same_value(json_array_get(a, i), json_array_get(b, i)))
				return false;
		return true;
	}
	return json_equal(a, b);
}

/* JSON is YAML: the YAML reader must give the same values. */
static void check_json_as_yaml(const char *path, size_t lineno, const char *text, size_t len,
			       json_t *want)
{
	json_error_t jerr;
	json_t *got;
	char *out;
	struct doc_error err;
	int rc;

	out = stream_json(text, len, false, NULL, &rc, &err);
	if (!out) {
		print_error("%s:%zu: YAML reader: %s at %u:%u\n", path, lineno, err.msg, err.line, err.col);
		fail();
	}
	got = json_loads(out, JSON_DECODE_ANY, &jerr);
	if (!got || !same_value(want, got)) {
		print_error("%s:%zu: YAML reader gives %s\n", path, lineno, out);
		fail();
	}
	json_decref(got);
	free(out);
}

/* Parse text with doc_parse_json, check doc_to_json against jansson's view
 * of the same text, that the output reads back to the same bytes, and that
 * the YAML reader agrees. */
static void check_json_text(const char *path, size_t lineno, const char *text, size_t len)
{
	struct doc_set *set = NULL, *again = NULL;
	struct doc_error err;
	json_error_t jerr;
	json_t *want, *got;
	struct buf out, out2;
	int rc;

	rc = doc_parse_json(text, len, NULL, &set, &err);
	if (rc) {
		print_error("%s:%zu: %s at %u:%u\n", path, lineno, err.msg, err.line, err.col);
		fail();
	}
	buf_init(&out, OUT_CAP);
	assert_int_equal(doc_to_json(doc_set_root(set, 0), &out), 0);
	want = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
	got = json_loadb(buf_cstr(&out), buf_len(&out), JSON_DECODE_ANY, &jerr);
	if (!want || !got || !json_equal(want, got)) {
		print_error("%s:%zu: doc_to_json differs from the input (%s)\n", path, lineno, jerr.text);
		fail();
	}
	check_json_as_yaml(path, lineno, text, len, want);
	json_decref(want);
	json_decref(got);
	assert_int_equal(doc_parse_json(buf_cstr(&out), buf_len(&out), NULL, &again, &err), 0);
	buf_init(&out2, OUT_CAP);
	assert_int_equal(doc_to_json(doc_set_root(again, 0), &out2), 0);
	assert_string_equal(buf_cstr(&out), buf_cstr(&out2));
	buf_free(&out);
	buf_free(&out2);
	doc_set_free(set);
	doc_set_free(again);
	fixtures_checked++;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static void check_fixture_file(const char *path)
{
	size_t len = 0, lineno = 1;
	char *text = testutil_read_file(path, &len);
	char *p, *nl;

	assert_non_null(text);
	if (has_suffix(path, ".json")) {
		check_json_text(path, 0, text, len);
	} else {
		for (p = text; p < text + len; p = nl + 1, lineno++) {
			nl = memchr(p, '\n', (size_t)(text + len - p));
			if (!nl)
				nl = text + len;
			if (nl > p)
				check_json_text(path, lineno, p, (size_t)(nl - p));
		}
	}
	free(text);
}

static void walk_fixtures(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		char path[4096];

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		assert_int_equal(stat(path, &st), 0);
		if (S_ISDIR(st.st_mode))
			walk_fixtures(path);
		else if (has_suffix(path, ".json") || has_suffix(path, ".jsonl"))
			check_fixture_file(path);
	}
	closedir(d);
}

static void test_json_fixtures_match_jansson_and_read_the_same_as_yaml(void **state)
{
	char dir[4096];

	(void)state;
	fixtures_checked = 0;
	snprintf(dir, sizeof(dir), "%s", testutil_repo_dir("tests/fixtures"));
	walk_fixtures(dir);
	snprintf(dir, sizeof(dir), "%s", testutil_repo_dir("tests/golden/cases"));
	walk_fixtures(dir);
	assert_true(fixtures_checked >= 120);
}

/* --- Kubernetes manifests through YAML ------------------------------------ */

static void assert_yaml_equals_json(const char *yaml, const char *json)
{
	json_error_t jerr;
	json_t *want, *got;
	char *out;
	struct doc_error err;
	int rc;

	out = yaml_json(yaml, &rc, &err);
	if (!out)
		fail_msg("%s at %u:%u", err.msg, err.line, err.col);
	want = json_loads(json, JSON_DECODE_ANY, &jerr);
	assert_non_null(want);
	got = json_loads(out, JSON_DECODE_ANY, &jerr);
	assert_non_null(got);
	if (!json_equal(want, got)) {
		print_error("want %s\n got  %s\n", json, out);
		fail();
	}
	json_decref(want);
	json_decref(got);
	free(out);
}

static const char configmap_yaml[] =
	"# the policy, as operators keep it\n"
	"apiVersion: v1\n"
	"kind: ConfigMap\n"
	"metadata:\n"
	"  name: dra-guard-policy\n"
	"  namespace: dra-guard\n"
	"  labels:\n"
	"    app.kubernetes.io/name: dra-guard\n"
	"data:\n"
	"  policy.yaml: |\n"
	"    apiVersion: dra-guard.io/v1alpha1\n"
	"    kind: Policy\n"
	"    spec:\n"
	"      defaultAction: deny\n"
	"      drivers:\n"
	"        - name: gpu.example.com\n"
	"          resources: [cpu, memory]\n"
	"          nodeLocal: yes\n"
	"  freeze: \"false\"\n"
	"  freeze-reason: \"\"\n";

static void test_configmap_with_block_policy_round_trips(void **state)
{
	struct doc_set *set = NULL, *inner = NULL;
	struct doc_error err;
	const struct doc_node *policy, *drivers;

	(void)state;
	assert_yaml_equals_json(configmap_yaml,
		"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
		"\"metadata\":{\"name\":\"dra-guard-policy\",\"namespace\":\"dra-guard\","
		"\"labels\":{\"app.kubernetes.io/name\":\"dra-guard\"}},"
		"\"data\":{\"policy.yaml\":\"apiVersion: dra-guard.io/v1alpha1\\nkind: Policy\\n"
		"spec:\\n  defaultAction: deny\\n  drivers:\\n    - name: gpu.example.com\\n"
		"      resources: [cpu, memory]\\n      nodeLocal: yes\\n\","
		"\"freeze\":\"false\",\"freeze-reason\":\"\"}}");
	/* The block holds a document of its own; positions are relative to it. */
	assert_int_equal(doc_parse_yaml(configmap_yaml, strlen(configmap_yaml), NULL, &set, &err), 0);
	policy = doc_map_get(doc_map_get(doc_set_root(set, 0), "data"), "policy.yaml");
	assert_int_equal(policy->type, DOC_STRING);
	assert_pos(policy, 10, 16);
	assert_int_equal(doc_parse(policy->text.ptr, policy->text.len, NULL, &inner, &err), 0);
	drivers = doc_map_get(doc_map_get(doc_set_root(inner, 0), "spec"), "drivers");
	assert_int_equal(drivers->type, DOC_SEQ);
	assert_pos(drivers, 6, 5);
	assert_true(doc_map_get(drivers->items[0], "nodeLocal")->boolean);
	doc_set_free(inner);
	doc_set_free(set);
}

static const char slice_list_yaml[] =
	"apiVersion: v1\n"
	"kind: List\n"
	"items:\n"
	"- apiVersion: resource.k8s.io/v1\n"
	"  kind: ResourceSlice\n"
	"  metadata:\n"
	"    name: node-1-gpu.example.com-abcde\n"
	"  spec:\n"
	"    driver: gpu.example.com\n"
	"    nodeName: node-1\n"
	"    pool:\n"
	"      name: node-1\n"
	"      generation: 3\n"
	"      resourceSliceCount: 1\n"
	"    devices:\n"
	"    - name: gpu-0\n"
	"      allowMultipleAllocations: true\n"
	"      capacity:\n"
	"        memory:\n"
	"          value: 80Gi\n"
	"      nodeAllocatableResourceMappings:\n"
	"        cpu:\n"
	"          allocationMultiplier: \"2\"\n"
	"        memory:\n"
	"          capacityKey: memory\n"
	"          allocationMultiplier: 1.5\n"
	"- apiVersion: resource.k8s.io/v1\n"
	"  kind: ResourceSlice\n"
	"  metadata: {name: node-2-cpu}\n"
	"  spec:\n"
	"    driver: cpu.example.com\n"
	"    allNodes: true\n"
	"    pool: {name: shared, generation: 0x10, resourceSliceCount: 1}\n"
	"    devices: []\n";

static void test_list_of_resource_slices_round_trips(void **state)
{
	(void)state;
	assert_yaml_equals_json(slice_list_yaml,
		"{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":["
		"{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\","
		"\"metadata\":{\"name\":\"node-1-gpu.example.com-abcde\"},"
		"\"spec\":{\"driver\":\"gpu.example.com\",\"nodeName\":\"node-1\","
		"\"pool\":{\"name\":\"node-1\",\"generation\":3,\"resourceSliceCount\":1},"
		"\"devices\":[{\"name\":\"gpu-0\",\"allowMultipleAllocations\":true,"
		"\"capacity\":{\"memory\":{\"value\":\"80Gi\"}},"
		"\"nodeAllocatableResourceMappings\":{\"cpu\":{\"allocationMultiplier\":\"2\"},"
		"\"memory\":{\"capacityKey\":\"memory\",\"allocationMultiplier\":1.5}}}]}},"
		"{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\","
		"\"metadata\":{\"name\":\"node-2-cpu\"},"
		"\"spec\":{\"driver\":\"cpu.example.com\",\"allNodes\":true,"
		"\"pool\":{\"name\":\"shared\",\"generation\":16,\"resourceSliceCount\":1},"
		"\"devices\":[]}}]}");
}

static void test_multi_document_manifest_file(void **state)
{
	struct buf in;
	struct doc_set *set = NULL;
	struct doc_error err;
	size_t i;

	(void)state;
	buf_init(&in, 1 << 20);
	assert_int_equal(buf_add_cstr(&in, "---\n"), 0);
	assert_int_equal(buf_add_cstr(&in, configmap_yaml), 0);
	assert_int_equal(buf_add_cstr(&in, "---\n# nothing here\n---\n"), 0);
	assert_int_equal(buf_add_cstr(&in, slice_list_yaml), 0);
	assert_int_equal(doc_parse(buf_cstr(&in), buf_len(&in), NULL, &set, &err), 0);
	assert_int_equal(doc_set_count(set), 3);
	assert_string_equal(doc_map_get(doc_set_root(set, 0), "kind")->text.ptr, "ConfigMap");
	assert_int_equal(doc_set_root(set, 1)->type, DOC_NULL);
	assert_string_equal(doc_map_get(doc_set_root(set, 2), "kind")->text.ptr, "List");
	assert_pos(doc_set_root(set, 2), 25, 1);
	for (i = 0; i < doc_set_count(set); i++) {
		struct buf js;
		struct doc_set *back = NULL;

		buf_init(&js, OUT_CAP);
		assert_int_equal(doc_to_json(doc_set_root(set, i), &js), 0);
		assert_int_equal(doc_parse_json(buf_cstr(&js), buf_len(&js), NULL, &back, &err), 0);
		doc_set_free(back);
		buf_free(&js);
	}
	doc_set_free(set);
	buf_free(&in);
}

/* --- streams read document by document ------------------------------------ */

static const char *path_text(const struct doc_node *root, const char *key, const char *sub)
{
	const struct doc_node *n = doc_map_get(root, key);

	if (n && sub)
		n = doc_map_get(n, sub);
	return n && n->type == DOC_STRING ? n->text.ptr : NULL;
}

static void test_stream_broken_document_hides_no_other(void **state)
{
	static const char text[] =
		"apiVersion: v1\n"                          /* 1 */
		"kind: ConfigMap\n"
		"metadata: {name: a}\n"
		"---\n"                                     /* 4 */
		"apiVersion: resource.k8s.io/v1\n"
		"kind: ResourceSlice\n"
		"metadata:\n"
		"  name: broken\n"
		"spec:\n"
		"  pool: {name: p, generation: 1\n"         /* 10: unclosed */
		"---\n"                                     /* 11 */
		"kind: ConfigMap\n"
		"metadata:\n"
		"  name: c\n";                              /* 14 */
	struct doc_set *set = NULL, *plain = NULL;
	struct doc_error err;
	const struct doc_error *e;

	(void)state;
	/* The whole-stream reader gives up at the broken document ... */
	assert_int_equal(doc_parse_yaml(text, strlen(text), NULL, &plain, &err), -EINVAL);
	assert_int_equal(err.doc_index, 1);
	/* ... the document-wise one reads all three. */
	assert_int_equal(doc_parse_stream(text, strlen(text), NULL, &set, &err), 0);
	assert_int_equal(doc_set_count(set), 3);
	assert_null(doc_set_error(set, 0));
	assert_string_equal(path_text(doc_set_root(set, 0), "metadata", "name"), "a");
	e = doc_set_error(set, 1);
	assert_non_null(e);
	assert_int_equal(e->doc_index, 1);
	assert_int_equal(e->line, 11);
	assert_non_null(strstr(e->msg, "flow mapping"));
	/* What was read before the error still names the object. */
	assert_string_equal(path_text(doc_set_root(set, 1), "kind", NULL), "ResourceSlice");
	assert_string_equal(path_text(doc_set_root(set, 1), "metadata", "name"), "broken");
	assert_null(doc_set_error(set, 2));
	assert_pos(doc_set_root(set, 2), 12, 1);
	assert_pos(doc_map_get(doc_map_get(doc_set_root(set, 2), "metadata"), "name"), 14, 9);
	doc_set_free(set);
}

static void test_stream_errors_count_lines_from_the_stream_start(void **state)
{
	static const char text[] = "a: 1\n---\nb: 2\n---\n# two\n\nc: [1,\nd: *x\n";
	struct doc_set *set = NULL;
	struct doc_error err;
	const struct doc_error *e;

	(void)state;
	assert_int_equal(doc_parse_stream(text, strlen(text), NULL, &set, &err), 0);
	assert_int_equal(doc_set_count(set), 3);
	e = doc_set_error(set, 2);
	assert_non_null(e);
	assert_int_equal(e->line, 8);
	/* What was read up to the error: c holds 1 and what followed. */
	assert_int_equal(doc_set_root(set, 2)->type, DOC_MAP);
	assert_int_equal(doc_map_get(doc_set_root(set, 2), "c")->type, DOC_SEQ);
	assert_string_equal(doc_map_get(doc_set_root(set, 2), "c")->items[0]->text.ptr, "1");
	assert_null(path_text(doc_set_root(set, 1), "b", NULL));
	assert_int_equal(doc_set_root(set, 1)->members[0].value->type, DOC_NUMBER);
	doc_set_free(set);
}

static void test_stream_refusals_are_per_document(void **state)
{
	static const char text[] =
		"kind: A\nkind: B\n"        /* duplicate key */
		"---\nkind: C\nx: &anchor 1\n"  /* anchor */
		"---\nkind: D\n";
	struct doc_set *set = NULL;
	struct doc_error err;

	(void)state;
	assert_int_equal(doc_parse_stream(text, strlen(text), NULL, &set, &err), 0);
	assert_int_equal(doc_set_count(set), 3);
	assert_non_null(strstr(doc_set_error(set, 0)->msg, "duplicate key"));
	assert_int_equal(doc_set_error(set, 0)->line, 2);
	assert_string_equal(path_text(doc_set_root(set, 0), "kind", NULL), "A");
	assert_non_null(strstr(doc_set_error(set, 1)->msg, "anchors"));
	assert_int_equal(doc_set_error(set, 1)->line, 5);
	assert_string_equal(path_text(doc_set_root(set, 1), "kind", NULL), "C");
	assert_null(doc_set_error(set, 2));
	doc_set_free(set);
}

static void test_stream_broken_json_keeps_what_was_read(void **state)
{
	static const char text[] = "{\"kind\": \"Pod\",\n \"metadata\": {\"name\": \"p\", \"x\": }}";
	struct doc_set *set = NULL;
	struct doc_error err;

	(void)state;
	assert_int_equal(doc_parse_stream(text, strlen(text), NULL, &set, &err), 0);
	assert_int_equal(doc_set_count(set), 1);
	assert_non_null(doc_set_error(set, 0));
	assert_int_equal(doc_set_error(set, 0)->line, 2);
	assert_string_equal(path_text(doc_set_root(set, 0), "kind", NULL), "Pod");
	assert_string_equal(path_text(doc_set_root(set, 0), "metadata", "name"), "p");
	doc_set_free(set);
}

static void test_stream_json_documents_between_markers_are_yaml(void **state)
{
	static const char text[] = "{\"kind\": \"A\"}\n---\n{\"kind\": \"B\"}\n";
	static const char broken[] = "{\"kind\": \"A\",\n \"x\": ---\n}";
	struct doc_set *set = NULL;
	struct doc_error err;

	(void)state;
	assert_int_equal(doc_parse_stream(text, strlen(text), NULL, &set, &err), 0);
	assert_int_equal(doc_set_count(set), 2);
	assert_string_equal(path_text(doc_set_root(set, 1), "kind", NULL), "B");
	assert_pos(doc_set_root(set, 1), 3, 1);
	doc_set_free(set);
	/* "---" inside a JSON value is not a marker (it does not begin a line). */
	assert_int_equal(doc_parse_stream(broken, strlen(broken), NULL, &set, &err), 0);
	assert_int_equal(doc_set_count(set), 1);
	assert_non_null(doc_set_error(set, 0));
	doc_set_free(set);
}

static void test_stream_limits_still_bound_the_whole_stream(void **state)
{
	static const char text[] = "a: 1\n---\nb: 2\n---\nc: 3\n";
	struct doc_limits lim;
	struct doc_set *set = NULL;
	struct doc_error err;

	(void)state;
	doc_limits_default(&lim);
	lim.max_docs = 2;
	assert_int_equal(doc_parse_stream(text, strlen(text), &lim, &set, &err), -E2BIG);
	assert_null(set);
	assert_non_null(strstr(err.msg, "documents"));
	doc_limits_default(&lim);
	lim.max_nodes = 4;
	assert_int_equal(doc_parse_stream(text, strlen(text), &lim, &set, &err), -E2BIG);
	assert_null(set);
	lim.max_nodes = 100;
	lim.max_bytes = 4;
	assert_int_equal(doc_parse_stream(text, strlen(text), &lim, &set, &err), -E2BIG);
}

/* The stream reader's set holds what the whole-stream reader's does: the
 * same documents, none with an error, at the same positions. */
static void assert_same_documents(const struct doc_set *set, const struct doc_set *whole)
{
	size_t i;

	assert_int_equal(doc_set_count(set), doc_set_count(whole));
	for (i = 0; i < doc_set_count(set); i++) {
		struct buf a, b;

		buf_init(&a, OUT_CAP);
		buf_init(&b, OUT_CAP);
		assert_null(doc_set_error(set, i));
		assert_int_equal(doc_to_json(doc_set_root(set, i), &a), 0);
		assert_int_equal(doc_to_json(doc_set_root(whole, i), &b), 0);
		assert_string_equal(buf_cstr(&a), buf_cstr(&b));
		assert_pos(doc_set_root(set, i), doc_set_root(whole, i)->line, doc_set_root(whole, i)->col);
		buf_free(&a);
		buf_free(&b);
	}
}

static void test_spans_cut_at_markers_only(void **state)
{
	static const char text[] =
		"# leading comment\n"     /* 1 */
		"%YAML 1.1\n"             /* 2 */
		"---\n"                   /* 3 */
		"a: |\n"                  /* 4 */
		"  ---not a marker\n"
		"b: '---'\n"
		"--- {c: 1}\r\n"          /* 7 */
		"---\n"                   /* 8 */
		"----: 2\n";
	struct doc_span sp[4];
	size_t pos = 0, n = 0;
	uint32_t line = 1;
	struct doc_set *set = NULL, *whole = NULL;
	struct doc_error err;

	(void)state;
	while (n < 4 && doc_next_span(text, strlen(text), &pos, &line, &sp[n]))
		n++;
	assert_int_equal(n, 3);
	assert_int_equal(sp[0].off, 0);
	assert_int_equal(sp[0].line, 1);
	assert_int_equal(sp[1].line, 7);
	assert_int_equal(sp[2].line, 8);
	assert_int_equal(sp[2].off + sp[2].len, strlen(text));
	/* Same documents, same positions, as the whole-stream reader. */
	assert_int_equal(doc_parse_stream(text, strlen(text), NULL, &set, &err), 0);
	assert_int_equal(doc_parse_yaml(text, strlen(text), NULL, &whole, &err), 0);
	assert_same_documents(set, whole);
	doc_set_free(set);
	doc_set_free(whole);
}

/* A directive opens a document only after the previous one's end marker
 * ("..."), as YAML 1.2 has it. libyaml also takes one after a document
 * that ended without a marker; the document-wise reader cannot (it cuts
 * at "---" lines, and "%" at the start of a line may continue a plain
 * scalar), so the whole-stream reader refuses it too, naming the fix, and
 * the two readers never disagree on a stream that parses. */
static void test_a_directive_needs_the_end_marker_before_it(void **state)
{
	static const char ended[] =
		"a: 1\n"                 /* 1 */
		"...\n"
		"%YAML 1.1\n"             /* 3 */
		"---\n"
		"b: 2\n";                /* 5 */
	static const char *const open[] = {
		"a: 1\n%YAML 1.1\n---\nb: 2\n",
		/* a bare marker: the empty document after it ends unmarked */
		"%YAML 1.1\n---\nx: y\n...\n---\nsecond: doc\n---\n%YAML 1.1\n---\nand: z\n",
		"---\nk: v\n# note\n\n%TAG ! tag:example.com,2026:\n---\nb: 2\n",
	};
	struct doc_set *set = NULL, *whole = NULL;
	struct doc_error err;
	size_t i, j;

	(void)state;
	assert_int_equal(doc_parse_yaml(ended, strlen(ended), NULL, &whole, &err), 0);
	assert_int_equal(doc_parse_stream(ended, strlen(ended), NULL, &set, &err), 0);
	assert_int_equal(doc_set_count(whole), 2);
	assert_same_documents(set, whole);
	assert_pos(doc_set_root(set, 1), 5, 1);
	doc_set_free(set);
	doc_set_free(whole);
	set = whole = NULL;

	for (j = 0; j < sizeof(open) / sizeof(open[0]); j++) {
		size_t bad = 0;

		assert_int_equal(doc_parse_yaml(open[j], strlen(open[j]), NULL, &whole, &err), -EINVAL);
		assert_null(whole);
		assert_non_null(strstr(err.msg, "directive"));
		assert_non_null(strstr(err.msg, "..."));
		/* The stream reader keeps every document, the one holding the
		 * directive with an error. */
		assert_int_equal(doc_parse_stream(open[j], strlen(open[j]), NULL, &set, &err), 0);
		for (i = 0; i < doc_set_count(set); i++) {
			assert_non_null(doc_set_root(set, i));
			bad += doc_set_error(set, i) != NULL;
		}
		assert_true(bad >= 1);
		doc_set_free(set);
		set = NULL;
	}
}

/* --- paths as messages write them --------------------------------------------- */

struct path_row {
	const char *path;
	uint32_t line, col;
};

static void test_path_positions(void **state)
{
	static const char yaml[] =
		"spec:\n"                                           /* 1 */
		"  pool: {name: p, generation: 3}\n"
		"  devices:\n"
		"  - name: d0\n"                                     /* 4 */
		"    nodeAllocatableResourceMappings:\n"
		"      memory: {allocationMultiplier: 8Gi}\n"        /* 6 */
		"      hugepages-2Mi:\n"
		"        capacityKey: x\n"                          /* 8 */
		"data:\n"
		"  policy.yaml: |\n"                                /* 10 */
		"    x\n";
	static const struct path_row rows[] = {
		{ "", 1, 1 },
		{ "spec.pool.generation", 2, 19 },
		{ "spec.devices[0]", 4, 5 },
		{ "spec.devices[0].nodeAllocatableResourceMappings[\"memory\"].allocationMultiplier", 6, 16 },
		{ "spec.devices[0].nodeAllocatableResourceMappings[\"hugepages-2Mi\"].capacityKey", 8, 9 },
		{ "data[\"policy.yaml\"]", 10, 3 },
		/* As far as it resolves. */
		{ "spec.devices[0].nodeAllocatableResourceMappings[\"cpu\"].capacityKey", 5, 5 },
		{ "spec.devices[7].name", 3, 3 },
		{ "spec.pool.name.deeper", 2, 10 },
		{ "spec.devices[x]", 3, 3 },
		{ "spec.devices[\"unterminated", 3, 3 },
	};
	struct doc_set *set = NULL;
	struct doc_error err;
	uint32_t line, col;
	size_t i;

	(void)state;
	assert_int_equal(doc_parse_yaml(yaml, strlen(yaml), NULL, &set, &err), 0);
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		assert_true(doc_path_position(doc_set_root(set, 0), str_from_cstr(rows[i].path), &line, &col));
		if (line != rows[i].line || col != rows[i].col)
			fail_msg("%s: at %u:%u, want %u:%u", rows[i].path, line, col, rows[i].line, rows[i].col);
	}
	assert_false(doc_path_position(NULL, STR_LIT("a"), &line, &col));
	doc_set_free(set);
}

/* --- JSON offsets back to source positions --------------------------------- */

struct locate_row {
	const char *needle;          /* first occurrence in the JSON */
	uint32_t line, col;
};

static void test_locator_maps_json_offsets_to_yaml_positions(void **state)
{
	static const char yaml[] =
		"apiVersion: resource.k8s.io/v1\n"
		"kind: ResourceSlice\n"
		"spec:\n"
		"  pool:\n"
		"    name: p\n"
		"    generation: abc\n"
		"  devices:\n"
		"  - name: d0\n"
		"    capacity: {mem: {value: 8Gi}}\n";
	static const struct locate_row rows[] = {
		{ "\"abc\"", 6, 17 },
		{ "\"generation\"", 6, 5 },
		{ "\"d0\"", 8, 11 },
		{ "\"8Gi\"", 9, 29 },
		{ "{\"value\"", 9, 21 },
		{ "\"kind\"", 2, 1 },
	};
	struct doc_set *set = NULL;
	struct doc_locator *loc = NULL;
	struct doc_error err;
	struct buf js;
	uint32_t line = 0, col = 0;
	size_t i;

	(void)state;
	assert_int_equal(doc_parse_stream(yaml, strlen(yaml), NULL, &set, &err), 0);
	buf_init(&js, OUT_CAP);
	assert_int_equal(buf_add_cstr(&js, "prefix"), 0);
	assert_int_equal(doc_to_json_located(doc_set_root(set, 0), &js, 1000, &loc), 0);
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const char *json = buf_cstr(&js) + 6;
		const char *at = strstr(json, rows[i].needle);

		assert_non_null(at);
		assert_true(doc_locate(loc, (size_t)(at - json), &line, &col));
		if (line != rows[i].line || col != rows[i].col) {
			print_error("%s: at %u:%u, want %u:%u\n", rows[i].needle, line, col, rows[i].line, rows[i].col);
			fail();
		}
	}
	/* Past the end: the last part written. */
	assert_true(doc_locate(loc, buf_len(&js), &line, &col));
	doc_locator_free(loc);
	assert_false(doc_locate(NULL, 0, &line, &col));
	/* A cap on spans is an error, and leaves the buffer as it was. */
	assert_int_equal(doc_to_json_located(doc_set_root(set, 0), &js, 5, &loc), -E2BIG);
	assert_null(loc);
	assert_int_equal(buf_len(&js), strlen("prefix") + strlen(buf_cstr(&js) + 6));
	buf_free(&js);
	doc_set_free(set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_scalars_resolve_as_kubernetes_yaml),
		cmocka_unit_test(test_numbers_are_number_nodes_and_quoted_are_strings),
		cmocka_unit_test(test_streams_hold_every_document),
		cmocka_unit_test(test_doc_parse_picks_the_reader_by_first_byte),
		cmocka_unit_test(test_yaml_positions_of_nodes_and_keys),
		cmocka_unit_test(test_second_document_positions_count_from_the_stream_start),
		cmocka_unit_test(test_json_positions_count_characters),
		cmocka_unit_test(test_crlf_lines_count_once_in_both_readers),
		cmocka_unit_test(test_long_minified_json_positions),
		cmocka_unit_test(test_rejections_name_the_problem_and_the_position),
		cmocka_unit_test(test_error_names_the_document_of_a_stream),
		cmocka_unit_test(test_default_depth_limit_stops_deep_nesting_early),
		cmocka_unit_test(test_duplicates_in_large_maps_report_the_earliest),
		cmocka_unit_test(test_hostile_keys_are_quoted_in_messages),
		cmocka_unit_test(test_empty_json_containers),
		cmocka_unit_test(test_to_json_respects_the_buffer_cap_and_keeps_contents),
		cmocka_unit_test(test_json_fixtures_match_jansson_and_read_the_same_as_yaml),
		cmocka_unit_test(test_configmap_with_block_policy_round_trips),
		cmocka_unit_test(test_list_of_resource_slices_round_trips),
		cmocka_unit_test(test_multi_document_manifest_file),
		cmocka_unit_test(test_stream_broken_document_hides_no_other),
		cmocka_unit_test(test_stream_errors_count_lines_from_the_stream_start),
		cmocka_unit_test(test_stream_refusals_are_per_document),
		cmocka_unit_test(test_stream_broken_json_keeps_what_was_read),
		cmocka_unit_test(test_stream_json_documents_between_markers_are_yaml),
		cmocka_unit_test(test_stream_limits_still_bound_the_whole_stream),
		cmocka_unit_test(test_spans_cut_at_markers_only),
		cmocka_unit_test(test_a_directive_needs_the_end_marker_before_it),
		cmocka_unit_test(test_locator_maps_json_offsets_to_yaml_positions),
		cmocka_unit_test(test_path_positions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
