/* dryrun_lint.c - dra-guard policy lint and dra-guard rules: the policy
 * checked and the rule catalogue printed, offline like dry-run but without
 * inputs or the engine, so they share nothing with it but the policy
 * loader. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fileio.h"
#include "policy.h"
#include "rules.h"

/* --- policy lint, rules -------------------------------------------------------------------- */

int lint_main(int argc, char **argv)
{
	int i, code = 0;

	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fprintf(argc < 2 ? stderr : stdout,
			"usage: dra-guard policy lint FILE...\n\n"
			"Checks Policy documents or policy ConfigMap manifests. Exit 0 when all are valid,\n"
			"2 otherwise; each error names the file, line and path.\n");
		return argc < 2 ? 2 : 0;
	}
	for (i = 1; i < argc; i++) {
		struct policy_error err;
		struct policy *p = NULL;
		char line[POLICY_ERROR_MAX + 512];
		char *text = NULL;
		size_t len = 0;
		int rc = fileio_read(argv[i], 4 * 1024 * 1024, &text, &len);

		if (rc) {
			fprintf(stderr, "%s: %s\n", argv[i], strerror(-rc));
			code = 2;
			continue;
		}
		rc = policy_load(text, len, &p, &err);
		free(text);
		if (rc) {
			policy_error_format(&err, line, sizeof(line));
			fprintf(stderr, "%s: %s\n", argv[i], line);
			code = 2;
		} else {
			printf("%s: valid (policy hash %.12s, freeze %s)\n", argv[i], p->hash,
			       p->frozen ? "on" : "off");
		}
		policy_free(p);
	}
	return code;
}

int rules_main(int argc, char **argv)
{
	int i;

	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("usage: dra-guard rules\n\n"
		       "Lists every rule: its id (what messages, metrics and the policy's\n"
		       "enforcement.rules name), its built-in action and what it checks.\n");
		return 0;
	}
	if (argc > 1) {
		fprintf(stderr, "dra-guard rules: unexpected argument '%s'\nusage: dra-guard rules\n", argv[1]);
		return 2;
	}
	printf("%-28s %-8s %s\n", "RULE", "DEFAULT", "CHECKS");
	for (i = 0; i < RULE_COUNT; i++)
		printf("%-28s %-8s %s\n", rule_name((enum rule_id)i), action_name(rule_builtin_action((enum rule_id)i)),
		       rule_summary((enum rule_id)i));
	return 0;
}
