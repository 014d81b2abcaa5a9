/* main.c - the dra-guard command line: dispatch to a subcommand. */
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
		"  policy lint    check a policy document or policy ConfigMap\n"
		"  rules          list the rule ids, their default actions and what they check\n"
		"  convert        print YAML/JSON documents as JSON lines, read as the guard reads them\n"
		"  version        print the version\n");
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	if (!cmd || strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		usage(cmd ? stdout : stderr);
		return cmd ? 0 : 2;
	}
	if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
		printf("dra-guard %s\n", dra_guard_version);
		return 0;
	}
	if (strcmp(cmd, "serve") == 0)
		return serve_main(argc - 1, argv + 1);
	if (strcmp(cmd, "dry-run") == 0)
		return dryrun_main(argc - 1, argv + 1);
	if (strcmp(cmd, "rules") == 0)
		return rules_main(argc - 1, argv + 1);
	if (strcmp(cmd, "convert") == 0)
		return convert_main(argc - 1, argv + 1);
	if (strcmp(cmd, "policy") == 0 && argc > 2 && strcmp(argv[2], "lint") == 0)
		return lint_main(argc - 2, argv + 2);
	fprintf(stderr, "dra-guard: unknown command '%s'\n\n", cmd);
	usage(stderr);
	return 2;
}
