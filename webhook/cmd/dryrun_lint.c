/* dryrun_lint.c - dra-guard policy lint and dra-guard rules: the policy
 * checked and the rule catalogue printed, offline like dry-run but without
 * inputs or the engine. dry-run's --policy is read the same way, so both
 * list every error the policy has. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dryrun_impl.h"
#include "fileio.h"
#include "options.h"
#include "policy.h"
#include "rules.h"

/* Errors one policy file may list; more are counted. */
#define LINT_ERRORS_MAX 100
/* A policy file: a ConfigMap holds at most 1 MiB, with room for comments. */
#define LINT_POLICY_MAX (4 * 1024 * 1024)

int dryrun_policy_load(const char *name, const char *prefix, const char *text, size_t len,
		       struct policy **out)
{
	struct policy_error *errs = calloc(LINT_ERRORS_MAX, sizeof(*errs));
	char line[POLICY_ERROR_MAX + 4096 + 512];
	size_t nerr = 0, i;
	int rc;

	*out = NULL;
	if (!errs) {
		fprintf(stderr, "%s%s: out of memory\n", prefix, name);
		return -ENOMEM;
	}
	rc = policy_load_all(text, len, out, errs, LINT_ERRORS_MAX, &nerr);
	for (i = 0; rc && i < nerr && i < LINT_ERRORS_MAX; i++) {
		policy_error_format_in(&errs[i], name, line, sizeof(line));
		fprintf(stderr, "%s%s\n", prefix, line);
	}
	if (rc && nerr > LINT_ERRORS_MAX)
		fprintf(stderr, "%s%s: %zu more errors not shown\n", prefix, name, nerr - LINT_ERRORS_MAX);
	if (rc == -EINVAL)
		fprintf(stderr, "%s%s: not a valid policy (%zu %s)\n", prefix, name, nerr, nerr == 1 ? "error" : "errors");
	else if (rc)
		fprintf(stderr, "%s%s: %s\n", prefix, name, strerror(-rc));
	free(errs);
	return rc;
}

/* --- policy lint, rules -------------------------------------------------------------------- */

/* No flags: empty tables, so --help, unknown flags and stray arguments
 * are answered as every command answers them. */
static const struct options_command lint_command = {
	.name = "policy lint",
	.synopsis = "FILE...",
	.intro = "Checks Policy documents or policy ConfigMap manifests; - reads one from stdin.\n"
		 "Every error found is listed on stderr, one a line, as FILE:LINE:COLUMN: PATH: what\n"
		 "is wrong and what would be accepted; positions inside a ConfigMap's policy.yaml\n"
		 "are lines of the manifest. Exit 0 when all are valid, 2 otherwise.\n",
	.max_args = -1,
};

static const struct options_command rules_command = {
	.name = "rules",
	.synopsis = "",
	.intro = "Lists every rule: its id (what messages, metrics and the policy's\n"
		 "enforcement.rules name), its built-in action and what it checks.\n",
	.max_args = 0,
};

int lint_main(int argc, char **argv)
{
	int i, rc, nfiles, code = 0, stdins = 0;

	rc = options_cli(&lint_command, argc, argv, NULL, NULL, &nfiles);
	if (rc >= 0)
		return rc;
	if (nfiles == 0) {
		fprintf(stderr, "dra-guard policy lint: no FILE given\n");
		return cli_usage_error("policy lint");
	}
	for (i = 1; i <= nfiles; i++)
		stdins += strcmp(argv[i], "-") == 0;
	if (stdins > 1) {
		fprintf(stderr, "dra-guard policy lint: - (stdin) is named more than once; it can be read once\n");
		return 2;
	}
	for (i = 1; i <= nfiles; i++) {
		bool is_stdin = strcmp(argv[i], "-") == 0;
		const char *name = is_stdin ? "<stdin>" : argv[i];
		struct policy *p = NULL;
		char *text = NULL;
		size_t len = 0;
		rc = is_stdin ? fileio_read_stream(stdin, LINT_POLICY_MAX, &text, &len)
				  : fileio_read(argv[i], LINT_POLICY_MAX, &text, &len);

		if (rc) {
			fprintf(stderr, "%s: cannot read: %s\n", name,
				rc == -E2BIG ? "larger than 4 MiB (the limit)" : strerror(-rc));
			code = 2;
			continue;
		}
		rc = dryrun_policy_load(name, "", text, len, &p);
		free(text);
		if (rc)
			code = 2;
		else
			printf("%s: valid (policy hash %.12s, freeze %s)\n", name, p->hash, p->frozen ? "on" : "off");
		policy_free(p);
	}
	return code;
}

int rules_main(int argc, char **argv)
{
	int i, rc, nargs;

	rc = options_cli(&rules_command, argc, argv, NULL, NULL, &nargs);
	if (rc >= 0)
		return rc;
	printf("%-28s %-8s %s\n", "RULE", "DEFAULT", "CHECKS");
	for (i = 0; i < RULE_COUNT; i++)
		printf("%-28s %-8s %s\n", rule_name((enum rule_id)i), action_name(rule_builtin_action((enum rule_id)i)),
		       rule_summary((enum rule_id)i));
	return 0;
}
