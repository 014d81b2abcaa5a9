/* main.c - the dra-guard command line: dispatch to a subcommand.
 *
 * Every command and subcommand answers --help (and -h) with its usage on
 * stdout and exit status 0; a usage error prints one line saying what is
 * wrong and where the usage is (cli_usage_error()) on stderr, and exits 2;
 * the usage itself would bury that line. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "version.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: dra-guard COMMAND [ARGS]\n"
		"\n"
		"A Kubernetes admission webhook and policy guard for DRA node-allocatable resources.\n"
		"\n"
		"commands:\n"
		"  serve          run the TLS admission webhook (serve --help lists the flags)\n"
		"  dry-run        run the policy engine offline on manifests or AdmissionReviews\n"
		"  ledger         the ledger of a recorded cluster (kubectl get ... -o json), offline\n"
		"  replay         what a policy would have said of a recorded audit log, and the ledger\n"
		"  readiness      the go/no-go promotion report over a recorded audit log\n"
		"  pending        the claims a running replica refuses now, with reason and since when\n"
		"  policy lint    check a policy document or policy ConfigMap\n"
		"  rules          list the rule ids, their default actions and what they check\n"
		"  vap            print the stateless rules as ValidatingAdmissionPolicies (vap --help)\n"
		"  convert        print YAML/JSON documents as JSON lines, read as the guard reads them\n"
		"  version        print the version\n"
		"\n"
		"dra-guard COMMAND --help describes each command.\n");
}

static bool is_help(const char *arg)
{
	return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

static void policy_usage(FILE *f)
{
	fprintf(f,
		"usage: dra-guard policy COMMAND [ARGS]\n"
		"\n"
		"commands:\n"
		"  lint FILE...   check Policy documents or policy ConfigMap manifests (- reads stdin);\n"
		"                 dra-guard policy lint --help says more\n");
}

static int policy_main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "lint") == 0)
		return lint_main(argc - 1, argv + 1);
	if (argc > 1 && is_help(argv[1])) {
		policy_usage(stdout);
		return 0;
	}
	if (argc > 1)
		fprintf(stderr, "dra-guard policy: unknown command '%s'\n", argv[1]);
	else
		fprintf(stderr, "dra-guard policy: no command given (lint)\n");
	return cli_usage_error("policy");
}

static int version_main(int argc, char **argv)
{
	if (argc > 1 && is_help(argv[1])) {
		printf("usage: dra-guard version\n\nPrints the version of this build.\n");
		return 0;
	}
	if (argc > 1) {
		fprintf(stderr, "dra-guard version: unexpected argument '%s'\n", argv[1]);
		return cli_usage_error("version");
	}
	printf("dra-guard %s\n", dra_guard_version);
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	if (!cmd || strcmp(cmd, "help") == 0 || is_help(cmd)) {
		usage(cmd ? stdout : stderr);
		return cmd ? 0 : 2;
	}
	if (strcmp(cmd, "version") == 0)
		return version_main(argc - 1, argv + 1);
	if (strcmp(cmd, "--version") == 0)
		return version_main(1, argv + 1);
	if (strcmp(cmd, "serve") == 0)
		return serve_main(argc - 1, argv + 1);
	if (strcmp(cmd, "dry-run") == 0)
		return dryrun_main(argc - 1, argv + 1);
	if (strcmp(cmd, "ledger") == 0)
		return ledger_main(argc - 1, argv + 1);
	if (strcmp(cmd, "replay") == 0)
		return replay_main(argc - 1, argv + 1);
	if (strcmp(cmd, "readiness") == 0)
		return readiness_main(argc - 1, argv + 1);
	if (strcmp(cmd, "pending") == 0)
		return pending_main(argc - 1, argv + 1);
	if (strcmp(cmd, "rules") == 0)
		return rules_main(argc - 1, argv + 1);
	if (strcmp(cmd, "vap") == 0)
		return vap_main(argc - 1, argv + 1);
	if (strcmp(cmd, "convert") == 0)
		return convert_main(argc - 1, argv + 1);
	if (strcmp(cmd, "policy") == 0)
		return policy_main(argc - 1, argv + 1);
	fprintf(stderr, "dra-guard: unknown command '%s'\n", cmd);
	fprintf(stderr, "Run 'dra-guard --help' for the commands.\n");
	return 2;
}
