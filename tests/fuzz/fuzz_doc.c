/* fuzz_doc.c - libFuzzer target: the YAML and JSON readers and the writer.
 *
 * The input is read by doc_parse() (JSON or YAML by its first byte) and, when
 * that picked JSON, by the YAML reader as well. Every document that parses
 * is written with doc_to_json(); that text must read back with the strict
 * JSON reader and write out to the very same bytes. The document-wise
 * stream reader must agree with the whole-stream one: the same documents
 * when the whole stream parses, and every document accounted for (parsed, or
 * kept with an error) when it does not. A reader crash, a leak, output that
 * is not JSON or a writer that is not stable aborts. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void round_trip(const struct doc_set *set, const struct doc_limits *lim)
{
	size_t i;

	for (i = 0; i < doc_set_count(set); i++) {
		struct doc_set *again = NULL;
		struct doc_error err;
		struct buf out, out2;
		int rc;

		buf_init(&out, (size_t)64 << 20);
		buf_init(&out2, (size_t)64 << 20);
		if (doc_to_json(doc_set_root(set, i), &out) != 0)
			abort();
		rc = doc_parse_json(buf_cstr(&out), buf_len(&out), lim, &again, &err);
		if (rc != 0) {
			fprintf(stderr, "output does not read back: %s at %u:%u\n%s\n", err.msg,
				err.line, err.col, buf_cstr(&out));
			abort();
		}
		if (doc_set_count(again) != 1 || doc_to_json(doc_set_root(again, 0), &out2) != 0)
			abort();
		if (buf_len(&out) != buf_len(&out2) ||
		    memcmp(buf_cstr(&out), buf_cstr(&out2), buf_len(&out)) != 0) {
			fprintf(stderr, "unstable output:\n%s\n%s\n", buf_cstr(&out), buf_cstr(&out2));
			abort();
		}
		doc_set_free(again);
		buf_free(&out);
		buf_free(&out2);
	}
}

/* Same documents, same JSON, same positions. */
static void same_documents(const struct doc_set *a, const struct doc_set *b)
{
	size_t i;

	if (doc_set_count(a) != doc_set_count(b))
		abort();
	for (i = 0; i < doc_set_count(a); i++) {
		const struct doc_node *ra = doc_set_root(a, i), *rb = doc_set_root(b, i);
		struct buf ja, jb;

		if (doc_set_error(a, i) || doc_set_error(b, i) || ra->line != rb->line || ra->col != rb->col)
			abort();
		buf_init(&ja, (size_t)64 << 20);
		buf_init(&jb, (size_t)64 << 20);
		if (doc_to_json(ra, &ja) != 0 || doc_to_json(rb, &jb) != 0 || buf_len(&ja) != buf_len(&jb) ||
		    memcmp(buf_cstr(&ja), buf_cstr(&jb), buf_len(&ja)) != 0)
			abort();
		buf_free(&ja);
		buf_free(&jb);
	}
}

static void check_stream(const char *text, size_t size, const struct doc_limits *lim,
			 const struct doc_set *whole)
{
	struct doc_set *set = NULL;
	struct doc_error err;
	size_t i;

	if (doc_parse_stream(text, size, lim, &set, &err) != 0) {
		if (set || err.msg[0] == '\0')
			abort();
		return;
	}
	if (whole) {
		same_documents(whole, set);
	} else {
		for (i = 0; i < doc_set_count(set); i++) {
			const struct doc_error *e = doc_set_error(set, i);

			if (!doc_set_root(set, i) || (e && (e->msg[0] == '\0' || e->doc_index != i)))
				abort();
		}
	}
	doc_set_free(set);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct doc_limits lim;
	struct doc_set *set = NULL;
	struct doc_error err;
	size_t i = 0;

	doc_limits_default(&lim);
	lim.max_bytes = 1 << 20;
	lim.max_nodes = 100000;
	lim.max_docs = 1000;
	if (doc_parse(text, size, &lim, &set, &err) == 0) {
		round_trip(set, &lim);
		check_stream(text, size, &lim, set);
		doc_set_free(set);
		set = NULL;
	} else if (set || err.msg[0] == '\0') {
		abort();
	} else {
		check_stream(text, size, &lim, NULL);
	}
	while (i < size && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n'))
		i++;
	if (i < size && (text[i] == '{' || text[i] == '[')) {
		if (doc_parse_yaml(text, size, &lim, &set, &err) == 0) {
			round_trip(set, &lim);
			doc_set_free(set);
		} else if (set || err.msg[0] == '\0') {
			abort();
		}
	}
	return 0;
}
