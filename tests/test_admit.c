/* test_admit.c - the server's admission path: status, answer, counters. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admit.h"
#include "clock.h"
#include "log.h"
#include "testmetrics.h"
#include "testutil.h"

struct fixture {
	struct serve_config cfg;
	struct metrics *m;
	struct policy_source *ps;
	struct admit a;
	struct buf out;
	char *slice;                  /* the shared ResourceSlice fixture */
	int null_fd;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char err[SERVE_CONFIG_ERROR_MAX];
	char *argv[] = { "serve", NULL };

	if (!f)
		return -1;
	/* The log is not under test here. */
	f->null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	log_set_fd(f->null_fd);
	if (serve_config_parse(1, argv, NULL, &f->cfg, err) != 0 || metrics_new("test", &f->m) != 0 ||
	    policy_source_new(POLICY_SOURCE_BUILTIN, NULL, f->m, &f->ps) != 0 ||
	    policy_source_reload(f->ps, "start") != 1 || admit_init(&f->a, &f->cfg, f->m, f->ps, NULL) != 0)
		return -1;
	buf_init(&f->out, 1 << 20);
	f->slice = testutil_read_file(testutil_fixture_path("resourceslice-v1-node-allocatable.json"), NULL);
	if (!f->slice)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	admit_fini(&f->a);
	policy_source_free(f->ps);
	metrics_free(f->m);
	buf_free(&f->out);
	free(f->slice);
	log_set_fd(-1);
	close(f->null_fd);
	free(f);
	return 0;
}

/* An AdmissionReview CREATE of the fixture slice, with the device's
 * mappings given extra (JSON member text, or NULL). */
static char *slice_review(const struct fixture *f, const char *uid, const char *extra_mapping)
{
	json_t *obj = json_loads(f->slice, 0, NULL), *rev, *req, *maps;
	char *text;

	assert_non_null(obj);
	if (extra_mapping) {
		maps = json_object_get(json_array_get(json_object_get(json_object_get(obj, "spec"), "devices"), 0),
				       "nodeAllocatableResourceMappings");
		json_object_set_new(maps, extra_mapping, json_pack("{s:s}", "allocationMultiplier", "1"));
	}
	req = json_pack("{s:s, s:{s:s,s:s,s:s}, s:{s:s,s:s,s:s}, s:s, s:s, s:{s:s}, s:o, s:n}",
			"uid", uid,
			"kind", "group", "resource.k8s.io", "version", "v1", "kind", "ResourceSlice",
			"resource", "group", "resource.k8s.io", "version", "v1", "resource", "resourceslices",
			"name", "worker-1-dra.example.com-abcde", "operation", "CREATE",
			"userInfo", "username", "system:serviceaccount:dra-system:dra-example-driver",
			"object", obj, "oldObject");
	rev = json_pack("{s:s, s:s, s:o}", "apiVersion", "admission.k8s.io/v1", "kind", "AdmissionReview",
			"request", req);
	text = json_dumps(rev, JSON_COMPACT);
	json_decref(rev);
	return text;
}

static json_t *answer(const struct fixture *f)
{
	json_t *j = json_loads(buf_cstr(&f->out), JSON_REJECT_DUPLICATES, NULL);

	assert_non_null(j);
	return j;
}

static void test_allowed_review_is_answered_and_counted(void **state)
{
	struct fixture *f = *state;
	char *body = slice_review(f, "uid-allow", NULL);
	json_t *j;

	assert_int_equal(admit_review(&f->a, false, body, strlen(body), &f->out, clock_mono_ns()), 200);
	j = answer(f);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "response"), "uid")), "uid-allow");
	assert_true(json_is_true(json_object_get(json_object_get(j, "response"), "allowed")));
	assert_null(json_object_get(json_object_get(j, "response"), "patch"));
	json_decref(j);
	assert_true(testmetrics_sample(f->m, "dra_guard_requests_total{endpoint=\"validate\",resource=\"resourceslices\","
				 "operation=\"CREATE\",result=\"allowed\"}") == 1);
	assert_true(testmetrics_sample(f->m, "dra_guard_request_duration_seconds_count{endpoint=\"validate\",result=\"allowed\"}") == 1);

	/* The mutating endpoint answers with a patch. */
	assert_int_equal(admit_review(&f->a, true, body, strlen(body), &f->out, clock_mono_ns()), 200);
	j = answer(f);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "response"), "patchType")),
			    "JSONPatch");
	json_decref(j);
	free(body);
}

static void test_denial_counts_its_violations(void **state)
{
	struct fixture *f = *state;
	char *body = slice_review(f, "uid-deny", "pods");
	json_t *j;

	assert_int_equal(admit_review(&f->a, false, body, strlen(body), &f->out, clock_mono_ns()), 200);
	j = answer(f);
	assert_false(json_is_true(json_object_get(json_object_get(j, "response"), "allowed")));
	json_decref(j);
	assert_true(testmetrics_sample(f->m, "dra_guard_requests_total{endpoint=\"validate\",resource=\"resourceslices\","
				 "operation=\"CREATE\",result=\"denied\"}") == 1);
	assert_true(testmetrics_sample(f->m, "dra_guard_violations_total{rule=\"slice.mapping.name\",action=\"deny\"}") == 1);
	/* By the slice's driver: "other" until the driver has a label of its own. */
	assert_true(testmetrics_sample(f->m, "dra_guard_slice_denials_total{driver=\"other\"}") == 1);
	metrics_slice_driver_add(f->m, "dra.example.com", strlen("dra.example.com"));
	assert_int_equal(admit_review(&f->a, false, body, strlen(body), &f->out, clock_mono_ns()), 200);
	assert_true(testmetrics_sample(f->m, "dra_guard_slice_denials_total{driver=\"dra.example.com\"}") == 1);
	assert_true(testmetrics_sample(f->m, "dra_guard_slice_denials_total{driver=\"other\"}") == 1);
	free(body);
	/* An allowed slice is no denial. */
	body = slice_review(f, "uid-allow-2", NULL);
	assert_int_equal(admit_review(&f->a, false, body, strlen(body), &f->out, clock_mono_ns()), 200);
	assert_true(testmetrics_sample(f->m, "dra_guard_slice_denials_total{driver=\"dra.example.com\"}") == 1);
	free(body);
}

static void test_not_a_review_is_400_and_an_error(void **state)
{
	static const char *const bodies[] = { "", "{", "[]", "{\"kind\":\"Pod\"}", "null" };
	struct fixture *f = *state;
	size_t i;

	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		json_t *j;

		assert_int_equal(admit_review(&f->a, i % 2, bodies[i], strlen(bodies[i]), &f->out, clock_mono_ns()),
				 400);
		j = answer(f);
		assert_int_equal(json_integer_value(json_object_get(j, "code")), 400);
		json_decref(j);
	}
	assert_true(testmetrics_sample(f->m, "dra_guard_http_errors_total{code=\"400\"}") == 5);
	assert_true(testmetrics_sample(f->m, "dra_guard_requests_total{endpoint=\"validate\",resource=\"unknown\","
				 "operation=\"unknown\",result=\"error\"}") == 3);
}

/* Many threads at once, each with its own arena: answers never mix. */
struct racer {
	struct fixture *f;
	int id;
	int wrong;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	char uid[32];
	struct buf out;
	int i;

	buf_init(&out, 1 << 20);
	for (i = 0; i < 200; i++) {
		char *body;
		json_t *j;

		snprintf(uid, sizeof(uid), "r%d-%d", r->id, i);
		body = slice_review(r->f, uid, i % 2 ? "pods" : NULL);
		if (admit_review(&r->f->a, false, body, strlen(body), &out, clock_mono_ns()) != 200)
			r->wrong++;
		j = json_loads(buf_cstr(&out), 0, NULL);
		if (!j || strcmp(json_string_value(json_object_get(json_object_get(j, "response"), "uid")), uid) != 0 ||
		    json_is_true(json_object_get(json_object_get(j, "response"), "allowed")) != (i % 2 == 0))
			r->wrong++;
		json_decref(j);
		free(body);
	}
	buf_free(&out);
	return NULL;
}

static void test_threads_answer_independently(void **state)
{
	struct fixture *f = *state;
	struct racer r[4];
	pthread_t t[4];
	int i;

	for (i = 0; i < 4; i++) {
		r[i] = (struct racer){ f, i, 0 };
		assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(r[i].wrong, 0);
	}
}

/* No policy loaded: a review is answered inside a review all the same (a
 * denial with code 503; on /mutate an allow without a patch), since an
 * HTTP error is a failed call that an Ignore webhook lets through; only a
 * body with no uid gets the 503, with nothing written. */
static void test_no_policy_is_answered_inside_a_review(void **state)
{
	struct fixture *f = *state;
	struct policy_source *empty;
	struct admit a;
	char *body = slice_review(f, "uid-none", NULL);
	const char *out, *not_review = "{\"not\":\"a review\"}";

	assert_int_equal(policy_source_new(POLICY_SOURCE_DIR, "/nonexistent/dra-guard", f->m, &empty), 0);
	assert_true(policy_source_reload(empty, "start") < 0);
	assert_int_equal(admit_init(&a, &f->cfg, f->m, empty, NULL), 0);
	assert_int_equal(admit_review(&a, false, body, strlen(body), &f->out, clock_mono_ns()), 200);
	out = buf_cstr(&f->out);
	assert_non_null(strstr(out, "\"uid\":\"uid-none\",\"allowed\":false"));
	assert_non_null(strstr(out, "\"code\":503"));
	assert_non_null(strstr(out, "no valid policy loaded"));
	assert_int_equal(admit_review(&a, true, body, strlen(body), &f->out, clock_mono_ns()), 200);
	out = buf_cstr(&f->out);
	assert_non_null(strstr(out, "\"uid\":\"uid-none\",\"allowed\":true}"));
	assert_null(strstr(out, "patch"));
	assert_true(testmetrics_sample(f->m, "dra_guard_http_errors_total{code=\"503\"}") == 0);
	assert_int_equal(admit_review(&a, false, not_review, strlen(not_review), &f->out, clock_mono_ns()), 503);
	assert_int_equal(buf_len(&f->out), 0);
	assert_true(testmetrics_sample(f->m, "dra_guard_http_errors_total{code=\"503\"}") == 1);
	admit_fini(&a);
	policy_source_free(empty);
	free(body);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_allowed_review_is_answered_and_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_denial_counts_its_violations, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_a_review_is_400_and_an_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads_answer_independently, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_policy_is_answered_inside_a_review, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
