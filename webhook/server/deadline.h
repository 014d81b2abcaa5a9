/* deadline.h - whole-request deadlines for connections, enforced from
 * outside their event loop.
 *
 * libmicrohttpd's own timeout is an idle timeout: every byte resets it, so
 * a client that trickles a header, a chunk-size line or a trailer a byte at
 * a time holds its connection for ever, and the library calls the
 * application only for body bytes. Here each connection carries an entry
 * with a running clock; a sweep from another thread shuts down (SHUT_RDWR,
 * never close) the socket of every connection whose clock has run past its
 * limit. The library then sees the socket end, closes the connection
 * itself and frees it: nothing is torn down under its feet.
 *
 * The list's mutex is what makes that safe: an entry is removed under it
 * before the library closes the descriptor, and the sweep shuts a socket
 * down only under it, so it never reaches a descriptor number that has
 * been reused.
 *
 * Starting and stopping a clock is lock-free (the request path); adding
 * and removing entries (connection open and close) take the mutex. */
#ifndef DRA_GUARD_DEADLINE_H
#define DRA_GUARD_DEADLINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct deadline_entry {           /* embedded in a connection; fields private */
	struct deadline_entry *prev, *next;
	bool linked;                  /* in a list (zero-initialised: not) */
	int fd;
	uint64_t limit_ns;
	atomic_uint_fast64_t since_ns;    /* 0: no clock running */
	atomic_bool expired;
};

/* One expired connection, as the sweep reports it. */
struct deadline_expiry {
	char peer[64];                /* "10.0.0.1:41234", "" when unknown */
	uint64_t age_ns;              /* how long its clock had run */
};

#define DEADLINE_SWEEP_MAX 64     /* expiries reported per sweep; the rest wait for the next */

struct deadline_list;

/* 0 or -ENOMEM. */
int deadline_list_new(struct deadline_list **out);

/* Every entry must have been removed. NULL is a no-op. */
void deadline_list_free(struct deadline_list *l);

/* Watch fd with a clock of limit_ns, not yet running. */
void deadline_add(struct deadline_list *l, struct deadline_entry *e, int fd, uint64_t limit_ns);

/* Stop watching, before the descriptor is closed. An entry never added
 * (or already removed) is ignored. */
void deadline_remove(struct deadline_list *l, struct deadline_entry *e);

/* Give e another limit (a debug answer's send timeout, then the request
 * deadline again); takes the list's mutex, which the sweep reads it
 * under. */
void deadline_set_limit(struct deadline_list *l, struct deadline_entry *e, uint64_t limit_ns);

/* Start the clock at now_ns unless it runs already. */
void deadline_start(struct deadline_entry *e, uint64_t now_ns);

/* Start it afresh at now_ns. */
void deadline_restart(struct deadline_entry *e, uint64_t now_ns);

/* Stop the clock (the request is complete). */
void deadline_stop(struct deadline_entry *e);

/* Whether the clock is running. */
bool deadline_running(const struct deadline_entry *e);

/* Whether a sweep has shut this connection down. */
bool deadline_expired(const struct deadline_entry *e);

/* Shut down every watched connection whose clock has run past its limit at
 * now_ns (once each), and report up to DEADLINE_SWEEP_MAX of them in
 * out[]; returns how many were reported. */
unsigned deadline_sweep(struct deadline_list *l, uint64_t now_ns,
			struct deadline_expiry out[static DEADLINE_SWEEP_MAX]);

/* Entries watched now. */
unsigned deadline_count(struct deadline_list *l);

#endif
