/* cert_source.c - the serving certificate, reloaded without a restart. */
#include "cert_source.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "mountdir.h"

struct cert_source {
	char cert_path[PATH_MAX];
	char key_path[PATH_MAX];
	char service_name[256];
	char dir[2][PATH_MAX];
	char base[2][NAME_MAX + 1];
	bool two_dirs;
	struct metrics *m;
	struct snapshot_slot slot;
	char serving_hash[65];        /* of the pair in the slot */
	uint64_t signature;           /* stat signature at the last reload */
};

static void cred_free(void *obj)
{
	tls_cred_free(obj);
}

int cert_source_new(const char *cert_path, const char *key_path, const char *service_name,
		    struct metrics *m, struct cert_source **out)
{
	struct cert_source *cs = calloc(1, sizeof(*cs));
	int rc = -ENOMEM;

	*out = NULL;
	if (!cs)
		return -ENOMEM;
	if (snprintf(cs->cert_path, sizeof(cs->cert_path), "%s", cert_path) >= (int)sizeof(cs->cert_path) ||
	    snprintf(cs->key_path, sizeof(cs->key_path), "%s", key_path) >= (int)sizeof(cs->key_path) ||
	    snprintf(cs->service_name, sizeof(cs->service_name), "%s",
		     service_name ? service_name : "") >= (int)sizeof(cs->service_name) ||
	    mountdir_split(cert_path, cs->dir[0], sizeof(cs->dir[0]), cs->base[0], sizeof(cs->base[0])) != 0 ||
	    mountdir_split(key_path, cs->dir[1], sizeof(cs->dir[1]), cs->base[1], sizeof(cs->base[1])) != 0) {
		rc = -ENAMETOOLONG;
		goto fail;
	}
	cs->two_dirs = strcmp(cs->dir[0], cs->dir[1]) != 0;
	cs->m = m;
	if (snapshot_slot_init(&cs->slot) != 0)
		goto fail;
	*out = cs;
	return 0;
fail:
	free(cs);
	return rc;
}

void cert_source_free(struct cert_source *cs)
{
	if (!cs)
		return;
	snapshot_slot_destroy(&cs->slot);
	free(cs);
}

static uint64_t signature(const struct cert_source *cs)
{
	const char *names[1];
	uint64_t h;

	names[0] = cs->base[0];
	h = mountdir_signature(cs->dir[0], names, 1);
	names[0] = cs->base[1];
	return h * 31 + mountdir_signature(cs->dir[1], names, 1);
}

bool cert_source_changed(struct cert_source *cs)
{
	return signature(cs) != cs->signature;
}

const char *cert_source_dir(const struct cert_source *cs, unsigned i)
{
	if (i == 0)
		return cs->dir[0];
	return i == 1 && cs->two_dirs ? cs->dir[1] : NULL;
}

struct snapshot *cert_source_acquire(struct cert_source *cs)
{
	return snapshot_slot_acquire(&cs->slot);
}

static void log_failure(const struct cert_source *cs, const char *why, const char *err)
{
	struct log_line l;

	/* Before the first good pair there is no serving one to keep. */
	if (log_begin(&l, LOG_ERROR, cs->serving_hash[0] ? "certificate not loaded; the serving one stays"
							 : "no usable certificate: not serving")) {
		log_str(&l, "trigger", why);
		log_str(&l, "cert", cs->cert_path);
		log_str(&l, "key", cs->key_path);
		log_str(&l, "error", err);
		log_end(&l);
	}
}

static void log_loaded(const struct cert_source *cs, const struct tls_info *info, const char *why)
{
	char when[32];
	struct log_line l;

	tls_format_time(info->not_after, when, sizeof(when));
	if (log_begin(&l, LOG_INFO, "certificate loaded")) {
		log_str(&l, "trigger", why);
		log_str(&l, "cert", cs->cert_path);
		log_str(&l, "subject", info->subject);
		log_str(&l, "serial", info->serial);
		log_str(&l, "sha256", info->fingerprint);
		log_str(&l, "not_after", when);
		log_uint(&l, "chain", info->chain_len);
		log_end(&l);
	}
	if (info->expiring && log_begin(&l, LOG_WARN, "certificate expires soon")) {
		log_str(&l, "cert", cs->cert_path);
		log_str(&l, "not_after", when);
		log_int(&l, "days_warning", TLS_EXPIRY_WARN_DAYS);
		log_end(&l);
	}
	if (info->name_checked && !info->name_ok &&
	    log_begin(&l, LOG_WARN, "certificate SANs do not include the service name")) {
		log_str(&l, "cert", cs->cert_path);
		log_str(&l, "service_name", cs->service_name);
		log_end(&l);
	}
}

int cert_source_reload(struct cert_source *cs, const char *why)
{
	char err[TLS_ERROR_MAX];
	struct tls_pair pair = { 0 };
	struct tls_info info;
	struct tls_cred *cred = NULL;
	struct snapshot *snap = NULL;
	int rc;

	/* Taken before reading: a change landing mid-read moves it again. */
	cs->signature = signature(cs);
	rc = tls_pair_read(cs->cert_path, cs->key_path, &pair, err);
	if (rc != 0)
		goto fail;
	if (cs->serving_hash[0] && strcmp(pair.hash, cs->serving_hash) == 0) {
		rc = 0;
		goto out;
	}
	rc = tls_check(&pair, cs->service_name, clock_wall_ns() / 1000000000, &info, err);
	if (rc != 0)
		goto fail;
	rc = tls_cred_new(&pair, &info, &cred, err);
	if (rc != 0)
		goto fail;
	rc = snapshot_new(cred, cred_free, &snap);
	if (rc != 0) {
		snprintf(err, sizeof(err), "out of memory");
		goto fail;
	}
	snapshot_slot_swap(&cs->slot, snap);
	memcpy(cs->serving_hash, pair.hash, sizeof(cs->serving_hash));
	metrics_tls_reload(cs->m, METRICS_RELOAD_SUCCESS);
	metrics_tls_not_after(cs->m, info.not_after);
	log_loaded(cs, &info, why);
	rc = 1;
	goto out;
fail:
	metrics_tls_reload(cs->m, METRICS_RELOAD_ERROR);
	log_failure(cs, why, err);
out:
	tls_pair_free(&pair);
	return rc;
}
