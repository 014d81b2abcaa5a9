/* reqmem.c - the memory requests hold: budget and buffer pool. */
#include "reqmem.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

struct pool {
	struct buf *bufs;             /* pool_max slots, n in use */
	unsigned n;
	size_t bytes;                 /* their allocations, summed */
};

struct reqmem {
	struct reqmem_limits lim;
	atomic_size_t in_use;
	atomic_size_t peak;           /* highest in_use since the last trim */
	pthread_mutex_t mu;           /* guards the pools */
	struct pool pool[REQMEM_KIND_COUNT];
};

int reqmem_new(const struct reqmem_limits *lim, struct reqmem **out)
{
	struct reqmem *rm;
	int k;

	*out = NULL;
	if (lim->budget == 0 || lim->pool_max == 0)
		return -EINVAL;
	rm = calloc(1, sizeof(*rm));
	if (!rm)
		return -ENOMEM;
	rm->lim = *lim;
	atomic_init(&rm->in_use, 0);
	atomic_init(&rm->peak, 0);
	for (k = 0; k < REQMEM_KIND_COUNT; k++) {
		rm->pool[k].bufs = calloc(lim->pool_max, sizeof(struct buf));
		if (!rm->pool[k].bufs)
			goto fail;
	}
	if (pthread_mutex_init(&rm->mu, NULL) != 0)
		goto fail;
	*out = rm;
	return 0;
fail:
	for (k = 0; k < REQMEM_KIND_COUNT; k++)
		free(rm->pool[k].bufs);
	free(rm);
	return -ENOMEM;
}

void reqmem_free(struct reqmem *rm)
{
	unsigned i;
	int k;

	if (!rm)
		return;
	for (k = 0; k < REQMEM_KIND_COUNT; k++) {
		for (i = 0; i < rm->pool[k].n; i++)
			buf_free(&rm->pool[k].bufs[i]);
		free(rm->pool[k].bufs);
	}
	pthread_mutex_destroy(&rm->mu);
	free(rm);
}

bool reqmem_charge(struct reqmem *rm, size_t n)
{
	size_t cur = atomic_load_explicit(&rm->in_use, memory_order_relaxed), next, peak;

	do {
		if (n > rm->lim.budget || cur > rm->lim.budget - n)
			return false;
		next = cur + n;
	} while (!atomic_compare_exchange_weak_explicit(&rm->in_use, &cur, next, memory_order_relaxed,
							memory_order_relaxed));
	peak = atomic_load_explicit(&rm->peak, memory_order_relaxed);
	while (peak < next && !atomic_compare_exchange_weak_explicit(&rm->peak, &peak, next,
								     memory_order_relaxed,
								     memory_order_relaxed))
		;
	return true;
}

void reqmem_uncharge(struct reqmem *rm, size_t n)
{
	atomic_fetch_sub_explicit(&rm->in_use, n, memory_order_relaxed);
}

size_t reqmem_budget(const struct reqmem *rm)
{
	return rm->lim.budget;
}

size_t reqmem_in_use(const struct reqmem *rm)
{
	return atomic_load_explicit(&rm->in_use, memory_order_relaxed);
}

void reqmem_take(struct reqmem *rm, enum reqmem_kind kind, size_t want, struct buf *out)
{
	struct pool *p = &rm->pool[kind];
	unsigned i, pick, best;

	buf_init(out, rm->lim.cap[kind]);
	pthread_mutex_lock(&rm->mu);
	if (p->n > 0) {
		/* Best fit: the smallest that holds want and its NUL. None does:
		 * the most recent, which its user grows. */
		best = p->n;
		for (i = 0; i < p->n; i++) {
			size_t a = buf_allocated(&p->bufs[i]);

			if (a > want && (best == p->n || a < buf_allocated(&p->bufs[best])))
				best = i;
		}
		pick = best < p->n ? best : p->n - 1;
		*out = p->bufs[pick];
		p->bytes -= buf_allocated(out);
		p->bufs[pick] = p->bufs[--p->n];
	}
	pthread_mutex_unlock(&rm->mu);
	buf_reset(out);
}

void reqmem_give(struct reqmem *rm, enum reqmem_kind kind, struct buf *b)
{
	struct pool *p = &rm->pool[kind];
	size_t a = buf_allocated(b);
	bool kept = false;

	if (a > 0 && a <= rm->lim.pool_keep) {
		pthread_mutex_lock(&rm->mu);
		if (p->n < rm->lim.pool_max) {
			buf_reset(b);
			p->bufs[p->n++] = *b;
			p->bytes += a;
			kept = true;
		}
		pthread_mutex_unlock(&rm->mu);
	}
	if (!kept)
		buf_free(b);
	buf_init(b, 0);
}

size_t reqmem_pooled(const struct reqmem *rm)
{
	struct reqmem *m = (struct reqmem *)rm;   /* the mutex only */
	size_t bytes = 0;
	int k;

	pthread_mutex_lock(&m->mu);
	for (k = 0; k < REQMEM_KIND_COUNT; k++)
		bytes += m->pool[k].bytes;
	pthread_mutex_unlock(&m->mu);
	return bytes;
}

bool reqmem_trim(struct reqmem *rm, size_t trim_peak)
{
	size_t peak = atomic_load_explicit(&rm->peak, memory_order_relaxed);
	size_t now = reqmem_in_use(rm);

	if (peak < trim_peak || now > peak / 8)
		return false;
	/* A charge racing with this store only lowers the next peak seen. */
	atomic_store_explicit(&rm->peak, now, memory_order_relaxed);
#ifdef __GLIBC__
	/* Returns the free pages inside every malloc arena too, not only the
	 * top of the main heap: what many connections freed in the middle of
	 * the heaps would otherwise stay resident. */
	malloc_trim(0);
#endif
	return true;
}

void reqmem_tune_allocator(size_t mmap_threshold, size_t trim_threshold)
{
#ifdef __GLIBC__
	/* Fixed thresholds: glibc otherwise raises them to the size of every
	 * large block freed, so after the first big body the next ones come
	 * from its heaps and their memory stays with the process. */
	mallopt(M_MMAP_THRESHOLD, (int)mmap_threshold);
	mallopt(M_TRIM_THRESHOLD, (int)trim_threshold);
#else
	(void)mmap_threshold;
	(void)trim_threshold;
#endif
}
