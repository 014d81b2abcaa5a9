/* convert.c - dra-guard convert: YAML or JSON in, one line of JSON per document out.
 *
 * The project's own loader (policy/lib/doc.h) with its default limits, so what
 * this prints is exactly what the policy loader and dry-run would read: a
 * manifest that another tool renders leniently (duplicate keys, anchors,
 * YAML 1.1 booleans) shows here the way the guard sees it. The deployment
 * tests pipe `kubectl kustomize` output through it.
 *
 * Exit codes: 0 every document printed, 2 usage, unreadable or refused input,
 * or output that could not be written. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cli.h"
#include "doc.h"
#include "fileio.h"
#include "options.h"

/* JSON text of one document is bounded by a small multiple of its YAML text
 * (the worst case is an escaped control byte: 1 byte in, 6 out); going over
 * is an error, never a truncated line. */
#define CONVERT_OUTPUT_FACTOR 8
#define CONVERT_OUTPUT_SLACK 4096

/* No flags: the table is empty, and says so in --help and in its errors as
 * every command's does. */
static const struct options_command convert_command = {
	.name = "convert",
	.synopsis = "[FILE|-]",
	.intro = "Parse a YAML stream or a JSON value with the guard's own loader (duplicate keys,\n"
		 "anchors, aliases and unknown tags are errors) and print each document as one\n"
		 "line of compact JSON. Without FILE, or with -, read standard input.\n",
	.max_args = 1,
};

static int print_documents(const struct doc_set *set, size_t cap)
{
	struct buf line;
	size_t i, n = doc_set_count(set);
	int rc = 0;

	buf_init(&line, cap);
	for (i = 0; i < n; i++) {
		buf_reset(&line);
		rc = doc_to_json(doc_set_root(set, i), &line);
		if (rc) {
			fprintf(stderr, "dra-guard convert: document %zu: %s\n", i,
				rc == -E2BIG ? "its JSON is larger than the output cap" : strerror(-rc));
			goto out;
		}
		if (fwrite(buf_cstr(&line), 1, buf_len(&line), stdout) != buf_len(&line) ||
		    putchar('\n') == EOF) {
			rc = -EIO;
			fprintf(stderr, "dra-guard convert: writing standard output: %s\n", strerror(errno));
			goto out;
		}
	}
out:
	buf_free(&line);
	return rc;
}

int convert_main(int argc, char **argv)
{
	struct doc_limits lim;
	struct doc_error err;
	struct doc_set *set = NULL;
	const char *path = "-";
	char *text = NULL;
	size_t len = 0;
	int rc, nargs, code = 2;

	rc = options_cli(&convert_command, argc, argv, NULL, NULL, &nargs);
	if (rc >= 0)
		return rc;
	if (nargs == 1)
		path = argv[1];

	doc_limits_default(&lim);
	if (strcmp(path, "-") == 0)
		rc = fileio_read_stream(stdin, lim.max_bytes, &text, &len);
	else
		rc = fileio_read(path, lim.max_bytes, &text, &len);
	if (rc) {
		fprintf(stderr, "dra-guard convert: %s: %s\n", path,
			rc == -E2BIG ? "larger than the loader's input limit" : strerror(-rc));
		goto out;
	}
	rc = doc_parse(text, len, &lim, &set, &err);
	if (rc) {
		fprintf(stderr, "dra-guard convert: %s:%u:%u: document %zu: %s\n", path, err.line, err.col,
			err.doc_index, err.msg);
		goto out;
	}
	rc = print_documents(set, CONVERT_OUTPUT_FACTOR * lim.max_bytes + CONVERT_OUTPUT_SLACK);
	if (rc)
		goto out;
	if (fflush(stdout) != 0) {
		fprintf(stderr, "dra-guard convert: writing standard output: %s\n", strerror(errno));
		goto out;
	}
	code = 0;
out:
	doc_set_free(set);
	free(text);
	return code;
}
