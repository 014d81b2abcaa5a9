/* pgo_train.c - the training run of the profile-guided release build.
 *
 *   pgo_train POLICY... -- BODY...
 *
 * Answers every AdmissionReview body under every policy (the built-in one
 * when POLICY is "-"), through admission_handle() on both endpoints, as the
 * server does, a number of times weighted by size so the large slice
 * reviews that dominate a server's time dominate the profile. Built only in
 * the instrumented (pgogen) flavour; what it measures is the profile, not
 * time. Exit 1 if anything fails to produce an answer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission.h"
#include "fileio.h"

#define PGO_MAX_POLICIES 8
#define PGO_ROUNDS_PER_MB 400

int main(int argc, char **argv)
{
	struct policy *pols[PGO_MAX_POLICIES];
	struct decode_limits lim;
	struct arena *a = NULL;
	struct buf out;
	int i, np = 0, rc = 1, first_body = argc;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			first_body = i + 1;
			break;
		}
		if (np == PGO_MAX_POLICIES)
			return 2;
		if (strcmp(argv[i], "-") == 0) {
			if (policy_builtin(&pols[np]))
				return 1;
		} else {
			struct policy_error err;
			char *text = NULL;
			size_t len = 0;

			if (fileio_read(argv[i], 4 << 20, &text, &len) ||
			    policy_load(text, len, &pols[np], &err)) {
				fprintf(stderr, "pgo_train: policy %s does not load\n", argv[i]);
				free(text);
				return 1;
			}
			free(text);
		}
		np++;
	}
	decode_limits_default(&lim);
	buf_init(&out, 64 << 20);
	if (arena_new(256 << 20, &a))
		goto out;
	for (i = first_body; i < argc; i++) {
		char *body = NULL;
		size_t len = 0, rounds, r;
		int p, m;

		if (fileio_read(argv[i], 64 << 20, &body, &len)) {
			fprintf(stderr, "pgo_train: cannot read %s\n", argv[i]);
			goto out;
		}
		rounds = 1 + len * PGO_ROUNDS_PER_MB / (1 << 20);
		for (r = 0; r < rounds; r++) {
			for (p = 0; p < np; p++) {
				for (m = 0; m < 2; m++) {
					struct engine_options opt;
					struct admission_result res;

					memset(&opt, 0, sizeof(opt));
					opt.mutate = m;
					opt.self_name = STR_LIT("dra-guard-policy");
					opt.self_namespace = STR_LIT("dra-guard");
					arena_reset(a);
					if (admission_handle(pols[p], NULL, 0, &opt, &lim, body, len, a, &out, &res)) {
						fprintf(stderr, "pgo_train: no answer for %s\n", argv[i]);
						free(body);
						goto out;
					}
				}
			}
		}
		free(body);
	}
	rc = 0;
out:
	buf_free(&out);
	arena_free(a);
	for (i = 0; i < np; i++)
		policy_free(pols[i]);
	return rc;
}
