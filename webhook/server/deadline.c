/* deadline.c - whole-request deadlines for connections. */
#include "deadline.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "serve_config.h"

struct deadline_list {
	pthread_mutex_t mu;
	struct deadline_entry *head;
	unsigned n;
};

int deadline_list_new(struct deadline_list **out)
{
	struct deadline_list *l = calloc(1, sizeof(*l));

	*out = NULL;
	if (!l)
		return -ENOMEM;
	if (pthread_mutex_init(&l->mu, NULL) != 0) {
		free(l);
		return -ENOMEM;
	}
	*out = l;
	return 0;
}

void deadline_list_free(struct deadline_list *l)
{
	if (!l)
		return;
	pthread_mutex_destroy(&l->mu);
	free(l);
}

void deadline_add(struct deadline_list *l, struct deadline_entry *e, int fd, uint64_t limit_ns)
{
	e->fd = fd;
	e->limit_ns = limit_ns;
	atomic_init(&e->since_ns, 0);
	atomic_init(&e->expired, false);
	pthread_mutex_lock(&l->mu);
	e->prev = NULL;
	e->next = l->head;
	if (l->head)
		l->head->prev = e;
	l->head = e;
	e->linked = true;
	l->n++;
	pthread_mutex_unlock(&l->mu);
}

void deadline_remove(struct deadline_list *l, struct deadline_entry *e)
{
	pthread_mutex_lock(&l->mu);
	if (e->linked) {
		if (e->prev)
			e->prev->next = e->next;
		else
			l->head = e->next;
		if (e->next)
			e->next->prev = e->prev;
		e->prev = e->next = NULL;
		e->linked = false;
		l->n--;
	}
	pthread_mutex_unlock(&l->mu);
}

void deadline_set_limit(struct deadline_list *l, struct deadline_entry *e, uint64_t limit_ns)
{
	pthread_mutex_lock(&l->mu);
	e->limit_ns = limit_ns;
	pthread_mutex_unlock(&l->mu);
}

void deadline_start(struct deadline_entry *e, uint64_t now_ns)
{
	uint_fast64_t zero = 0;

	atomic_compare_exchange_strong_explicit(&e->since_ns, &zero, now_ns ? now_ns : 1,
						memory_order_relaxed, memory_order_relaxed);
}

void deadline_restart(struct deadline_entry *e, uint64_t now_ns)
{
	atomic_store_explicit(&e->since_ns, now_ns ? now_ns : 1, memory_order_relaxed);
}

void deadline_stop(struct deadline_entry *e)
{
	atomic_store_explicit(&e->since_ns, 0, memory_order_relaxed);
}

bool deadline_running(const struct deadline_entry *e)
{
	return atomic_load_explicit(&((struct deadline_entry *)e)->since_ns, memory_order_relaxed) != 0;
}

bool deadline_expired(const struct deadline_entry *e)
{
	return atomic_load(&((struct deadline_entry *)e)->expired);
}

static void peer_of(int fd, char *out, size_t n)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	out[0] = '\0';
	if (getpeername(fd, (struct sockaddr *)&ss, &len) == 0)
		serve_config_addr_format((struct sockaddr *)&ss, out, n);
}

unsigned deadline_sweep(struct deadline_list *l, uint64_t now_ns,
			struct deadline_expiry out[static DEADLINE_SWEEP_MAX])
{
	struct deadline_entry *e;
	unsigned n = 0;

	pthread_mutex_lock(&l->mu);
	for (e = l->head; e && n < DEADLINE_SWEEP_MAX; e = e->next) {
		uint64_t since = atomic_load_explicit(&e->since_ns, memory_order_relaxed);

		if (since == 0 || now_ns < since || now_ns - since <= e->limit_ns ||
		    atomic_load(&e->expired))
			continue;
		atomic_store(&e->expired, true);
		peer_of(e->fd, out[n].peer, sizeof(out[n].peer));
		/* The owner's event loop sees the end of the socket and closes
		 * the connection; its descriptor stays valid until it does. */
		shutdown(e->fd, SHUT_RDWR);
		out[n].age_ns = now_ns - since;
		n++;
	}
	pthread_mutex_unlock(&l->mu);
	return n;
}

unsigned deadline_count(struct deadline_list *l)
{
	unsigned n;

	pthread_mutex_lock(&l->mu);
	n = l->n;
	pthread_mutex_unlock(&l->mu);
	return n;
}
