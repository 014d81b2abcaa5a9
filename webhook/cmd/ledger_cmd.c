/* ledger_cmd.c - dra-guard ledger: the ledger of a recorded cluster, offline,
 * as a table or as the JSON GET /debug/ledger serves. */
#include <errno.h>
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
#include "options.h"
#include "policy.h"
#include "view_file.h"

#define LEDGER_PATHS_MAX 4096

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


struct ledger_args {
	const char *paths[LEDGER_PATHS_MAX];
	size_t npaths;
	const char *policy_path;
	const char *node;
	bool entries;
	bool json;
	int64_t now;
};

static const struct options_choice ledger_outputs[] = {
	{ "table", 0, false }, { "json", 1, false }, { NULL, 0, false },
};

static const struct options_entry ledger_flags[] = {
	{ .name = "view", .type = OPTIONS_LIST, OPTIONS_LIST_AT(struct ledger_args, paths, npaths), .arg = "DUMP",
	  .help = "kubectl get resourceslices,resourceclaims,pods,nodes -A -o json output (repeatable; YAML and"
	  " directories too; - for stdin)" },
	{ .name = "policy", .type = OPTIONS_STRING, OPTIONS_AT(struct ledger_args, policy_path), .arg = "FILE",
	  .def_help = "the built-in policy", .help = "the policy (its NUMA attribute names)" },
	{ .name = "node", .type = OPTIONS_STRING, OPTIONS_AT(struct ledger_args, node), .arg = "NAME",
	  .help = "one node only" },
	{ .name = "entries", .type = OPTIONS_BOOL, OPTIONS_AT(struct ledger_args, entries),
	  .help = "the table lists each node's entries too" },
	{ .name = "output", .type = OPTIONS_ENUM, OPTIONS_AT(struct ledger_args, json), .choices = ledger_outputs,
	  .arg = "FORMAT", .def_help = "table", .help = "table or json (the shape of GET /debug/ledger)" },
	{ .name = "now", .type = OPTIONS_TIME, OPTIONS_AT(struct ledger_args, now), .arg = "TIME",
	  .def_help = "now", .help = "as of TIME (RFC 3339 or seconds since the epoch)" },
};

static const struct options_command ledger_command = {
	.name = "ledger",
	.synopsis = "--view DUMP... [FLAGS]",
	.intro = "Prints the ledger of a recorded cluster: per node and resource, allocatable, the Pods'\n"
		 "own requests, what DRA claims add (by NUMA zone), what the Pod statuses say and the\n"
		 "total the scheduler checks; with --entries (or as JSON) every claim's entries.\n",
	.outro = "Exit status: 0, 1 when a node (with --node: that node) is overcommitted\n"
		 "(ledger.node.overcommit), 2 unusable input or policy.\n",
	.entries = ledger_flags,
	.nentries = sizeof(ledger_flags) / sizeof(ledger_flags[0]),
	.max_args = 0,
};

int ledger_main(int argc, char **argv)
{
	struct ledger_args args;
	const char *policy_path, *node;
	struct view_builder *b = NULL;
	const struct view *v = NULL;
	struct view_dump_stats st;
	struct policy *pol = NULL;
	struct ledger *l = NULL;
	struct buf out;
	bool json, entries;
	int64_t now;
	char err[1024], what[1024];
	int rc, nargs, code = 2;

	memset(&args, 0, sizeof(args));
	args.node = "";
	args.now = clock_wall_ns();
	rc = options_cli(&ledger_command, argc, argv, NULL, &args, &nargs);
	if (rc >= 0)
		return rc;
	if (args.npaths == 0) {
		fprintf(stderr, "dra-guard ledger: no --view given\n");
		return cli_usage_error("ledger");
	}
	policy_path = args.policy_path;
	node = args.node;
	json = args.json;
	entries = args.entries;
	now = args.now;
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
	rc = view_file_load(args.paths, args.npaths, now, &b, &v, &st, err, sizeof(err));
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
