/* test_log.c - JSON lines on stderr. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

/* Capture what the log writes through a temporary file. */
struct capture {
	FILE *f;
};

static void capture_start(struct capture *c)
{
	c->f = tmpfile();
	assert_non_null(c->f);
	log_set_fd(fileno(c->f));
}

/* Everything written since capture_start(), malloc'd. */
static char *capture_end(struct capture *c)
{
	long n;
	char *text;

	log_set_fd(-1);
	fflush(c->f);
	n = lseek(fileno(c->f), 0, SEEK_END);
	assert_true(n >= 0);
	text = calloc(1, (size_t)n + 1);
	assert_non_null(text);
	assert_int_equal(pread(fileno(c->f), text, (size_t)n, 0), n);
	fclose(c->f);
	return text;
}

/* The one line in text as a JSON object. */
static json_t *one_line(const char *text)
{
	json_error_t e;
	json_t *j;
	size_t len = strlen(text);

	assert_true(len > 0);
	assert_int_equal(text[len - 1], '\n');
	assert_ptr_equal(strchr(text, '\n'), text + len - 1);
	j = json_loadb(text, len - 1, JSON_REJECT_DUPLICATES, &e);
	if (!j)
		fail_msg("not JSON: %s (%s)", text, e.text);
	assert_true(json_is_object(j));
	return j;
}

static void test_line_has_time_level_msg_and_fields_in_order(void **state)
{
	static const char *const rules[] = { "slice.mapping.name", "slice.canary" };
	struct capture c;
	struct log_line l;
	char *text;
	json_t *j;
	const char *t;

	(void)state;
	log_set_level(LOG_INFO);
	capture_start(&c);
	assert_true(log_begin(&l, LOG_WARN, "policy \"reload\" failed\n"));
	log_str(&l, "file", "/etc/p/policy.yaml");
	log_int(&l, "line", -3);
	log_uint(&l, "col", 7);
	log_bool(&l, "ready", false);
	log_ms(&l, "duration_ms", 1.23456);
	log_strn(&l, "uid", "abcdef", 3);
	log_str(&l, "nul", NULL);
	log_str_array(&l, "rules", rules, 2);
	log_end(&l);
	text = capture_end(&c);
	j = one_line(text);
	t = json_string_value(json_object_get(j, "time"));
	assert_non_null(t);
	/* 2026-11-29T10:00:00.123Z */
	assert_int_equal(strlen(t), 24);
	assert_int_equal(t[10], 'T');
	assert_int_equal(t[19], '.');
	assert_int_equal(t[23], 'Z');
	assert_string_equal(json_string_value(json_object_get(j, "level")), "warn");
	assert_string_equal(json_string_value(json_object_get(j, "msg")), "policy \"reload\" failed\n");
	assert_string_equal(json_string_value(json_object_get(j, "file")), "/etc/p/policy.yaml");
	assert_int_equal(json_integer_value(json_object_get(j, "line")), -3);
	assert_int_equal(json_integer_value(json_object_get(j, "col")), 7);
	assert_true(json_is_false(json_object_get(j, "ready")));
	assert_true(json_real_value(json_object_get(j, "duration_ms")) > 1.234 &&
		    json_real_value(json_object_get(j, "duration_ms")) < 1.236);
	assert_string_equal(json_string_value(json_object_get(j, "uid")), "abc");
	assert_string_equal(json_string_value(json_object_get(j, "nul")), "");
	assert_int_equal(json_array_size(json_object_get(j, "rules")), 2);
	assert_string_equal(json_string_value(json_array_get(json_object_get(j, "rules"), 1)), "slice.canary");
	/* Fields keep the order they were added in. */
	assert_true(strstr(text, "\"msg\"") < strstr(text, "\"file\""));
	assert_true(strstr(text, "\"file\"") < strstr(text, "\"rules\""));
	json_decref(j);
	free(text);
}

/* Extreme numbers still make one valid JSON line, never a cut one. */
static void test_extreme_numbers_stay_json(void **state)
{
	struct capture c;
	struct log_line l;
	char *text;
	json_t *j;

	(void)state;
	log_set_level(LOG_INFO);
	capture_start(&c);
	assert_true(log_begin(&l, LOG_INFO, "extremes"));
	log_int(&l, "min", INT64_MIN);
	log_uint(&l, "max", (uint64_t)INT64_MAX); /* jansson stops at int64 */
	log_ms(&l, "huge_ms", -DBL_MAX);
	log_ms(&l, "inf_ms", INFINITY);
	log_ms(&l, "nan_ms", NAN);
	log_end(&l);
	text = capture_end(&c);
	j = one_line(text);
	assert_int_equal(json_integer_value(json_object_get(j, "min")), INT64_MIN);
	assert_int_equal(json_integer_value(json_object_get(j, "max")), INT64_MAX);
	assert_true(json_real_value(json_object_get(j, "huge_ms")) == -DBL_MAX);
	assert_true(json_is_null(json_object_get(j, "inf_ms")));
	assert_true(json_is_null(json_object_get(j, "nan_ms")));
	json_decref(j);
	free(text);
}

static void test_lines_below_the_threshold_are_not_written(void **state)
{
	struct capture c;
	struct log_line l;
	char *text;

	(void)state;
	log_set_level(LOG_WARN);
	capture_start(&c);
	assert_false(log_begin(&l, LOG_INFO, "quiet"));
	log_str(&l, "k", "v");      /* inert */
	log_end(&l);
	log_msg(LOG_DEBUG, "quieter");
	assert_false(log_enabled(LOG_INFO));
	assert_true(log_enabled(LOG_ERROR));
	log_msg_str(LOG_ERROR, "loud", "why", "because");
	text = capture_end(&c);
	assert_null(strstr(text, "quiet"));
	assert_non_null(strstr(text, "\"loud\""));
	free(text);
	log_set_level(LOG_INFO);
}

static void test_oversized_field_is_dropped_whole_and_counted(void **state)
{
	struct capture c;
	struct log_line l;
	char *text, *big;
	json_t *j;

	(void)state;
	big = malloc(LOG_LINE_MAX);
	assert_non_null(big);
	memset(big, 'x', LOG_LINE_MAX - 1);
	big[LOG_LINE_MAX - 1] = '\0';
	capture_start(&c);
	assert_true(log_begin(&l, LOG_ERROR, "big"));
	log_str(&l, "before", "kept");
	log_str(&l, "huge", big);
	log_str(&l, "after", "kept too");
	log_end(&l);
	text = capture_end(&c);
	assert_true(strlen(text) <= LOG_LINE_MAX);
	j = one_line(text);
	assert_string_equal(json_string_value(json_object_get(j, "before")), "kept");
	assert_null(json_object_get(j, "huge"));
	assert_string_equal(json_string_value(json_object_get(j, "after")), "kept too");
	assert_int_equal(json_integer_value(json_object_get(j, "fields_dropped")), 1);
	json_decref(j);
	free(text);
	free(big);
}

static void test_levels_parse(void **state)
{
	static const struct {
		const char *s;
		int rc;
		enum log_level l;
	} cases[] = {
		{ "debug", 0, LOG_DEBUG }, { "info", 0, LOG_INFO }, { "warn", 0, LOG_WARN },
		{ "warning", 0, LOG_WARN }, { "error", 0, LOG_ERROR }, { "INFO", -EINVAL, LOG_INFO },
		{ "", -EINVAL, LOG_INFO }, { "trace", -EINVAL, LOG_INFO },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum log_level l = LOG_INFO;

		assert_int_equal(log_level_parse(cases[i].s, &l), cases[i].rc);
		assert_int_equal(l, cases[i].l);
	}
	assert_string_equal(log_level_name(LOG_WARN), "warn");
}

static void test_time_format(void **state)
{
	char buf[LOG_TIME_MAX];

	(void)state;
	log_format_time(0, buf);
	assert_string_equal(buf, "1970-01-01T00:00:00.000Z");
	log_format_time(1795947416815123456LL, buf);
	assert_string_equal(buf, "2026-11-29T10:16:56.815Z");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_line_has_time_level_msg_and_fields_in_order),
		cmocka_unit_test(test_extreme_numbers_stay_json),
		cmocka_unit_test(test_lines_below_the_threshold_are_not_written),
		cmocka_unit_test(test_oversized_field_is_dropped_whole_and_counted),
		cmocka_unit_test(test_levels_parse),
		cmocka_unit_test(test_time_format),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
