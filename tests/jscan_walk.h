/* jscan_walk.h - read a JSON text through the scanner's pull API and skip
 * every value on the side, for the scanner's tests and its fuzz target. */
#ifndef DRA_GUARD_JSCAN_WALK_H
#define DRA_GUARD_JSCAN_WALK_H

#include <errno.h>
#include <stddef.h>

#include "arena.h"
#include "jscan.h"

/* Returned when the grammar is fine but a string does not decode (invalid
 * UTF-8, a lone surrogate): skipping accepts those, decoding does not. */
#define JSCAN_WALK_BAD_STRING (-EILSEQ)

/* Called when reading a value and skipping it on a copy of the scanner
 * disagree: their return codes and where the skip ended. It should not
 * return (fail the test, abort the fuzzer); if it does, the walk goes on
 * with the read's code. */
struct jscan_walk_hooks {
	void (*mismatch)(int read_rc, int skip_rc, size_t offset);
};

/* Walk one value from the scanner's position: every key and string decoded
 * into a (which must hold them all), every value also skipped on a mark
 * that must end at the same byte or fail alike. A container is skipped a
 * block at a time from wherever it starts, so every nesting checks another
 * alignment of the blocks against the calls that read it. Returns 0, the
 * scanner's error, or JSCAN_WALK_BAD_STRING. Not thread-safe only in that s
 * and a are the caller's. */
int jscan_walk_value(struct jscan *s, struct arena *a, const struct jscan_walk_hooks *hooks);

/* jscan_walk_value on the whole text, then jscan_finish (nothing may follow). */
int jscan_walk(const char *text, size_t len, unsigned max_depth, struct arena *a,
	       const struct jscan_walk_hooks *hooks);

#endif
