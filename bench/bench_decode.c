/* bench_decode.c - time decode_review() and a validating skip per body size.
 *
 *   bench_decode [-d DIR] [-r ROUNDS] [-m MIN_MS] [SIZE...]
 *
 * Reads DIR/slice-N.json (default $TMPDIR/dra-bench/bodies, made by
 * ../shared/bench/gen.py) for N in 1 8 32 128 and prints, per body, the best
 * of ROUNDS rounds (each long enough to take MIN_MS) of: ns per decode_review
 * and its MB/s, and ns per jscan_skip of the whole body and its MB/s. Best of
 * N because the machine is shared: the minimum is the figure least disturbed
 * by other work. Not a test: nothing here passes or fails. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "arena.h"
#include "decode.h"
#include "jscan.h"

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
		goto out;
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	*len = (size_t)n;
out:
	fclose(f);
	return buf;
}

struct body {
	const char *text;
	size_t len;
	const struct decode_limits *lim;
	struct arena *a;
};

static int run_decode(const struct body *b)
{
	struct admission_request req;
	struct decode_error err;
	int rc;

	arena_reset(b->a);
	rc = decode_review(b->text, b->len, b->lim, b->a, &req, &err);
	if (rc)
		fprintf(stderr, "decode_review: %d %s\n", rc, err.msg);
	return rc;
}

static int run_skip(const struct body *b)
{
	struct jscan s;

	jscan_init(&s, b->text, b->len, 0);
	if (jscan_skip(&s, NULL) != 0 || jscan_finish(&s) != 0)
		return -EINVAL;
	return 0;
}

/* Best ns per call over rounds of at least min_ns each. */
static double best_ns(int (*fn)(const struct body *), const struct body *b, int rounds, double min_ns)
{
	double best = 1e300;
	long iters = 1;
	int r;

	/* Size a round so it takes about min_ns. */
	for (;;) {
		double t0 = now_ns(), t;
		long i;

		for (i = 0; i < iters; i++)
			if (fn(b) != 0)
				return -1;
		t = now_ns() - t0;
		if (t >= min_ns)
			break;
		iters *= 2;
	}
	for (r = 0; r < rounds; r++) {
		double t0 = now_ns(), t;
		long i;

		for (i = 0; i < iters; i++)
			fn(b);
		t = (now_ns() - t0) / (double)iters;
		if (t < best)
			best = t;
	}
	return best;
}

int main(int argc, char **argv)
{
	static const char *const default_sizes[] = { "1", "8", "32", "128" };
	const char *const *sizes = default_sizes;
	const char *tmp = getenv("TMPDIR");
	char dir[1024], path[1200];
	struct decode_limits lim;
	struct arena *a = NULL;
	int rounds = 30, nsizes = 4, opt, i, status = 0;
	double min_ms = 20;

	snprintf(dir, sizeof(dir), "%s/dra-bench/bodies", tmp && *tmp ? tmp : "/tmp");
	while ((opt = getopt(argc, argv, "d:r:m:")) != -1) {
		switch (opt) {
		case 'd': snprintf(dir, sizeof(dir), "%s", optarg); break;
		case 'r': rounds = atoi(optarg); break;
		case 'm': min_ms = atof(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-d DIR] [-r ROUNDS] [-m MIN_MS] [SIZE...]\n", argv[0]);
			return 2;
		}
	}
	if (optind < argc) {
		sizes = (const char *const *)argv + optind;
		nsizes = argc - optind;
	}
	decode_limits_default(&lim);
	if (arena_new(64u << 20, &a) != 0)
		return 1;
	printf("%-16s %9s | %12s %9s | %12s %9s\n", "body", "bytes", "decode ns", "MB/s",
	       "skip ns", "MB/s");
	for (i = 0; i < nsizes; i++) {
		struct body b;
		size_t len = 0;
		char *text;
		double dec, skp;

		snprintf(path, sizeof(path), "%s/slice-%s.json", dir, sizes[i]);
		text = read_all(path, &len);
		if (!text) {
			fprintf(stderr, "%s: cannot read (run ../shared/bench/gen.py --out %s)\n", path, dir);
			status = 1;
			continue;
		}
		b.text = text;
		b.len = len;
		b.lim = &lim;
		b.a = a;
		dec = best_ns(run_decode, &b, rounds, min_ms * 1e6);
		skp = best_ns(run_skip, &b, rounds, min_ms * 1e6);
		if (dec < 0 || skp < 0) {
			status = 1;
		} else {
			printf("slice-%-10s %9zu | %12.0f %9.0f | %12.0f %9.0f\n", sizes[i], len,
			       dec, (double)len / dec * 1e3, skp, (double)len / skp * 1e3);
		}
		free(text);
	}
	arena_free(a);
	return status;
}
