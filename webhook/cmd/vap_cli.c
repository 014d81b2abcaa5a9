/* vap_cli.c - dra-guard vap: the stateless rules as ValidatingAdmissionPolicies.
 *
 * Reads the policy (a file, stdin, or the built-in one), then prints either
 * the YAML stream of policies and bindings (policy/offline/vap.c) or, with
 * --explain, what each rule's policy covers and why some rules have none. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cli.h"
#include "fileio.h"
#include "jw.h"
#include "names.h"
#include "options.h"
#include "policy.h"
#include "rules.h"
#include "vap.h"

#define VAP_POLICY_FILE_MAX (4 * 1024 * 1024)
#define DEFAULT_CONFIGMAP "dra-guard/dra-guard-policy"

struct vap_args {
	const char *policy;
	struct vap_options opt;
	bool explain;
	bool json;
};

/* NAMESPACE/NAME: a DNS label and a DNS subdomain, as Kubernetes names them. */
static int split_configmap(const char *s, struct vap_options *opt)
{
	const char *slash = strchr(s, '/');
	struct str ns, name;

	if (!slash)
		return -EINVAL;
	ns = (struct str){ s, (size_t)(slash - s) };
	name = str_from_cstr(slash + 1);
	if (!names_is_dns_subdomain(ns) || memchr(ns.ptr, '.', ns.len) || ns.len > 63 ||
	    !names_is_dns_subdomain(name))
		return -EINVAL;
	opt->param_namespace = ns;
	opt->param_name = name;
	return 0;
}

static int set_configmap(void *cfg, const struct options_entry *e, const char *v, char *why, size_t n)
{
	(void)e;
	if (split_configmap(v, &((struct vap_args *)cfg)->opt) == 0)
		return 0;
	snprintf(why, n, "'%s' is not NAMESPACE/NAME of a ConfigMap (lower-case DNS names)", v);
	return -EINVAL;
}

static const struct options_choice vap_outputs[] = {
	{ "text", 0, false }, { "json", 1, false }, { NULL, 0, false },
};

static const struct options_entry vap_flags[] = {
	{ .name = "policy", .type = OPTIONS_STRING, OPTIONS_AT(struct vap_args, policy), .arg = "FILE",
	  .def_help = "the built-in policy", .help = "a Policy document or the policy ConfigMap, - for stdin" },
	{ .name = "policy-configmap", .type = OPTIONS_CUSTOM, .set = set_configmap, .def = DEFAULT_CONFIGMAP,
	  .arg = "NAMESPACE/NAME",
	  .help = "the ConfigMap the freeze policies read freeze and freeze-reason from at admission time" },
	{ .name = "explain", .type = OPTIONS_BOOL, OPTIONS_AT(struct vap_args, explain),
	  .help = "list every rule: expressed fully or partly (and what is left out), or not at all, and why" },
	{ .name = "output", .type = OPTIONS_ENUM, OPTIONS_AT(struct vap_args, json), .choices = vap_outputs,
	  .arg = "FORMAT", .def_help = "text", .help = "with --explain: text or json" },
};

static const struct options_command vap_command = {
	.name = "vap",
	.synopsis = "[--policy FILE] [--policy-configmap NAMESPACE/NAME] [--explain [--output text|json]]",
	.intro = "Prints, as YAML, admissionregistration.k8s.io/v1 ValidatingAdmissionPolicies and their\n"
		 "bindings that make the API server itself enforce the rules that need no state: one\n"
		 "policy per rule, with the rule's action as validationActions (deny [Deny], warn [Warn],\n"
		 "dryrun [Audit]). Apply them with: dra-guard vap --policy FILE | kubectl apply -f -\n",
	.outro = "Exit status: 0, or 2 for bad arguments or a policy that does not load.\n",
	.entries = vap_flags,
	.nentries = sizeof(vap_flags) / sizeof(vap_flags[0]),
	.max_args = 0,
};

/* -1 to go on, else the exit code. */
static int parse_args(struct vap_args *a, int argc, char **argv)
{
	int nargs, rc = options_cli(&vap_command, argc, argv, NULL, a, &nargs);

	if (rc >= 0)
		return rc;
	if (a->json && !a->explain) {
		fprintf(stderr, "dra-guard vap: --output goes with --explain\\n");
		return cli_usage_error("vap");
	}
	return -1;
}

static int load_policy(const char *path, struct policy **out)
{
	struct policy_error err;
	char line[POLICY_ERROR_MAX + 512];
	char *text = NULL;
	size_t len = 0;
	int rc;

	if (!path)
		return policy_builtin(out);
	rc = strcmp(path, "-") == 0 ? fileio_read_stream(stdin, VAP_POLICY_FILE_MAX, &text, &len)
				    : fileio_read(path, VAP_POLICY_FILE_MAX, &text, &len);
	if (rc) {
		fprintf(stderr, "dra-guard vap: %s: %s\n", path, strerror(-rc));
		return rc;
	}
	rc = policy_load(text, len, out, &err);
	free(text);
	if (rc == -EINVAL) {
		policy_error_format(&err, line, sizeof(line));
		fprintf(stderr, "dra-guard vap: %s: %s\n", path, line);
	} else if (rc) {
		fprintf(stderr, "dra-guard vap: %s: %s\n", path, strerror(-rc));
	}
	return rc;
}

static const char *validation_actions(enum action a)
{
	return a == ACTION_DENY ? "Deny" : a == ACTION_WARN ? "Warn" : "Audit";
}

/* Words of text, wrapped at width, each line indented. */
static void print_wrapped(const char *text, const char *indent, size_t width)
{
	const char *p = text;

	while (*p) {
		size_t n = strlen(p), cut = n;

		if (n > width) {
			cut = width;
			while (cut > 0 && p[cut] != ' ')
				cut--;
			if (cut == 0)
				cut = width;
		}
		printf("%s%.*s\n", indent, (int)cut, p);
		p += cut;
		while (*p == ' ')
			p++;
	}
}

static void explain_text(const struct policy *p)
{
	int id;

	printf("The rules of policy %.12s as ValidatingAdmissionPolicies (dra-guard vap):\n"
	       "full: the API server gives the engine's verdict; partial: never denies what the engine\n"
	       "allows, but allows some of what it denies; none: no policy can express the rule; idle:\n"
	       "nothing to check under this policy.\n\n", p->hash);
	printf("%-28s %-7s %-8s %s\n", "RULE", "ACTION", "VAP", "POLICY AND BINDING");
	for (id = 0; id < RULE_COUNT; id++) {
		struct vap_rule_info info;
		char name[VAP_NAME_MAX];
		enum action a = policy_action(p, (enum rule_id)id);

		vap_rule_info(p, (enum rule_id)id, &info);
		vap_object_name((enum rule_id)id, name);
		if (info.coverage == VAP_FULL || info.coverage == VAP_PARTIAL)
			printf("%-28s %-7s %-8s %s [%s]\n", rule_name((enum rule_id)id), action_name(a),
			       vap_coverage_name(info.coverage), name, validation_actions(a));
		else
			printf("%-28s %-7s %-8s -\n", rule_name((enum rule_id)id), action_name(a),
			       vap_coverage_name(info.coverage));
		if (vap_rule_ratchets(p, (enum rule_id)id))
			printf("    a violation an UPDATE leaves as the stored slice had it passes, as the webhook lets it\n"
			       "    pass, without the webhook's warning\n");
		if (info.why)
			print_wrapped(info.why, "    ", 86);
	}
}

static int explain_json(const struct policy *p)
{
	struct buf b;
	struct jw w;
	int id, rc;

	buf_init(&b, 1024 * 1024);
	jw_init(&w, &b);
	jw_object_begin(&w);
	jw_kcstr(&w, "policyHash", p->hash);
	jw_key(&w, "rules");
	jw_array_begin(&w);
	for (id = 0; id < RULE_COUNT; id++) {
		struct vap_rule_info info;
		char name[VAP_NAME_MAX];
		enum action a = policy_action(p, (enum rule_id)id);
		bool expressed;

		vap_rule_info(p, (enum rule_id)id, &info);
		vap_object_name((enum rule_id)id, name);
		expressed = info.coverage == VAP_FULL || info.coverage == VAP_PARTIAL;
		jw_object_begin(&w);
		jw_kcstr(&w, "rule", rule_name((enum rule_id)id));
		jw_kcstr(&w, "action", action_name(a));
		jw_kcstr(&w, "coverage", vap_coverage_name(info.coverage));
		jw_key(&w, "policy");
		if (expressed)
			jw_cstr(&w, name);
		else
			jw_null(&w);
		jw_key(&w, "validationActions");
		jw_array_begin(&w);
		if (expressed)
			jw_cstr(&w, validation_actions(a));
		jw_array_end(&w);
		jw_kbool(&w, "unchangedPassesUnwarned", vap_rule_ratchets(p, (enum rule_id)id));
		jw_key(&w, "why");
		if (info.why)
			jw_cstr(&w, info.why);
		else
			jw_null(&w);
		jw_object_end(&w);
	}
	jw_array_end(&w);
	jw_object_end(&w);
	rc = jw_finish(&w);
	if (!rc)
		rc = buf_add_char(&b, '\n');
	if (!rc)
		fputs(buf_cstr(&b), stdout);
	buf_free(&b);
	return rc;
}

int vap_main(int argc, char **argv)
{
	struct vap_args a;
	struct policy *p = NULL;
	struct buf out;
	int rc, code = 0;

	memset(&a, 0, sizeof(a));
	rc = parse_args(&a, argc, argv);
	if (rc >= 0)
		return rc;
	if (load_policy(a.policy, &p) != 0)
		return 2;
	if (a.explain) {
		if (a.json)
			code = explain_json(p) ? 2 : 0;
		else
			explain_text(p);
		policy_free(p);
		return code;
	}
	buf_init(&out, VAP_OUTPUT_MAX);
	rc = vap_render(p, &a.opt, &out);
	if (rc) {
		fprintf(stderr, "dra-guard vap: cannot write the policies: %s\n", strerror(-rc));
		code = 2;
	} else if (fwrite(buf_cstr(&out), 1, buf_len(&out), stdout) != buf_len(&out) || fflush(stdout) != 0) {
		fprintf(stderr, "dra-guard vap: writing stdout: %s\n", strerror(errno));
		code = 2;
	}
	buf_free(&out);
	policy_free(p);
	return code;
}
