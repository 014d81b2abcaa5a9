/* bench_engine.c - where the time of one decision goes: scan, decode, decide, encode.
 *
 *   bench_engine [-d DIR] [-r ROUNDS] [-m MIN_MS] [-o results.json] [-n COUNT] [-p POLICY] [-w]
 *                [-c] [BODY...]
 *
 * For each AdmissionReview body (default: the slice-N.json UPDATE reviews for
 * N = 1 8 32 128, claim-status.json and pod-status.json from
 * bench/gen_bodies.py in DIR; with -w the worst-*.json bodies, the worst
 * shape of each rule's input, under DIR/worst-policy.yaml) it times,
 * separately:
 *   skip    a validating jscan_skip of the whole body (the floor for any decoder)
 *   decode  decode_review() into the typed model
 *   decide  engine_decide() on the decoded request (the built-in policy, or
 *           -p POLICY)
 *   encode  review_encode() of the verdict
 *   total   admission_handle(): all of it, as the server runs it
 * and prints ns per operation, decisions per second and MB/s, best of ROUNDS
 * rounds each lasting at least MIN_MS (the minimum is the figure least
 * disturbed by whatever else the machine runs; rounds visit the bodies in
 * turn); -c measures the thread's CPU time instead of the wall clock. With -o
 * it also writes the figures as JSON. A benchmark, not a
 * test: nothing here passes or fails, except that every body must decode and
 * be decided.
 *
 * With -n COUNT nothing is timed: each body goes through admission_handle()
 * COUNT times, for a profiler that counts only inside that function
 * (valgrind --tool=callgrind --toggle-collect=admission_handle); instructions
 * per call are then the collected total / COUNT. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admission.h"
#include "clock.h"
#include "decode.h"
#include "engine.h"
#include "fileio.h"
#include "jscan.h"
#include "review.h"

#define MAX_BODIES 32

enum phase { PHASE_SKIP, PHASE_DECODE, PHASE_DECIDE, PHASE_ENCODE, PHASE_TOTAL, PHASE_COUNT };

static const char *const phase_names[PHASE_COUNT] = { "skip", "decode", "decide", "encode", "total" };

struct body {
	char name[64];
	char *text;
	size_t len;
	double best_ns[PHASE_COUNT];
	bool allowed;
	uint32_t violations;
};

struct bench {
	const struct policy *pol;
	struct engine_options opt;
	struct decode_limits lim;
	struct arena *decode_arena;     /* holds the decoded request across decide runs */
	struct arena *work_arena;       /* reset by every timed operation */
	struct buf out;
	struct admission_request req;
	struct verdict verdict;
};

/* -c: CPU time of this thread instead of the wall clock, for a machine
 * shared with other work (the figures then leave out time spent waiting). */
static clockid_t bench_clock = CLOCK_MONOTONIC;

static int run_phase(struct bench *b, const struct body *body, enum phase p)
{
	struct admission_result res;
	struct decode_error err;
	struct verdict v;
	struct jscan s;

	switch (p) {
	case PHASE_SKIP:
		jscan_init(&s, body->text, body->len, 0);
		return jscan_skip(&s, NULL) || jscan_finish(&s) ? -EINVAL : 0;
	case PHASE_DECODE:
		arena_reset(b->work_arena);
		return decode_review(body->text, body->len, &b->lim, b->work_arena, &res.req, &err);
	case PHASE_DECIDE:
		arena_reset(b->work_arena);
		return engine_decide(b->pol, NULL, &b->opt, &b->req, 0, b->work_arena, &v);
	case PHASE_ENCODE:
		buf_reset(&b->out);
		return review_encode(b->req.uid, &b->verdict, false, &b->out);
	case PHASE_TOTAL:
		arena_reset(b->work_arena);
		return admission_handle(b->pol, NULL, 0, &b->opt, &b->lim, body->text, body->len, b->work_arena,
					&b->out, &res);
	case PHASE_COUNT:
		break;
	}
	return -EINVAL;
}

/* One round: repeat the phase until min_ms have passed; ns per operation. */
static double time_round(struct bench *b, const struct body *body, enum phase p, double min_ms)
{
	double start = (double)clock_ns(bench_clock), elapsed;
	unsigned long n = 0, batch = 16, i;

	do {
		for (i = 0; i < batch; i++)
			if (run_phase(b, body, p)) {
				fprintf(stderr, "bench_engine: %s failed on %s\n", phase_names[p], body->name);
				exit(1);
			}
		n += batch;
		elapsed = (double)clock_ns(bench_clock) - start;
	} while (elapsed < min_ms * 1e6);
	return elapsed / (double)n;
}

static int prepare(struct bench *b, struct body *body)
{
	struct decode_error err;
	int rc;

	arena_reset(b->decode_arena);
	rc = decode_review(body->text, body->len, &b->lim, b->decode_arena, &b->req, &err);
	if (rc) {
		fprintf(stderr, "bench_engine: %s does not decode: %s\n", body->name, err.msg);
		return rc;
	}
	rc = engine_decide(b->pol, NULL, &b->opt, &b->req, 0, b->decode_arena, &b->verdict);
	body->allowed = b->verdict.allowed;
	body->violations = b->verdict.nviolations;
	return rc;
}

static void write_json(FILE *f, struct body *bodies, size_t n, int rounds, double min_ms, const char *policy_name)
{
	size_t i;
	int p;

	fprintf(f, "{\"benchmark\":\"engine\",\"rounds\":%d,\"min_ms\":%.0f,\"policy\":\"%s\",\"bodies\":[",
		rounds, min_ms, policy_name);
	for (i = 0; i < n; i++) {
		fprintf(f, "%s{\"name\":\"%s\",\"bytes\":%zu,\"allowed\":%s,\"violations\":%u", i ? "," : "",
			bodies[i].name, bodies[i].len, bodies[i].allowed ? "true" : "false", bodies[i].violations);
		for (p = 0; p < PHASE_COUNT; p++)
			fprintf(f, ",\"%s_ns\":%.0f", phase_names[p], bodies[i].best_ns[p]);
		fprintf(f, ",\"decisions_per_second\":%.0f,\"decode_mb_per_s\":%.1f}",
			1e9 / bodies[i].best_ns[PHASE_TOTAL],
			(double)bodies[i].len / bodies[i].best_ns[PHASE_DECODE] * 1e3);
	}
	fprintf(f, "]}\n");
}

int main(int argc, char **argv)
{
	static const char *const defaults[] = { "slice-1.json", "slice-8.json", "slice-32.json",
						"slice-128.json", "claim-status.json", "pod-status.json", NULL };
	static const char *const worst[] = { "worst-device-statuses.json", "worst-slice.json",
					     "worst-groups.json", "worst-freeze-classes.json",
					     "worst-canary.json", "worst-pod-statuses.json",
					     "worst-policy-configmap.json", NULL };
	const char *const *list = defaults;
	const char *policy_path = NULL;
	char worst_policy[4096];
	static struct body bodies[MAX_BODIES];
	struct policy *pol = NULL;
	struct bench b;
	const char *dir = "build/bench/bodies", *json_out = NULL;
	double min_ms = 200;
	int rounds = 5, c, r, p;
	long profile_count = 0;
	size_t n = 0, i;

	while ((c = getopt(argc, argv, "d:r:m:o:n:p:wc")) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 'r': rounds = atoi(optarg) > 0 ? atoi(optarg) : 1; break;
		case 'm': min_ms = atof(optarg) > 0 ? atof(optarg) : 1; break;
		case 'o': json_out = optarg; break;
		case 'n': profile_count = atol(optarg) > 0 ? atol(optarg) : 1; break;
		case 'p': policy_path = optarg; break;
		case 'w': list = worst; break;
		case 'c': bench_clock = CLOCK_THREAD_CPUTIME_ID; break;
		default:
			fprintf(stderr, "usage: bench_engine [-d DIR] [-r ROUNDS] [-m MIN_MS] [-o FILE] [-n COUNT] "
				"[-p POLICY] [-w] [-c] [BODY...]\n");
			return 2;
		}
	}
	if (list == worst && !policy_path) {
		snprintf(worst_policy, sizeof(worst_policy), "%s/worst-policy.yaml", dir);
		policy_path = worst_policy;
	}
	for (i = 0; optind + (int)i < argc || (optind == argc && list[i]); i++) {
		const char *name = optind < argc ? argv[optind + (int)i] : list[i];
		char path[4096];
		int rc;

		if (n == MAX_BODIES)
			break;
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		rc = fileio_read(path, 64 * 1024 * 1024, &bodies[n].text, &bodies[n].len);
		if (rc) {
			fprintf(stderr, "bench_engine: %s: %s (run bench/gen_bodies.py --out %s)\n", path,
				strerror(-rc), dir);
			return 1;
		}
		snprintf(bodies[n].name, sizeof(bodies[n].name), "%.*s", (int)(strcspn(name, ".")), name);
		n++;
	}
	memset(&b, 0, sizeof(b));
	if (policy_path) {
		struct policy_error perr;
		char *text = NULL;
		size_t len = 0;
		int rc = fileio_read(policy_path, 16 * 1024 * 1024, &text, &len);

		if (rc == 0)
			rc = policy_load(text, len, &pol, &perr);
		free(text);
		if (rc) {
			char line[1024];

			policy_error_format(&perr, line, sizeof(line));
			fprintf(stderr, "bench_engine: %s: %s\n", policy_path, rc == -EINVAL ? line : strerror(-rc));
			return 1;
		}
	} else if (policy_builtin(&pol)) {
		return 1;
	}
	if (arena_new(256 << 20, &b.decode_arena) || arena_new(256 << 20, &b.work_arena))
		return 1;
	b.pol = pol;
	b.opt.self_name = str_from_cstr("dra-guard-policy");
	b.opt.self_namespace = str_from_cstr("dra-guard");
	decode_limits_default(&b.lim);
	buf_init(&b.out, 64 << 20);
	if (profile_count > 0) {
		for (i = 0; i < n; i++) {
			long k;

			if (prepare(&b, &bodies[i]))
				return 1;
			for (k = 0; k < profile_count; k++)
				if (run_phase(&b, &bodies[i], PHASE_TOTAL)) {
					fprintf(stderr, "bench_engine: total failed on %s\n", bodies[i].name);
					return 1;
				}
			printf("%s: %zu bytes, admission_handle x %ld\n", bodies[i].name, bodies[i].len, profile_count);
		}
		goto out;
	}
	printf("%-24s %8s %10s %10s %10s %10s %10s %12s %9s\n", "body", "bytes", "skip ns", "decode ns",
	       "decide ns", "encode ns", "total ns", "decisions/s", "decode MB/s");
	for (i = 0; i < n; i++)
		for (p = 0; p < PHASE_COUNT; p++)
			bodies[i].best_ns[p] = 1e300;
	/* Rounds go over all bodies in turn, so a busy spell on a shared machine
	 * spoils one round of several bodies rather than every round of one. */
	for (r = 0; r < rounds; r++)
		for (i = 0; i < n; i++) {
			if (prepare(&b, &bodies[i]))
				return 1;
			for (p = 0; p < PHASE_COUNT; p++) {
				double ns = time_round(&b, &bodies[i], (enum phase)p, min_ms / PHASE_COUNT);

				if (ns < bodies[i].best_ns[p])
					bodies[i].best_ns[p] = ns;
			}
		}
	for (i = 0; i < n; i++) {
		printf("%-24s %8zu %10.0f %10.0f %10.0f %10.0f %10.0f %12.0f %9.0f\n", bodies[i].name, bodies[i].len,
		       bodies[i].best_ns[PHASE_SKIP], bodies[i].best_ns[PHASE_DECODE], bodies[i].best_ns[PHASE_DECIDE],
		       bodies[i].best_ns[PHASE_ENCODE], bodies[i].best_ns[PHASE_TOTAL],
		       1e9 / bodies[i].best_ns[PHASE_TOTAL],
		       (double)bodies[i].len / bodies[i].best_ns[PHASE_DECODE] * 1e3);
	}
	if (json_out) {
		FILE *f = fopen(json_out, "w");

		if (!f) {
			perror(json_out);
			return 1;
		}
		write_json(f, bodies, n, rounds, min_ms, policy_path ? policy_path : "built-in");
		fclose(f);
	}
out:
	for (i = 0; i < n; i++)
		free(bodies[i].text);
	buf_free(&b.out);
	arena_free(b.decode_arena);
	arena_free(b.work_arena);
	policy_free(pol);
	return 0;
}
