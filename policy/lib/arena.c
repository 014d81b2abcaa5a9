/* arena.c - a bump allocator with a hard cap. */
#include "arena.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_ALIGN 16
#define ARENA_MIN_BLOCK (64 * 1024)

struct arena_block {
	struct arena_block *next;
	size_t size;                   /* usable bytes in data[] */
	size_t used;
	_Alignas(ARENA_ALIGN) unsigned char data[];
};

struct arena {
	struct arena_block *head;      /* block being filled */
	struct arena_block *spare;     /* blocks kept by arena_reset() */
	size_t cap;
	size_t used;                   /* bytes handed out, padding included */
	void *last;                    /* the most recent allocation, for arena_grow() */
	size_t last_n;
	int error;
};

int arena_new(size_t cap, struct arena **out)
{
	struct arena *a = calloc(1, sizeof(*a));

	*out = NULL;
	if (!a)
		return -ENOMEM;
	a->cap = cap;
	*out = a;
	return 0;
}

static void block_list_free(struct arena_block *b)
{
	while (b) {
		struct arena_block *next = b->next;

		free(b);
		b = next;
	}
}

void arena_free(struct arena *a)
{
	if (!a)
		return;
	block_list_free(a->head);
	block_list_free(a->spare);
	free(a);
}

void arena_reset(struct arena *a)
{
	struct arena_block *b = a->head;

	while (b) {
		struct arena_block *next = b->next;

		b->used = 0;
		b->next = a->spare;
		a->spare = b;
		b = next;
	}
	a->head = NULL;
	a->used = 0;
	a->last = NULL;
	a->last_n = 0;
	a->error = 0;
}

static size_t align_up(size_t n)
{
	return (n + (ARENA_ALIGN - 1)) & ~(size_t)(ARENA_ALIGN - 1);
}

/* A block with room for n bytes: the head, a spare one, or a new one. */
static struct arena_block *block_for(struct arena *a, size_t n)
{
	struct arena_block **pp, *b;
	size_t size;

	if (a->head && a->head->size - a->head->used >= n)
		return a->head;
	for (pp = &a->spare; (b = *pp) != NULL; pp = &b->next) {
		if (b->size >= n) {
			*pp = b->next;
			b->next = a->head;
			a->head = b;
			return b;
		}
	}
	size = n > ARENA_MIN_BLOCK ? n : ARENA_MIN_BLOCK;
	b = malloc(sizeof(*b) + size);
	if (!b)
		return NULL;
	b->size = size;
	b->used = 0;
	b->next = a->head;
	a->head = b;
	return b;
}

void *arena_alloc(struct arena *a, size_t n)
{
	struct arena_block *b;
	size_t need;
	void *p;

	if (n == 0)
		n = 1;
	if (n > SIZE_MAX - ARENA_ALIGN) {
		a->error = -E2BIG;
		return NULL;
	}
	need = align_up(n);
	if (need > a->cap - a->used || a->used > a->cap) {
		a->error = -E2BIG;
		return NULL;
	}
	b = block_for(a, need);
	if (!b) {
		a->error = -ENOMEM;
		return NULL;
	}
	p = b->data + b->used;
	b->used += need;
	a->used += need;
	a->last = p;
	a->last_n = need;
	return p;
}

void *arena_calloc(struct arena *a, size_t nmemb, size_t size)
{
	void *p;

	if (size && nmemb > SIZE_MAX / size) {
		a->error = -E2BIG;
		return NULL;
	}
	p = arena_alloc(a, nmemb * size);
	if (p)
		memset(p, 0, nmemb * size);
	return p;
}

void *arena_grow(struct arena *a, void *p, size_t old_n, size_t new_n)
{
	void *q;

	if (!p)
		return arena_alloc(a, new_n);
	if (new_n <= old_n)
		return p;
	if (p == a->last && a->head) {
		size_t need = align_up(new_n);
		struct arena_block *b = a->head;
		size_t start = (size_t)((unsigned char *)p - b->data);

		if (need <= b->size - start && need - a->last_n <= a->cap - a->used) {
			b->used = start + need;
			a->used += need - a->last_n;
			a->last_n = need;
			return p;
		}
	}
	q = arena_alloc(a, new_n);
	if (q)
		memcpy(q, p, old_n);
	return q;
}

int arena_strdup(struct arena *a, const char *s, size_t len, struct str *out)
{
	char *p = arena_alloc(a, len + 1);

	if (!p)
		return a->error;
	if (len)
		memcpy(p, s, len);
	p[len] = '\0';
	out->ptr = p;
	out->len = len;
	return 0;
}

int arena_printf(struct arena *a, struct str *out, const char *fmt, ...)
{
	va_list ap;
	char small[256];
	char *p;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	p = arena_alloc(a, (size_t)n + 1);
	if (!p)
		return a->error;
	if ((size_t)n < sizeof(small)) {
		memcpy(p, small, (size_t)n + 1);
	} else {
		va_start(ap, fmt);
		vsnprintf(p, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	out->ptr = p;
	out->len = (size_t)n;
	return 0;
}

int arena_error(const struct arena *a)
{
	return a->error;
}

size_t arena_used(const struct arena *a)
{
	return a->used;
}

size_t arena_cap(const struct arena *a)
{
	return a->cap;
}
