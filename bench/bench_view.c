/* bench_view.c - the cluster view's decode and apply rates, apart from any
 * API server: a LIST of N claims (each shaped as the scale loader's, with
 * managedFields) and a WATCH stream of M MODIFIED/ADDED/DELETED events are
 * made in memory, then fed in 16 KiB chunks through view_stream into the
 * builder, publishing a snapshot every PUBLISH events (and handing the
 * previous one back, as a reader would) the way the watcher does.
 *
 *   bench_view [CLAIMS [EVENTS [PUBLISH]]]      defaults 100000 200000 500
 *   bench_view --one-device CLAIMS              default 100000
 *   bench_view --files SLICES CLAIMS PODS NODES
 *
 * Prints one line per phase: bytes, seconds, objects or events per second,
 * and the view's memory per claim. --one-device lists CLAIMS claims that
 * all share one device (consumable capacity, a shareID each): the relist
 * that rebuilds that device's holders, once quadratic in them. --files
 * lists the four LIST bodies (files, read 16 KiB at a time; "-" for none) into
 * one view, as the watcher does at its first sync, and prints the bytes
 * of each kind of record per object and the process's RSS: what
 * docs/performance.md's per-object figures come from. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <malloc.h>

#include "buf.h"
#include "clock.h"
#include "view.h"
#include "view_stream.h"

#define CHUNK 16384

static void claim(struct buf *b, unsigned i, unsigned rv, bool kind)
{
	unsigned node = i % 5000, dev = (i / 5000) % 8;

	buf_printf(b, "{%s\"metadata\":{\"name\":\"claim-%06u\",\"namespace\":\"ns-%03u\",\"uid\":"
		   "\"6f1c1a55-0d2b-4c3e-9a7e-%012u\",\"resourceVersion\":\"%u\",\"creationTimestamp\":"
		   "\"2026-12-01T10:00:00Z\",\"managedFields\":[{\"manager\":\"loader.py\",\"operation\":\"Update\","
		   "\"apiVersion\":\"resource.k8s.io/v1\",\"time\":\"2026-12-01T10:00:00Z\",\"fieldsType\":\"FieldsV1\","
		   "\"fieldsV1\":{\"f:spec\":{\"f:devices\":{\"f:requests\":{}}}}},{\"manager\":\"loader.py\","
		   "\"operation\":\"Update\",\"apiVersion\":\"resource.k8s.io/v1\",\"time\":\"2026-12-01T10:00:01Z\","
		   "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:status\":{\"f:allocation\":{\".\":{},"
		   "\"f:devices\":{\".\":{},\"f:results\":{}},\"f:nodeSelector\":{}},\"f:reservedFor\":{}}},"
		   "\"subresource\":\"status\"}]},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":"
		   "{\"deviceClassName\":\"gpu.example.com\",\"allocationMode\":\"ExactCount\",\"count\":1}}]}},"
		   "\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\",\"driver\":"
		   "\"gpu.example.com\",\"pool\":\"worker-%05u\",\"device\":\"gpu-%u\"}]},\"nodeSelector\":"
		   "{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
		   "\"values\":[\"worker-%05u\"]}]}]}},\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"p-%u\","
		   "\"uid\":\"0b5e7c1e-8d7f-4f8e-9a57-%012u\"}]}}",
		   kind ? "\"kind\":\"ResourceClaim\",\"apiVersion\":\"resource.k8s.io/v1\"," : "",
		   i, i / 1000, i, rv, node, dev, node, i, i);
}

/* A claim on the one shared device of --one-device. */
static void shared_claim(struct buf *b, unsigned i)
{
	buf_printf(b, "{\"metadata\":{\"name\":\"claim-%06u\",\"namespace\":\"ns-%03u\",\"uid\":"
		   "\"6f1c1a55-0d2b-4c3e-9a7e-%012u\",\"resourceVersion\":\"100\"},\"spec\":{\"devices\":"
		   "{\"requests\":[{\"name\":\"nic\",\"exactly\":{\"deviceClassName\":\"nic.example.com\"}}]}},"
		   "\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"nic\",\"driver\":"
		   "\"nic.example.com\",\"pool\":\"worker-00000\",\"device\":\"nic-0\",\"shareID\":"
		   "\"a1b2c3d4-0000-4000-8000-%012u\",\"consumedCapacity\":{\"nic.example.com/bandwidth\":\"1Mi\"}}]},"
		   "\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\","
		   "\"operator\":\"In\",\"values\":[\"worker-00000\"]}]}]}}}}",
		   i, i / 1000, i, i);
}

struct sink_ctx {
	struct view_builder *b;
	bool list;
	unsigned applied;
	unsigned publish_every;
	const struct view *held;
};

static int sink_object(void *ctx, enum view_event ev, const struct k8s_object *obj)
{
	struct sink_ctx *c = ctx;
	char err[256];
	int rc;

	if (c->list)
		return view_builder_relist_add(c->b, OBJECT_RESOURCE_CLAIM, obj, 1, err, sizeof(err));
	rc = view_builder_apply(c->b, OBJECT_RESOURCE_CLAIM, ev, obj, 2, err, sizeof(err));
	if (rc == 0 && ++c->applied % c->publish_every == 0) {
		const struct view *v = NULL;

		if (view_builder_publish(c->b, &v) != 0)
			return -1;
		if (c->held)
			view_builder_release(c->b, c->held);
		c->held = v;
		view_builder_collect(c->b);
	}
	return rc;
}

static int feed(struct view_stream *s, const struct buf *text, struct sink_ctx *c)
{
	struct view_stream_sink sink = { .object = sink_object, .skipped = NULL, .ctx = c };
	size_t off, n = buf_len(text);

	for (off = 0; off < n; off += CHUNK)
		if (view_stream_feed(s, buf_cstr(text) + off, n - off < CHUNK ? n - off : CHUNK, &sink) != 0)
			return -1;
	return view_stream_end(s, &sink);
}

/* --one-device: one LIST of n claims on one device, relist to commit. */
static int one_device(unsigned n)
{
	struct view_builder *b = NULL;
	struct view_stream *s = NULL;
	struct sink_ctx c = { 0 };
	const struct view *v = NULL;
	const struct view_hold *h;
	struct buf text;
	double t0, dt;
	unsigned i;
	int rc = 1;

	buf_init(&text, (size_t)4 << 30);
	buf_add_cstr(&text, "{\"kind\":\"ResourceClaimList\",\"apiVersion\":\"resource.k8s.io/v1\","
		     "\"metadata\":{\"resourceVersion\":\"100\"},\"items\":[");
	for (i = 0; i < n; i++) {
		if (i)
			buf_add_char(&text, ',');
		shared_claim(&text, i);
	}
	buf_add_cstr(&text, "]}");
	if (view_builder_new(NULL, &b) != 0 || view_builder_relist_begin(b, OBJECT_RESOURCE_CLAIM) != 0 ||
	    view_stream_new(VIEW_STREAM_LIST, OBJECT_RESOURCE_CLAIM, API_V1, 3u << 20, &s) != 0)
		goto out;
	c.b = b;
	c.list = true;
	c.publish_every = 1;
	t0 = clock_mono_s();
	if (feed(s, &text, &c) != 0 || view_builder_relist_commit(b, OBJECT_RESOURCE_CLAIM, 1) != 0 ||
	    view_builder_publish(b, &v) != 0) {
		fprintf(stderr, "list failed: %s\n", view_stream_error(s));
		goto out;
	}
	dt = clock_mono_s() - t0;
	h = view_hold_get(v, (struct str){ "nic.example.com", 15 }, (struct str){ "worker-00000", 12 },
			  (struct str){ "nic-0", 5 });
	if (!h || h->nholders != n) {
		fprintf(stderr, "the device's hold has %u holders, not %u\n", h ? h->nholders : 0, n);
		goto out;
	}
	printf("one-device claims=%u seconds=%.3f claims_per_s=%.0f\n", n, dt, n / dt);
	rc = 0;
out:
	if (v)
		view_builder_release(b, v);
	view_stream_free(s);
	view_builder_free(b);
	buf_free(&text);
	return rc;
}


/* --files: the four LIST bodies into one view. */
struct files_ctx {
	struct view_builder *b;
	enum object_kind r;
};

static int files_object(void *ctx, enum view_event ev, const struct k8s_object *obj)
{
	struct files_ctx *c = ctx;
	char err[256];
	int rc;

	(void)ev;
	rc = view_builder_relist_add(c->b, c->r, obj, 1, err, sizeof(err));
	if (rc)
		fprintf(stderr, "refused: %s\n", err);
	return rc;
}

static long rss_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "VmRSS:", 6) == 0)
			kib = atol(line + 6);
	fclose(f);
	return kib;
}

struct sum_ctx {
	size_t bytes;
	uint32_t n;
};

static void sum(struct sum_ctx *c, const struct view_rec *h)
{
	c->bytes += h->size;
	c->n++;
}

static void per(const char *what, const struct sum_ctx *c)
{
	printf("  %-7s %7u records %10zu bytes %6.1f B each\n", what, c->n, c->bytes,
	       c->n ? (double)c->bytes / c->n : 0.0);
}

static int files(char **paths)
{
	/* the order of the files on the command line */
	static const enum object_kind kinds[] = {
		OBJECT_RESOURCE_SLICE, OBJECT_RESOURCE_CLAIM, OBJECT_POD, OBJECT_NODE,
	};
	struct view_builder *b = NULL;
	const struct view *v = NULL;
	struct view_stats st;
	struct sum_ctx sc[5];
	struct view_iter it;
	const struct view_slice *sl;
	const struct view_claim *cl;
	const struct view_pod *po;
	const struct view_node *no;
	const struct view_pool *pl;
	static char chunk[CHUNK];
	double t0 = clock_mono_s();
	long rss0 = rss_kib();
	int r, rc = 1;

	memset(sc, 0, sizeof(sc));
	if (view_builder_new(NULL, &b) != 0)
		return 1;
	for (r = 0; r < (int)(sizeof(kinds) / sizeof(kinds[0])); r++) {
		struct files_ctx fc = { b, kinds[r] };
		struct view_stream_sink sink = { .object = files_object, .ctx = &fc };
		struct view_stream *s = NULL;
		FILE *f;
		size_t n;

		if (strcmp(paths[r], "-") == 0)
			continue;
		if (!(f = fopen(paths[r], "rb"))) {
			perror(paths[r]);
			goto out;
		}
		if (view_stream_new(VIEW_STREAM_LIST, kinds[r], API_V1, 3u << 20, &s) != 0 ||
		    view_builder_relist_begin(b, kinds[r]) != 0) {
			fclose(f);
			view_stream_free(s);
			goto out;
		}
		while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
			if (view_stream_feed(s, chunk, n, &sink) != 0)
				break;
		fclose(f);
		if (view_stream_end(s, &sink) != 0 || view_builder_relist_commit(b, kinds[r], 1) != 0) {
			fprintf(stderr, "%s: %s\n", paths[r], view_stream_error(s));
			view_stream_free(s);
			goto out;
		}
		view_stream_free(s);
	}
	if (view_builder_publish(b, &v) != 0)
		goto out;
	view_builder_collect(b);
	view_builder_stats(b, &st);
	for (sl = view_first_slice(&it, v); sl; sl = view_next_slice(&it))
		sum(&sc[0], &sl->h);
	for (cl = view_first_claim(&it, v); cl; cl = view_next_claim(&it))
		sum(&sc[1], &cl->h);
	for (po = view_first_pod(&it, v); po; po = view_next_pod(&it))
		sum(&sc[2], &po->h);
	for (no = view_first_node(&it, v); no; no = view_next_node(&it))
		sum(&sc[3], &no->h);
	for (pl = view_first_pool(&it, v); pl; pl = view_next_pool(&it))
		sum(&sc[4], &pl->h);
	printf("files  seconds=%.2f records=%zu atoms=%zu (%u) atom_ids=%zu holds=%u rss_kib=%ld (at start %ld)\n",
	       clock_mono_s() - t0, st.record_bytes, st.atom_bytes, st.atoms, st.atom_id_bytes, st.holds, rss_kib(),
	       rss0);
	per("slices", &sc[0]);
	per("claims", &sc[1]);
	per("pods", &sc[2]);
	per("nodes", &sc[3]);
	per("pools", &sc[4]);
	/* What glibc keeps of the LISTs' decoding: the guard trims it after
	 * a sync (cluster_view.c). */
	malloc_trim(0);
	printf("after malloc_trim rss_kib=%ld\n", rss_kib());
	rc = 0;
out:
	if (v)
		view_builder_release(b, v);
	view_builder_free(b);
	return rc;
}

int main(int argc, char **argv)
{
	unsigned nclaims = argc > 1 ? (unsigned)atoi(argv[1]) : 100000;
	unsigned nevents = argc > 2 ? (unsigned)atoi(argv[2]) : 200000;
	unsigned every = argc > 3 ? (unsigned)atoi(argv[3]) : 500;
	struct view_builder *b = NULL;
	struct view_stream *s = NULL;
	struct sink_ctx c = { 0 };
	struct view_stats st;
	struct buf text;
	double t0, dt;
	unsigned i;

	if (argc > 1 && strcmp(argv[1], "--one-device") == 0)
		return one_device(argc > 2 ? (unsigned)atoi(argv[2]) : 100000);
	if (argc == 6 && strcmp(argv[1], "--files") == 0)
		return files(argv + 2);
	if (nclaims == 0 || every == 0)
		return 2;
	buf_init(&text, (size_t)4 << 30);
	buf_add_cstr(&text, "{\"kind\":\"ResourceClaimList\",\"apiVersion\":\"resource.k8s.io/v1\","
		     "\"metadata\":{\"resourceVersion\":\"100\"},\"items\":[");
	for (i = 0; i < nclaims; i++) {
		if (i)
			buf_add_char(&text, ',');
		claim(&text, i, 100, false);
	}
	buf_add_cstr(&text, "]}");
	if (view_builder_new(NULL, &b) != 0 || view_builder_relist_begin(b, OBJECT_RESOURCE_CLAIM) != 0 ||
	    view_stream_new(VIEW_STREAM_LIST, OBJECT_RESOURCE_CLAIM, API_V1, 3u << 20, &s) != 0)
		return 1;
	c.b = b;
	c.list = true;
	c.publish_every = every;
	t0 = clock_mono_s();
	if (feed(s, &text, &c) != 0 || view_builder_relist_commit(b, OBJECT_RESOURCE_CLAIM, 1) != 0) {
		fprintf(stderr, "list failed: %s\n", view_stream_error(s));
		return 1;
	}
	dt = clock_mono_s() - t0;
	view_builder_stats(b, &st);
	printf("list   claims=%u bytes=%zu seconds=%.3f claims_per_s=%.0f MB_per_s=%.1f view_bytes_per_claim=%.0f\n",
	       nclaims, buf_len(&text), dt, nclaims / dt, (double)buf_len(&text) / dt / 1e6,
	       (double)(st.record_bytes + st.atom_bytes) / nclaims);
	view_stream_free(s);

	/* Events: mostly MODIFIED (a new resourceVersion), some DELETED and
	 * ADDED back, as churn looks. */
	buf_reset(&text);
	for (i = 0; i < nevents; i++) {
		unsigned k = (i * 7919u) % nclaims;
		const char *type = i % 10 == 3 ? "DELETED" : i % 10 == 4 ? "ADDED" : "MODIFIED";

		if (i % 10 == 4)
			k = ((i - 1) * 7919u) % nclaims;
		buf_printf(&text, "{\"type\":\"%s\",\"object\":", type);
		claim(&text, k, 101 + i, true);
		buf_add_cstr(&text, "}\n");
	}
	if (view_stream_new(VIEW_STREAM_WATCH, OBJECT_RESOURCE_CLAIM, API_V1, 3u << 20, &s) != 0)
		return 1;
	c.list = false;
	t0 = clock_mono_s();
	if (feed(s, &text, &c) != 0) {
		fprintf(stderr, "watch failed: %s\n", view_stream_error(s));
		return 1;
	}
	dt = clock_mono_s() - t0;
	view_builder_stats(b, &st);
	printf("watch  events=%u bytes=%zu seconds=%.3f events_per_s=%.0f publish_every=%u snapshots_out=%u retired=%zu\n",
	       nevents, buf_len(&text), dt, nevents / dt, every, st.snapshots, st.retired);
	view_stream_free(s);
	if (c.held)
		view_builder_release(b, c.held);
	view_builder_free(b);
	buf_free(&text);
	return 0;
}
