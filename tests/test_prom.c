/* test_prom.c - the metric family table and the exposition writer. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "prom.h"

/* Every id has a row, with a distinct dra_guard_ name, a HELP text and
 * label names that are distinct and not the histogram's le. */
static void test_every_family_has_a_complete_row(void **state)
{
	int i, j, a, b;

	(void)state;
	for (i = 0; i < PROM_ID_COUNT; i++) {
		const struct prom_family *f = prom_family((enum prom_id)i);

		assert_non_null(f);
		assert_non_null(f->name);
		assert_int_equal(strncmp(f->name, "dra_guard_", 10), 0);
		assert_non_null(f->help);
		assert_true(strlen(f->help) > 10);
		assert_null(strchr(f->help, '\n'));
		for (j = 0; j < i; j++)
			assert_string_not_equal(prom_family((enum prom_id)j)->name, f->name);
		for (a = 0; a < PROM_LABELS_MAX && f->labels[a]; a++) {
			assert_string_not_equal(f->labels[a], "le");
			for (b = 0; b < a; b++)
				assert_string_not_equal(f->labels[a], f->labels[b]);
		}
	}
	assert_null(prom_family(PROM_ID_COUNT));
}

static void test_header_and_samples(void **state)
{
	static const struct {
		enum prom_id id;
		const char *values[PROM_LABELS_MAX];
		const char *want;
	} cases[] = {
		{ PROM_READY, { NULL }, "dra_guard_ready 7\n" },
		{ PROM_BREAK_GLASS_TOTAL, { "pods" }, "dra_guard_break_glass_total{resource=\"pods\"} 7\n" },
		{ PROM_VIOLATIONS_TOTAL, { "a.b", "deny" }, "dra_guard_violations_total{rule=\"a.b\",action=\"deny\"} 7\n" },
		/* The families the kube modules wrote by hand before the table: the
		 * same names and labels, in the order their samples carried them. */
		{ PROM_LEDGER_NODE_UNCOUNTED, { "node-1", "cpu", "omitted" },
		  "dra_guard_ledger_node_uncounted{node=\"node-1\",resource=\"cpu\",cause=\"omitted\"} 7\n" },
		{ PROM_LEDGER_NODE_DIVERGENCE, { "node-1", "memory" },
		  "dra_guard_ledger_node_divergence{node=\"node-1\",resource=\"memory\"} 7\n" },
		{ PROM_LEDGER_UNDECIDED_TOTAL, { "r", "stale" }, "dra_guard_ledger_undecided_total{rule=\"r\",reason=\"stale\"} 7\n" },
		{ PROM_WATCH_EVENTS_TOTAL, { "pods", "ADDED" }, "dra_guard_watch_events_total{resource=\"pods\",type=\"ADDED\"} 7\n" },
		{ PROM_VIEW_MEMORY_BYTES, { "atoms" }, "dra_guard_view_memory_bytes{part=\"atoms\"} 7\n" },
		{ PROM_GATE_LEASE_FOREIGN, { NULL }, "dra_guard_gate_lease_foreign 7\n" },
		{ PROM_EVENTS_SENT_TOTAL, { "patch" }, "dra_guard_events_sent_total{request=\"patch\"} 7\n" },
		/* Label values are escaped: backslash, double quote, newline. */
		{ PROM_FREEZE_INFO, { "say \"no\"\\\nnow" },
		  "dra_guard_freeze_info{reason=\"say \\\"no\\\"\\\\\\nnow\"} 7\n" },
	};
	struct buf b;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		buf_init(&b, 4096);
		assert_int_equal(prom_sample(&b, cases[i].id, cases[i].values[0] ? cases[i].values : NULL, "%d", 7), 0);
		assert_string_equal(buf_cstr(&b), cases[i].want);
		buf_free(&b);
	}
	buf_init(&b, 4096);
	assert_int_equal(prom_header(&b, PROM_READY), 0);
	assert_string_equal(buf_cstr(&b), "# HELP dra_guard_ready 1 when a certificate and a valid policy are loaded "
					  "(what /readyz answers).\n# TYPE dra_guard_ready gauge\n");
	buf_free(&b);
}

/* A family without labels in one call: its header, then its one sample;
 * a number in the HELP text comes from the #define it names. */
static void test_scalar_family(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b, 4096);
	assert_int_equal(prom_scalar(&b, PROM_LEDGER_ENTRIES, "%u", 12u), 0);
	assert_string_equal(buf_cstr(&b), "# HELP dra_guard_ledger_entries Ledger entries (node, claim, allocation "
					  "result).\n# TYPE dra_guard_ledger_entries gauge\ndra_guard_ledger_entries 12\n");
	buf_free(&b);
	assert_non_null(strstr(prom_family(PROM_LEDGER_NODE_OVERCOMMIT)->help, "(the 20 largest)"));
	/* The cap is an error for the sample too, after a whole header. */
	buf_init(&b, 120);
	assert_int_not_equal(prom_scalar(&b, PROM_LEDGER_ENTRIES, "%u", 12u), 0);
	buf_free(&b);
}

static void test_histogram_lines_and_label_count(void **state)
{
	struct prom_line l;
	struct buf b;

	(void)state;
	buf_init(&b, 4096);
	prom_line_begin(&l, &b, PROM_REQUEST_DURATION_SECONDS, "_bucket");
	prom_line_label(&l, "validate", 8);
	prom_line_label(&l, "allowed", 7);
	prom_line_le(&l, "+Inf");
	assert_int_equal(prom_line_end(&l, "%u", 3u), 0);
	prom_line_begin(&l, &b, PROM_REQUEST_DURATION_SECONDS, "_sum");
	prom_line_label(&l, "validate", 8);
	prom_line_label(&l, "allowed", 7);
	assert_int_equal(prom_line_end(&l, "%.9f", 0.5), 0);
	assert_string_equal(buf_cstr(&b),
			    "dra_guard_request_duration_seconds_bucket{endpoint=\"validate\",result=\"allowed\",le=\"+Inf\"} 3\n"
			    "dra_guard_request_duration_seconds_sum{endpoint=\"validate\",result=\"allowed\"} 0.500000000\n");
	buf_reset(&b);
	prom_line_begin(&l, &b, PROM_PENDING_SECONDS, "_bucket");
	prom_line_label(&l, "Pending", 7);
	prom_line_le(&l, "30");
	assert_int_equal(prom_line_end(&l, "%u", 2u), 0);
	assert_string_equal(buf_cstr(&b), "dra_guard_pending_seconds_bucket{reason=\"Pending\",le=\"30\"} 2\n");
	/* A label the family does not have is refused, not written nameless. */
	prom_line_begin(&l, &b, PROM_READY, NULL);
	prom_line_label(&l, "x", 1);
	assert_int_equal(prom_line_end(&l, "1"), -EINVAL);
	buf_free(&b);
	/* The buffer's cap is an error, never a cut line. */
	buf_init(&b, 16);
	assert_int_not_equal(prom_header(&b, PROM_READY), 0);
	buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_family_has_a_complete_row),
		cmocka_unit_test(test_header_and_samples),
		cmocka_unit_test(test_histogram_lines_and_label_count),
		cmocka_unit_test(test_scalar_family),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
