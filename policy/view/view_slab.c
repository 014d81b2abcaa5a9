/* view_slab.c - where records live. A record made while a LIST is read
 * (a relist) or an index is rebuilt whole goes into a slab of its table's
 * kind, next to the records made before it: 300,000 records of 50-250
 * bytes each cost malloc 8-16 bytes of header and rounding apiece (about
 * 4 MB at the scale of docs/performance.md). A slab is freed when its last
 * record is; a record made by a WATCH event is malloc'd alone, as before.
 *
 * So the slabs never hold more than the records the last relist of their
 * kind made (a relist retires every record of the table it replaces): a
 * slab whose records were mostly replaced by WATCH events keeps their
 * room until its last one goes, at most once over. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "view_impl.h"

struct vslab {
	uint32_t live;              /* records in it not yet freed */
	uint32_t used;              /* bytes handed out, header included */
	char data[] __attribute__((aligned(16)));
};

#define SLAB_HEAD offsetof(struct vslab, data)

void view_slab_bulk(struct view_builder *b, int kind)
{
	b->bulk = kind;
}

/* Index of the slab holding p, or -1. */
static long slab_find(const struct view_builder *b, const void *p)
{
	size_t lo = 0, hi = b->nslabs;
	uintptr_t a = (uintptr_t)p;

	while (lo < hi) {   /* the first slab that starts after p */
		size_t mid = lo + (hi - lo) / 2;

		if ((uintptr_t)b->slabs[mid] <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || a >= (uintptr_t)b->slabs[lo - 1] + VIEW_SLAB)
		return -1;
	return (long)lo - 1;
}

static struct vslab *slab_new(struct view_builder *b)
{
	struct vslab *s;
	size_t lo = 0, hi = b->nslabs;

	if (b->nslabs == b->slabs_alloc) {
		size_t n = b->slabs_alloc ? b->slabs_alloc * 2 : 64;
		struct vslab **g = realloc(b->slabs, n * sizeof(*g));

		if (!g)
			return NULL;
		b->slabs = g;
		b->slabs_alloc = n;
	}
	if (!(s = malloc(VIEW_SLAB)))
		return NULL;
	s->live = 0;
	s->used = SLAB_HEAD;
	/* s is in no slab yet: the place it sorts at. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if ((uintptr_t)b->slabs[mid] < (uintptr_t)s)
			lo = mid + 1;
		else
			hi = mid;
	}
	memmove(&b->slabs[lo + 1], &b->slabs[lo], (b->nslabs - lo) * sizeof(*b->slabs));
	b->slabs[lo] = s;
	b->nslabs++;
	b->slab_bytes += VIEW_SLAB;
	return s;
}

void *view_rec_alloc(struct view_builder *b, size_t size)
{
	struct vslab *s;
	void *p;

	if (b->bulk < 0 || b->bulk >= VIEW_TABLES || size > VIEW_SLAB_MAX_REC || size == 0)
		return calloc(1, size);
	size = rounded(size);
	s = b->slab_cur[b->bulk];
	if (!s || s->used + size > VIEW_SLAB) {
		if (!(s = slab_new(b)))
			return NULL;
		b->slab_cur[b->bulk] = s;
	}
	p = (char *)s + s->used;
	s->used += (uint32_t)size;
	s->live++;
	b->slab_rec_bytes += size;
	memset(p, 0, size);
	return p;
}

void view_rec_free_mem(struct view_builder *b, void *p, size_t size)
{
	long i = p && b->nslabs ? slab_find(b, p) : -1;
	struct vslab *s;
	int k;

	if (i < 0) {
		free(p);
		return;
	}
	s = b->slabs[i];
	size = rounded(size);
	s->live--;
	b->slab_rec_bytes -= size;
	if (s->live)
		return;
	for (k = 0; k < VIEW_TABLES; k++)
		if (b->slab_cur[k] == s)
			b->slab_cur[k] = NULL;
	memmove(&b->slabs[i], &b->slabs[i + 1], (b->nslabs - (size_t)i - 1) * sizeof(*b->slabs));
	b->nslabs--;
	b->slab_bytes -= VIEW_SLAB;
	free(s);
}

void view_slab_free_all(struct view_builder *b)
{
	/* Every record has been freed by now: a slab left is a leak of its
	 * records, which the leak checker of the tests reports through it. */
	free(b->slabs);
	b->slabs = NULL;
	b->nslabs = b->slabs_alloc = 0;
}
