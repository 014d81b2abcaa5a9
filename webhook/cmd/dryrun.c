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
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "clock.h"
#include "decode.h"
#include "doc.h"
#include "dryrun_impl.h"
#include "engine.h"
#include "fileio.h"
#include "inputs.h"
#include "manifest.h"
#include "options.h"
#include "policy.h"
#include "timefmt.h"
#include "view_file.h"

/* --- command line -------------------------------------------------------------------------- */

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

/* --user, --group, --extra and --policy-configmap fill the engine's own
 * types; the rest of the flags are plain fields of struct dryrun. */
static int set_user(void *cfg, const struct options_entry *e, const char *v, char *why, size_t n)
{
	(void)e, (void)why, (void)n;
	((struct dryrun *)cfg)->who.user = str_from_cstr(v);
	return 0;
}

static int set_group(void *cfg, const struct options_entry *e, const char *v, char *why, size_t n)
{
	struct dryrun *d = cfg;

	(void)e;
	if (d->who.ngroups == DRYRUN_MAX_LIST) {
		snprintf(why, n, "given more than %d times", DRYRUN_MAX_LIST);
		return -EINVAL;
	}
	d->groups[d->who.ngroups++] = str_from_cstr(v);
	return 0;
}

static int set_extra(void *cfg, const struct options_entry *e, const char *v, char *why, size_t n)
{
	struct dryrun *d = cfg;
	const char *eq = strchr(v, '=');

	(void)e;
	if (!eq || eq == v) {
		snprintf(why, n, "'%s' is not KEY=VALUE", v);
		return -EINVAL;
	}
	if (d->who.nextras == DRYRUN_MAX_LIST) {
		snprintf(why, n, "given more than %d times", DRYRUN_MAX_LIST);
		return -EINVAL;
	}
	d->extras[d->who.nextras].key = (struct str){ v, (size_t)(eq - v) };
	d->extras[d->who.nextras].value = str_from_cstr(eq + 1);
	d->who.nextras++;
	return 0;
}

static int set_self(void *cfg, const struct options_entry *e, const char *v, char *why, size_t n)
{
	struct engine_options *opt = &((struct dryrun *)cfg)->opt;
	const char *slash = strchr(v, '/');

	(void)e;
	if (!slash || slash == v || !slash[1] || strchr(slash + 1, '/')) {
		snprintf(why, n, "'%s' is not NAMESPACE/NAME", v);
		return -EINVAL;
	}
	opt->self_namespace = (struct str){ v, (size_t)(slash - v) };
	opt->self_name = str_from_cstr(slash + 1);
	return 0;
}

#define D(field) OPTIONS_AT(struct dryrun, field)

static const struct options_choice operations[] = {
	{ "CREATE", ADMISSION_OP_CREATE, false }, { "UPDATE", ADMISSION_OP_UPDATE, false },
	{ "DELETE", ADMISSION_OP_DELETE, false }, { NULL, 0, false },
};

/* The API server's names, and kubectl --validate's. */
static const struct options_choice field_validations[] = {
	{ "Strict", FIELDS_STRICT, false }, { "Warn", FIELDS_WARN, false }, { "Ignore", FIELDS_IGNORE, false },
	{ NULL, 0, false },
};

static const struct options_choice output_formats[] = {
	{ "text", OUTPUT_TEXT, false }, { "json", OUTPUT_JSON, false }, { "junit", OUTPUT_JUNIT, false },
	{ NULL, 0, false },
};

static const struct options_entry dryrun_flags[] = {
	{ .name = "policy", .type = OPTIONS_STRING, D(policy_path), .arg = "FILE", .def_help = "the built-in policy",
	  .help = "a Policy document or the policy ConfigMap" },
	{ .name = "old", .type = OPTIONS_LIST, OPTIONS_LIST_AT(struct dryrun, old_paths, nold), .arg = "PATH",
	  .help = "the stored objects, e.g. kubectl get resourceslices -o yaml (repeatable). An object with a"
	  " stored namesake (same group, kind, namespace and name) is an UPDATE of it; one without is a CREATE" },
	{ .name = "operation", .type = OPTIONS_ENUM, D(operation), .choices = operations, .arg = "OP",
	  .def_help = "CREATE, or UPDATE of a stored namesake",
	  .help = "CREATE, UPDATE (needs a stored namesake) or DELETE" },
	{ .name = "user", .type = OPTIONS_CUSTOM, .set = set_user, .arg = "NAME",
	  .help = "the requesting user; without it the rules about who may write (slice.writer*, status.*) do"
	  " not run, and each result says so" },
	{ .name = "group", .type = OPTIONS_CUSTOM, .set = set_group, .arg = "G",
	  .help = "a group of the user (repeatable)" },
	{ .name = "extra", .type = OPTIONS_CUSTOM, .set = set_extra, .arg = "KEY=VALUE",
	  .help = "a userInfo.extra value (repeatable), e.g. authentication.kubernetes.io/node-name=worker-1" },
	{ .name = "subresource", .type = OPTIONS_STRING, D(subresource), .arg = "S",
	  .help = "status, for resourceclaims/status and pods/status writes; inferred for an UPDATE of a claim"
	  " or Pod that differs from its stored object only under status" },
	{ .name = "namespace", .type = OPTIONS_STRING, D(namespace), .flags = OPTIONS_NONEMPTY, .arg = "NS",
	  .def_help = "default", .help = "the namespace of namespaced objects that name none" },
	{ .name = "freeze", .type = OPTIONS_BOOL, D(opt.force_freeze), .help = "act as if the policy's freeze were on" },
	{ .name = "policy-configmap", .type = OPTIONS_CUSTOM, .set = set_self, .arg = "NAMESPACE/NAME",
	  .def_help = "dra-guard/dra-guard-policy", .help = "the guard's own ConfigMap (policy.invalid)" },
	{ .name = "view", .type = OPTIONS_LIST, OPTIONS_LIST_AT(struct dryrun, view_paths, nview), .arg = "DUMP",
	  .help = "the cluster as the webhook's view would hold it, for the rules that read it"
	  " (slice.generation.stale, slice.pool.collision, ledger.*): the output of kubectl get"
	  " resourceslices,resourceclaims,pods,nodes -A -o json (repeatable; YAML and directories too)."
	  " Overcommitted nodes are reported as warnings" },
	{ .name = "now", .type = OPTIONS_TIME, D(now_ns), .arg = "TIME", .def_help = "now",
	  .help = "judge as of TIME (RFC 3339, e.g. 2026-12-01T10:00:00Z, or seconds since the epoch)" },
	{ .name = "field-validation", .type = OPTIONS_ENUM, D(fields), .choices = field_validations,
	  .flags = OPTIONS_NOCASE, .arg = "V", .def_help = "Warn",
	  .help = "what a field the 1.36 API server does not know (a misspelt nodeAllocatableResourceMappings,"
	  " say) does, as the API server's ?fieldValidation=: Warn (a warning with its path), Strict (the"
	  " object is an error, exit 2: for CI, as kubectl --validate=strict) or Ignore" },
	{ .name = "output", .type = OPTIONS_ENUM, D(output), .choices = output_formats, .arg = "FORMAT",
	  .def_help = "text", .help = "text, json or junit" },
	{ .name = "warn-exit-code", .type = OPTIONS_UINT, D(warn_exit_code), .min = 0, .max = 255, .arg = "N",
	  .def_help = "0", .help = "exit N when there are warnings but no denials" },
};

static const struct options_command dryrun_command = {
	.name = "dry-run",
	.synopsis = "[FLAGS] INPUT...",
	.intro = "Runs the policy engine on manifests, exactly as the webhook would decide them.\n"
		 "INPUT and --old PATH are files, directories (every .yaml, .yml, .json in them) or - for\n"
		 "stdin; each may hold several YAML documents, kind: List (what kubectl get -o yaml prints),\n"
		 "bare objects or whole AdmissionReviews.\n",
	.outro = "Exit status: 0 all allowed, 1 something denied, 2 unusable input or policy.\n",
	.entries = dryrun_flags,
	.nentries = sizeof(dryrun_flags) / sizeof(dryrun_flags[0]),
	.max_args = -1,
};

/* -1 to go on with the *ninputs INPUTs at argv[1..], else the exit code. */
static int parse_args(struct dryrun *d, int argc, char **argv, int *ninputs)
{
	size_t k, stdins;
	int rc, i;

	rc = options_cli(&dryrun_command, argc, argv, NULL, d, ninputs);
	if (rc >= 0)
		return rc;
	if (*ninputs == 0) {
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
	for (i = 1; i <= *ninputs; i++)
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
	int rc, i, ninputs, code = 2;

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
	rc = parse_args(&d, argc, argv, &ninputs);
	if (rc >= 0)
		return rc;
	d.opt.skip_identity_rules = d.who.user.len == 0;
	if (load_policy(&d) || (d.nold && load_old(&d)) || (d.nview && load_view(&d)))
		goto out;
	if (arena_new(DRYRUN_RESULTS_CAP, &d.kept) || arena_new(DRYRUN_ARENA_CAP, &a)) {
		fprintf(stderr, "dra-guard dry-run: out of memory\n");
		goto out;
	}
	for (i = 1; i <= ninputs; i++) {
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
	free(d.results);
	arena_free(d.kept);
	arena_free(a);
	manifest_set_free(d.old_set);
	ledger_free(d.ledger);
	if (d.view)
		view_builder_release(d.view_builder, d.view);
	view_builder_free(d.view_builder);
	policy_free(d.policy);
	return code;
}
