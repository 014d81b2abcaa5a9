/* test_policy_source.c - policy loads, reloads, last good, readiness,
 * freeze tracking, from a directory laid out the kubelet's way. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "metrics.h"
#include "policy.h"
#include "policy_source.h"
#include "testmetrics.h"
#include "testutil.h"

#define GOOD_POLICY "apiVersion: dra-guard.io/v1alpha1\nkind: Policy\n"
#define OTHER_POLICY "apiVersion: dra-guard.io/v1alpha1\nkind: Policy\nenforcement:\n  default: warn\n"
#define BROKEN_POLICY "apiVersion: dra-guard.io/v1alpha1\nkind: Policy\nenforcement:\n  defualt: deny\n"

static char root[256];
static FILE *logf_;

static int setup(void **state)
{
	(void)state;
	if (testutil_tmpdir(root, sizeof(root), "policy-source") != 0)
		return -1;
	logf_ = tmpfile();
	if (!logf_)
		return -1;
	log_set_fd(fileno(logf_));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	log_set_fd(-1);
	fclose(logf_);
	testutil_run("rm -rf %s", root);
	return 0;
}

/* The log written since the last call. */
static char *take_log(void)
{
	static long done;
	long end = lseek(fileno(logf_), 0, SEEK_END);
	char *text = calloc(1, (size_t)(end - done) + 1);

	assert_non_null(text);
	assert_int_equal(pread(fileno(logf_), text, (size_t)(end - done), done), end - done);
	done = end;
	return text;
}

/* Publish a new version of the ConfigMap directory dir, the kubelet's way:
 * keys with value NULL are absent from that version. */
static void publish(const char *dir, const char *doc, const char *freeze, const char *reason)
{
	static int version;
	char v[64];

	snprintf(v, sizeof(v), "..2026_11_29_10_00_%02d.%d", version % 60, version);
	version++;
	testutil_run("mkdir -p %s/%s/%s", root, dir, v);
	if (doc)
		testutil_run("printf '%%s' '%s' > %s/%s/%s/policy.yaml", doc, root, dir, v);
	if (freeze)
		testutil_run("printf '%%s' '%s' > %s/%s/%s/freeze", freeze, root, dir, v);
	if (reason)
		testutil_run("printf '%%s' '%s' > %s/%s/%s/freeze-reason", reason, root, dir, v);
	testutil_run("cd %s/%s && ln -sfn %s ..data_tmp && mv -T ..data_tmp ..data && "
	    "for k in policy.yaml freeze freeze-reason; do ln -sfn ..data/$k $k; done", root, dir, v);
}

static const struct policy *serving(struct policy_source *ps, struct snapshot **s)
{
	*s = policy_source_acquire(ps);
	return *s ? snapshot_get(*s) : NULL;
}

static void test_builtin_policy_is_ready_at_once(void **state)
{
	struct metrics *m;
	struct policy_source *ps;
	struct snapshot *s;
	char why[256];

	(void)state;
	assert_int_equal(metrics_new("dev", &m), 0);
	assert_int_equal(policy_source_new(POLICY_SOURCE_BUILTIN, NULL, m, &ps), 0);
	assert_false(policy_source_ready(ps, why, sizeof(why)));
	assert_null(policy_source_acquire(ps));
	assert_int_equal(policy_source_reload(ps, "start"), 1);
	assert_true(policy_source_ready(ps, why, sizeof(why)));
	assert_non_null(serving(ps, &s));
	snapshot_release(s);
	/* Same input again: nothing to swap. */
	assert_int_equal(policy_source_reload(ps, "SIGHUP"), 0);
	assert_false(policy_source_changed(ps));
	assert_null(policy_source_dir(ps));
	assert_true(testmetrics_sample(m, "dra_guard_policy_reload_total{result=\"success\"}") == 1);
	policy_source_free(ps);
	metrics_free(m);
	free(take_log());
}

static void test_directory_reload_freeze_and_last_good(void **state)
{
	struct metrics *m;
	struct policy_source *ps;
	struct snapshot *s, *held;
	const struct policy *p;
	char dir[512], why[256], hash[65], *log;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/cm", root);
	publish("cm", GOOD_POLICY, "false", "");
	assert_int_equal(metrics_new("dev", &m), 0);
	assert_int_equal(policy_source_new(POLICY_SOURCE_DIR, dir, m, &ps), 0);
	assert_string_equal(policy_source_dir(ps), dir);
	assert_int_equal(policy_source_reload(ps, "start"), 1);
	assert_true(policy_source_ready(ps, why, sizeof(why)));
	held = policy_source_acquire(ps);
	p = snapshot_get(held);
	assert_false(p->frozen);
	snprintf(hash, sizeof(hash), "%s", p->hash);
	assert_true(testmetrics_sample(m, "dra_guard_freeze_active") == 0);
	free(take_log());

	/* Freeze on: a new snapshot; the held one is untouched. */
	publish("cm", GOOD_POLICY, "true", "INC-4211: hugepages");
	assert_true(policy_source_changed(ps));
	assert_int_equal(policy_source_reload(ps, "change"), 1);
	assert_false(policy_source_changed(ps));
	p = serving(ps, &s);
	assert_true(p->frozen);
	assert_string_not_equal(p->hash, hash);
	snapshot_release(s);
	assert_false(((const struct policy *)snapshot_get(held))->frozen);
	snapshot_release(held);
	assert_true(testmetrics_sample(m, "dra_guard_freeze_active") == 1);
	assert_true(testmetrics_sample(m, "dra_guard_freeze_info{reason=\"INC-4211: hugepages\"}") == 1);
	assert_true(testmetrics_sample(m, "dra_guard_freeze_since_timestamp_seconds") > 1.0e9);
	log = take_log();
	assert_non_null(strstr(log, "\"freeze active\""));
	assert_non_null(strstr(log, "INC-4211: hugepages"));
	free(log);

	/* A broken document: refused, logged with file, line and path; the
	 * frozen policy keeps serving and the source stays ready. */
	publish("cm", BROKEN_POLICY, "false", "");
	assert_true(policy_source_reload(ps, "change") < 0);
	assert_true(policy_source_ready(ps, why, sizeof(why)));
	p = serving(ps, &s);
	assert_true(p->frozen);
	snapshot_release(s);
	assert_true(testmetrics_sample(m, "dra_guard_policy_reload_total{result=\"error\"}") == 1);
	assert_true(testmetrics_sample(m, "dra_guard_freeze_active") == 1);
	log = take_log();
	assert_non_null(strstr(log, "the last good policy stays"));
	assert_non_null(strstr(log, "cm/policy.yaml\""));
	assert_non_null(strstr(log, "\"line\":4"));
	assert_non_null(strstr(log, "\"path\":"));
	assert_non_null(strstr(log, "defualt"));
	free(log);

	/* A freeze key that is neither true nor false: also refused. */
	publish("cm", GOOD_POLICY, "yes", "");
	assert_true(policy_source_reload(ps, "change") < 0);
	log = take_log();
	assert_non_null(strstr(log, "cm/freeze\""));
	free(log);
	assert_true(testmetrics_sample(m, "dra_guard_policy_reload_total{result=\"error\"}") == 2);

	/* Lifted. */
	publish("cm", OTHER_POLICY, "false", "");
	assert_int_equal(policy_source_reload(ps, "change"), 1);
	p = serving(ps, &s);
	assert_false(p->frozen);
	snapshot_release(s);
	assert_true(testmetrics_sample(m, "dra_guard_freeze_active") == 0);
	assert_true(testmetrics_sample(m, "dra_guard_freeze_since_timestamp_seconds") == 0);
	log = take_log();
	assert_non_null(strstr(log, "\"freeze lifted\""));
	free(log);
	assert_true(testmetrics_sample(m, "dra_guard_policy_reload_total{result=\"success\"}") == 3);
	policy_source_free(ps);
	metrics_free(m);
}

/* What the held-back-policy alert and the freeze alert read: whether the
 * last attempt loaded, and the serving policy's freeze.alertAfter. */
static void test_held_back_input_and_alert_after_are_exported(void **state)
{
	static const char alert_policy[] = GOOD_POLICY "freeze:\n  alertAfter: 90m\n";
	struct metrics *m;
	struct policy_source *ps;
	char dir[512];

	(void)state;
	snprintf(dir, sizeof(dir), "%s/alert", root);
	publish("alert", alert_policy, "false", "");
	assert_int_equal(metrics_new("dev", &m), 0);
	assert_true(testmetrics_sample(m, "dra_guard_policy_last_reload_successful") == 0);
	assert_true(testmetrics_sample(m, "dra_guard_freeze_alert_after_seconds") == 0);
	assert_int_equal(policy_source_new(POLICY_SOURCE_DIR, dir, m, &ps), 0);
	assert_int_equal(policy_source_reload(ps, "start"), 1);
	assert_true(testmetrics_sample(m, "dra_guard_policy_last_reload_successful") == 1);
	assert_true(testmetrics_sample(m, "dra_guard_freeze_alert_after_seconds") == 5400);

	/* Broken: held back, the serving policy's setting stays. */
	publish("alert", BROKEN_POLICY, "false", "");
	assert_true(policy_source_reload(ps, "change") < 0);
	assert_true(testmetrics_sample(m, "dra_guard_policy_last_reload_successful") == 0);
	assert_true(testmetrics_sample(m, "dra_guard_freeze_alert_after_seconds") == 5400);

	/* Reverted to what serves: nothing to reload, nothing held back. */
	publish("alert", alert_policy, "false", "");
	assert_int_equal(policy_source_reload(ps, "change"), 0);
	assert_true(testmetrics_sample(m, "dra_guard_policy_last_reload_successful") == 1);

	/* Broken again, then fixed with a new policy: the default applies. */
	publish("alert", BROKEN_POLICY, "false", "");
	assert_true(policy_source_reload(ps, "change") < 0);
	assert_true(testmetrics_sample(m, "dra_guard_policy_last_reload_successful") == 0);
	publish("alert", OTHER_POLICY, "false", "");
	assert_int_equal(policy_source_reload(ps, "change"), 1);
	assert_true(testmetrics_sample(m, "dra_guard_policy_last_reload_successful") == 1);
	assert_true(testmetrics_sample(m, "dra_guard_freeze_alert_after_seconds") == POLICY_FREEZE_ALERT_AFTER_DEFAULT_S);
	assert_true(testmetrics_sample(m, "dra_guard_policy_reload_total{result=\"error\"}") == 2);
	policy_source_free(ps);
	metrics_free(m);
	free(take_log());
}

static void test_broken_at_start_is_not_ready_and_says_why(void **state)
{
	struct metrics *m;
	struct policy_source *ps;
	char dir[512], why[512];

	(void)state;
	snprintf(dir, sizeof(dir), "%s/bad", root);
	publish("bad", BROKEN_POLICY, NULL, NULL);
	assert_int_equal(metrics_new("dev", &m), 0);
	assert_int_equal(policy_source_new(POLICY_SOURCE_DIR, dir, m, &ps), 0);
	assert_true(policy_source_reload(ps, "start") < 0);
	assert_false(policy_source_ready(ps, why, sizeof(why)));
	assert_non_null(strstr(why, "no valid policy"));
	assert_non_null(strstr(why, "defualt"));
	assert_null(policy_source_acquire(ps));
	assert_true(testmetrics_sample(m, "dra_guard_policy_reload_total{result=\"error\"}") == 1);
	free(take_log());

	/* Fixed later: ready. */
	publish("bad", GOOD_POLICY, NULL, NULL);
	assert_int_equal(policy_source_reload(ps, "change"), 1);
	assert_true(policy_source_ready(ps, why, sizeof(why)));
	policy_source_free(ps);
	metrics_free(m);
	free(take_log());
}

static void test_missing_document_key_is_not_ready(void **state)
{
	struct metrics *m;
	struct policy_source *ps;
	char dir[512], why[512];

	(void)state;
	snprintf(dir, sizeof(dir), "%s/empty", root);
	publish("empty", NULL, "true", NULL);
	assert_int_equal(metrics_new("dev", &m), 0);
	assert_int_equal(policy_source_new(POLICY_SOURCE_DIR, dir, m, &ps), 0);
	assert_true(policy_source_reload(ps, "start") < 0);
	assert_false(policy_source_ready(ps, why, sizeof(why)));
	assert_non_null(strstr(why, "policy.yaml"));
	policy_source_free(ps);
	metrics_free(m);
	free(take_log());
}

static void test_file_source_loads_the_example_configmap(void **state)
{
	struct metrics *m;
	struct policy_source *ps;
	struct snapshot *s;
	char file[512], why[256];
	const struct policy *p;

	(void)state;
	snprintf(file, sizeof(file), "%s/policy-configmap.yaml", root);
	testutil_run("cp %s %s", testutil_repo_path("examples/policy-configmap.yaml"), file);
	assert_int_equal(metrics_new("dev", &m), 0);
	assert_int_equal(policy_source_new(POLICY_SOURCE_FILE, file, m, &ps), 0);
	assert_string_equal(policy_source_dir(ps), root);
	assert_int_equal(policy_source_reload(ps, "start"), 1);
	assert_true(policy_source_ready(ps, why, sizeof(why)));
	p = serving(ps, &s);
	assert_true(p->has_drivers);
	snapshot_release(s);
	/* The drivers it lists get their own denial series. */
	assert_true(testmetrics_sample(m, "dra_guard_slice_denials_total{driver=\"dra.example.com\"}") == 0);
	assert_false(policy_source_changed(ps));
	testutil_run("sed -i 's/freeze: \"false\"/freeze: \"true\"/' %s", file);
	assert_true(policy_source_changed(ps));
	assert_int_equal(policy_source_reload(ps, "poll"), 1);
	p = serving(ps, &s);
	assert_true(p->frozen);
	snapshot_release(s);
	policy_source_free(ps);
	metrics_free(m);
	free(take_log());
}

static bool serving_frozen(struct policy_source *ps)
{
	struct snapshot *s;
	bool frozen = serving(ps, &s)->frozen;

	snapshot_release(s);
	return frozen;
}

/* A deleted policy ConfigMap keeps the last good policy, frozen: the
 * configured source (here the built-in policy, never frozen) is not read
 * again, the log and dra_guard_policy_input_missing say so, and the
 * ConfigMap's return ends it. */
static void test_deleted_configmap_keeps_the_freeze(void **state)
{
	struct metrics *m;
	struct policy_source *ps;
	char why[256], *log;

	(void)state;
	assert_int_equal(metrics_new("dev", &m), 0);
	assert_int_equal(policy_source_new(POLICY_SOURCE_BUILTIN, NULL, m, &ps), 0);
	assert_int_equal(policy_source_reload(ps, "start"), 1);
	assert_int_equal(policy_source_offer_api(ps, true, GOOD_POLICY, strlen(GOOD_POLICY), true, "true", 4,
						 true, "INC-1", 5, "watch"), 1);
	assert_true(serving_frozen(ps));
	assert_true(testmetrics_sample(m, "dra_guard_policy_input_missing") == 0);
	free(take_log());

	assert_int_equal(policy_source_offer_api(ps, false, NULL, 0, false, NULL, 0, false, NULL, 0, "watch"), 0);
	assert_true(serving_frozen(ps));
	assert_true(policy_source_ready(ps, why, sizeof(why)));
	assert_true(testmetrics_sample(m, "dra_guard_freeze_active") == 1);
	assert_true(testmetrics_sample(m, "dra_guard_policy_input_missing") == 1);
	log = take_log();
	assert_non_null(strstr(log, "the policy ConfigMap is gone from the API server"));
	assert_non_null(strstr(log, "\"level\":\"error\""));
	free(log);
	/* A relist that still finds none, and a reload signal, change nothing
	 * and say nothing more. */
	assert_int_equal(policy_source_offer_api(ps, false, NULL, 0, false, NULL, 0, false, NULL, 0, "list"), 0);
	assert_int_equal(policy_source_reload(ps, "SIGHUP"), 0);
	assert_true(serving_frozen(ps));
	log = take_log();
	assert_null(strstr(log, "gone"));
	free(log);

	/* Re-created, lifted: it serves again. */
	assert_int_equal(policy_source_offer_api(ps, true, GOOD_POLICY, strlen(GOOD_POLICY), true, "false", 5,
						 false, NULL, 0, "watch"), 1);
	assert_false(serving_frozen(ps));
	assert_true(testmetrics_sample(m, "dra_guard_policy_input_missing") == 0);
	log = take_log();
	assert_non_null(strstr(log, "the policy ConfigMap is back"));
	free(log);
	policy_source_free(ps);
	metrics_free(m);
}

/* The mounted ConfigMap emptied (an optional volume whose ConfigMap was
 * deleted) and a deleted policy file: the last good policy stays, counted
 * as missing, until the input is back. */
static void test_missing_mounted_policy_keeps_the_freeze(void **state)
{
	struct metrics *m;
	struct policy_source *ps;
	char dir[512], file[512], *log;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/gone", root);
	publish("gone", GOOD_POLICY, "true", "INC-2");
	assert_int_equal(metrics_new("dev", &m), 0);
	assert_int_equal(policy_source_new(POLICY_SOURCE_DIR, dir, m, &ps), 0);
	assert_int_equal(policy_source_reload(ps, "start"), 1);
	free(take_log());
	publish("gone", NULL, NULL, NULL);
	assert_true(policy_source_reload(ps, "change") == -ENOENT);
	assert_true(serving_frozen(ps));
	assert_true(testmetrics_sample(m, "dra_guard_policy_input_missing") == 1);
	log = take_log();
	assert_non_null(strstr(log, "policy source missing; the last good policy stays"));
	free(log);
	publish("gone", GOOD_POLICY, "false", NULL);
	assert_int_equal(policy_source_reload(ps, "change"), 1);
	assert_false(serving_frozen(ps));
	assert_true(testmetrics_sample(m, "dra_guard_policy_input_missing") == 0);
	policy_source_free(ps);
	metrics_free(m);

	snprintf(file, sizeof(file), "%s/gone-policy.yaml", root);
	testutil_run("cp %s %s && sed -i 's/freeze: \"false\"/freeze: \"true\"/' %s",
		     testutil_repo_path("examples/policy-configmap.yaml"), file, file);
	assert_int_equal(metrics_new("dev", &m), 0);
	assert_int_equal(policy_source_new(POLICY_SOURCE_FILE, file, m, &ps), 0);
	assert_int_equal(policy_source_reload(ps, "start"), 1);
	assert_true(serving_frozen(ps));
	testutil_run("rm %s", file);
	assert_true(policy_source_reload(ps, "change") == -ENOENT);
	assert_true(serving_frozen(ps));
	assert_true(testmetrics_sample(m, "dra_guard_policy_input_missing") == 1);
	policy_source_free(ps);
	metrics_free(m);
	free(take_log());
}

#define RACE_ROUNDS 3000

struct race {
	struct policy_source *ps;
	char installed[RACE_ROUNDS][65]; /* written by the writer, read after join */
	char seen_status[RACE_ROUNDS * 4][65];
	char seen_serving[RACE_ROUNDS * 4][65];
	size_t nseen;
	atomic_bool done;
};

static void *race_reader(void *arg)
{
	struct race *r = arg;
	struct policy_status st;
	struct snapshot *s;

	while (!atomic_load(&r->done) && r->nseen < RACE_ROUNDS * 4) {
		policy_source_status(r->ps, &st);
		s = policy_source_acquire(r->ps);
		if (!s)
			continue;
		memcpy(r->seen_status[r->nseen], st.hash, 65);
		memcpy(r->seen_serving[r->nseen], ((const struct policy *)snapshot_get(s))->hash, 65);
		r->nseen++;
		snapshot_release(s);
	}
	return NULL;
}

static long race_index(const struct race *r, const char *hash)
{
	long i;

	for (i = 0; i < RACE_ROUNDS; i++)
		if (strcmp(r->installed[i], hash) == 0)
			return i;
	return -1;
}

/* Whoever reads the hash /readyz reports and then acquires the policy gets
 * that policy or a newer one: the snapshot is swapped in before its hash is
 * published. */
static void test_hash_is_published_after_the_swap(void **state)
{
	static struct race r;
	struct metrics *m;
	struct snapshot *s;
	pthread_t t;
	char doc[128];
	size_t i, behind = 0;

	(void)state;
	memset(&r, 0, sizeof(r));
	assert_int_equal(metrics_new("dev", &m), 0);
	assert_int_equal(policy_source_new(POLICY_SOURCE_BUILTIN, NULL, m, &r.ps), 0);
	snprintf(doc, sizeof(doc), GOOD_POLICY "# round 0\n");
	assert_int_equal(policy_source_offer_api(r.ps, true, doc, strlen(doc), false, NULL, 0, false,
						 NULL, 0, "test"), 1);
	s = policy_source_acquire(r.ps);
	memcpy(r.installed[0], ((const struct policy *)snapshot_get(s))->hash, 65);
	snapshot_release(s);
	assert_int_equal(pthread_create(&t, NULL, race_reader, &r), 0);
	for (i = 1; i < RACE_ROUNDS; i++) {
		snprintf(doc, sizeof(doc), GOOD_POLICY "# round %zu\n", i);
		assert_int_equal(policy_source_offer_api(r.ps, true, doc, strlen(doc), false, NULL, 0,
							 false, NULL, 0, "test"), 1);
		/* Only this thread swaps: what serves now is what it installed. */
		s = policy_source_acquire(r.ps);
		memcpy(r.installed[i], ((const struct policy *)snapshot_get(s))->hash, 65);
		snapshot_release(s);
	}
	atomic_store(&r.done, true);
	assert_int_equal(pthread_join(t, NULL), 0);
	for (i = 0; i < r.nseen; i++) {
		long said = race_index(&r, r.seen_status[i]), got = race_index(&r, r.seen_serving[i]);

		assert_true(said >= 0 && got >= 0);
		behind += got < said;
	}
	assert_int_equal(behind, 0);
	assert_true(r.nseen > 0);
	policy_source_free(r.ps);
	metrics_free(m);
	free(take_log());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_builtin_policy_is_ready_at_once),
		cmocka_unit_test(test_hash_is_published_after_the_swap),
		cmocka_unit_test(test_directory_reload_freeze_and_last_good),
		cmocka_unit_test(test_held_back_input_and_alert_after_are_exported),
		cmocka_unit_test(test_broken_at_start_is_not_ready_and_says_why),
		cmocka_unit_test(test_missing_document_key_is_not_ready),
		cmocka_unit_test(test_file_source_loads_the_example_configmap),
		cmocka_unit_test(test_deleted_configmap_keeps_the_freeze),
		cmocka_unit_test(test_missing_mounted_policy_keeps_the_freeze),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
