/* dryrun.c - dra-guard dry-run: the engine offline. This file is the
 * command line: options, the policy and --old, running the inputs and the
 * exit code. Walking the inputs and deciding each object is
 * dryrun_input.c, printing the results dryrun_output.c; policy lint and
 * rules are dryrun_lint.c.
 *
 * dry-run reads manifests (YAML or JSON; several documents, kind: List,
 * bare objects or whole AdmissionReviews), turns each object into the same
 * typed request the server decodes, and asks the same engine. Bare objects
 * are wrapped in a synthetic request (CREATE, or UPDATE against --old);
 * AdmissionReviews are answered exactly as the server would answer them.
 *
 * Exit codes: 0 all allowed, 1 something denied, 2 unusable input or policy,
 * --warn-exit-code N when there were warnings but no denials. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <jansson.h>

#include "cli.h"
#include "clock.h"
#include "decode.h"
#include "doc.h"
#include "dryrun_impl.h"
#include "engine.h"
#include "fileio.h"
#include "inputs.h"
#include "manifest.h"
#include "policy.h"
#include "timefmt.h"
#include "view_file.h"

/* --- command line -------------------------------------------------------------------------- */

static void dryrun_usage(FILE *f)
{
	fprintf(f,
		"usage: dra-guard dry-run [--policy FILE] [--old PATH]... [--operation CREATE|UPDATE|DELETE]\n"
		"                         [--user NAME] [--group G]... [--extra KEY=VALUE]... [--subresource S]\n"
		"                         [--namespace NS] [--freeze] [--policy-configmap NAMESPACE/NAME]\n"
		"                         [--view DUMP]... [--now TIME]\n"
		"                         [--field-validation Strict|Warn|Ignore]\n"
		"                         [--output text|json|junit] [--warn-exit-code N] INPUT...\n"
		"\n"
		"Runs the policy engine on manifests, exactly as the webhook would decide them.\n"
		"INPUT and --old PATH are files, directories (every .yaml, .yml, .json in them) or - for\n"
		"stdin; each may hold several YAML documents, kind: List (what kubectl get -o yaml prints),\n"
		"bare objects or whole AdmissionReviews.\n"
		"\n"
		"  --policy FILE         a Policy document or the policy ConfigMap (default: built-in policy)\n"
		"  --old PATH            the stored objects, e.g. kubectl get resourceslices -o yaml\n"
		"                        (repeatable). An object with a stored namesake (same group, kind,\n"
		"                        namespace and name) is an UPDATE of it; one without is a CREATE\n"
		"  --operation OP        CREATE, UPDATE (needs a stored namesake) or DELETE; default: as above\n"
		"  --user NAME           the requesting user; without it the rules about who may write\n"
		"                        (slice.writer*, status.*) do not run, and each result says so\n"
		"  --group G             a group of the user (repeatable)\n"
		"  --extra KEY=VALUE     a userInfo.extra value (repeatable), e.g.\n"
		"                        authentication.kubernetes.io/node-name=worker-1\n"
		"  --subresource S       status, for resourceclaims/status and pods/status writes; inferred\n"
		"                        for an UPDATE of a claim or Pod that differs from its stored\n"
		"                        object only under status\n"
		"  --namespace NS        the namespace of namespaced objects that name none (default: default)\n"
		"  --freeze              act as if the policy's freeze were on\n"
		"  --policy-configmap NS/NAME  the guard's own ConfigMap (policy.invalid; default\n"
		"                        dra-guard/dra-guard-policy)\n"
		"  --view DUMP           the cluster as the webhook's view would hold it, for the rules that read\n"
		"                        it (slice.generation.stale, slice.pool.collision, ledger.*): the output of\n"
		"                        kubectl get resourceslices,resourceclaims,pods,nodes -A -o json (repeatable;\n"
		"                        YAML and directories too). Overcommitted nodes are reported as warnings\n"
		"  --now TIME            judge as of TIME (RFC 3339, e.g. 2026-12-01T10:00:00Z, or seconds since\n"
		"                        the epoch) instead of now\n"
		"  --field-validation V  what a field the 1.36 API server does not know (a misspelt\n"
		"                        nodeAllocatableResourceMappings, say) does, as the API server's\n"
		"                        ?fieldValidation=: Warn (default:\n"
		"                        a warning with its path), Strict (the object is an error, exit 2: for CI,\n"
		"                        as kubectl --validate=strict) or Ignore\n"
		"  --output FORMAT       text (default), json or junit\n"
		"  --warn-exit-code N    exit N when there are warnings but no denials (default 0)\n"
		"\n"
		"Exit status: 0 all allowed, 1 something denied, 2 unusable input or policy.\n");
}

static int parse_op(const char *s, enum admission_op *op)
{
	*op = model_op_parse(str_from_cstr(s));
	return *op == ADMISSION_OP_CREATE || *op == ADMISSION_OP_UPDATE || *op == ADMISSION_OP_DELETE ? 0 : -EINVAL;
}

static int parse_self(const char *s, struct engine_options *opt)
{
	const char *slash = strchr(s, '/');

	if (!slash || slash == s || !slash[1] || strchr(slash + 1, '/'))
		return -EINVAL;
	opt->self_namespace = (struct str){ s, (size_t)(slash - s) };
	opt->self_name = str_from_cstr(slash + 1);
	return 0;
}

static int load_policy(struct dryrun *d)
{
	char *text = NULL;
	size_t len = 0;
	int rc;

	if (!d->policy_path)
		return policy_builtin(&d->policy);
	rc = fileio_read(d->policy_path, 4 * 1024 * 1024, &text, &len);
	if (rc) {
		fprintf(stderr, "dra-guard dry-run: --policy %s: %s\n", d->policy_path, strerror(-rc));
		return rc;
	}
	rc = dryrun_policy_load(d->policy_path, "dra-guard dry-run: --policy ", text, len, &d->policy);
	free(text);
	return rc;
}

/* Read every --old path. Any stored document that cannot be used fails
 * the run: it may have been the namesake of an input, which would then be
 * decided as a CREATE. */
static int load_old(struct dryrun *d)
{
	struct manifest_options mopt;
	char where[PATH_MAX + 64];
	size_t i, bad = 0;
	int rc = 0;

	manifest_options_default(&mopt);
	mopt.doc.max_bytes = DRYRUN_MAX_INPUT;
	mopt.default_namespace = d->namespace;
	rc = manifest_set_new(&mopt, &d->old_set);
	for (i = 0; rc == 0 && i < d->nold; i++)
		rc = inputs_read(d->old_set, d->old_paths[i], DRYRUN_MAX_INPUT);
	if (rc == -ENOMEM) {
		fprintf(stderr, "dra-guard dry-run: --old: out of memory\n");
		return rc;
	}
	for (i = 0; d->old_set && i < manifest_set_count(d->old_set); i++) {
		const struct manifest_entry *e = manifest_set_entry(d->old_set, i);
		const char *why = e->error;

		if (!why && str_eq_cstr(e->id.kind, "AdmissionReview"))
			why = "an AdmissionReview is not a stored object";
		if (!why)
			continue;
		dryrun_position(e->file, e->line, e->col, where, sizeof(where));
		fprintf(stderr, "dra-guard dry-run: --old %s: %s", where, why);
		if (e->id.kind.len || e->id.name.len)
			fprintf(stderr, " (%.*s \"%.*s\")", STR_FMT(e->id.kind), STR_FMT(e->id.name));
		fputc('\n', stderr);
		bad++;
	}
	if (bad) {
		fprintf(stderr, "dra-guard dry-run: --old: %zu stored %s cannot be used; fix or remove %s\n", bad,
			bad == 1 ? "document" : "documents", bad == 1 ? "it" : "them");
		return -EINVAL;
	}
	return rc == -E2BIG ? -EINVAL : rc;
}

enum {
	OPT_POLICY = 256, OPT_OLD, OPT_OPERATION, OPT_USER, OPT_GROUP, OPT_EXTRA, OPT_SUBRESOURCE,
	OPT_OUTPUT, OPT_WARN_EXIT, OPT_FREEZE, OPT_SELF, OPT_NAMESPACE, OPT_VIEW, OPT_NOW, OPT_HELP,
	OPT_FIELDS,
};

static const struct option dryrun_options[] = {
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "old", required_argument, NULL, OPT_OLD },
	{ "operation", required_argument, NULL, OPT_OPERATION },
	{ "user", required_argument, NULL, OPT_USER },
	{ "group", required_argument, NULL, OPT_GROUP },
	{ "extra", required_argument, NULL, OPT_EXTRA },
	{ "subresource", required_argument, NULL, OPT_SUBRESOURCE },
	{ "output", required_argument, NULL, OPT_OUTPUT },
	{ "warn-exit-code", required_argument, NULL, OPT_WARN_EXIT },
	{ "freeze", no_argument, NULL, OPT_FREEZE },
	{ "policy-configmap", required_argument, NULL, OPT_SELF },
	{ "namespace", required_argument, NULL, OPT_NAMESPACE },
	{ "view", required_argument, NULL, OPT_VIEW },
	{ "now", required_argument, NULL, OPT_NOW },
	{ "field-validation", required_argument, NULL, OPT_FIELDS },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

static int parse_args(struct dryrun *d, int argc, char **argv)
{
	char *end;
	long n;
	int c, i;
	size_t k, stdins;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", dryrun_options, NULL)) != -1) {
		switch (c) {
		case OPT_POLICY: d->policy_path = optarg; break;
		case OPT_OLD:
			if (d->nold == DRYRUN_MAX_LIST) {
				fprintf(stderr, "dra-guard dry-run: more than %d --old paths\n", DRYRUN_MAX_LIST);
				return 2;
			}
			d->old_paths[d->nold++] = optarg;
			break;
		case OPT_NAMESPACE:
			if (!optarg[0]) {
				fprintf(stderr, "dra-guard dry-run: --namespace: expected a namespace name\n");
				return 2;
			}
			d->namespace = optarg;
			break;
		case OPT_OPERATION:
			if (parse_op(optarg, &d->operation)) {
				fprintf(stderr, "dra-guard dry-run: --operation %s: expected CREATE, UPDATE or DELETE\n", optarg);
				return 2;
			}
			break;
		case OPT_USER: d->who.user = str_from_cstr(optarg); break;
		case OPT_GROUP:
			if (d->who.ngroups == DRYRUN_MAX_LIST) {
				fprintf(stderr, "dra-guard dry-run: more than %d --group flags\n", DRYRUN_MAX_LIST);
				return 2;
			}
			d->groups[d->who.ngroups++] = str_from_cstr(optarg);
			break;
		case OPT_EXTRA: {
			const char *eq = strchr(optarg, '=');

			if (!eq || eq == optarg || d->who.nextras == DRYRUN_MAX_LIST) {
				fprintf(stderr, "dra-guard dry-run: --extra %s: expected KEY=VALUE\n", optarg);
				return 2;
			}
			d->extras[d->who.nextras].key = (struct str){ optarg, (size_t)(eq - optarg) };
			d->extras[d->who.nextras].value = str_from_cstr(eq + 1);
			d->who.nextras++;
			break;
		}
		case OPT_SUBRESOURCE: d->subresource = optarg; break;
		case OPT_VIEW:
			if (d->nview == DRYRUN_MAX_LIST) {
				fprintf(stderr, "dra-guard dry-run: more than %d --view paths\n", DRYRUN_MAX_LIST);
				return 2;
			}
			d->view_paths[d->nview++] = optarg;
			break;
		case OPT_NOW:
			if (cli_parse_time(optarg, &d->now_ns) != 0) {
				fprintf(stderr, "dra-guard dry-run: --now %s: expected RFC 3339 (2026-12-01T10:00:00Z) "
					"or seconds since the epoch\n", optarg);
				return 2;
			}
			break;
		case OPT_FIELDS:
			/* The API server's names, and kubectl --validate's. */
			if (strcasecmp(optarg, "Warn") == 0)
				d->fields = FIELDS_WARN;
			else if (strcasecmp(optarg, "Strict") == 0)
				d->fields = FIELDS_STRICT;
			else if (strcasecmp(optarg, "Ignore") == 0)
				d->fields = FIELDS_IGNORE;
			else {
				fprintf(stderr, "dra-guard dry-run: --field-validation %s: expected Strict, Warn or Ignore\n",
					optarg);
				return cli_usage_error("dry-run");
			}
			break;
		case OPT_OUTPUT:
			if (strcmp(optarg, "text") == 0)
				d->output = OUTPUT_TEXT;
			else if (strcmp(optarg, "json") == 0)
				d->output = OUTPUT_JSON;
			else if (strcmp(optarg, "junit") == 0)
				d->output = OUTPUT_JUNIT;
			else {
				fprintf(stderr, "dra-guard dry-run: --output %s: expected text, json or junit\n", optarg);
				return cli_usage_error("dry-run");
			}
			break;
		case OPT_WARN_EXIT:
			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || n < 0 || n > 255) {
				fprintf(stderr, "dra-guard dry-run: --warn-exit-code %s: expected 0..255\n", optarg);
				return cli_usage_error("dry-run");
			}
			d->warn_exit_code = (int)n;
			break;
		case OPT_FREEZE: d->opt.force_freeze = true; break;
		case OPT_SELF:
			if (parse_self(optarg, &d->opt)) {
				fprintf(stderr, "dra-guard dry-run: --policy-configmap %s: expected NAMESPACE/NAME\n", optarg);
				return 2;
			}
			break;
		case OPT_HELP:
		case 'h':
			dryrun_usage(stdout);
			return 0;
		default:
			return cli_usage_error("dry-run");
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "dra-guard dry-run: no INPUT given\n");
		return cli_usage_error("dry-run");
	}
	if (d->operation == ADMISSION_OP_UPDATE && d->nold == 0) {
		fprintf(stderr, "dra-guard dry-run: --operation UPDATE needs --old with the stored objects\n");
		return 2;
	}
	/* stdin can be read once. */
	for (k = 0, stdins = 0; k < d->nold; k++)
		stdins += strcmp(d->old_paths[k], "-") == 0;
	for (k = 0; k < d->nview; k++)
		stdins += strcmp(d->view_paths[k], "-") == 0;
	for (i = optind; i < argc; i++)
		stdins += strcmp(argv[i], "-") == 0;
	if (stdins > 1) {
		fprintf(stderr, "dra-guard dry-run: - (stdin) is named more than once; it can be read once\n");
		return 2;
	}
	return -1;
}

/* The cluster view from --view, and what it holds on stderr. */
static int load_view(struct dryrun *d)
{
	struct view_dump_stats st;
	char err[1024], what[1024];
	int rc = view_file_load(d->view_paths, d->nview, d->now_ns, &d->view_builder, &d->view, &st, err,
				sizeof(err));

	if (rc) {
		fprintf(stderr, "dra-guard dry-run: --view: %s\n", rc == -ENOMEM ? "out of memory" : err);
		return rc;
	}
	view_file_describe(d->view, &st, what, sizeof(what));
	fprintf(stderr, "dra-guard dry-run: --view: %s\n", what);
	return 0;
}

/* The view's ledger: an overcommitted node (ledger.node.overcommit) is a
 * warning of the run (--warn-exit-code), not a denial of any object. */
static void judge_ledger(struct dryrun *d)
{
	if (ledger_build(d->view, d->policy, d->now_ns, (size_t)1 << 30, &d->ledger) != 0) {
		fprintf(stderr, "dra-guard dry-run: --view: the ledger could not be built (out of memory)\n");
		d->errors++;
	}
}

int dryrun_main(int argc, char **argv)
{
	struct dryrun d;
	struct arena *a = NULL;
	int rc, i, code = 2;

	memset(&d, 0, sizeof(d));
	d.warn_exit_code = -1;
	d.who.user = STR_LIT("");
	d.who.groups = d.groups;
	d.who.extras = d.extras;
	d.namespace = "default";
	d.subresource = "";
	d.now_ns = clock_wall_ns();
	d.opt.mutate = true;
	d.opt.self_namespace = STR_LIT("dra-guard");
	d.opt.self_name = STR_LIT("dra-guard-policy");
	decode_limits_default(&d.lim);
	rc = parse_args(&d, argc, argv);
	if (rc >= 0)
		return rc;
	d.opt.skip_identity_rules = d.who.user.len == 0;
	if (load_policy(&d) || (d.nold && load_old(&d)) || (d.nview && load_view(&d)))
		goto out;
	d.results = json_array();
	if (!d.results || arena_new(DRYRUN_ARENA_CAP, &a)) {
		fprintf(stderr, "dra-guard dry-run: out of memory\n");
		goto out;
	}
	for (i = optind; i < argc; i++) {
		if (dryrun_run_input(&d, argv[i], a) == -E2BIG) {
			fprintf(stderr, "dra-guard dry-run: more than %d objects in one run; the rest was not read "
				"(split the input)\n", DRYRUN_MAX_OBJECTS);
			d.errors++;
			break;
		}
	}
	if (d.view)
		judge_ledger(&d);
	if (d.output == OUTPUT_JSON)
		dryrun_print_json(&d);
	else if (d.output == OUTPUT_JUNIT)
		dryrun_print_junit(&d);
	else
		dryrun_print_text(&d);
	if (d.errors)
		code = 2;
	else if (d.denied)
		code = 1;
	else if ((d.warned || (d.ledger && d.ledger->overcommitted)) && d.warn_exit_code >= 0)
		code = d.warn_exit_code;
	else
		code = 0;
out:
	json_decref(d.results);
	arena_free(a);
	manifest_set_free(d.old_set);
	ledger_free(d.ledger);
	if (d.view)
		view_builder_release(d.view_builder, d.view);
	view_builder_free(d.view_builder);
	policy_free(d.policy);
	return code;
}
