/* bench_replay.c - how fast dra-guard replay reads an audit log, on one
 * core: the log is read into memory first, then cut into lines and
 * replayed (reader, reorder window, engine, view, ledger samples) as the
 * command does, timed in CPU time. Prints one JSON object:
 *   {"bytes", "lines", "rounds", "seconds" (best), "mb_per_s" (best, 10^6 B),
 *    "median_mb_per_s", "max_rss_kib", "judged", "skipped"}
 *
 *   bench_replay [-r ROUNDS] [-s SAMPLE_SECONDS] POLICY LOG
 *
 * -s is the replay's --sample: how often (log time) the ledger is built. */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fileio.h"
#include "policy.h"
#include "replay.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	struct policy *pol = NULL;
	struct policy_error perr;
	char *ptext = NULL, *log = NULL;
	size_t plen = 0, len = 0;
	int rounds = 3, ch, i;
	double sample_s = 1.0;
	double secs[64];
	struct replay_totals t;
	struct rusage ru;

	/* as dra-guard replay does (webhook/cmd/replay_cmd.c) */
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	while ((ch = getopt(argc, argv, "r:s:")) != -1) {
		if (ch == 's' && (sample_s = atof(optarg)) >= 0.001)
			continue;
		if (ch != 'r' || (rounds = atoi(optarg)) < 1 || rounds > 64) {
			fprintf(stderr, "usage: bench_replay [-r ROUNDS] [-s SAMPLE_SECONDS] POLICY LOG\n");
			return 2;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "usage: bench_replay [-r ROUNDS] POLICY LOG\n");
		return 2;
	}
	if (fileio_read(argv[optind], 1 << 22, &ptext, &plen) || policy_load(ptext, plen, &pol, &perr) ||
	    fileio_read(argv[optind + 1], (size_t)8 << 30, &log, &len)) {
		fprintf(stderr, "bench_replay: cannot read the policy or the log\n");
		return 2;
	}
	memset(&t, 0, sizeof(t));
	for (i = 0; i < rounds; i++) {
		struct replay_options o;
		struct replay *r = NULL;
		const char *p = log, *end = log + len;
		uint64_t no = 0;
		double t0;

		replay_options_default(&o);
		o.policy = pol;
		o.sample_ns = (int64_t)(sample_s * 1e9);
		if (replay_new(&o, &r))
			return 2;
		t0 = ((double)clock_ns(CLOCK_PROCESS_CPUTIME_ID) / 1e9);
		while (p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

			if (replay_line(r, p, n, ++no))
				return 2;
			p += n + 1;
		}
		if (replay_finish(r))
			return 2;
		secs[i] = ((double)clock_ns(CLOCK_PROCESS_CPUTIME_ID) / 1e9) - t0;
		replay_totals(r, &t);
		replay_free(r);
	}
	getrusage(RUSAGE_SELF, &ru);
	{
		double best = secs[0], sorted[64];

		memcpy(sorted, secs, sizeof(double) * (size_t)rounds);
		qsort(sorted, (size_t)rounds, sizeof(double), cmp_double);
		best = sorted[0];
		printf("{\"sample_s\":%g,\"bytes\":%zu,\"lines\":%llu,\"rounds\":%d,\"seconds\":%.4f,\"mb_per_s\":%.1f,"
		       "\"median_mb_per_s\":%.1f,\"max_rss_kib\":%ld,\"judged\":%llu,\"events\":%llu}\n",
		       sample_s, len, (unsigned long long)t.lines, rounds, best, (double)len / best / 1e6,
		       (double)len / sorted[rounds / 2] / 1e6, ru.ru_maxrss, (unsigned long long)t.judged,
		       (unsigned long long)t.events);
	}
	free(log);
	free(ptext);
	policy_free(pol);
	return 0;
}
