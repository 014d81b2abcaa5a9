/* manifest.c - Kubernetes objects out of manifest files.
 *
 * Each text is read with doc_parse_stream() into a doc set the manifest set
 * keeps; entries point into those trees. File names and messages live in
 * the set's own arena. The identity index is a sorted array of entry
 * pointers (entry order breaks ties), rebuilt on the first lookup after an
 * add. */
#include "manifest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "names.h"

struct index_slot;

struct manifest_set {
	struct manifest_options opt;
	struct doc_set **docs;       /* one per text added */
	size_t ndocs, docs_alloc;
	struct manifest_entry *entries;
	size_t n, alloc;
	struct arena *strings;       /* file names, messages */
	struct index_slot *index;    /* object entries by identity */
	size_t nindex;
	bool index_stale;
	bool full;                   /* max_entries reached */
};

/* Per entry: its file name is shared, a message is at most this long. */
#define MANIFEST_MSG_MAX 1024

void manifest_options_default(struct manifest_options *opt)
{
	doc_limits_default(&opt->doc);
	opt->doc.max_bytes = (size_t)64 << 20;
	opt->max_entries = 100000;
	opt->default_namespace = "default";
}

int manifest_set_new(const struct manifest_options *opt, struct manifest_set **out)
{
	struct manifest_set *s = calloc(1, sizeof(*s));
	size_t cap;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	if (opt)
		s->opt = *opt;
	else
		manifest_options_default(&s->opt);
	if (!s->opt.default_namespace)
		s->opt.default_namespace = "";
	/* Room for a message per entry and a file name per text. */
	cap = s->opt.max_entries > SIZE_MAX / 4096 ? SIZE_MAX : (s->opt.max_entries + 1) * 4096;
	if (arena_new(cap, &s->strings) != 0) {
		free(s);
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

void manifest_set_free(struct manifest_set *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->ndocs; i++)
		doc_set_free(s->docs[i]);
	free(s->docs);
	free(s->entries);
	free(s->index);
	arena_free(s->strings);
	free(s);
}

size_t manifest_set_count(const struct manifest_set *s)
{
	return s->n;
}

const struct manifest_entry *manifest_set_entry(const struct manifest_set *s, size_t i)
{
	return i < s->n ? &s->entries[i] : NULL;
}

/* --- identity --------------------------------------------------------------------- */

static struct str member_text(const struct doc_node *n, const char *key)
{
	const struct doc_node *v = doc_map_get(n, key);

	return v && v->type == DOC_STRING ? v->text : STR_LIT("");
}

void manifest_id_read(const struct doc_node *n, struct manifest_id *out)
{
	const struct doc_node *meta = doc_map_get(n, "metadata");

	memset(out, 0, sizeof(*out));
	out->group = out->version = out->kind = out->namespace = out->name = STR_LIT("");
	if (!n || n->type != DOC_MAP)
		return;
	names_split_api_version(member_text(n, "apiVersion"), &out->group, &out->version);
	out->kind = member_text(n, "kind");
	if (meta && meta->type == DOC_MAP) {
		out->namespace = member_text(meta, "namespace");
		out->name = member_text(meta, "name");
	}
}

static const struct {
	const char *group;
	const char *kind;
} namespaced_kinds[] = {
	{ "", "Pod" }, { "", "ConfigMap" }, { "", "Secret" }, { "", "Service" },
	{ "", "ServiceAccount" }, { "", "Endpoints" }, { "", "Event" }, { "", "LimitRange" },
	{ "", "PersistentVolumeClaim" }, { "", "PodTemplate" }, { "", "ReplicationController" },
	{ "", "ResourceQuota" },
	{ "resource.k8s.io", "ResourceClaim" }, { "resource.k8s.io", "ResourceClaimTemplate" },
	{ "apps", "Deployment" }, { "apps", "DaemonSet" }, { "apps", "StatefulSet" },
	{ "apps", "ReplicaSet" }, { "apps", "ControllerRevision" },
	{ "batch", "Job" }, { "batch", "CronJob" },
	{ "rbac.authorization.k8s.io", "Role" }, { "rbac.authorization.k8s.io", "RoleBinding" },
	{ "policy", "PodDisruptionBudget" }, { "coordination.k8s.io", "Lease" },
	{ "events.k8s.io", "Event" }, { "networking.k8s.io", "NetworkPolicy" },
	{ "networking.k8s.io", "Ingress" }, { "discovery.k8s.io", "EndpointSlice" },
	{ "autoscaling", "HorizontalPodAutoscaler" },
};

bool manifest_kind_namespaced(struct str group, struct str kind)
{
	size_t i;

	for (i = 0; i < sizeof(namespaced_kinds) / sizeof(namespaced_kinds[0]); i++)
		if (str_eq_cstr(group, namespaced_kinds[i].group) && str_eq_cstr(kind, namespaced_kinds[i].kind))
			return true;
	return false;
}

/* --- entries ------------------------------------------------------------------------ */

/* The next entry, zeroed, with file set; NULL with *rc when the set is full
 * or out of memory (at the cap, one last entry says so). */
static struct manifest_entry *new_entry(struct manifest_set *s, const char *file, int *rc)
{
	struct manifest_entry *e;

	*rc = 0;
	if (s->full) {
		*rc = -E2BIG;
		return NULL;
	}
	if (s->n == s->alloc) {
		size_t alloc = s->alloc ? s->alloc * 2 : 64;
		struct manifest_entry *p;

		if (alloc > s->opt.max_entries + 1)
			alloc = s->opt.max_entries + 1;
		p = realloc(s->entries, alloc * sizeof(*p));
		if (!p) {
			*rc = -ENOMEM;
			return NULL;
		}
		s->entries = p;
		s->alloc = alloc;
	}
	e = &s->entries[s->n++];
	memset(e, 0, sizeof(*e));
	e->file = file;
	e->item = MANIFEST_NO_ITEM;
	e->id.group = e->id.version = e->id.kind = e->id.namespace = e->id.name = STR_LIT("");
	s->index_stale = true;
	if (s->n > s->opt.max_entries) {
		struct str msg;

		s->full = true;
		e->error = arena_printf(s->strings, &msg, "more than %zu objects in one run (the limit); "
					"split the input", s->opt.max_entries) == 0 ? msg.ptr : "too many objects";
		*rc = -E2BIG;
		return NULL;
	}
	return e;
}

static int set_error(struct manifest_set *s, struct manifest_entry *e, const char *fmt, const char *arg)
{
	struct str msg;
	int rc = arena_printf(s->strings, &msg, fmt, arg);

	e->error = rc == 0 ? msg.ptr : "out of memory";
	return rc == -E2BIG ? -ENOMEM : rc;
}

static void set_namespace(struct manifest_set *s, struct manifest_entry *e)
{
	if (e->id.namespace.len == 0 && manifest_kind_namespaced(e->id.group, e->id.kind)) {
		e->id.namespace = str_from_cstr(s->opt.default_namespace);
		e->namespace_defaulted = e->id.namespace.len != 0;
	}
}

static bool is_list(const struct doc_node *n)
{
	struct str kind = member_text(n, "kind");
	const struct doc_node *items = doc_map_get(n, "items");

	return kind.len >= 4 && memcmp(kind.ptr + kind.len - 4, "List", 4) == 0 && items &&
	       items->type == DOC_SEQ;
}

/* One object (or not-an-object) of document doc. */
static int add_node(struct manifest_set *s, const char *file, size_t doc, size_t item,
		    const struct doc_node *n)
{
	struct manifest_entry *e;
	int rc;

	e = new_entry(s, file, &rc);
	if (!e)
		return rc;
	e->doc = doc;
	e->item = item;
	e->line = n->line;
	e->col = n->col;
	if (n->type != DOC_MAP)
		return set_error(s, e, "expected an object (a map), got a %s", doc_type_name(n->type));
	e->node = n;
	manifest_id_read(n, &e->id);
	set_namespace(s, e);
	return 0;
}

static int add_document(struct manifest_set *s, const char *file, const struct doc_set *set, size_t i)
{
	const struct doc_node *root = doc_set_root(set, i), *items;
	const struct doc_error *err = doc_set_error(set, i);
	struct manifest_entry *e;
	size_t j;
	int rc = 0;

	if (err) {
		e = new_entry(s, file, &rc);
		if (!e)
			return rc;
		e->doc = i;
		e->line = err->line;
		e->col = err->col;
		manifest_id_read(root, &e->id);
		e->partial = root;
		return set_error(s, e, "%s", err->msg);
	}
	if (root->type == DOC_NULL)
		return 0;           /* an empty document between two markers */
	if (root->type != DOC_MAP || !is_list(root))
		return add_node(s, file, i, MANIFEST_NO_ITEM, root);
	items = doc_map_get(root, "items");
	for (j = 0; rc == 0 && j < items->n; j++)
		rc = add_node(s, file, i, j, items->items[j]);
	return rc;
}

static int keep_docs(struct manifest_set *s, struct doc_set *set)
{
	if (s->ndocs == s->docs_alloc) {
		size_t alloc = s->docs_alloc ? s->docs_alloc * 2 : 16;
		struct doc_set **p = realloc(s->docs, alloc * sizeof(*p));

		if (!p)
			return -ENOMEM;
		s->docs = p;
		s->docs_alloc = alloc;
	}
	s->docs[s->ndocs++] = set;
	return 0;
}

int manifest_set_add(struct manifest_set *s, const char *file, const char *text, size_t len)
{
	struct doc_set *set = NULL;
	struct doc_error derr;
	struct manifest_entry *e;
	struct str name = { NULL, 0 };
	size_t i;
	int rc;

	if (s->full)
		return -E2BIG;
	rc = arena_strdup(s->strings, file, strlen(file), &name);
	if (rc)
		return -ENOMEM;
	rc = doc_parse_stream(text, len, &s->opt.doc, &set, &derr);
	if (rc == -ENOMEM)
		return rc;
	if (rc) {
		/* Over a limit as a whole: one entry for the text. */
		char msg[DOC_ERROR_MAX + 64];

		e = new_entry(s, name.ptr, &rc);
		if (!e)
			return rc;
		e->doc = derr.doc_index;
		e->line = derr.line;
		e->col = derr.col;
		snprintf(msg, sizeof(msg), "%s", derr.msg);
		return set_error(s, e, "%s", msg);
	}
	rc = keep_docs(s, set);
	if (rc) {
		doc_set_free(set);
		return rc;
	}
	for (i = 0; rc == 0 && i < doc_set_count(set); i++)
		rc = add_document(s, name.ptr, set, i);
	return rc;
}

int manifest_set_add_error(struct manifest_set *s, const char *file, const char *msg)
{
	struct manifest_entry *e;
	struct str name = { NULL, 0 };
	int rc;

	if (arena_strdup(s->strings, file, strlen(file), &name) != 0)
		return -ENOMEM;
	e = new_entry(s, name.ptr, &rc);
	if (!e)
		return rc;
	return set_error(s, e, "%s", msg);
}

/* --- lookup by identity --------------------------------------------------------------- */

static int id_cmp(const struct manifest_id *a, const struct manifest_id *b)
{
	int c = str_cmp(a->group, b->group);

	if (c == 0)
		c = str_cmp(a->kind, b->kind);
	if (c == 0)
		c = str_cmp(a->namespace, b->namespace);
	if (c == 0)
		c = str_cmp(a->name, b->name);
	return c;
}

struct index_slot {
	const struct manifest_id *id;
	size_t entry;
};

static int slot_cmp(const void *pa, const void *pb)
{
	const struct index_slot *a = pa, *b = pb;
	int c = id_cmp(a->id, b->id);

	return c ? c : (a->entry > b->entry) - (a->entry < b->entry);
}

static int build_index(struct manifest_set *s)
{
	size_t i, n = 0;
	struct index_slot *index = malloc((s->n ? s->n : 1) * sizeof(*index));

	if (!index)
		return -ENOMEM;
	for (i = 0; i < s->n; i++) {
		if (s->entries[i].node && s->entries[i].id.name.len) {
			index[n].id = &s->entries[i].id;
			index[n].entry = i;
			n++;
		}
	}
	qsort(index, n, sizeof(*index), slot_cmp);
	free(s->index);
	s->index = index;
	s->nindex = n;
	s->index_stale = false;
	return 0;
}

const struct manifest_entry *manifest_set_find(struct manifest_set *s, const struct manifest_id *id,
					       const struct manifest_entry **second, int *rc)
{
	size_t lo = 0, hi;

	*rc = 0;
	if (second)
		*second = NULL;
	if (id->name.len == 0)
		return NULL;
	if (s->index_stale) {
		*rc = build_index(s);
		if (*rc)
			return NULL;
	}
	/* The first index entry not less than id. */
	hi = s->nindex;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (id_cmp(s->index[mid].id, id) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == s->nindex || id_cmp(s->index[lo].id, id) != 0)
		return NULL;
	if (second && lo + 1 < s->nindex && id_cmp(s->index[lo + 1].id, id) == 0)
		*second = &s->entries[s->index[lo + 1].entry];
	return &s->entries[s->index[lo].entry];
}
