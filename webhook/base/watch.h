/* watch.h - notice changes in a few directories (inotify).
 *
 * A mounted ConfigMap or Secret changes by an atomic swap of its ..data
 * symlink: the key files themselves are never written, so the directory is
 * what is watched (create, move in/out, delete, close-after-write,
 * attribute change). Plain files rewritten in place are seen too. Events
 * only say "something changed in directory i": the caller rereads, after
 * letting a burst of events settle. inotify can miss what happens while a
 * directory is gone or a queue overflows, so callers also poll (see
 * mountdir_signature()); watch_rearm() re-adds a watch whose directory
 * disappeared and came back.
 *
 * Single-threaded: one owner calls everything. */
#ifndef DRA_GUARD_WATCH_H
#define DRA_GUARD_WATCH_H

#include <stdint.h>

/* Most directories one watch follows. */
#define WATCH_MAX_DIRS 8

struct watch;

/* 0, or a negative errno when inotify is unavailable. */
int watch_new(struct watch **out);

/* watch_free(NULL) is a no-op. */
void watch_free(struct watch *w);

/* Follow dir (copied); *id gets its index (0 .. WATCH_MAX_DIRS-1), the bit
 * watch_read() reports it with. A directory that does not exist yet is
 * remembered and picked up by watch_rearm(). 0, -E2BIG when full,
 * -ENAMETOOLONG, -ENOMEM. */
int watch_add(struct watch *w, const char *dir, unsigned *id);

/* The descriptor to poll for POLLIN. */
int watch_fd(const struct watch *w);

/* Drain pending events without blocking. *changed gets a bit (1 << id) for
 * every directory with an event; an event queue overflow marks them all.
 * 0 or a negative errno. */
int watch_read(struct watch *w, uint32_t *changed);

/* Add watches for directories that are not watched (missing at watch_add(),
 * or removed since). Returns the bits of those now watched again: the
 * caller should reread them. */
uint32_t watch_rearm(struct watch *w);

#endif
