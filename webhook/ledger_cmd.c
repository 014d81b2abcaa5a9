/* ledger_cmd.c - dra-guard ledger: the ledger of a recorded cluster, offline,
 * as a table or as the JSON GET /debug/ledger serves. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "cli.h"
#include "clock.h"
#include "dryrun_impl.h"
#include "fileio.h"
#include "ledger.h"
#include "policy.h"
#include "view_file.h"

#define LEDGER_PATHS_MAX 4096

static void ledger_usage(FILE *f)
{
	fprintf(f,
		"usage: dra-guard ledger --view DUMP... [--policy FILE] [--node NAME] [--entries]\n"
		"                        [--output table|json] [--now TIME]\n"
		"\n"
		"Prints the ledger of a recorded cluster: per node and resource, allocatable, the Pods'\n"
		"own requests, what DRA claims add (by NUMA zone), what the Pod statuses say and the\n"
		"total the scheduler checks; with --entries (or as JSON) every claim's entries.\n"
		"\n"
		"  --view DUMP           kubectl get resourceslices,resourceclaims,pods,nodes -A -o json\n"
		"                        output (repeatable; YAML and directories too; - for stdin)\n"
		"  --policy FILE         the policy (its NUMA attribute names); default: built-in\n"
		"  --node NAME           one node only\n"
		"  --entries             the table lists each node's entries too\n"
		"  --output FORMAT       table (default) or json (the shape of GET /debug/ledger)\n"
		"  --now TIME            as of TIME (RFC 3339 or seconds since the epoch); default now\n"
		"\n"
		"Exit status: 0, 1 when a node (with --node: that node) is overcommitted\n"
		"(ledger.node.overcommit), 2 unusable input or policy.\n");
}

/* The exit status speaks of what was printed: with --node, that node only. */
static bool overcommitted(const struct ledger *l, const char *node)
{
	uint32_t i;

	if (!node || !*node)
		return l->overcommitted != 0;
	for (i = 0; i < l->nnodes; i++)
		if (l->nodes[i].overcommitted && str_eq_cstr(l->nodes[i].name, node))
			return true;
	return false;
}

int cli_usage_error(const char *command)
{
	fprintf(stderr, "Run 'dra-guard %s --help' for the usage.\n", command);
	return 2;
}

int cli_parse_time(const char *s, int64_t *out)
{
	struct tm tm;
	char *end;
	long long secs;

	errno = 0;
	secs = strtoll(s, &end, 10);
	if (!errno && end != s && *end == '\0' && secs >= 0) {
		*out = secs * 1000000000LL;
		return 0;
	}
	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end || (strcmp(end, "Z") != 0 && strcmp(end, "+00:00") != 0))
		return -EINVAL;
	*out = (int64_t)timegm(&tm) * 1000000000LL;
	return 0;
}

enum { OPT_VIEW = 256, OPT_POLICY, OPT_NODE, OPT_OUTPUT, OPT_NOW, OPT_ENTRIES, OPT_HELP };

static const struct option ledger_options[] = {
	{ "view", required_argument, NULL, OPT_VIEW },
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "node", required_argument, NULL, OPT_NODE },
	{ "output", required_argument, NULL, OPT_OUTPUT },
	{ "now", required_argument, NULL, OPT_NOW },
	{ "entries", no_argument, NULL, OPT_ENTRIES },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

int ledger_main(int argc, char **argv)
{
	const char *paths[LEDGER_PATHS_MAX], *policy_path = NULL, *node = "";
	struct view_builder *b = NULL;
	const struct view *v = NULL;
	struct view_dump_stats st;
	struct policy *pol = NULL;
	struct ledger *l = NULL;
	struct buf out;
	size_t npaths = 0;
	int64_t now = clock_wall_ns();
	bool json = false, entries = false;
	char err[1024], what[1024];
	int c, rc, code = 2;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", ledger_options, NULL)) != -1) {
		switch (c) {
		case OPT_VIEW:
			if (npaths == LEDGER_PATHS_MAX) {
				fprintf(stderr, "dra-guard ledger: more than %d --view paths\n", LEDGER_PATHS_MAX);
				return 2;
			}
			paths[npaths++] = optarg;
			break;
		case OPT_POLICY: policy_path = optarg; break;
		case OPT_NODE: node = optarg; break;
		case OPT_ENTRIES: entries = true; break;
		case OPT_OUTPUT:
			if (strcmp(optarg, "json") == 0)
				json = true;
			else if (strcmp(optarg, "table") != 0) {
				fprintf(stderr, "dra-guard ledger: --output %s: expected table or json\n", optarg);
				return 2;
			}
			break;
		case OPT_NOW:
			if (cli_parse_time(optarg, &now) != 0) {
				fprintf(stderr, "dra-guard ledger: --now %s: expected RFC 3339 or seconds since the epoch\n",
					optarg);
				return 2;
			}
			break;
		case OPT_HELP:
		case 'h':
			ledger_usage(stdout);
			return 0;
		default:
			return cli_usage_error("ledger");
		}
	}
	if (npaths == 0 || optind != argc) {
		fprintf(stderr, "dra-guard ledger: %s\n", npaths ? "unexpected arguments" : "no --view given");
		return cli_usage_error("ledger");
	}
	if (policy_path) {
		char *text = NULL;
		size_t len = 0;

		if ((rc = fileio_read(policy_path, 4 * 1024 * 1024, &text, &len)) != 0) {
			fprintf(stderr, "dra-guard ledger: --policy %s: %s\n", policy_path, strerror(-rc));
			return 2;
		}
		rc = dryrun_policy_load(policy_path, "dra-guard ledger: --policy ", text, len, &pol);
		free(text);
		if (rc)
			return 2;
	} else if (policy_builtin(&pol) != 0) {
		fprintf(stderr, "dra-guard ledger: out of memory\n");
		return 2;
	}
	rc = view_file_load(paths, npaths, now, &b, &v, &st, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "dra-guard ledger: --view: %s\n", rc == -ENOMEM ? "out of memory" : err);
		goto out;
	}
	view_file_describe(v, &st, what, sizeof(what));
	fprintf(stderr, "dra-guard ledger: %s\n", what);
	if ((rc = ledger_build(v, pol, now, (size_t)1 << 31, &l)) != 0) {
		fprintf(stderr, "dra-guard ledger: the ledger could not be built (%s)\n",
			rc == -E2BIG ? "over a cap" : "out of memory");
		goto out;
	}
	buf_init(&out, (size_t)1 << 31);
	rc = json ? ledger_json(l, str_from_cstr(node), &out) : ledger_table(l, str_from_cstr(node), entries, &out);
	if (rc == 0)
		fwrite(buf_cstr(&out), 1, buf_len(&out), stdout);
	buf_free(&out);
	if (rc == 0)
		code = overcommitted(l, node) ? 1 : 0;
	else
		fprintf(stderr, "dra-guard ledger: out of memory\n");
out:
	ledger_free(l);
	if (v)
		view_builder_release(b, v);
	view_builder_free(b);
	policy_free(pol);
	return code;
}
