/* test_pod_requests.c - a Pod's requests as kube-scheduler counts them on a
 * node: the cases of k8s.io/component-helpers/resource (TestPodRequests and
 * the sidecar KEP's examples), as Pods decoded from JSON. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "arena.h"
#include "decode.h"
#include "pod_requests.h"

struct row {
	const char *about;
	const char *spec;           /* the members of spec (without braces) */
	const char *status;         /* the members of status, or NULL */
	const char *want;           /* "cpu=1500m,memory=1Gi*" ('*' after a Pod-level one), or an error */
	int rc;
};

static const struct row rows[] = {
	{ "one container", "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"500m\","
	  "\"memory\":\"1Gi\"}}}]", NULL, "cpu=500m,memory=1Gi", 0 },
	{ "containers add up", "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"500m\"}}},"
	  "{\"name\":\"b\",\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]", NULL,
	  "cpu=1500m,memory=1Gi", 0 },
	{ "an init container above the sum sets the peak",
	  "\"initContainers\":[{\"name\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"3\"}}}],"
	  "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"2Gi\"}}}]", NULL,
	  "cpu=3,memory=2Gi", 0 },
	/* KEP-753: a sidecar runs on, so it adds to the containers and to every
	 * later init container's step: containers 2 + sidecar 1 = 3; the init
	 * after the sidecar needs 3 + 1 = 4. */
	{ "a sidecar adds to the containers and to the init steps after it",
	  "\"initContainers\":[{\"name\":\"s\",\"restartPolicy\":\"Always\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}},"
	  "{\"name\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"3\"}}}],"
	  "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"2\"}}}]", NULL, "cpu=4", 0 },
	{ "a sidecar after the init containers only adds",
	  "\"initContainers\":[{\"name\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"2\"}}},"
	  "{\"name\":\"s\",\"restartPolicy\":\"Always\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}],"
	  "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"2\"}}}]", NULL, "cpu=3", 0 },
	{ "overhead is added last",
	  "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}],"
	  "\"overhead\":{\"cpu\":\"250m\",\"memory\":\"120Mi\"}", NULL, "cpu=1250m,memory=120Mi", 0 },
	{ "Pod-level requests replace cpu and memory, then overhead",
	  "\"resources\":{\"requests\":{\"cpu\":\"2\",\"memory\":\"4Gi\"}},"
	  "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"1\",\"ephemeral-storage\":\"1Gi\"}}}],"
	  "\"overhead\":{\"cpu\":\"100m\"}", NULL, "cpu=2100m*,ephemeral-storage=1Gi,memory=4Gi*", 0 },
	{ "extended resources and pods are not node resources",
	  "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"1\",\"pods\":\"1\","
	  "\"hugepages-2Mi\":\"4Mi\"}}}]", NULL, "hugepages-2Mi=4Mi", 0 },
	{ "a resize the kubelet allocated counts: the larger of spec and allocated",
	  "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"2Gi\"}}}]",
	  "\"containerStatuses\":[{\"name\":\"a\",\"allocatedResources\":{\"cpu\":\"2\",\"memory\":\"1Gi\"}}]",
	  "cpu=2,memory=2Gi", 0 },
	{ "what runs counts too (actuated)",
	  "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]",
	  "\"containerStatuses\":[{\"name\":\"a\",\"allocatedResources\":{\"cpu\":\"1\"},"
	  "\"resources\":{\"requests\":{\"cpu\":\"3\"}}}]", "cpu=3", 0 },
	{ "an infeasible resize: the spec does not count, what runs does",
	  "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"8\"}}}]",
	  "\"conditions\":[{\"type\":\"PodResizePending\",\"reason\":\"Infeasible\"}],"
	  "\"containerStatuses\":[{\"name\":\"a\",\"allocatedResources\":{\"cpu\":\"1\"},"
	  "\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]", "cpu=1", 0 },
	/* 1.36's AggregateContainerRequests sums each source over the Pod (spec,
	 * allocated, actuated: aggregateContainerResourcesByFn) and takes the
	 * largest sum, not the largest per container: a (spec 2, allocated 1)
	 * and b (spec 1, allocated 2) make max(3, 3) = 3, where the per-container
	 * rule of releases before the DRA node-allocatable feature gave 4. */
	{ "resize: the largest of the Pod-wide sums, not of each container",
	  "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"2\"}}},"
	  "{\"name\":\"b\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]",
	  "\"containerStatuses\":[{\"name\":\"a\",\"allocatedResources\":{\"cpu\":\"1\"}},"
	  "{\"name\":\"b\",\"allocatedResources\":{\"cpu\":\"2\"}}]", "cpu=3", 0 },
	{ "no requests at all", "\"containers\":[{\"name\":\"a\"}]", NULL, "", 0 },
	{ "a request that is not a quantity",
	  "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"lots\"}}}]", NULL,
	  "spec.containers: a value is not a quantity", -EINVAL },
	{ "a resource named twice",
	  "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}],"
	  "\"overhead\":{\"cpu\":\"1\",\"cpu\":\"2\"}", NULL, NULL, -EPROTO },
};

static void text_of(const struct pod_requests *r, char *buf, size_t n)
{
	size_t off = 0;
	uint32_t i;

	buf[0] = '\0';
	for (i = 0; i < r->n && off < n; i++) {
		char q[QUANTITY_STR_MAX];

		quantity_format(&r->items[i].value, q);
		off += (size_t)snprintf(buf + off, n - off, "%s%.*s=%s%s", i ? "," : "", STR_FMT(r->items[i].name), q,
					r->items[i].pod_level ? "*" : "");
	}
}

static void test_requests_as_the_scheduler_counts_them(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct arena *a = NULL;
		struct k8s_object o;
		struct decode_error derr;
		struct pod_requests req;
		char json[4096], got[512], err[256] = "";
		int rc;

		snprintf(json, sizeof(json), "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
			 "\"namespace\":\"n\"},\"spec\":{\"nodeName\":\"w\",%s}%s%s%s}", r->spec,
			 r->status ? ",\"status\":{" : "", r->status ? r->status : "", r->status ? "}" : "");
		assert_int_equal(arena_new(1 << 20, &a), 0);
		rc = decode_object(json, strlen(json), NULL, a, &o, &derr);
		if (r->rc == -EPROTO) {
			/* The decoder reads the overhead raw: the duplicate is the
			 * requests reader's to refuse. */
			rc = rc ? rc : pod_requests_compute(&o.u.pod, a, &req, err, sizeof(err));
			if (rc == 0)
				fail_msg("%s: accepted", r->about);
			arena_free(a);
			continue;
		}
		if (rc)
			fail_msg("%s: decode: %s", r->about, derr.msg);
		rc = pod_requests_compute(&o.u.pod, a, &req, err, sizeof(err));
		if (rc != r->rc)
			fail_msg("%s: returned %d (%s), want %d", r->about, rc, err, r->rc);
		if (rc == 0) {
			text_of(&req, got, sizeof(got));
			if (strcmp(got, r->want) != 0)
				fail_msg("%s: %s, want %s", r->about, got, r->want);
		} else if (strcmp(err, r->want) != 0) {
			fail_msg("%s: error \"%s\", want \"%s\"", r->about, err, r->want);
		}
		arena_free(a);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_requests_as_the_scheduler_counts_them),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
