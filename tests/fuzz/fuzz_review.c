/* fuzz_review.c - libFuzzer target: an AdmissionReview body through the whole
 * request path (decode -> engine -> encode), as the server runs it.
 *
 * Properties checked on every input, under a few policies (built-in, strict
 * with drivers and canary nodes, frozen) and both endpoints:
 *   - admission_handle() never fails to produce an answer for a body within
 *     the limits, and the answer is valid JSON (jansson, duplicates rejected);
 *   - HTTP 200 answers are AdmissionReviews that echo the request's uid;
 *   - a validating answer never carries a patch; a denial never does either;
 *   - a body that is not valid JSON is never answered with "allowed": true;
 *   - the mutating endpoint never denies a review it answers.
 * Any violation aborts. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "admission.h"
#include "jscan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char strict_policy[] =
	"apiVersion: dra-guard.io/v1alpha1\nkind: Policy\n"
	"drivers:\n  dra.example.com:\n    resources: {cpu: {max: \"64\"}, memory: {max: 64Gi}}\n"
	"    serviceAccounts: [system:serviceaccount:dra-system:dra-example-driver]\n"
	"canary:\n  nodes: [\"worker-*\"]\n";
static const char frozen_freeze[] = "true";

static struct policy *policies[3];
static struct arena *arena;
static struct buf out;

static void check(int cond)
{
	if (!cond)
		abort();
}

static void setup(void)
{
	if (arena)
		return;
	check(policy_builtin(&policies[0]) == 0);
	check(policy_load(strict_policy, sizeof(strict_policy) - 1, &policies[1], NULL) == 0);
	check(policy_load_parts(strict_policy, sizeof(strict_policy) - 1, true, frozen_freeze,
				sizeof(frozen_freeze) - 1, true, "fuzz", 4, &policies[2], NULL) == 0);
	check(arena_new(64 << 20, &arena) == 0);
	buf_init(&out, 64 << 20);
}

static bool valid_json(const uint8_t *data, size_t size)
{
	struct jscan s;

	jscan_init(&s, (const char *)data, size, JSCAN_DEPTH_LIMIT);
	return jscan_skip(&s, NULL) == 0 && jscan_finish(&s) == 0;
}

static void check_answer(const struct admission_result *res, bool mutating, bool endpoint, bool input_valid)
{
	json_error_t jerr;
	json_t *j = json_loadb(buf_cstr(&out), buf_len(&out), JSON_REJECT_DUPLICATES, &jerr), *r, *uid;

	check(j != NULL);
	if (res->http_status == 200) {
		r = json_object_get(j, "response");
		check(json_is_object(r));
		uid = json_object_get(r, "uid");
		check(json_is_string(uid));
		/* The uid comes back as it was read (the encoder may replace bytes
		 * that are not UTF-8, which the decoder never lets through). */
		check(json_string_length(uid) == res->req.uid.len &&
		      memcmp(json_string_value(uid), res->req.uid.ptr, res->req.uid.len) == 0);
		if (!mutating || !json_is_true(json_object_get(r, "allowed")))
			check(json_object_get(r, "patch") == NULL);
		check(input_valid || !json_is_true(json_object_get(r, "allowed")));
		check(!endpoint || json_is_true(json_object_get(r, "allowed")));
	} else {
		check(res->http_status == 400);
		check(json_is_string(json_object_get(j, "message")));
	}
	json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct engine_options opt;
	struct decode_limits lim;
	struct admission_result res;
	bool input_valid = valid_json(data, size);
	unsigned p;
	int m;

	setup();
	decode_limits_default(&lim);
	for (p = 0; p < 3; p++) {
		/* validate; rules and patch (dry-run); the mutating endpoint */
		for (m = 0; m < 3; m++) {
			memset(&opt, 0, sizeof(opt));
			opt.mutate = m > 0;
			opt.mutating_endpoint = m == 2;
			opt.self_name = (struct str){ "dra-guard-policy", 16 };
			opt.self_namespace = (struct str){ "dra-guard", 9 };
			arena_reset(arena);
			check(admission_handle(policies[p], NULL, 0, &opt, &lim, (const char *)data, size, arena, &out,
					       &res) == 0);
			check_answer(&res, m > 0, m == 2, input_valid);
		}
	}
	return 0;
}
