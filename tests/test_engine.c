/* test_engine.c - every golden AdmissionReview case through the engine, compared whole.
 *
 * Every file in tests/golden/cases (tests/golden/README.md) holds a review, the
 * policy and endpoint to judge it under, what a person decided must happen
 * ("expect", written in tests/golden/gen.py) and the whole verdict recorded
 * from the engine ("verdict"). Each case goes through admission_handle (decode,
 * engine, encode: the server's own path), and what comes out must equal the
 * recorded verdict exactly: every violation (rule, action, path, message) in
 * order, and the response the API server would read (allowed, status code,
 * reason and message, every warning, every audit annotation and the patch).
 * A spurious warning, an extra violation or a changed word fails the case.
 * gen.py --check (run by make test) holds the recorded verdicts to "expect".
 *
 *   test_engine                  run the cases
 *   test_engine --observe DIR    print {"case": verdict, ...} for the cases in
 *                                DIR: what `make golden-update` records
 *
 * Built by the "mutant" flavour (-DDRA_GUARD_MUTANT) this file also defines
 * the seam of policy/rules/mutant.h: DRA_GUARD_MUTANT=<op>:<rule> breaks one rule
 * for the run, and --list-mutants prints every mutant (tools/mutation_check.py).
 * The end-to-end tests send the same files to the real server. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "admission.h"
#include "decode.h"
#include "engine.h"
#include "policy.h"
#include "ledger.h"
#include "ledger_rules.h"
#include "review.h"
#include "testutil.h"
#include "view.h"
#include "view_dump.h"

/* More case files than this is an error, never a silent cut. */
#define GOLDEN_MAX_CASES 4096
/* Fewer than this means the directory is not the one gen.py writes. */
#define GOLDEN_MIN_CASES 50
#define GOLDEN_ERR_MAX 2048

struct golden {
	char *name;                 /* file name without .json */
	json_t *root;
};

struct golden_set {
	struct golden *cases;
	size_t n;
};

static void set_options(struct engine_options *opt, const char *endpoint)
{
	memset(opt, 0, sizeof(*opt));
	opt->mutate = strcmp(endpoint, "mutate") == 0;
	opt->mutating_endpoint = opt->mutate;
	opt->self_name = STR_LIT("dra-guard-policy");
	opt->self_namespace = STR_LIT("dra-guard");
}

static int load_policy_file(const char *rel, struct policy **out, char *err, size_t n)
{
	struct policy_error perr;
	size_t len = 0;
	char *text = NULL;
	int rc;

	if (!rel)
		return policy_builtin(out);
	text = testutil_read_file(testutil_repo_path(rel), &len);
	if (!text) {
		snprintf(err, n, "cannot read policy %s", rel);
		return -ENOENT;
	}
	rc = policy_load(text, len, out, &perr);
	if (rc) {
		char line[1024];

		policy_error_format(&perr, line, sizeof(line));
		snprintf(err, n, "policy %s does not load: %s", rel, line);
	}
	free(text);
	return rc;
}

static bool json_str_is(const json_t *j, const char *s)
{
	return json_is_string(j) && strcmp(json_string_value(j), s) == 0;
}

static json_t *violations_json(const struct verdict *v)
{
	json_t *arr = json_array();
	uint32_t i;

	for (i = 0; arr && i < v->nviolations; i++) {
		const struct violation *vi = &v->violations[i];
		json_t *o = json_pack("{s:s, s:s, s:s%, s:s%}", "rule", rule_name(vi->rule),
				      "action", action_name(vi->action), "path", vi->path.ptr, vi->path.len,
				      "message", vi->message.ptr, vi->message.len);

		if (!o || json_array_append_new(arr, o)) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

/* The AdmissionReview's response as the recording holds it: without the uid
 * (checked here against the request's) and with the patch as JSON rather than
 * base64 (checked here against the engine's patch), so a diff of recordings
 * reads. NULL with err set when the response is malformed. */
static json_t *response_json(const char *body, const json_t *review, const struct verdict *v,
			     char *err, size_t n)
{
	const char *want_uid = json_string_value(json_object_get(json_object_get(review, "request"), "uid"));
	json_error_t jerr;
	json_t *doc = json_loads(body, JSON_REJECT_DUPLICATES, &jerr), *resp = NULL, *patch;
	struct buf b64;

	buf_init(&b64, 16 * 1024 * 1024);
	if (!doc) {
		snprintf(err, n, "response is not JSON: %s", jerr.text);
		goto out;
	}
	if (!json_str_is(json_object_get(doc, "apiVersion"), "admission.k8s.io/v1") ||
	    !json_str_is(json_object_get(doc, "kind"), "AdmissionReview") ||
	    !json_is_object(json_object_get(doc, "response")) || json_object_size(doc) != 3) {
		snprintf(err, n, "not an AdmissionReview v1 answer: %.200s", body);
		goto out;
	}
	resp = json_incref(json_object_get(doc, "response"));
	if (!want_uid || !json_str_is(json_object_get(resp, "uid"), want_uid)) {
		snprintf(err, n, "response uid is not the request's %s", want_uid ? want_uid : "(none)");
		goto fail;
	}
	json_object_del(resp, "uid");
	patch = json_object_get(resp, "patch");
	if (!patch != !v->patch.len) {
		snprintf(err, n, "the engine's patch (%zu bytes) and the response's patch disagree", v->patch.len);
		goto fail;
	}
	if (patch) {
		json_t *parsed;

		if (review_base64(v->patch.ptr, v->patch.len, &b64) ||
		    !json_str_is(patch, buf_cstr(&b64))) {
			snprintf(err, n, "the response's patch is not the base64 of the engine's");
			goto fail;
		}
		parsed = json_loadb(v->patch.ptr, v->patch.len, JSON_REJECT_DUPLICATES, &jerr);
		if (!parsed) {
			snprintf(err, n, "the patch is not JSON: %s", jerr.text);
			goto fail;
		}
		json_object_set_new(resp, "patch", parsed);
	}
	goto out;
fail:
	json_decref(resp);
	resp = NULL;
out:
	buf_free(&b64);
	json_decref(doc);
	return resp;
}

/* A case's cluster view: {"now": seconds since the epoch, "heard": seconds
 * before now the watch was last heard of (0 when absent), "events": [{"at":
 * seconds relative to now, "type": ADDED|MODIFIED|DELETED, "object": {...}}]},
 * applied in order as the watcher would, then published. */
static int build_view(const json_t *spec, struct view_builder **bout, const struct view **vout,
		      int64_t *now_ns, char *err, size_t n)
{
	const json_t *events = json_object_get(spec, "events"), *ev;
	struct view_builder *b = NULL;
	struct arena *a = NULL;
	size_t i;
	int64_t now, heard;
	int rc = -EINVAL;

	*bout = NULL;
	*vout = NULL;
	if (!json_is_integer(json_object_get(spec, "now")) || !json_is_array(events)) {
		snprintf(err, n, "a case's view needs now (seconds) and events");
		return -EINVAL;
	}
	now = (int64_t)json_integer_value(json_object_get(spec, "now")) * 1000000000;
	heard = (int64_t)json_integer_value(json_object_get(spec, "heard")) * 1000000000;
	if (view_builder_new(NULL, &b) || arena_new(64 << 20, &a)) {
		snprintf(err, n, "out of memory");
		goto out;
	}
	json_array_foreach(events, i, ev) {
		const char *type = json_string_value(json_object_get(ev, "type"));
		json_t *obj = json_object_get(ev, "object");
		enum view_event e = !type ? VIEW_ERROR : strcmp(type, "ADDED") == 0 ? VIEW_ADDED
				    : strcmp(type, "MODIFIED") == 0 ? VIEW_MODIFIED
				    : strcmp(type, "DELETED") == 0 ? VIEW_DELETED : VIEW_ERROR;
		char *text = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
		char why[512];

		if (e == VIEW_ERROR || !text || !json_is_integer(json_object_get(ev, "at"))) {
			free(text);
			snprintf(err, n, "view event %zu: needs at, type ADDED|MODIFIED|DELETED and object", i);
			goto out;
		}
		rc = view_builder_apply_json(b, e, text, strlen(text), a,
					     now + (int64_t)json_integer_value(json_object_get(ev, "at")) * 1000000000,
					     why, sizeof(why));
		free(text);
		if (rc != 0) {
			snprintf(err, n, "view event %zu: %s", i, rc == 1 ? "a kind the view does not hold" : why);
			rc = -EINVAL;
			goto out;
		}
	}
	view_builder_touch_all(b, now - heard);
	if ((rc = view_builder_publish(b, vout)) != 0)
		snprintf(err, n, "out of memory publishing");
	*now_ns = now;
out:
	arena_free(a);
	if (rc && b) {
		view_builder_free(b);
		b = NULL;
	}
	*bout = b;
	return rc;
}

/* What the ledger rules could not decide, and the case's ledger as the
 * export shows it. */
static json_t *undecided_json(const struct verdict *v)
{
	json_t *arr = json_array();
	uint32_t i;

	for (i = 0; arr && i < v->nundecided && i < VERDICT_MAX_UNDECIDED; i++)
		json_array_append_new(arr, json_pack("{s:s, s:s}", "rule", rule_name(v->undecided[i].rule),
						     "reason", ledger_reason_name(v->undecided[i].reason)));
	return arr;
}

static json_t *ledger_of(const struct view *view, const struct policy *p, int64_t now, char *err, size_t n)
{
	struct ledger *l = NULL;
	struct buf b;
	json_error_t jerr;
	json_t *j = NULL;

	buf_init(&b, 64 << 20);
	if (ledger_build(view, p, now, 256 << 20, &l) || ledger_json(l, (struct str){ "", 0 }, &b))
		snprintf(err, n, "the ledger could not be built");
	else if (!(j = json_loadb(buf_cstr(&b), buf_len(&b), JSON_REJECT_DUPLICATES, &jerr)))
		snprintf(err, n, "the ledger export is not JSON: %s", jerr.text);
	ledger_free(l);
	buf_free(&b);
	return j;
}

/* The whole verdict on one case: {"response": ..., "violations": [...]}
 * (and, with a view, "undecided" and "ledger"), or NULL with why in err. */
static json_t *observe(const struct golden *g, char *err, size_t n)
{
	const json_t *review = json_object_get(g->root, "review");
	const char *endpoint = json_string_value(json_object_get(g->root, "endpoint"));
	const char *policy_rel = json_string_value(json_object_get(g->root, "policy"));
	const json_t *view_spec = json_object_get(g->root, "view");
	struct policy *p = NULL;
	struct arena *a = NULL;
	struct admission_result res;
	struct engine_options opt;
	struct decode_limits lim;
	struct view_builder *vb = NULL;
	const struct view *view = NULL;
	int64_t now = 0;
	json_t *verdict = NULL, *resp = NULL, *viol = NULL;
	char *body = NULL;
	struct buf out;
	int rc;

	buf_init(&out, 16 * 1024 * 1024);
	if (!json_is_object(review) || !endpoint || (strcmp(endpoint, "validate") && strcmp(endpoint, "mutate"))) {
		snprintf(err, n, "a case needs a review object and endpoint validate or mutate");
		goto out;
	}
	if (load_policy_file(policy_rel, &p, err, n))
		goto out;
	if (view_spec && build_view(view_spec, &vb, &view, &now, err, n))
		goto out;
	body = json_dumps(review, JSON_COMPACT);
	if (!body || arena_new(64 * 1024 * 1024, &a)) {
		snprintf(err, n, "out of memory");
		goto out;
	}
	decode_limits_default(&lim);
	set_options(&opt, endpoint);
	/* The server's /mutate when no replica could release a gated Pod. */
	opt.gate_unreleasable = json_is_true(json_object_get(g->root, "gateUnreleasable"));
	rc = admission_handle(p, view, now, &opt, &lim, body, strlen(body), a, &out, &res);
	if (rc || res.http_status != 200) {
		snprintf(err, n, "admission_handle: %d, HTTP status %d: %s", rc, res.http_status, buf_cstr(&out));
		goto out;
	}
	resp = response_json(buf_cstr(&out), review, &res.verdict, err, n);
	viol = violations_json(&res.verdict);
	if (!resp || !viol) {
		if (resp)
			snprintf(err, n, "out of memory");
		goto out;
	}
	verdict = json_pack("{s:O, s:O}", "response", resp, "violations", viol);
	if (!verdict)
		snprintf(err, n, "out of memory");
	if (verdict && opt.gate_unreleasable)
		json_object_set_new(verdict, "gateWithheld", json_boolean(res.verdict.gate_withheld));
	if (verdict && view) {
		json_t *ledger = ledger_of(view, p, now, err, n);

		if (!ledger) {
			json_decref(verdict);
			verdict = NULL;
			goto out;
		}
		json_object_set_new(verdict, "undecided", undecided_json(&res.verdict));
		json_object_set_new(verdict, "ledger", ledger);
	}
out:
	if (view)
		view_builder_release(vb, view);
	view_builder_free(vb);
	json_decref(resp);
	json_decref(viol);
	buf_free(&out);
	arena_free(a);
	free(body);
	policy_free(p);
	return verdict;
}

static void print_json(const char *label, const json_t *j)
{
	char *s = j ? json_dumps(j, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;

	print_message("  %s: %s\n", label, s ? s : "(absent)");
	free(s);
}

/* Show only what differs: the response's members, then the violations. */
static void print_difference(const json_t *want, const json_t *got)
{
	const json_t *wr = json_object_get(want, "response"), *gr = json_object_get(got, "response");
	const char *key;
	json_t *val;

	json_object_foreach((json_t *)wr, key, val)
		if (!json_equal(val, json_object_get(gr, key))) {
			print_message(" response.%s\n", key);
			print_json("recorded", val);
			print_json("observed", json_object_get(gr, key));
		}
	json_object_foreach((json_t *)gr, key, val)
		if (!json_object_get(wr, key)) {
			print_message(" response.%s\n", key);
			print_json("recorded", NULL);
			print_json("observed", val);
		}
	if (!json_equal(json_object_get(want, "violations"), json_object_get(got, "violations"))) {
		print_message(" violations\n");
		print_json("recorded", json_object_get(want, "violations"));
		print_json("observed", json_object_get(got, "violations"));
	}
}

static void run_golden(void **state)
{
	const struct golden *g = *state;
	const json_t *want = json_object_get(g->root, "verdict");
	char err[GOLDEN_ERR_MAX] = "";
	json_t *got = observe(g, err, sizeof(err));

	if (!got)
		fail_msg("%s: %s", g->name, err);
	if (!json_is_object(want)) {
		json_decref(got);
		fail_msg("%s: no recorded verdict (make golden-update records them)", g->name);
	}
	if (!json_equal(want, got)) {
		print_difference(want, got);
		json_decref(got);
		fail_msg("%s: the verdict differs from the recorded one (make golden-update records "
			 "it again; review the diff)", g->name);
	}
	json_decref(got);
}

static int cmp_golden(const void *a, const void *b)
{
	return strcmp(((const struct golden *)a)->name, ((const struct golden *)b)->name);
}

static void golden_set_free(struct golden_set *s)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		free(s->cases[i].name);
		json_decref(s->cases[i].root);
	}
	free(s->cases);
	s->cases = NULL;
	s->n = 0;
}

/* Every *.json in dir, sorted by name. 0, or -1 after saying why on stderr
 * (a file that does not parse, more than GOLDEN_MAX_CASES files). */
static int golden_set_load(const char *dir, struct golden_set *s)
{
	struct dirent *e;
	DIR *dp = opendir(dir);
	int rc = -1;

	memset(s, 0, sizeof(*s));
	if (!dp) {
		fprintf(stderr, "test_engine: cannot open %s: %s\n", dir, strerror(errno));
		return -1;
	}
	s->cases = calloc(GOLDEN_MAX_CASES, sizeof(*s->cases));
	if (!s->cases)
		goto out;
	while ((e = readdir(dp)) != NULL) {
		size_t len = strlen(e->d_name);
		struct golden *g;
		json_error_t jerr;
		char path[4096];

		if (len <= 5 || strcmp(e->d_name + len - 5, ".json") != 0)
			continue;
		if (s->n == GOLDEN_MAX_CASES) {
			fprintf(stderr, "test_engine: more than %d case files in %s (raise GOLDEN_MAX_CASES)\n",
				GOLDEN_MAX_CASES, dir);
			goto out;
		}
		g = &s->cases[s->n++];
		g->name = strndup(e->d_name, len - 5);
		if (!g->name)
			goto out;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= sizeof(path)) {
			fprintf(stderr, "test_engine: path too long: %s/%s\n", dir, e->d_name);
			goto out;
		}
		g->root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
		if (!g->root) {
			fprintf(stderr, "test_engine: %s: line %d: %s\n", path, jerr.line, jerr.text);
			goto out;
		}
	}
	qsort(s->cases, s->n, sizeof(*s->cases), cmp_golden);
	rc = 0;
out:
	closedir(dp);
	if (rc)
		golden_set_free(s);
	return rc;
}

/* --observe DIR: one JSON object, case name -> verdict, on stdout. */
static int observe_all(const char *dir)
{
	struct golden_set set;
	json_t *all = json_object();
	char err[GOLDEN_ERR_MAX];
	int rc = 1;
	size_t i;

	if (!all || golden_set_load(dir, &set))
		goto out;
	for (i = 0; i < set.n; i++) {
		json_t *v = observe(&set.cases[i], err, sizeof(err));

		if (!v) {
			fprintf(stderr, "test_engine: %s: %s\n", set.cases[i].name, err);
			goto out_set;
		}
		json_object_set_new(all, set.cases[i].name, v);
	}
	if (json_dumpf(all, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER) == 0 && fflush(stdout) == 0)
		rc = 0;
out_set:
	golden_set_free(&set);
out:
	json_decref(all);
	return rc;
}

#ifdef DRA_GUARD_MUTANT
#include "mutant.h"

/* The mutant of this run, from DRA_GUARD_MUTANT=<op>:<rule>. */
enum mutant_op {
	MUTANT_NONE = 0,
	MUTANT_DROP,        /* the rule never reports */
	MUTANT_FLIP,        /* deny becomes warn; warn and dryrun become deny */
	MUTANT_FIRE,        /* the rule reports on every request of its kind */
	MUTANT_ONCE,        /* the rule reports only its first violation of a request */
	MUTANT_OP_COUNT
};

static const char *const mutant_op_names[MUTANT_OP_COUNT] = { "", "drop", "flip", "fire", "once" };
static enum mutant_op mutant_op;
static enum rule_id mutant_rule;

/* The kind a rule is about, from its id's family. */
static enum object_kind rule_kind(enum rule_id id)
{
	static const struct {
		const char *prefix;
		enum object_kind kind;
	} families[] = {
		{ "slice.", OBJECT_RESOURCE_SLICE },
		{ "claim.", OBJECT_RESOURCE_CLAIM },
		{ "status.allocation.", OBJECT_RESOURCE_CLAIM },
		{ "status.devices.", OBJECT_RESOURCE_CLAIM },
		{ "status.pod.", OBJECT_POD },
		{ "ledger.pool.", OBJECT_RESOURCE_CLAIM },
		{ "ledger.device.", OBJECT_RESOURCE_CLAIM },
		{ "ledger.numa.", OBJECT_RESOURCE_CLAIM },
		{ "ledger.pod.", OBJECT_POD },
		{ "ledger.mapping.", OBJECT_RESOURCE_SLICE },
		{ "policy.", OBJECT_CONFIG_MAP },
	};
	size_t i;

	for (i = 0; i < sizeof(families) / sizeof(families[0]); i++)
		if (strncmp(rule_name(id), families[i].prefix, strlen(families[i].prefix)) == 0)
			return families[i].kind;
	return OBJECT_NONE;
}

int mutant_action(enum rule_id id, enum action resolved, const struct verdict *so_far)
{
	uint32_t i;

	if (id != mutant_rule)
		return (int)resolved;
	switch (mutant_op) {
	case MUTANT_DROP:
		return -1;
	case MUTANT_FLIP:
		return resolved == ACTION_DENY ? ACTION_WARN : ACTION_DENY;
	case MUTANT_ONCE:
		for (i = 0; i < so_far->nviolations; i++)
			if (so_far->violations[i].rule == id)
				return -1;
		break;
	case MUTANT_NONE:
	case MUTANT_FIRE:
	case MUTANT_OP_COUNT:
		break;
	}
	return (int)resolved;
}

bool mutant_fires(enum rule_id id, enum object_kind kind)
{
	return mutant_op == MUTANT_FIRE && id == mutant_rule && rule_kind(id) == kind;
}

static int mutant_list(void)
{
	enum rule_id r;
	int op;

	for (op = MUTANT_DROP; op < MUTANT_OP_COUNT; op++)
		for (r = 0; r < RULE_COUNT; r++) {
			if (op == MUTANT_FIRE && rule_kind(r) == OBJECT_NONE) {
				fprintf(stderr, "test_engine: rule %s belongs to no kind (rule_kind)\n", rule_name(r));
				return 1;
			}
			printf("%s:%s\n", mutant_op_names[op], rule_name(r));
		}
	return 0;
}

static int mutant_select(void)
{
	const char *spec = getenv("DRA_GUARD_MUTANT"), *colon;
	int op, id;

	if (!spec || !*spec)
		return 0;
	colon = strchr(spec, ':');
	for (op = MUTANT_DROP; colon && op < MUTANT_OP_COUNT; op++)
		if (strlen(mutant_op_names[op]) == (size_t)(colon - spec) &&
		    strncmp(spec, mutant_op_names[op], (size_t)(colon - spec)) == 0)
			break;
	id = colon ? rule_lookup(str_from_cstr(colon + 1)) : -1;
	if (!colon || op == MUTANT_OP_COUNT || id < 0 || (op == MUTANT_FIRE && rule_kind((enum rule_id)id) == OBJECT_NONE)) {
		fprintf(stderr, "test_engine: DRA_GUARD_MUTANT=%s is not <drop|flip|fire|once>:<rule>\n", spec);
		return -1;
	}
	mutant_op = (enum mutant_op)op;
	mutant_rule = (enum rule_id)id;
	return 0;
}
#endif

int main(int argc, char **argv)
{
	struct golden_set set;
	struct CMUnitTest *tests = NULL;
	size_t i;
	int failed;

#ifdef DRA_GUARD_MUTANT
	if (argc == 2 && strcmp(argv[1], "--list-mutants") == 0)
		return mutant_list();
	if (mutant_select())
		return 2;
#endif
	if (argc == 3 && strcmp(argv[1], "--observe") == 0)
		return observe_all(argv[2]);
	if (argc != 1) {
		fprintf(stderr, "usage: test_engine [--observe DIR]\n");
		return 2;
	}
	if (golden_set_load(testutil_repo_path("tests/golden/cases"), &set))
		return 1;
	if (set.n < GOLDEN_MIN_CASES) {
		fprintf(stderr, "test_engine: only %zu golden cases found\n", set.n);
		golden_set_free(&set);
		return 1;
	}
	tests = calloc(set.n, sizeof(*tests));
	if (!tests) {
		golden_set_free(&set);
		return 1;
	}
	for (i = 0; i < set.n; i++) {
		tests[i].name = set.cases[i].name;
		tests[i].test_func = run_golden;
		tests[i].initial_state = &set.cases[i];
	}
	failed = _cmocka_run_group_tests("golden", tests, set.n, NULL, NULL);
	free(tests);
	golden_set_free(&set);
	return failed ? 1 : 0;      /* a count of 256 would exit 0 */
}
