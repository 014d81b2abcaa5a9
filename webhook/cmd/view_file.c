/* view_file.c - a cluster view from files (view_file.h). */
#include "view_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "arena.h"
#include "buf.h"
#include "doc.h"
#include "fileio.h"
#include "inputs.h"
#include "manifest.h"

#define OBJECT_MAX ((size_t)3 << 20)
#define ARENA_CAP ((size_t)64 << 20)

static void add_stats(struct view_dump_stats *to, const struct view_dump_stats *from)
{
	if (from->refused && !to->refused)
		snprintf(to->first_error, sizeof(to->first_error), "%s", from->first_error);
	to->other += from->other;
	to->refused += from->refused;
}

/* A JSON List or object: first non-blank byte '{'. */
static bool json_object(const char *text, size_t len)
{
	size_t i;

	for (i = 0; i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'); i++)
		;
	return i < len && text[i] == '{';
}

/* Anything else: the manifest reader's entries, object by object. */
static int load_manifests(struct view_builder *b, const char *path, int64_t now, struct view_dump_stats *st,
			  char *err, size_t n)
{
	struct manifest_options mopt;
	struct manifest_set *set = NULL;
	struct arena *a = NULL;
	struct buf json;
	size_t i;
	int rc;

	(void)err;
	(void)n;
	manifest_options_default(&mopt);
	mopt.doc.max_bytes = VIEW_FILE_MAX;
	mopt.doc.max_nodes = (size_t)256 << 20;
	mopt.max_entries = 4000000;
	if ((rc = manifest_set_new(&mopt, &set)) != 0 || (rc = arena_new(ARENA_CAP, &a)) != 0)
		goto out;
	buf_init(&json, OBJECT_MAX);
	rc = inputs_read(set, path, VIEW_FILE_MAX);
	for (i = 0; rc == 0 && i < manifest_set_count(set); i++) {
		const struct manifest_entry *e = manifest_set_entry(set, i);
		char why[512];
		int r;

		if (!e->node) {
			if (st->refused++ == 0)
				snprintf(st->first_error, sizeof(st->first_error), "%.200s#%zu: %.300s", e->file, e->doc,
					 e->error ? e->error : "not an object");
			continue;
		}
		buf_reset(&json);
		if ((r = doc_to_json(e->node, &json)) != 0) {
			if (st->refused++ == 0)
				snprintf(st->first_error, sizeof(st->first_error), "%s: an object over %zu bytes",
					 e->file, (size_t)OBJECT_MAX);
			continue;
		}
		r = view_builder_apply_json(b, VIEW_ADDED, buf_cstr(&json), buf_len(&json), a, now, why, sizeof(why));
		if (r == -ENOMEM) {
			rc = r;
			break;
		}
		if (r == 1) {
			st->other++;
		} else if (r) {
			if (st->refused++ == 0)
				snprintf(st->first_error, sizeof(st->first_error), "%.200s#%zu: %.300s", e->file, e->doc, why);
		}
	}
	buf_free(&json);
out:
	arena_free(a);
	manifest_set_free(set);
	return rc;
}

static int load_path(struct view_builder *b, const char *path, int64_t now, struct view_dump_stats *st,
		     char *err, size_t n)
{
	struct stat sb;
	struct view_dump_stats one;
	char *text = NULL;
	size_t len = 0;
	int rc;

	/* A JSON dump file is decoded as a LIST; anything else (YAML, a
	 * directory, stdin) goes through the manifest reader. A path that
	 * does not exist fails the run: the view would lack its objects. */
	if (strcmp(path, "-") == 0)
		return load_manifests(b, path, now, st, err, n);
	if (stat(path, &sb) != 0) {
		rc = -errno;
		snprintf(err, n, "%s: %s", path, strerror(errno));
		return rc;
	}
	if (!S_ISREG(sb.st_mode))
		return load_manifests(b, path, now, st, err, n);
	if ((rc = fileio_read(path, VIEW_FILE_MAX, &text, &len)) != 0) {
		snprintf(err, n, "%s: %s", path, strerror(-rc));
		return rc;
	}
	if (!json_object(text, len)) {
		free(text);
		return load_manifests(b, path, now, st, err, n);
	}
	rc = view_dump_load(b, text, len, now, &one, err, n);
	free(text);
	if (rc == -EBADMSG) {
		char why[400];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, n, "%s: %s", path, why);
	}
	if (rc == 0)
		add_stats(st, &one);
	return rc;
}

int view_file_load(const char *const *paths, size_t npaths, int64_t now_ns, struct view_builder **b,
		   const struct view **v, struct view_dump_stats *st, char *err, size_t n)
{
	struct view_stats vs;
	size_t i;
	int rc, k;

	*b = NULL;
	*v = NULL;
	memset(st, 0, sizeof(*st));
	if ((rc = view_builder_new(NULL, b)) != 0)
		return rc;
	for (i = 0; i < npaths; i++)
		if ((rc = load_path(*b, paths[i], now_ns, st, err, n)) != 0)
			goto fail;
	view_builder_stats(*b, &vs);
	for (k = 0; k < OBJECT_KIND_COUNT; k++)
		st->objects[k] = vs.objects[k];
	view_builder_touch_all(*b, now_ns);
	if ((rc = view_builder_publish(*b, v)) == 0)
		return 0;
fail:
	view_builder_free(*b);
	*b = NULL;
	return rc;
}

void view_file_describe(const struct view *v, const struct view_dump_stats *st, char *buf, size_t n)
{
	int k = snprintf(buf, n, "%u slices (%u pools), %u claims, %u Pods, %u Nodes", view_count(v, OBJECT_RESOURCE_SLICE),
			 view_pool_count(v), view_count(v, OBJECT_RESOURCE_CLAIM), view_count(v, OBJECT_POD),
			 view_count(v, OBJECT_NODE));

	if (k > 0 && (size_t)k < n && (st->other || st->refused))
		snprintf(buf + k, n - (size_t)k, "; %llu of other kinds skipped, %llu unusable%s%s",
			 (unsigned long long)st->other, (unsigned long long)st->refused, st->refused ? " (first: " : "",
			 st->refused ? st->first_error : "");
	if (st->refused && strlen(buf) + 2 < n)
		strcat(buf, ")");
}
