/* test_jscan_portable.c - the scanner's tests on its portable code, and
 * tests of its internals.
 *
 * The scanner uses SSE2 where the compiler targets it (every x86-64) and
 * word-at-a-time code elsewhere; both must decide exactly alike. This
 * binary compiles the scanner's files a second time with JSCAN_PORTABLE,
 * which selects the portable code, and runs every test of test_jscan.c on
 * it (the definitions here take the place of the library's). Seeing the
 * scanner's static functions, it also checks what the public calls cannot
 * show: that both ways of classifying a block give the bits their
 * definitions say, and that the block walk really skips every valid
 * container - when it gives up, the byte-at-a-time skip still answers
 * right, only slower, so no verdict would tell. */
#define JSCAN_PORTABLE 1
#include "../policy/lib/jscan.c"
#include "../policy/lib/jscan_skip.c"
#include "../policy/lib/jscan_str.c"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdlib.h>

#include "testutil.h"

static uint64_t next_random(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* The classes byte by byte, as struct block_bits defines them. */
static void classify_reference(const char *p, struct block_bits *out)
{
	int i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < BLOCK; i++) {
		unsigned char c = (unsigned char)p[i];
		uint64_t bit = 1ULL << i;

		if (c == '"')
			out->quote |= bit;
		if (c == '\\')
			out->backslash |= bit;
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
			out->space |= bit;
		if (c < 0x20)
			out->control |= bit;
	}
}

static void check_block(const char *p)
{
	struct block_bits want, got;

	classify_reference(p, &want);
	classify_portable(p, &got);
	assert_memory_equal(&got, &want, sizeof(want));
#if defined(__SSE2__)
	classify_sse2(p, &got);
	assert_memory_equal(&got, &want, sizeof(want));
#endif
}

static void test_block_classes_match_their_definitions(void **state)
{
	static const char alphabet[] = "\"\\ \t\n\r\x01\x1f\x20\x21\x22\x5b\x5c\x5d\x7f\x80\xff{}[]:,a0";
	char block[BLOCK];
	uint64_t rng = 0x2545f4914f6cdd1dULL;
	unsigned b, i, round;

	(void)state;
	/* every byte value at every position */
	for (b = 0; b < 256; b++) {
		for (i = 0; i < BLOCK; i++) {
			memset(block, 'a', sizeof(block));
			block[i] = (char)b;
			check_block(block);
			memset(block, (int)b, sizeof(block));
			block[i] = ' ';
			check_block(block);
		}
	}
	/* dense mixtures of the bytes that matter */
	for (round = 0; round < 20000; round++) {
		for (i = 0; i < BLOCK; i++)
			block[i] = alphabet[next_random(&rng) % (sizeof(alphabet) - 1)];
		check_block(block);
	}
}

/* The escapes as a byte-by-byte scan sees them: a backslash that is not
 * itself escaped escapes the byte after it. */
static uint64_t escaped_reference(uint64_t bs, uint64_t *carry)
{
	uint64_t out = 0;
	bool esc = *carry != 0;
	int i;

	for (i = 0; i < 64; i++) {
		if (esc) {
			out |= 1ULL << i;
			esc = false;
		} else if ((bs >> i) & 1) {
			esc = true;
		}
	}
	*carry = esc;
	return out;
}

static void test_escapes_match_a_byte_by_byte_scan(void **state)
{
	uint64_t rng = 0x9e3779b97f4a7c15ULL;
	unsigned round, k;

	(void)state;
	for (round = 0; round < 20000; round++) {
		uint64_t carry = 0, carry_ref = 0;

		/* a run of words, the escape carried from each to the next */
		for (k = 0; k < 4; k++) {
			uint64_t bs = 0, got, want;
			unsigned pos = 0;

			/* runs of backslashes of random lengths, many at the edges */
			while (pos < 64) {
				unsigned gap = (unsigned)(next_random(&rng) % 5);
				unsigned run = (unsigned)(next_random(&rng) % 7);

				pos += gap;
				while (run-- && pos < 64)
					bs |= 1ULL << pos++;
			}
			if (round % 7 == 0)
				bs = ~0ULL << (next_random(&rng) % 64);
			got = escaped_bytes(bs, &carry);
			want = escaped_reference(bs, &carry_ref);
			/* Only what is escaped matters, not which backslash
			 * escapes: compare the bytes that are not backslashes. */
			if ((got & ~bs) != (want & ~bs) || carry != carry_ref)
				fail_msg("bs %016llx: got %016llx carry %llu, want %016llx carry %llu",
					 (unsigned long long)bs, (unsigned long long)(got & ~bs),
					 (unsigned long long)carry, (unsigned long long)(want & ~bs),
					 (unsigned long long)carry_ref);
		}
	}
}

/* At every object and array of text that starts 64 bytes or more before
 * its end, skip_blocks() may only succeed where skip_bytes() does, ending
 * at the same byte; and on valid text (valid true) it must not give up
 * on any value. (On other text it may: a block with a control byte in a
 * string is never entered, even when the value ends before that byte.)
 * Returns how many values the walk skipped. */
static size_t blocks_agree_with_bytes(const char *text, size_t len, bool valid, size_t limit)
{
	size_t i, skipped = 0, tried = 0;
	bool in_string = false, esc = false;

	for (i = 0; i < len && tried < limit; i++) {
		struct jscan a, b;
		struct str ra, rb;
		bool ok;
		int rc;

		if (in_string) {
			if (esc)
				esc = false;
			else if (text[i] == '\\')
				esc = true;
			else if (text[i] == '"')
				in_string = false;
			continue;
		}
		if (text[i] == '"')
			in_string = true;
		if ((text[i] != '{' && text[i] != '[') || len - i < BLOCK)
			continue;
		tried++;
		jscan_init(&a, text, len, 0);
		jscan_init(&b, text, len, 0);
		a.p = b.p = text + i;
		ok = skip_blocks(&a, a.p, &ra);
		rc = skip_bytes(&b, &rb);
		if (valid && !ok)
			fail_msg("the block walk gave up on a valid value at offset %zu: %.*s", i,
				 (int)(len - i < 120 ? len - i : 120), text + i);
		if (ok && (rc != 0 || a.p != b.p || ra.ptr != rb.ptr || ra.len != rb.len))
			fail_msg("the block walk took a value at offset %zu to %zu, bytes: %d at %zu", i,
				 (size_t)(a.p - text), rc, jscan_offset(&b));
		assert_int_equal(a.error, 0);
		skipped += ok;
	}
	return skipped;
}

static bool valid_text(const char *text, size_t len)
{
	struct jscan s;

	jscan_init(&s, text, len, 0);
	return skip_bytes(&s, NULL) == 0 && jscan_finish(&s) == 0;
}

static void blocks_agree_in_dir(const char *dir, size_t *docs, size_t *skipped, uint64_t *rng)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4096];

	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name), len, round;
		char *body, *work;

		if (l < 5 || strcmp(e->d_name + l - 5, ".json") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		body = testutil_read_file(path, &len);
		assert_non_null(body);
		*skipped += blocks_agree_with_bytes(body, len, valid_text(body, len), (size_t)-1);
		/* The same with edits near 64-byte boundaries: quotes,
		 * backslashes, control bytes and brackets. */
		work = malloc(len + 1);
		assert_non_null(work);
		for (round = 0; round < 30 && len > 0; round++) {
			static const char edits[] = "\"\\\x01\x1f {}[]:,\t";
			size_t at = (size_t)(next_random(rng) % (len / BLOCK + 1)) * BLOCK +
				    (size_t)(next_random(rng) % 5) - 2;

			memcpy(work, body, len);
			if (at < len)
				work[at] = edits[next_random(rng) % (sizeof(edits) - 1)];
			blocks_agree_with_bytes(work, len, false, 200);
		}
		free(work);
		free(body);
		(*docs)++;
	}
	closedir(d);
}

static void test_block_walk_skips_what_the_byte_walk_skips(void **state)
{
	const char *bench = getenv("DRA_GUARD_BENCH_BODIES");
	uint64_t rng = 0x853c49e6748fea9bULL;
	size_t i, docs = 0, skipped = 0;

	(void)state;
	for (i = 0; testutil_json_dirs[i]; i++)
		blocks_agree_in_dir(testutil_repo_dir(testutil_json_dirs[i]), &docs, &skipped, &rng);
	print_message("%zu documents, %zu values skipped a block at a time\n", docs, skipped);
	assert_true(docs > 100 && skipped > 1000);
	if (bench && *bench)
		blocks_agree_in_dir(bench, &docs, &skipped, &rng);
}

#define JSCAN_INTERNAL_TESTS \
	cmocka_unit_test(test_block_classes_match_their_definitions), \
	cmocka_unit_test(test_escapes_match_a_byte_by_byte_scan), \
	cmocka_unit_test(test_block_walk_skips_what_the_byte_walk_skips),

#include "test_jscan.c"
