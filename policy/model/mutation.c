/* mutation.c - the patch the mutating endpoint returns for a ResourceSlice. */
#include "mutation.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "buf.h"
#include "jw.h"

/* The canonical form never holds more than this (128 devices x a few
 * mappings is a few KiB; the decoder's caps bound it well below). */
#define CANONICAL_MAX (4 * 1024 * 1024)

static int cmp_device(const void *a, const void *b)
{
	const struct device *const *da = a, *const *db = b;

	return str_cmp((*da)->name, (*db)->name);
}

static int cmp_mapping(const void *a, const void *b)
{
	const struct mapping *const *ma = a, *const *mb = b;

	return str_cmp((*ma)->resource, (*mb)->resource);
}

/* A string of the canonical form, quoted and escaped as JSON (a
 * one-value document of jw's) so no text can pass for another. */
static int add_quoted(struct buf *b, struct str s)
{
	struct jw w;

	jw_init(&w, b);
	jw_string(&w, s.ptr, s.len);
	return jw_finish(&w);
}

/* One quantity field: its value's normal form, "1" when absent and
 * defaulted, "-" when absent otherwise, the raw text when it is not a
 * quantity (so a change of garbage still changes the fingerprint). */
static int add_field(struct buf *b, const struct quantity_field *f, bool defaults_to_one)
{
	char normal[QUANTITY_STR_MAX];
	int rc;

	if (!f->present)
		return buf_add_cstr(b, defaults_to_one ? "1e0;" : "-;");
	if (f->err) {
		rc = buf_add_char(b, '!');
		if (rc == 0)
			rc = add_quoted(b, f->text);
		return rc ? rc : buf_add_char(b, ';');
	}
	quantity_normal(&f->value, normal);
	rc = buf_add_cstr(b, normal);
	return rc ? rc : buf_add_char(b, ';');
}

static int add_mapping(struct buf *b, const struct mapping *m)
{
	int rc = add_quoted(b, m->resource);

	if (rc == 0 && m->is_null)
		return buf_add_cstr(b, "=null\n");
	if (rc == 0)
		rc = buf_add_char(b, '=');
	if (rc == 0 && m->has_capacity_key) {
		/* Capacity mode, whichever shape spelled it. */
		rc = buf_add_cstr(b, "capacity:");
		if (rc == 0)
			rc = add_quoted(b, m->capacity_key);
		if (rc == 0)
			rc = buf_add_char(b, ';');
		if (rc == 0)
			rc = add_field(b, m->shape == MAPPING_V137 ? &m->capacity_multiplier : &m->multiplier, true);
	} else if (rc == 0) {
		rc = buf_add_cstr(b, "device:");
		if (rc == 0)
			rc = add_field(b, &m->multiplier, true);
	}
	if (rc == 0)
		rc = add_field(b, &m->overhead_per_pod, false);
	if (rc == 0)
		rc = add_field(b, &m->overhead_per_container, false);
	if (rc == 0)
		rc = buf_add_char(b, '\n');
	return rc;
}

int mutation_fingerprint(const struct resource_slice *s, struct arena *a,
			 char out[MUTATION_FINGERPRINT_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	const struct device **devs = NULL;
	const struct mapping **maps = NULL;
	unsigned char md[SHA256_DIGEST_LENGTH];
	uint32_t i, j, ndev = 0, maxmap = 0;
	struct buf b;
	int rc = 0;

	buf_init(&b, CANONICAL_MAX);
	devs = arena_calloc(a, s->ndevices ? s->ndevices : 1, sizeof(*devs));
	if (!devs)
		return arena_error(a);
	for (i = 0; i < s->ndevices; i++) {
		if (s->devices[i].nmappings == 0)
			continue;
		devs[ndev++] = &s->devices[i];
		if (s->devices[i].nmappings > maxmap)
			maxmap = s->devices[i].nmappings;
	}
	maps = arena_calloc(a, maxmap ? maxmap : 1, sizeof(*maps));
	if (!maps)
		return arena_error(a);
	qsort(devs, ndev, sizeof(*devs), cmp_device);
	for (i = 0; i < ndev && rc == 0; i++) {
		const struct device *d = devs[i];

		rc = add_quoted(&b, d->name);
		if (rc == 0)
			rc = buf_add_char(&b, '\n');
		for (j = 0; j < d->nmappings; j++)
			maps[j] = &d->mappings[j];
		qsort(maps, d->nmappings, sizeof(*maps), cmp_mapping);
		for (j = 0; j < d->nmappings && rc == 0; j++)
			rc = add_mapping(&b, maps[j]);
	}
	if (rc == 0) {
		SHA256((const unsigned char *)buf_cstr(&b), buf_len(&b), md);
		for (i = 0; i < MUTATION_FINGERPRINT_LEN / 2; i++) {
			out[2 * i] = hex[md[i] >> 4];
			out[2 * i + 1] = hex[md[i] & 0xf];
		}
		out[MUTATION_FINGERPRINT_LEN] = '\0';
	}
	buf_free(&b);
	return rc;
}

/* JSON Pointer escaping of the label key: "/" becomes "~1". */
#define LABEL_POINTER "/metadata/labels/dra-guard.io~1mappings"
/* A patch of one operation on the label is far shorter. */
#define PATCH_MAX 1024

/* [{"op":op,"path":path}] with "value":fp when fp is given, or
 * "value":{key:fp} when key is given too; in a's memory. */
static int label_patch(struct arena *a, const char *op, const char *path, const char *key, const char *fp,
		       struct str *patch)
{
	struct buf b;
	struct jw w;
	int rc;

	buf_init_in(&b, PATCH_MAX, a);
	jw_init(&w, &b);
	jw_array_begin(&w);
	jw_object_begin(&w);
	jw_kcstr(&w, "op", op);
	jw_kcstr(&w, "path", path);
	if (fp) {
		jw_key(&w, "value");
		if (key) {
			jw_object_begin(&w);
			jw_kcstr(&w, key, fp);
			jw_object_end(&w);
		} else {
			jw_cstr(&w, fp);
		}
	}
	jw_object_end(&w);
	jw_array_end(&w);
	rc = jw_finish(&w);
	if (rc == 0) {
		patch->ptr = buf_cstr(&b);
		patch->len = buf_len(&b);
	}
	return rc;
}

int mutation_slice_patch(const struct k8s_object *obj, struct arena *a, struct str *patch)
{
	const struct object_meta *meta = &obj->meta;
	char fp[MUTATION_FINGERPRINT_LEN + 1];
	int rc;

	patch->ptr = "";
	patch->len = 0;
	if (obj->kind != OBJECT_RESOURCE_SLICE)
		return 0;
	if (!model_slice_has_mappings(&obj->u.slice)) {
		if (!meta->has_mapping_label)
			return 0;
		return label_patch(a, "remove", LABEL_POINTER, NULL, NULL, patch);
	}
	rc = mutation_fingerprint(&obj->u.slice, a, fp);
	if (rc)
		return rc;
	if (meta->has_mapping_label && str_eq_cstr(meta->mapping_label, fp))
		return 0;
	if (meta->has_mapping_label)
		return label_patch(a, "replace", LABEL_POINTER, NULL, fp, patch);
	if (meta->has_labels)
		return label_patch(a, "add", LABEL_POINTER, NULL, fp, patch);
	return label_patch(a, "add", "/metadata/labels", MUTATION_LABEL, fp, patch);
}
