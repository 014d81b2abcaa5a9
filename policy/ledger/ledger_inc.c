/* ledger_inc.c - a ledger kept up to date from the changes between view
 * snapshots (ledger.h, "Kept up to date").
 *
 * Each node's account is its own part, built by ledger_build_node() from
 * the Node, the Pods bound to it and the claims charged on it, and copied
 * into one allocation. Three indexes say what a change touches: the Pods
 * of each node, the claims charged on each node, and for each Pod the
 * multi-node claims whose reservations name it (a Pod that binds, moves or
 * goes changes where such a claim is charged). An update walks the view's
 * change set (view_diff.h): a Node, a Pod or a claim makes the nodes it
 * was and is on dirty; a slice makes the claims holding a device of its
 * pool counted again (their NUMA zone and whether their mapping is still
 * the one they were charged under come from it). Claims counted again
 * take their old counters away (computed on the old snapshot, which the
 * caller still holds) and add the new ones; dirty nodes are built again.
 * The totals and node counts move by what a part takes away and adds. */
#include "ledger.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hmap.h"
#include "ledger_impl.h"
#include "view_diff.h"

/* --- keys and sets -------------------------------------------------------------------- */

/* A set of "namespace/name" keys (or node names), NUL-separated in one
 * buffer: the sets are small (a node's Pods or claims), so a lookup is a
 * scan. */
struct kset {
	uint32_t n, len, cap;
	char *buf;
};

struct mslot {
	char *key;                  /* owned, NUL-terminated; NULL: empty slot */
	uint32_t hash;
	uint32_t klen;
	void *val;                  /* NULL: the key is dead (dropped when the map grows) */
};

/* An open-addressing map from owned keys to values; keys stay until the
 * map grows, which drops the dead ones. */
struct kmap {
	struct mslot *slot;
	uint32_t mask, used, live;
};

/* hmap's FNV-1a with this map's own fold, not hmap_hash_finish(): the map's
 * slot order is the order ledger_inc_each_node() walks, which the replay
 * report shows (the first node near capacity). */
static uint32_t key_hash(struct str s)
{
	uint32_t h = hmap_hash_add(HMAP_HASH_INIT, s.ptr, s.len);

	return h ^ (h >> 16);
}

static struct mslot *kmap_find(const struct kmap *m, struct str key)
{
	uint32_t h = key_hash(key), i;

	if (!m->slot)
		return NULL;
	for (i = h & m->mask; m->slot[i].key; i = (i + 1) & m->mask)
		if (m->slot[i].hash == h && m->slot[i].klen == key.len && memcmp(m->slot[i].key, key.ptr, key.len) == 0)
			return &m->slot[i];
	return NULL;
}

static int kmap_grow(struct kmap *m)
{
	uint32_t n = 64, i, j;
	struct mslot *s;

	while (n * 7 < (m->live + 1) * 20)
		n *= 2;
	if (!(s = calloc(n, sizeof(*s))))
		return -ENOMEM;
	for (i = 0; m->slot && i <= m->mask; i++) {
		struct mslot *o = &m->slot[i];

		if (!o->key)
			continue;
		if (!o->val) {
			free(o->key);
			continue;
		}
		for (j = o->hash & (n - 1); s[j].key; j = (j + 1) & (n - 1))
			;
		s[j] = *o;
	}
	free(m->slot);
	m->slot = s;
	m->mask = n - 1;
	m->used = m->live;
	return 0;
}

/* The slot of key, made (with val NULL) when absent; NULL out of memory. */
static struct mslot *kmap_put(struct kmap *m, struct str key)
{
	struct mslot *s = kmap_find(m, key);
	uint32_t h = key_hash(key), i;
	char *k;

	if (s)
		return s;
	if ((!m->slot || (m->used + 1) * 10 > (m->mask + 1) * 7) && kmap_grow(m) != 0)
		return NULL;
	if (!(k = malloc(key.len + 1)))
		return NULL;
	memcpy(k, key.ptr, key.len);
	k[key.len] = '\0';
	for (i = h & m->mask; m->slot[i].key; i = (i + 1) & m->mask)
		;
	m->slot[i] = (struct mslot){ k, h, (uint32_t)key.len, NULL };
	m->used++;
	return &m->slot[i];
}

static void kset_free(struct kset *s)
{
	if (s) {
		free(s->buf);
		free(s);
	}
}

static void kmap_free(struct kmap *m, void (*free_val)(void *))
{
	uint32_t i;

	for (i = 0; m->slot && i <= m->mask; i++) {
		free(m->slot[i].key);
		if (m->slot[i].val && free_val)
			free_val(m->slot[i].val);
	}
	free(m->slot);
	memset(m, 0, sizeof(*m));
}

static void free_kset(void *p)
{
	kset_free(p);
}

/* The offset of key in s, or s->len. */
static uint32_t kset_at(const struct kset *s, struct str key)
{
	uint32_t off = 0;

	while (off < s->len) {
		size_t n = strlen(s->buf + off);

		if (n == key.len && memcmp(s->buf + off, key.ptr, n) == 0)
			return off;
		off += (uint32_t)n + 1;
	}
	return s->len;
}

/* Add key to the set of map key name (made when new). */
static int set_add(struct kmap *m, struct str name, struct str key)
{
	struct mslot *sl = kmap_put(m, name);
	struct kset *s;

	if (!sl)
		return -ENOMEM;
	if (!sl->val) {
		if (!(sl->val = calloc(1, sizeof(struct kset))))
			return -ENOMEM;
		m->live++;
	}
	s = sl->val;
	if (kset_at(s, key) < s->len)
		return 0;
	if (s->len + key.len + 1 > s->cap) {
		uint32_t cap = s->cap ? s->cap : 64;
		char *g;

		while (cap < s->len + key.len + 1)
			cap *= 2;
		if (!(g = realloc(s->buf, cap)))
			return -ENOMEM;
		s->buf = g;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, key.ptr, key.len);
	s->buf[s->len + key.len] = '\0';
	s->len += (uint32_t)key.len + 1;
	s->n++;
	return 0;
}

/* Take key out of the set of map key name; an emptied set goes. */
static void set_del(struct kmap *m, struct str name, struct str key)
{
	struct mslot *sl = kmap_find(m, name);
	struct kset *s = sl ? sl->val : NULL;
	uint32_t off;

	if (!s || (off = kset_at(s, key)) == s->len)
		return;
	memmove(s->buf + off, s->buf + off + key.len + 1, s->len - off - key.len - 1);
	s->len -= (uint32_t)key.len + 1;
	if (--s->n == 0) {
		kset_free(s);
		sl->val = NULL;
		m->live--;
	}
}

static const struct kset *set_get(const struct kmap *m, struct str name)
{
	const struct mslot *sl = kmap_find(m, name);

	return sl ? sl->val : NULL;
}

/* A mark in a map used as a set of names (the dirty nodes, the claims to
 * count again). */
static int mark(struct kmap *m, struct str name)
{
	struct mslot *sl = kmap_put(m, name);

	if (!sl)
		return -ENOMEM;
	if (!sl->val) {
		sl->val = (void *)m;   /* any non-NULL value */
		m->live++;
	}
	return 0;
}

/* "namespace/name" into buf (n bytes); a key that does not fit is cut,
 * which cannot happen to names the view holds (253 + 63 bytes). */
static struct str obj_key(struct str ns, struct str name, char *buf, size_t n)
{
	size_t l = 0;

	if (ns.len + name.len + 2 > n)
		return (struct str){ buf, 0 };
	memcpy(buf, ns.ptr, ns.len);
	l = ns.len;
	buf[l++] = '/';
	memcpy(buf + l, name.ptr, name.len);
	l += name.len;
	buf[l] = '\0';
	return (struct str){ buf, l };
}

/* The two halves of an object key. */
static void key_split(struct str key, struct str *ns, struct str *name)
{
	const char *slash = memchr(key.ptr, '/', key.len);
	size_t a = slash ? (size_t)(slash - key.ptr) : 0;

	*ns = (struct str){ key.ptr, a };
	*name = slash ? (struct str){ slash + 1, key.len - a - 1 } : key;
}

#define KEY_MAX 600

/* --- parts ---------------------------------------------------------------------------- */

/* A node's account and entries in one allocation. */
struct part {
	struct ledger_node node;
	struct ledger_entry *entries;
	size_t bytes;
};

struct ledger_inc {
	const struct policy *pol;
	size_t cap, bytes;          /* what the parts and indexes hold, against the cap */
	const struct view *v;       /* the snapshot the ledger is of; NULL: build whole next */
	int64_t now_ns;
	struct kmap parts;          /* node name -> struct part */
	struct kmap node_pods;      /* node name -> kset of its Pods */
	struct kmap node_claims;    /* node name -> kset of the claims charged on it */
	struct kmap reservers;      /* Pod key -> kset of the multi-node claims that name it */
	struct ledger_claim_counts counts;
	int64_t mapping_changed_ns;
	uint32_t nentries;
	uint32_t overcommitted, diverging, undercounted;
	uint32_t ntotals;
	struct ledger_totals totals[LEDGER_MAX_RESOURCES];
	struct arena *scratch;      /* one node's build at a time */
	/* The maps and sets grow with the view's Nodes, Pods and claims, which
	 * the view caps (view_limits); the parts are held to cap. */
	struct ledger_inc_stats st;
};

static size_t align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* The string s among the n copied so far, else copied at *pool. */
static struct str copy_str(struct str s, struct str *done, uint32_t *ndone, uint32_t max, char **pool)
{
	uint32_t i;
	struct str c;

	for (i = 0; i < *ndone; i++)
		if (str_eq(done[i], s))
			return done[i];
	memcpy(*pool, s.ptr, s.len);
	(*pool)[s.len] = '\0';
	c = (struct str){ *pool, s.len };
	*pool += s.len + 1;
	if (*ndone < max)
		done[(*ndone)++] = c;
	return c;
}

/* A part holding the only node of l (its zone strings and name copied;
 * the rest borrows from the view). */
static int part_new(const struct ledger *l, struct part **out)
{
	const struct ledger_node *n = &l->nodes[0];
	size_t size = align8(sizeof(struct part)), strs = n->name.len + 1, zoff, eoff, soff;
	struct str done[LEDGER_MAX_ZONES];
	uint32_t ndone = 0, i, j, z = 0;
	struct ledger_amount *am;
	struct ledger_zone *zones;
	struct part *p;
	char *pool;

	for (i = 0; i < n->nresources; i++) {
		z += n->resources[i].nzones;
		for (j = 0; j < n->resources[i].nzones; j++)
			strs += n->resources[i].zones[j].zone.len + 1;
	}
	for (i = 0; i < n->nentries; i++)
		strs += l->entries[n->first_entry + i].zone.len + 1;
	size += align8(n->nresources * sizeof(*am));
	zoff = size;
	size += align8(z * sizeof(*zones));
	eoff = size;
	size += align8(n->nentries * sizeof(struct ledger_entry));
	soff = size;
	size += strs;
	if (!(p = malloc(size)))
		return -ENOMEM;
	p->node = *n;
	p->bytes = size;
	am = (struct ledger_amount *)(void *)((char *)p + align8(sizeof(struct part)));
	zones = (struct ledger_zone *)(void *)((char *)p + zoff);
	p->entries = (struct ledger_entry *)(void *)((char *)p + eoff);
	pool = (char *)p + soff;
	memcpy(pool, n->name.ptr, n->name.len);
	pool[n->name.len] = '\0';
	p->node.name = (struct str){ pool, n->name.len };
	pool += n->name.len + 1;
	p->node.resources = n->nresources ? am : NULL;
	p->node.first_entry = 0;
	for (i = 0; i < n->nresources; i++) {
		am[i] = n->resources[i];
		am[i].zones = am[i].nzones ? zones : NULL;
		for (j = 0; j < am[i].nzones; j++) {
			zones[j] = n->resources[i].zones[j];
			zones[j].zone = copy_str(zones[j].zone, done, &ndone, LEDGER_MAX_ZONES, &pool);
		}
		zones += am[i].nzones;
	}
	for (i = 0; i < n->nentries; i++) {
		p->entries[i] = l->entries[n->first_entry + i];
		p->entries[i].node = p->node.name;
		p->entries[i].zone = copy_str(p->entries[i].zone, done, &ndone, LEDGER_MAX_ZONES, &pool);
	}
	if (!n->nentries)
		p->entries = NULL;
	*out = p;
	return 0;
}

static int cmp_totals(const void *x, const void *y)
{
	return str_cmp(((const struct ledger_totals *)x)->resource, ((const struct ledger_totals *)y)->resource);
}

/* Add (sign 1) or take away (-1) a part from the sums. */
static int part_sum(struct ledger_inc *li, const struct part *p, int sign)
{
	struct ledger sums = { .ntotals = li->ntotals, .totals = li->totals };
	uint32_t i, k;
	int rc;

	for (i = 0; i < p->node.nresources; i++)
		if ((rc = ledger_add_totals(&sums, NULL, &p->node.resources[i], sign)) != 0)
			return rc;
	/* a resource no node has any more leaves the totals */
	for (i = k = 0; i < sums.ntotals; i++)
		if (sums.totals[i].nodes > 0)
			sums.totals[k++] = sums.totals[i];
	if (k > 1)
		qsort(sums.totals, k, sizeof(*sums.totals), cmp_totals);
	li->ntotals = k;
	li->nentries += (uint32_t)sign * p->node.nentries;
	li->overcommitted += (uint32_t)sign * p->node.overcommitted;
	li->diverging += (uint32_t)sign * p->node.diverging;
	li->undercounted += (uint32_t)sign * p->node.undercounted;
	li->bytes += (size_t)sign * p->bytes;
	return 0;
}

/* --- indexes ------------------------------------------------------------------------- */

static void counts_add(struct ledger_claim_counts *a, const struct ledger_claim_counts *c, int sign)
{
	a->claims += (uint32_t)sign * c->claims;
	a->pending += (uint32_t)sign * c->pending;
	a->uncharged += (uint32_t)sign * c->uncharged;
	a->unreserved += (uint32_t)sign * c->unreserved;
	a->old_mapping += (uint32_t)sign * c->old_mapping;
}

/* Claim c (of view v; NULL: none) joins (sign 1) or leaves (-1) the
 * indexes and counters; the nodes it is charged on are marked dirty. */
static int claim_move(struct ledger_inc *li, const struct view *v, const struct view_claim *c, int sign,
		      struct kmap *dirty)
{
	struct ledger_claim_counts cc;
	struct str nodes[LEDGER_CLAIM_NODES], ns, key;
	char kb[KEY_MAX], pb[KEY_MAX];
	uint32_t nn, i;
	int rc = 0;

	if (!c)
		return 0;
	ledger_claim_counts(v, c, &cc);
	counts_add(&li->counts, &cc, sign);
	if (!c->allocated || !c->charges.id)
		return 0;
	ns = view_str(v, c->namespace);
	key = obj_key(ns, str_from_cstr(view_claim_name(c)), kb, sizeof(kb));
	nn = ledger_claim_nodes(v, c, nodes, LEDGER_CLAIM_NODES);
	for (i = 0; i < nn && rc == 0; i++) {
		if (sign > 0)
			rc = set_add(&li->node_claims, nodes[i], key);
		else
			set_del(&li->node_claims, nodes[i], key);
		if (rc == 0)
			rc = mark(dirty, nodes[i]);
	}
	if (c->node_local)
		return rc;
	for (i = 0; i < c->nreserved && rc == 0; i++) {
		struct str pk = obj_key(ns, str_from_cstr(view_consumer_name(c, &view_claim_reserved_for(c)[i])), pb,
					sizeof(pb));

		if (sign > 0)
			rc = set_add(&li->reservers, pk, key);
		else
			set_del(&li->reservers, pk, key);
	}
	return rc;
}

static int pod_move(struct ledger_inc *li, const struct view *v, const struct view_pod *p, int sign,
		    struct kmap *dirty)
{
	char kb[KEY_MAX];
	struct str key, node;
	int rc = 0;

	if (!p || !p->node_name.id)
		return 0;
	key = obj_key(view_str(v, p->namespace), str_from_cstr(view_pod_name(p)), kb, sizeof(kb));
	node = view_str(v, p->node_name);
	if (sign > 0)
		rc = set_add(&li->node_pods, node, key);
	else
		set_del(&li->node_pods, node, key);
	return rc ? rc : mark(dirty, node);
}

/* Node name's account built again from view v. */
static int rebuild_node(struct ledger_inc *li, const struct view *v, struct str name)
{
	const struct kset *ps = set_get(&li->node_pods, name), *cs = set_get(&li->node_claims, name);
	const struct view_pod **pods = NULL;
	const struct view_claim **claims = NULL;
	uint32_t np = 0, nc = 0, off;
	struct mslot *sl = kmap_find(&li->parts, name);
	struct part *p = NULL;
	struct ledger *l = NULL;
	int rc = 0;

	arena_reset(li->scratch);
	if (ps && !(pods = arena_alloc(li->scratch, ps->n * sizeof(*pods))))
		return arena_error(li->scratch);
	if (cs && !(claims = arena_alloc(li->scratch, cs->n * sizeof(*claims))))
		return arena_error(li->scratch);
	for (off = 0; ps && off < ps->len; off += (uint32_t)strlen(ps->buf + off) + 1) {
		struct str ns, nm;
		const struct view_pod *pod;

		key_split(str_from_cstr(ps->buf + off), &ns, &nm);
		if ((pod = view_pod_get(v, ns, nm)) != NULL)
			pods[np++] = pod;
	}
	for (off = 0; cs && off < cs->len; off += (uint32_t)strlen(cs->buf + off) + 1) {
		struct str ns, nm;
		const struct view_claim *c;

		key_split(str_from_cstr(cs->buf + off), &ns, &nm);
		if ((c = view_claim_get(v, ns, nm)) != NULL)
			claims[nc++] = c;
	}
	rc = ledger_build_node(v, li->pol, li->now_ns, name, pods, np, claims, nc, li->scratch, &l);
	if (rc == 0 && l->nnodes == 1)
		rc = part_new(l, &p);
	if (rc)
		return rc;
	if (sl && sl->val) {
		part_sum(li, sl->val, -1);
		free(sl->val);
		sl->val = NULL;
		li->parts.live--;
	}
	if (!p)
		return 0;
	if (li->cap && li->bytes + p->bytes > li->cap) {
		free(p);
		return -E2BIG;
	}
	if (!(sl = kmap_put(&li->parts, name))) {
		free(p);
		return -ENOMEM;
	}
	sl->val = p;
	li->parts.live++;
	return part_sum(li, p, 1);
}

/* --- updates ------------------------------------------------------------------------- */

struct update {
	struct ledger_inc *li;
	const struct view *ov, *nv;
	struct kmap dirty;          /* node names */
	struct kmap redo;           /* claim keys */
	bool rescan_mapping;
};

static int diff_node(void *ctx, const void *o, const void *n)
{
	struct update *u = ctx;
	const struct view_node *r = n ? n : o;

	return mark(&u->dirty, str_from_cstr(view_node_name(r)));
}

static int diff_pod(void *ctx, const void *o, const void *n)
{
	struct update *u = ctx;
	const struct view_pod *r = n ? n : o;
	char kb[KEY_MAX];
	const struct kset *rs;
	uint32_t off;
	int rc;

	/* Records of either snapshot read their atoms through the new one:
	 * both are live, and the id table is the builder's. */
	if ((rc = pod_move(u->li, u->nv, o, -1, &u->dirty)) != 0 || (rc = pod_move(u->li, u->nv, n, 1, &u->dirty)) != 0)
		return rc;
	rs = set_get(&u->li->reservers, obj_key(view_str(u->nv, r->namespace), str_from_cstr(view_pod_name(r)), kb,
						sizeof(kb)));
	for (off = 0; rs && off < rs->len && rc == 0; off += (uint32_t)strlen(rs->buf + off) + 1)
		rc = mark(&u->redo, str_from_cstr(rs->buf + off));
	return rc;
}

static int diff_claim(void *ctx, const void *o, const void *n)
{
	struct update *u = ctx;
	const struct view_claim *r = n ? n : o;
	char kb[KEY_MAX];

	return mark(&u->redo, obj_key(view_str(u->nv, r->namespace), str_from_cstr(view_claim_name(r)), kb, sizeof(kb)));
}

/* The claims holding a device of slice s are counted again. */
static int slice_holders(struct update *u, const struct view_slice *s)
{
	uint32_t i, j;
	int rc = 0;

	for (i = 0; s && i < s->ndevices && rc == 0; i++) {
		const struct view_hold *h = view_hold_get(u->nv, view_str(u->nv, s->driver), view_str(u->nv, s->pool),
							  view_str(u->nv, s->devices[i].name));
		char kb[KEY_MAX];

		for (j = 0; h && j < h->nholders && rc == 0; j++)
			rc = mark(&u->redo, obj_key(view_str(u->nv, h->holders[j].claim->namespace),
						   str_from_cstr(view_claim_name(h->holders[j].claim)), kb, sizeof(kb)));
	}
	return rc;
}

/* Every slice of the pool of s in view v: a slice that comes, goes or
 * changes generation can change which slice a device of the pool is
 * read from. */
static int pool_holders(struct update *u, const struct view *v, const struct view_slice *s)
{
	const struct view_pool *p;
	uint32_t i;
	int rc = 0;

	if (!s || !(p = view_pool_get(v, view_str(v, s->driver), view_str(v, s->pool))))
		return 0;
	for (i = 0; i < p->nnames && rc == 0; i++)
		rc = slice_holders(u, view_slice_get(v, str_from_cstr(p->slice_names[i])));
	return rc;
}

static int diff_slice(void *ctx, const void *o, const void *n)
{
	struct update *u = ctx;
	const struct view_slice *os = o, *ns = n;
	int rc;

	if (ns && ns->mapping_changed_ns > u->li->mapping_changed_ns)
		u->li->mapping_changed_ns = ns->mapping_changed_ns;
	if (os && os->mapping_changed_ns && os->mapping_changed_ns == u->li->mapping_changed_ns &&
	    (!ns || ns->mapping_changed_ns < os->mapping_changed_ns))
		u->rescan_mapping = true;
	if ((rc = slice_holders(u, os)) == 0 && (rc = slice_holders(u, ns)) == 0 &&
	    (rc = pool_holders(u, u->ov, os)) == 0 && (rc = pool_holders(u, u->nv, ns)) == 0)
		return 0;
	return rc;
}

/* The newest mapping change among the slices of v. */
static int64_t newest_mapping(const struct view *v)
{
	struct view_iter it;
	const struct view_slice *s;
	int64_t t = 0;

	for (s = view_first_slice(&it, v); s; s = view_next_slice(&it))
		if (s->mapping_changed_ns > t)
			t = s->mapping_changed_ns;
	return t;
}

/* Everything of v counted, as if every record had just been added. */
static int add_all(struct update *u, const struct view *v)
{
	struct view_iter it;
	const struct view_node *n;
	const struct view_pod *p;
	const struct view_claim *c;
	int rc = 0;

	for (n = view_first_node(&it, v); n && rc == 0; n = view_next_node(&it))
		rc = diff_node(u, NULL, n);
	for (p = view_first_pod(&it, v); p && rc == 0; p = view_next_pod(&it))
		rc = pod_move(u->li, v, p, 1, &u->dirty);
	for (c = view_first_claim(&it, v); c && rc == 0; c = view_next_claim(&it))
		rc = claim_move(u->li, v, c, 1, &u->dirty);
	return rc;
}

/* Forget everything: the next update builds whole. */
static void clear(struct ledger_inc *li)
{
	kmap_free(&li->parts, free);
	kmap_free(&li->node_pods, free_kset);
	kmap_free(&li->node_claims, free_kset);
	kmap_free(&li->reservers, free_kset);
	memset(&li->counts, 0, sizeof(li->counts));
	li->v = NULL;
	li->bytes = 0;
	li->nentries = li->overcommitted = li->diverging = li->undercounted = 0;
	li->ntotals = 0;
	li->mapping_changed_ns = 0;
}

int ledger_inc_new(const struct policy *pol, size_t cap, struct ledger_inc **out)
{
	struct ledger_inc *li = calloc(1, sizeof(*li));

	*out = NULL;
	if (!li)
		return -ENOMEM;
	if (arena_new(cap ? cap : (size_t)1 << 30, &li->scratch) != 0) {
		free(li);
		return -ENOMEM;
	}
	li->pol = pol;
	li->cap = cap;
	*out = li;
	return 0;
}

void ledger_inc_free(struct ledger_inc *li)
{
	if (!li)
		return;
	clear(li);
	arena_free(li->scratch);
	free(li);
}

int ledger_inc_update(struct ledger_inc *li, const struct view *v, int64_t now_ns)
{
	struct update u = { .li = li, .ov = li->v, .nv = v };
	const struct view *ov = li->v;
	uint32_t i, claims = 0;
	int rc = 0;

	li->now_ns = now_ns;
	if (ov == v)
		return 0;
	if (!ov) {
		clear(li);
		rc = add_all(&u, v);
		li->mapping_changed_ns = rc == 0 ? newest_mapping(v) : 0;
		claims = view_count(v, OBJECT_RESOURCE_CLAIM);
		li->st.whole++;
	} else {
		rc = view_diff(ov, v, OBJECT_NODE, diff_node, &u);
		if (rc == 0)
			rc = view_diff(ov, v, OBJECT_POD, diff_pod, &u);
		if (rc == 0)
			rc = view_diff(ov, v, OBJECT_RESOURCE_CLAIM, diff_claim, &u);
		if (rc == 0)
			rc = view_diff(ov, v, OBJECT_RESOURCE_SLICE, diff_slice, &u);
		if (rc == 0 && u.rescan_mapping)
			li->mapping_changed_ns = newest_mapping(v);
		for (i = 0; rc == 0 && u.redo.slot && i <= u.redo.mask; i++) {
			struct str ns, nm;

			if (!u.redo.slot[i].val)
				continue;
			key_split((struct str){ u.redo.slot[i].key, u.redo.slot[i].klen }, &ns, &nm);
			rc = claim_move(li, ov, view_claim_get(ov, ns, nm), -1, &u.dirty);
			if (rc == 0)
				rc = claim_move(li, v, view_claim_get(v, ns, nm), 1, &u.dirty);
			claims++;
		}
	}
	li->v = v;
	for (i = 0; rc == 0 && u.dirty.slot && i <= u.dirty.mask; i++)
		if (u.dirty.slot[i].val)
			rc = rebuild_node(li, v, (struct str){ u.dirty.slot[i].key, u.dirty.slot[i].klen });
	li->st.updates++;
	li->st.last_nodes = u.dirty.live;
	li->st.last_claims = claims;
	kmap_free(&u.dirty, NULL);
	kmap_free(&u.redo, NULL);
	if (rc) {
		clear(li);   /* half made: built whole from the next view */
		return rc == -E2BIG ? rc : -ENOMEM;
	}
	return 0;
}

/* Bytes of a map, its keys and its sets. */
static size_t kmap_bytes(const struct kmap *m, bool sets)
{
	size_t n = m->slot ? (size_t)(m->mask + 1) * sizeof(*m->slot) : 0;
	uint32_t i;

	for (i = 0; m->slot && i <= m->mask; i++) {
		if (m->slot[i].key)
			n += m->slot[i].klen + 1;
		if (sets && m->slot[i].val)
			n += sizeof(struct kset) + ((const struct kset *)m->slot[i].val)->cap;
	}
	return n;
}

void ledger_inc_stats(const struct ledger_inc *li, struct ledger_inc_stats *st)
{
	*st = li->st;
	st->bytes = li->bytes + kmap_bytes(&li->parts, false) + kmap_bytes(&li->node_pods, true) +
		    kmap_bytes(&li->node_claims, true) + kmap_bytes(&li->reservers, true);
}

/* --- reading ------------------------------------------------------------------------- */

static int cmp_node(const void *x, const void *y)
{
	return str_cmp(((const struct ledger_node *)x)->name, ((const struct ledger_node *)y)->name);
}

/* A ledger in its own arena with li's counters. */
static int head(const struct ledger_inc *li, struct ledger **out)
{
	struct arena *a = NULL;
	struct ledger *l;
	int rc;

	*out = NULL;
	if (!li->v)
		return -EAGAIN;
	if ((rc = arena_new(li->cap ? li->cap : (size_t)1 << 30, &a)) != 0)
		return rc;
	if (!(l = arena_calloc(a, 1, sizeof(*l)))) {
		arena_free(a);
		return -ENOMEM;
	}
	l->arena = a;
	l->now_ns = li->now_ns;
	l->view_seq = view_seq(li->v);
	l->ids = view_ids(li->v);
	l->claims = li->counts.claims;
	l->pending = li->counts.pending;
	l->uncharged = li->counts.uncharged;
	l->unreserved = li->counts.unreserved;
	l->old_mapping = li->counts.old_mapping;
	l->mapping_changed_ns = li->mapping_changed_ns;
	*out = l;
	return 0;
}

int ledger_inc_ledger(const struct ledger_inc *li, bool entries, struct ledger **out)
{
	struct ledger *l;
	uint32_t i, k = 0, e = 0;
	int rc = head(li, &l);

	if (rc)
		return rc;
	l->nnodes = li->parts.live;
	if (l->nnodes && !(l->nodes = arena_calloc(l->arena, l->nnodes, sizeof(*l->nodes))))
		goto nomem;
	for (i = 0; li->parts.slot && i <= li->parts.mask; i++)
		if (li->parts.slot[i].val)
			l->nodes[k++] = ((const struct part *)li->parts.slot[i].val)->node;
	if (k > 1)
		qsort(l->nodes, k, sizeof(*l->nodes), cmp_node);
	if (entries && li->nentries &&
	    !(l->entries = arena_alloc(l->arena, (size_t)li->nentries * sizeof(*l->entries))))
		goto nomem;
	for (i = 0; i < k; i++) {
		struct ledger_node *n = &l->nodes[i];
		const struct part *p;

		if (!entries) {
			n->nentries = 0;
			continue;
		}
		p = kmap_find(&li->parts, n->name)->val;
		if (n->nentries)
			memcpy(&l->entries[e], p->entries, n->nentries * sizeof(*l->entries));
		n->first_entry = e;
		e += n->nentries;
	}
	l->nentries = entries ? e : 0;
	if (!entries) {
		l->all_nodes = l->nnodes;
		l->all_entries = li->nentries;
	}
	if ((rc = ledger_sum(l, l->arena)) != 0) {
		ledger_free(l);
		return rc;
	}
	*out = l;
	return 0;
nomem:
	rc = arena_error(l->arena);
	ledger_free(l);
	return rc ? rc : -ENOMEM;
}

int ledger_inc_each_node(const struct ledger_inc *li, ledger_inc_node_fn fn, void *ctx)
{
	uint32_t i;
	int rc = 0;

	if (!li->v)
		return -EAGAIN;
	for (i = 0; li->parts.slot && i <= li->parts.mask && rc == 0; i++)
		if (li->parts.slot[i].val)
			rc = fn(ctx, &((const struct part *)li->parts.slot[i].val)->node);
	return rc;
}

int ledger_inc_node(const struct ledger_inc *li, struct str node, struct ledger **out)
{
	const struct mslot *sl = kmap_find(&li->parts, node);
	const struct part *p = sl ? sl->val : NULL;
	struct ledger *l;
	int rc = head(li, &l);

	if (rc)
		return rc;
	l->all_nodes = li->parts.live;
	l->all_entries = li->nentries;
	l->overcommitted = li->overcommitted;
	l->diverging = li->diverging;
	l->undercounted = li->undercounted;
	l->ntotals = li->ntotals;
	if (li->ntotals && !(l->totals = arena_alloc(l->arena, li->ntotals * sizeof(*l->totals)))) {
		ledger_free(l);
		return -ENOMEM;
	}
	if (li->ntotals)
		memcpy(l->totals, li->totals, li->ntotals * sizeof(*l->totals));
	if (p) {
		if (!(l->nodes = arena_alloc(l->arena, sizeof(*l->nodes)))) {
			ledger_free(l);
			return -ENOMEM;
		}
		l->nodes[0] = p->node;
		l->nnodes = 1;
		l->entries = p->entries;
		l->nentries = p->node.nentries;
	}
	*out = l;
	return 0;
}
