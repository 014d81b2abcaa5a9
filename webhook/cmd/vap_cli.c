/* vap_cli.c - dra-guard vap: the stateless rules as ValidatingAdmissionPolicies.
 *
 * Reads the policy (a file, stdin, or the built-in one), then prints either
 * the YAML stream of policies and bindings (policy/offline/vap.c) or, with
 * --explain, what each rule's policy covers and why some rules have none. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cli.h"
#include "fileio.h"
#include "names.h"
#include "policy.h"
#include "rules.h"
#include "vap.h"

#define VAP_POLICY_FILE_MAX (4 * 1024 * 1024)
#define DEFAULT_CONFIGMAP "dra-guard/dra-guard-policy"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: dra-guard vap [--policy FILE] [--policy-configmap NAMESPACE/NAME]\n"
		"                     [--explain [--output text|json]]\n"
		"\n"
		"Prints, as YAML, admissionregistration.k8s.io/v1 ValidatingAdmissionPolicies and their\n"
		"bindings that make the API server itself enforce the rules that need no state: one\n"
		"policy per rule, with the rule's action as validationActions (deny [Deny], warn [Warn],\n"
		"dryrun [Audit]). Apply them with: dra-guard vap --policy FILE | kubectl apply -f -\n"
		"\n"
		"  --policy FILE              a Policy document or the policy ConfigMap, - for stdin\n"
		"                             (default: the built-in policy)\n"
		"  --policy-configmap NS/NAME the ConfigMap the freeze policies read freeze and\n"
		"                             freeze-reason from at admission time (default\n"
		"                             " DEFAULT_CONFIGMAP ")\n"
		"  --explain                  list every rule: expressed fully or partly (and what is\n"
		"                             left out), or not at all, and why\n"
		"  --output FORMAT            with --explain: text (default) or json\n"
		"\n"
		"Exit status: 0, or 2 for bad arguments or a policy that does not load.\n");
}

enum { OPT_POLICY = 1, OPT_CONFIGMAP, OPT_EXPLAIN, OPT_OUTPUT, OPT_HELP };

static const struct option options[] = {
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "policy-configmap", required_argument, NULL, OPT_CONFIGMAP },
	{ "explain", no_argument, NULL, OPT_EXPLAIN },
	{ "output", required_argument, NULL, OPT_OUTPUT },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

struct vap_args {
	const char *policy;
	const char *configmap;
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

static int parse_args(struct vap_args *a, int argc, char **argv)
{
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (c) {
		case OPT_POLICY: a->policy = optarg; break;
		case OPT_CONFIGMAP: a->configmap = optarg; break;
		case OPT_EXPLAIN: a->explain = true; break;
		case OPT_OUTPUT:
			if (strcmp(optarg, "json") == 0) {
				a->json = true;
			} else if (strcmp(optarg, "text") != 0) {
				fprintf(stderr, "dra-guard vap: --output: \"%s\" (accepted: text, json)\n", optarg);
				return 2;
			}
			break;
		case OPT_HELP:
		case 'h':
			usage(stdout);
			return 1;
		default:
			fprintf(stderr, "dra-guard vap: unknown or incomplete option '%s'\n", argv[optind - 1]);
			return cli_usage_error("vap");
		}
	}
	if (optind < argc) {
		fprintf(stderr, "dra-guard vap: unexpected argument '%s'\n", argv[optind]);
		return cli_usage_error("vap");
	}
	if (a->json && !a->explain) {
		fprintf(stderr, "dra-guard vap: --output goes with --explain\n");
		return 2;
	}
	return 0;
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
	int id, rc = 0;

	buf_init(&b, 1024 * 1024);
	rc = buf_printf(&b, "{\"policyHash\":\"%s\",\"rules\":[", p->hash);
	for (id = 0; id < RULE_COUNT && !rc; id++) {
		struct vap_rule_info info;
		char name[VAP_NAME_MAX];
		enum action a = policy_action(p, (enum rule_id)id);
		bool expressed;

		vap_rule_info(p, (enum rule_id)id, &info);
		vap_object_name((enum rule_id)id, name);
		expressed = info.coverage == VAP_FULL || info.coverage == VAP_PARTIAL;
		rc = buf_printf(&b, "%s{\"rule\":\"%s\",\"action\":\"%s\",\"coverage\":\"%s\",\"policy\":", id ? "," : "",
				rule_name((enum rule_id)id), action_name(a), vap_coverage_name(info.coverage));
		if (!rc)
			rc = expressed ? buf_printf(&b, "\"%s\",\"validationActions\":[\"%s\"]", name, validation_actions(a))
				       : buf_add_cstr(&b, "null,\"validationActions\":[]");
		if (!rc)
			rc = buf_printf(&b, ",\"unchangedPassesUnwarned\":%s",
					vap_rule_ratchets(p, (enum rule_id)id) ? "true" : "false");
		if (!rc)
			rc = buf_add_cstr(&b, ",\"why\":");
		if (!rc)
			rc = info.why ? buf_add_json_str(&b, info.why, strlen(info.why)) : buf_add_cstr(&b, "null");
		if (!rc)
			rc = buf_add_char(&b, '}');
	}
	if (!rc)
		rc = buf_add_cstr(&b, "]}\n");
	if (!rc)
		fputs(buf_cstr(&b), stdout);
	buf_free(&b);
	return rc;
}

int vap_main(int argc, char **argv)
{
	struct vap_args a = { NULL, DEFAULT_CONFIGMAP, false, false };
	struct vap_options opt;
	struct policy *p = NULL;
	struct buf out;
	int rc, code = 0;

	rc = parse_args(&a, argc, argv);
	if (rc)
		return rc == 1 ? 0 : rc;
	if (split_configmap(a.configmap, &opt) != 0) {
		fprintf(stderr, "dra-guard vap: --policy-configmap: \"%s\" is not NAMESPACE/NAME of a ConfigMap\n",
			a.configmap);
		return 2;
	}
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
	rc = vap_render(p, &opt, &out);
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
