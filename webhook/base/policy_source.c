/* policy_source.c - where the serving policy comes from, and its reloads. */
#include "policy_source.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "mountdir.h"
#include "policy.h"

struct policy_source {
	enum policy_source_kind kind;
	char path[PATH_MAX];
	char dir[PATH_MAX];           /* the directory to watch */
	char base[NAME_MAX + 1];      /* the file's name in it (file source) */
	struct metrics *m;
	struct snapshot_slot slot;
	uint64_t signature;

	/* What serves: the reloading thread writes these under mu (other
	 * threads read them through policy_source_status()). */
	char hash[65];
	bool frozen;
	char freeze_reason[POLICY_FREEZE_REASON_MAX + 1];
	int64_t freeze_since_ns;

	pthread_mutex_t mu;           /* guards why_not, source and the fields above */
	char why_not[1024];           /* "" once a policy serves */
	const char *source;           /* of the serving policy */

	pthread_mutex_t reload_mu;    /* one reload or offer at a time */
	bool api_active;              /* the API's ConfigMap is the source */
	bool api_gone;                /* ... and it was deleted: the last good policy stays */
	bool input_missing;           /* the file or directory's document is gone */

	void (*on_freeze)(void *ctx, int64_t since_ns);   /* a freeze began */
	void *on_freeze_ctx;
	void (*on_freeze_change)(void *ctx);              /* began, or lifted */
	void *on_freeze_change_ctx;
};

static const char *kind_name(enum policy_source_kind k)
{
	return k == POLICY_SOURCE_DIR ? "directory" : k == POLICY_SOURCE_FILE ? "file" : "built-in";
}

static const char *const dir_keys[] = {
	POLICY_KEY_DOCUMENT, POLICY_KEY_FREEZE, POLICY_KEY_FREEZE_REASON,
};

static void policy_obj_free(void *obj)
{
	policy_free(obj);
}

int policy_source_new(enum policy_source_kind kind, const char *path, struct metrics *m,
		      struct policy_source **out)
{
	struct policy_source *ps = calloc(1, sizeof(*ps));
	int rc = -ENAMETOOLONG;

	*out = NULL;
	if (!ps)
		return -ENOMEM;
	ps->kind = kind;
	ps->m = m;
	if (kind == POLICY_SOURCE_FILE) {
		if (snprintf(ps->path, sizeof(ps->path), "%s", path) >= (int)sizeof(ps->path) ||
		    mountdir_split(path, ps->dir, sizeof(ps->dir), ps->base, sizeof(ps->base)) != 0)
			goto fail;
	} else if (kind == POLICY_SOURCE_DIR) {
		if (snprintf(ps->path, sizeof(ps->path), "%s", path) >= (int)sizeof(ps->path))
			goto fail;
		snprintf(ps->dir, sizeof(ps->dir), "%s", path);
	}
	snprintf(ps->why_not, sizeof(ps->why_not), "no policy loaded yet");
	rc = -ENOMEM;
	ps->source = "";
	if (pthread_mutex_init(&ps->mu, NULL) != 0)
		goto fail;
	if (pthread_mutex_init(&ps->reload_mu, NULL) != 0) {
		pthread_mutex_destroy(&ps->mu);
		goto fail;
	}
	if (snapshot_slot_init(&ps->slot) != 0) {
		pthread_mutex_destroy(&ps->reload_mu);
		pthread_mutex_destroy(&ps->mu);
		goto fail;
	}
	*out = ps;
	return 0;
fail:
	free(ps);
	return rc;
}

void policy_source_free(struct policy_source *ps)
{
	if (!ps)
		return;
	snapshot_slot_destroy(&ps->slot);
	pthread_mutex_destroy(&ps->reload_mu);
	pthread_mutex_destroy(&ps->mu);
	free(ps);
}

static uint64_t signature(const struct policy_source *ps)
{
	const char *names[1];

	switch (ps->kind) {
	case POLICY_SOURCE_FILE:
		names[0] = ps->base;
		return mountdir_signature(ps->dir, names, 1);
	case POLICY_SOURCE_DIR:
		return mountdir_signature(ps->dir, dir_keys, 3);
	default:
		return 0;
	}
}

bool policy_source_changed(struct policy_source *ps)
{
	return ps->kind != POLICY_SOURCE_BUILTIN && signature(ps) != ps->signature;
}

const char *policy_source_dir(const struct policy_source *ps)
{
	return ps->kind == POLICY_SOURCE_BUILTIN ? NULL : ps->dir;
}

struct snapshot *policy_source_acquire(struct policy_source *ps)
{
	return snapshot_slot_acquire(&ps->slot);
}

bool policy_source_ready(struct policy_source *ps, char *why, size_t n)
{
	bool ready;

	pthread_mutex_lock(&ps->mu);
	ready = ps->why_not[0] == '\0';
	if (!ready && n)
		snprintf(why, n, "%s", ps->why_not);
	pthread_mutex_unlock(&ps->mu);
	return ready;
}

void policy_source_status(struct policy_source *ps, struct policy_status *st)
{
	pthread_mutex_lock(&ps->mu);
	st->serving = ps->hash[0] != '\0';
	memcpy(st->hash, ps->hash, sizeof(st->hash));
	st->frozen = ps->frozen;
	memcpy(st->freeze_reason, ps->freeze_reason, sizeof(st->freeze_reason));
	st->freeze_since_ns = ps->freeze_since_ns;
	snprintf(st->source, sizeof(st->source), "%s", ps->source);
	pthread_mutex_unlock(&ps->mu);
}

static void set_why_not(struct policy_source *ps, const char *why)
{
	pthread_mutex_lock(&ps->mu);
	snprintf(ps->why_not, sizeof(ps->why_not), "%.1000s", why);
	pthread_mutex_unlock(&ps->mu);
}

/* Read and parse the input. 0 with *out, or an errno with a one-line
 * reason in msg and the error's parts in perr (file named in file). */
static int load(struct policy_source *ps, struct policy **out, struct policy_error *perr,
		char *file, size_t filen, char *msg, size_t msgn)
{
	struct mountdir_file f[3] = {
		{ .name = POLICY_KEY_DOCUMENT, .max = POLICY_SOURCE_FILE_MAX },
		{ .name = POLICY_KEY_FREEZE, .max = POLICY_SOURCE_KEY_MAX, .optional = true },
		{ .name = POLICY_KEY_FREEZE_REASON, .max = POLICY_SOURCE_KEY_MAX, .optional = true },
	};
	char why[1024];
	int rc;

	*out = NULL;
	memset(perr, 0, sizeof(*perr));
	snprintf(file, filen, "%s", ps->path);
	switch (ps->kind) {
	case POLICY_SOURCE_BUILTIN:
		rc = policy_builtin(out);
		if (rc)
			snprintf(msg, msgn, "built-in policy: %s", strerror(-rc));
		return rc;
	case POLICY_SOURCE_FILE:
		f[0].name = ps->path;
		rc = mountdir_read_path(&f[0], why, sizeof(why));
		if (rc) {
			snprintf(msg, msgn, "%s", why);
			return rc;
		}
		rc = policy_load(f[0].data, f[0].len, out, perr);
		mountdir_release(f, 1);
		break;
	default:
		rc = mountdir_read(ps->dir, f, 3, why, sizeof(why));
		if (rc) {
			snprintf(msg, msgn, "%.400s: %.500s", ps->dir, why);
			return rc;
		}
		rc = policy_load_parts(f[0].data, f[0].len, f[1].present, f[1].data, f[1].len,
				       f[2].present, f[2].data, f[2].len, out, perr);
		mountdir_release(f, 3);
		/* The error names the key; the file is that key in the directory. */
		if (rc && perr->source[0])
			snprintf(file, filen, "%s/%s", ps->dir, perr->source);
		break;
	}
	if (rc == -EINVAL) {
		/* file already names the key the position is in. */
		struct policy_error e = *perr;

		e.source[0] = '\0';
		policy_error_format_in(&e, file, why, sizeof(why));
		snprintf(msg, msgn, "%.900s", why);
	} else if (rc) {
		snprintf(msg, msgn, "%.400s: %.200s", ps->path, strerror(-rc));
	}
	return rc;
}

/* dra_guard_policy_input_missing follows both ways a source can vanish. */
static void export_missing(struct policy_source *ps)
{
	metrics_policy_input_missing(ps->m, ps->api_gone || ps->input_missing);
}

static void log_failure(const struct policy_source *ps, const char *why, bool serving, bool missing,
			const struct policy_error *perr, const char *file, const char *msg)
{
	struct log_line l;

	if (log_begin(&l, LOG_ERROR, !serving ? "no valid policy: not ready"
				     : missing ? "policy source missing; the last good policy stays"
				     : "policy not loaded; the last good policy stays")) {
		log_str(&l, "trigger", why);
		log_str(&l, "file", file);
		if (perr->line) {
			log_uint(&l, "line", perr->line);
			log_uint(&l, "col", perr->col);
		}
		if (perr->path[0])
			log_str(&l, "path", perr->path);
		log_str(&l, "error", msg);
		if (serving)
			log_str(&l, "serving_hash", ps->hash);
		log_end(&l);
	}
}

/* Log and export a freeze change between the serving policy and p. */
static void track_freeze(struct policy_source *ps, const struct policy *p, bool first)
{
	char reason[POLICY_FREEZE_REASON_MAX + 1];
	size_t n = p->freeze_reason.len < POLICY_FREEZE_REASON_MAX ? p->freeze_reason.len
								   : POLICY_FREEZE_REASON_MAX;
	bool changed;
	struct log_line l;

	memcpy(reason, p->freeze_reason.ptr ? p->freeze_reason.ptr : "", n);
	reason[n] = '\0';
	changed = p->frozen != ps->frozen || (p->frozen && strcmp(reason, ps->freeze_reason) != 0);
	if (!changed && !first)
		return;
	if (p->frozen && !ps->frozen) {
		int64_t since = clock_wall_ns();

		pthread_mutex_lock(&ps->mu);
		ps->freeze_since_ns = since;
		pthread_mutex_unlock(&ps->mu);
		if (ps->on_freeze)
			ps->on_freeze(ps->on_freeze_ctx, since);
	}
	if (p->frozen || !first) {
		const char *msg = !p->frozen ? "freeze lifted"
				  : ps->frozen ? "freeze reason changed" : "freeze active";

		if (log_begin(&l, LOG_WARN, msg)) {
			log_bool(&l, "frozen", p->frozen);
			if (p->frozen)
				log_str(&l, "reason", reason);
			log_str(&l, "policy_hash", p->hash);
			log_end(&l);
		}
	}
	pthread_mutex_lock(&ps->mu);
	ps->frozen = p->frozen;
	snprintf(ps->freeze_reason, sizeof(ps->freeze_reason), "%s", p->frozen ? reason : "");
	if (!p->frozen)
		ps->freeze_since_ns = 0;
	pthread_mutex_unlock(&ps->mu);
	metrics_freeze(ps->m, ps->frozen, ps->freeze_reason, ps->freeze_since_ns);
	if (ps->on_freeze_change)
		ps->on_freeze_change(ps->on_freeze_change_ctx);
}

/* Swap p in unless it is the serving policy; source names where it came
 * from. Returns as policy_source_reload(). */
static int install(struct policy_source *ps, struct policy *p, const char *why, const char *source,
		   const char *origin)
{
	struct snapshot *snap = NULL;
	bool first = ps->hash[0] == '\0';
	struct log_line l;
	uint32_t alert_after_s;
	size_t i;
	int rc;

	if (!first && strcmp(p->hash, ps->hash) == 0) {
		policy_free(p);
		metrics_policy_unchanged(ps->m);
		pthread_mutex_lock(&ps->mu);
		ps->source = source;
		pthread_mutex_unlock(&ps->mu);
		metrics_policy_source(ps->m, source);
		if (log_begin(&l, LOG_DEBUG, "policy unchanged")) {
			log_str(&l, "trigger", why);
			log_str(&l, "hash", ps->hash);
			log_end(&l);
		}
		return 0;
	}
	rc = snapshot_new(p, policy_obj_free, &snap);
	if (rc) {
		/* p is freed by snapshot_new(); the serving policy stays. */
		metrics_policy_reload(ps->m, METRICS_RELOAD_ERROR);
		log_msg_str(LOG_ERROR, "policy not swapped in: out of memory", "trigger", why);
		return rc;
	}
	/* The snapshot serves before anything says so: whoever reads the hash
	 * or the freeze state (/readyz, metrics, logs) and then acquires the
	 * policy gets that one or a newer one. p lives as long as the
	 * snapshot; reloads are serialised, so no other swap frees it here. */
	snapshot_slot_swap(&ps->slot, snap);
	track_freeze(ps, p, first);
	alert_after_s = p->freeze_alert_after_s;
	for (i = 0; i < p->ndrivers; i++)
		metrics_slice_driver_add(ps->m, p->drivers[i].name.ptr, p->drivers[i].name.len);
	pthread_mutex_lock(&ps->mu);
	snprintf(ps->hash, sizeof(ps->hash), "%s", p->hash);
	ps->source = source;
	pthread_mutex_unlock(&ps->mu);
	metrics_policy_reload(ps->m, METRICS_RELOAD_SUCCESS);
	metrics_policy_loaded(ps->m, ps->hash, clock_wall_ns());
	metrics_freeze_alert_after(ps->m, alert_after_s);
	metrics_policy_source(ps->m, source);
	set_why_not(ps, "");
	if (log_begin(&l, LOG_INFO, first ? "policy loaded" : "policy reloaded")) {
		log_str(&l, "trigger", why);
		log_str(&l, "source", origin);
		log_str(&l, "hash", ps->hash);
		log_bool(&l, "frozen", ps->frozen);
		log_end(&l);
	}
	return 1;
}

static int reload_locked(struct policy_source *ps, const char *why)
{
	struct policy *p = NULL;
	struct policy_error perr;
	char file[PATH_MAX + 80], msg[1024], line[1100];
	bool first = ps->hash[0] == '\0';
	int rc;

	ps->signature = signature(ps);
	if (ps->api_active) {
		log_msg_str(LOG_DEBUG, "policy reload skipped: the API's ConfigMap is the source", "trigger", why);
		return 0;
	}
	rc = load(ps, &p, &perr, file, sizeof(file), msg, sizeof(msg));
	/* A deleted file, or a ConfigMap volume the kubelet emptied (an
	 * optional volume whose ConfigMap was deleted), is held back like a
	 * broken one: deleting the policy must not lift a freeze. */
	ps->input_missing = rc == -ENOENT && !first;
	export_missing(ps);
	if (rc) {
		metrics_policy_reload(ps->m, METRICS_RELOAD_ERROR);
		log_failure(ps, why, !first, ps->input_missing, &perr, file, msg);
		if (first) {
			snprintf(line, sizeof(line), "no valid policy loaded: %.950s", msg);
			set_why_not(ps, line);
		}
		return rc;
	}
	return install(ps, p, why, kind_name(ps->kind),
		       ps->kind == POLICY_SOURCE_BUILTIN ? "built-in" : ps->path);
}

int policy_source_reload(struct policy_source *ps, const char *why)
{
	int rc;

	pthread_mutex_lock(&ps->reload_mu);
	rc = reload_locked(ps, why);
	pthread_mutex_unlock(&ps->reload_mu);
	return rc;
}

int policy_source_offer_api(struct policy_source *ps, bool exists, const char *doc, size_t doc_len,
			    bool has_freeze, const char *freeze, size_t freeze_len,
			    bool has_reason, const char *reason, size_t reason_len, const char *why)
{
	struct policy *p = NULL;
	struct policy_error perr;
	char msg[1024], line[1100], trigger[64];
	bool first;
	int rc;

	pthread_mutex_lock(&ps->reload_mu);
	snprintf(trigger, sizeof(trigger), "api %s", why);
	if (!exists) {
		/* Deleted after it served: the last good policy stays, frozen or
		 * not, and the mounted copy (which the kubelet keeps or empties)
		 * is not read either. Only a restart reads the configured source
		 * again: removing the guard on purpose is the uninstall runbook. */
		if (ps->api_active) {
			if (!ps->api_gone)
				log_msg_str(LOG_ERROR, "the policy ConfigMap is gone from the API server; "
					    "the last good policy stays until it is re-created", "serving_hash",
					    ps->hash);
			ps->api_gone = true;
			export_missing(ps);
			pthread_mutex_unlock(&ps->reload_mu);
			return 0;
		}
		rc = ps->hash[0] == '\0' ? reload_locked(ps, trigger) : 0;
		pthread_mutex_unlock(&ps->reload_mu);
		return rc;
	}
	if (ps->api_gone)
		log_msg_str(LOG_WARN, "the policy ConfigMap is back in the API server", "trigger", trigger);
	ps->api_active = true;
	ps->api_gone = false;
	export_missing(ps);
	first = ps->hash[0] == '\0';
	memset(&perr, 0, sizeof(perr));
	if (!doc) {
		snprintf(perr.msg, sizeof(perr.msg), "data.%s is missing: the ConfigMap must hold the policy "
			 "document under that key", POLICY_KEY_DOCUMENT);
		rc = -EINVAL;
	} else {
		rc = policy_load_parts(doc, doc_len, has_freeze, freeze, freeze_len, has_reason, reason,
				       reason_len, &p, &perr);
	}
	if (rc) {
		char where[256];

		policy_error_format(&perr, line, sizeof(line));
		snprintf(where, sizeof(where), "ConfigMap (API)");
		snprintf(msg, sizeof(msg), "%.900s", rc == -EINVAL ? line : strerror(-rc));
		metrics_policy_reload(ps->m, METRICS_RELOAD_ERROR);
		log_failure(ps, trigger, !first, false, &perr, where, msg);
		if (first) {
			snprintf(line, sizeof(line), "no valid policy loaded: %.950s", msg);
			set_why_not(ps, line);
		}
		pthread_mutex_unlock(&ps->reload_mu);
		return rc;
	}
	rc = install(ps, p, trigger, "api", "ConfigMap (API)");
	pthread_mutex_unlock(&ps->reload_mu);
	return rc;
}

void policy_source_on_freeze_change(struct policy_source *ps, void (*fn)(void *ctx), void *ctx)
{
	/* Under the lock a reload (also an offer from the API's watch) holds. */
	pthread_mutex_lock(&ps->reload_mu);
	ps->on_freeze_change = fn;
	ps->on_freeze_change_ctx = ctx;
	pthread_mutex_unlock(&ps->reload_mu);
}

void policy_source_on_freeze(struct policy_source *ps, void (*fn)(void *ctx, int64_t since_ns), void *ctx)
{
	ps->on_freeze = fn;
	ps->on_freeze_ctx = ctx;
}
