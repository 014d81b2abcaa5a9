/* test_gate.c - the gate's Lease: which holders are live, which are taken
 * over, which are foreign; and the holder identities a replica writes. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "gate.h"

struct judge_case {
	const char *about;
	struct gate_lease_state in;
	bool live, take_over, foreign;
};

static void test_lease_holders_are_judged_by_who_and_how_long(void **state)
{
	static const struct judge_case cases[] = {
		{ "nobody holds it", { GATE_HOLDER_NONE, 15, 15, 0 }, false, true, false },
		{ "a replica renewing", { GATE_HOLDER_PEER, 15, 15, 3000 }, true, false, false },
		{ "this replica renewing", { GATE_HOLDER_SELF, 15, 15, 3000 }, true, false, false },
		{ "a replica that stopped renewing", { GATE_HOLDER_PEER, 15, 15, 15000 }, false, true, false },
		{ "a shorter duration than configured counts", { GATE_HOLDER_PEER, 5, 15, 6000 }, false, true, false },
		{ "no duration written: the configured one", { GATE_HOLDER_PEER, 0, 15, 14999 }, true, false, false },
		/* The review's attack: a holder no replica is, renewing with an
		 * hour-long duration. Not live, taken over at once. */
		{ "a foreign holder", { GATE_HOLDER_FOREIGN, 15, 15, 0 }, false, true, true },
		{ "a foreign holder, an hour long", { GATE_HOLDER_FOREIGN, 3600, 15, 0 }, false, true, true },
		/* A replica's name with a duration no replica writes: foreign,
		 * not live, and it lasts only the configured duration. */
		{ "a replica's name, an hour long", { GATE_HOLDER_PEER, 3600, 15, 1000 }, false, false, true },
		{ "a replica's name, an hour long, lasted out", { GATE_HOLDER_PEER, 3600, 15, 15000 }, false, true, true },
		/* Not checked yet: no gating, and no takeover before it lasts out. */
		{ "an unchecked holder", { GATE_HOLDER_UNCHECKED, 15, 15, 1000 }, false, false, false },
		{ "an unchecked holder that lasted out", { GATE_HOLDER_UNCHECKED, 15, 15, 15000 }, false, true, false },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gate_lease_verdict v;

		memset(&v, 0xff, sizeof(v));
		gate_lease_judge(&cases[i].in, &v);
		if (v.live != cases[i].live || v.take_over != cases[i].take_over || v.foreign != cases[i].foreign)
			fail_msg("%s: live %d take_over %d foreign %d, want %d %d %d", cases[i].about, v.live,
				 v.take_over, v.foreign, cases[i].live, cases[i].take_over, cases[i].foreign);
	}
}

static void test_holder_identity_names_a_pod(void **state)
{
	static const struct {
		const char *holder, *pod;   /* pod NULL: no replica writes that */
	} cases[] = {
		{ "dra-guard-7d9f8c6b5-x2x4z_1", "dra-guard-7d9f8c6b5-x2x4z" },
		{ "guard.example_123456", "guard.example" },
		{ "a_b_42", NULL },                   /* '_' is not in a Pod name */
		{ "dra-guard-7d9f8c6b5-x2x4z", NULL }, /* no pid */
		{ "dra-guard_", NULL },
		{ "_42", NULL },
		{ "Dra-Guard_42", NULL },
		{ "-guard_42", NULL },
		{ "a..b_12", NULL },                  /* not a DNS subdomain */
		{ "a.-b_12", NULL },
		{ "guard-_42", NULL },
		{ "guard_4x2", NULL },
		{ "", NULL },
		{ "gate-keeper forever", NULL },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct str pod = { NULL, 0 };
		int rc = gate_holder_pod(str_from_cstr(cases[i].holder), &pod);

		if (!cases[i].pod) {
			if (rc != -EINVAL)
				fail_msg("%s: named a pod", cases[i].holder);
			continue;
		}
		assert_int_equal(rc, 0);
		assert_true(str_eq_cstr(pod, cases[i].pod));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lease_holders_are_judged_by_who_and_how_long),
		cmocka_unit_test(test_holder_identity_names_a_pod),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
