/* testmetrics.h - read one sample from a metrics registry, for the tests of
 * webhook modules that count things. Header-only: testutil.c is linked into
 * every test, and the tests of policy/ modules do not link metrics. */
#ifndef DRA_GUARD_TESTMETRICS_H
#define DRA_GUARD_TESTMETRICS_H

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "metrics.h"

/* The value of the sample whose name and labels are exactly series (as
 * rendered, e.g. "x_total{a=\"b\"}"), or -1 when there is none. */
static inline double testmetrics_sample(struct metrics *m, const char *series)
{
	struct buf b;
	const char *p;
	double v = -1;

	buf_init(&b, 1 << 20);
	assert_int_equal(metrics_render(m, &b), 0);
	/* A sample line, not the HELP line that names the family. */
	for (p = strstr(buf_cstr(&b), series); p; p = strstr(p + 1, series)) {
		if (p[-1] == '\n' && p[strlen(series)] == ' ') {
			v = strtod(p + strlen(series) + 1, NULL);
			break;
		}
	}
	buf_free(&b);
	return v;
}

#endif
