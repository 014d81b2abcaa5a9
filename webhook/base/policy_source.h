/* policy_source.h - where the serving policy comes from, and its reloads.
 *
 * Three sources: the built-in policy; a file (--policy: a Policy document or
 * a ConfigMap manifest); a mounted ConfigMap directory (--policy-dir: the
 * keys policy.yaml, freeze and freeze-reason as files, read from one
 * version of the volume). A reload parses the whole input into a new
 * immutable policy and swaps it in as one snapshot; requests keep the
 * snapshot they started with. A reload that fails never replaces the
 * serving policy: the error is logged with file, line and path, and counted
 * in dra_guard_policy_reload_total{result="error"}. Until a first policy
 * loads, the source is not ready and says why.
 *
 * Freeze changes (on, off, new reason) are logged and exported as
 * dra_guard_freeze_active / _info / _since_timestamp_seconds.
 *
 * The main loop reloads, the cluster view's thread offers the API's
 * ConfigMap (serialised by a lock); any thread acquires and asks for
 * readiness. */
#ifndef DRA_GUARD_POLICY_SOURCE_H
#define DRA_GUARD_POLICY_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metrics.h"
#include "policy.h"
#include "snapshot.h"

enum policy_source_kind {
	POLICY_SOURCE_BUILTIN = 0,
	POLICY_SOURCE_FILE,
	POLICY_SOURCE_DIR,
};

/* Largest policy.yaml / policy file read; the loader applies its own,
 * smaller limit with a clearer message. */
#define POLICY_SOURCE_FILE_MAX (4 * 1024 * 1024)
/* Largest freeze and freeze-reason files read. */
#define POLICY_SOURCE_KEY_MAX (64 * 1024)

struct policy_source;

/* path: the file or directory (copied; unused for the built-in policy). m is
 * borrowed and must outlive the source. 0, -ENAMETOOLONG, -ENOMEM. Nothing
 * is loaded yet. */
int policy_source_new(enum policy_source_kind kind, const char *path, struct metrics *m,
		      struct policy_source **out);

/* policy_source_free(NULL) is a no-op. No reader may hold a snapshot. */
void policy_source_free(struct policy_source *ps);

/* Load the input and, when it differs from the serving policy, swap it in.
 * why ("start", "SIGHUP", "change", "poll") goes into the log. Returns 1
 * when a new policy serves, 0 when the input is the serving policy, or a
 * negative errno (logged and counted; the serving policy stays). */
int policy_source_reload(struct policy_source *ps, const char *why);

/* The policy ConfigMap as the API server has it, from the cluster view's
 * watch: exists false when the API server has no such ConfigMap. While it
 * exists it is the source: it goes through the same loader, validation
 * and last-known-good as a reload, and reloads of the file or directory
 * are skipped (the mounted copy lags the API by the kubelet's sync, up to
 * a minute, and must not undo a newer freeze). When it goes away after it
 * served, the last good policy stays (a deleted ConfigMap must not lift a
 * freeze), logged and exported as dra_guard_policy_input_missing, until
 * it is back; only when it never served is the file or directory read.
 * Returns as policy_source_reload() (0 when the last good policy stays).
 * Any thread (reloads are serialised). */
int policy_source_offer_api(struct policy_source *ps, bool exists, const char *doc, size_t doc_len,
			    bool has_freeze, const char *freeze, size_t freeze_len,
			    bool has_reason, const char *reason, size_t reason_len, const char *why);

/* True when the input's stat signature moved since the last reload (the
 * poll backstop). Always false for the built-in policy. */
bool policy_source_changed(struct policy_source *ps);

/* The directory to watch, or NULL for the built-in policy. Borrowed. */
const char *policy_source_dir(const struct policy_source *ps);

/* Call fn(ctx, since_ns) on the reloading thread whenever a freeze begins
 * (since_ns: the wall clock it began at). Set once, before the first
 * reload. */
void policy_source_on_freeze(struct policy_source *ps, void (*fn)(void *ctx, int64_t since_ns), void *ctx);

/* Call fn(ctx) on the reloading thread after the freeze's state changed
 * (a freeze began or was lifted, or the first policy was taken), once
 * policy_source_status() shows the new state: for a thread that waits for
 * it instead of reading it again and again. One; fn NULL removes it. Any
 * thread; fn runs with the reload lock held and must not call back into
 * the source's reloads. */
void policy_source_on_freeze_change(struct policy_source *ps, void (*fn)(void *ctx), void *ctx);

/* A reference to the serving policy's snapshot (snapshot_get() gives the
 * const struct policy), or NULL while none is loaded. Any thread. */
struct snapshot *policy_source_acquire(struct policy_source *ps);

/* True once a policy serves; otherwise false, with why (n bytes) saying
 * what the last attempt found. Any thread. */
bool policy_source_ready(struct policy_source *ps, char *why, size_t n);

/* What serves, for /readyz: a copy taken under the source's lock. */
struct policy_status {
	bool serving;                 /* a policy is loaded */
	char hash[65];
	bool frozen;
	char freeze_reason[POLICY_FREEZE_REASON_MAX + 1];
	int64_t freeze_since_ns;      /* wall clock, when this process saw the freeze begin */
	char source[16];              /* where the serving policy came from: "api",
				       * "directory", "file" or "built-in" */
};

/* Fill *st. Any thread. */
void policy_source_status(struct policy_source *ps, struct policy_status *st);

#endif
