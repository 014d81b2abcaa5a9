/* fuzz_jscan.c - libFuzzer target: the scanner's verdict against jansson's.
 *
 * Every input is scanned twice: skipped whole (grammar only) and walked
 * through the pull API with every string decoded (grammar plus UTF-8 and
 * surrogates). The two must agree on grammar, and the walk must agree with
 * jansson except where jansson rejects valid JSON (integers past int64, reals
 * past double, NUL in keys), accepts what it should not (a raw NUL byte after
 * a number or literal) or checks what the scanner leaves to its callers
 * (duplicate keys) or counts depth its own way. Every value read is also
 * skipped on a copy of the scanner, which must end at the same byte or fail
 * alike: containers are skipped a block at a time from wherever they start,
 * so nesting moves the 64-byte blocks across the text. */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jscan.h"
#include "../jscan_walk.h"

#define FUZZ_MAX_DEPTH 1000
#define BAD_STRING JSCAN_WALK_BAD_STRING

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk_mismatch(int read_rc, int skip_rc, size_t offset)
{
	fprintf(stderr, "read %d, skip %d at offset %zu\n", read_rc, skip_rc, offset);
	abort();
}

static const struct jscan_walk_hooks walk_hooks = { walk_mismatch };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct arena *a = NULL;
	struct jscan s;
	struct str raw;
	json_error_t jerr;
	json_t *j;
	int skip_rc, walk_rc;
	char msg[256];

	if (arena_new(4 * size + 64, &a) != 0)
		abort();
	jscan_init(&s, text, size, FUZZ_MAX_DEPTH);
	skip_rc = jscan_skip(&s, &raw);
	if (skip_rc == 0)
		skip_rc = jscan_finish(&s);
	jscan_describe(&s, msg, sizeof(msg));
	if (jscan_offset(&s) > size)
		abort();

	walk_rc = jscan_walk(text, size, FUZZ_MAX_DEPTH, a, &walk_hooks);
	arena_free(a);
	if (walk_rc != BAD_STRING && walk_rc != skip_rc) {
		fprintf(stderr, "skip %d, walk %d\n", skip_rc, walk_rc);
		abort();
	}

	j = json_loadb(text, size, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &jerr);
	if (j) {
		json_decref(j);
		/* jansson takes a raw NUL byte right after a number or a
		 * literal as a delimiter ("[1\0]" loads); RFC 8259 does not. */
		if (memchr(text, '\0', size))
			return 0;
		if (walk_rc != 0) {
			fprintf(stderr, "jansson accepts, jscan %d\n", walk_rc);
			abort();
		}
		return 0;
	}
	switch (json_error_code(&jerr)) {
	case json_error_numeric_overflow:
	case json_error_duplicate_key:
	case json_error_null_byte_in_key:
	case json_error_stack_overflow:
		return 0;
	default:
		break;
	}
	if (walk_rc == 0) {
		fprintf(stderr, "jansson rejects (%s at %d), jscan accepts\n", jerr.text, jerr.position);
		abort();
	}
	return 0;
}
