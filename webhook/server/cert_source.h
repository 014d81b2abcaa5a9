/* cert_source.h - the serving certificate, reloaded without a restart.
 *
 * Holds the current TLS credential in a snapshot slot. A reload reads the
 * pair, checks it (tls_check) and swaps it in only when it is good: a broken
 * pair is logged and counted (dra_guard_tls_reload_total{result="error"})
 * and the serving one stays; before any pair has loaded, the log says that
 * there is no usable certificate (serve then exits). A pair identical to the serving one is not
 * reloaded. Handshakes take a reference to the credential they use
 * (cert_source_acquire) and keep it until their connection closes, so a
 * credential is freed only once no connection can still need it. */
#ifndef DRA_GUARD_CERT_SOURCE_H
#define DRA_GUARD_CERT_SOURCE_H

#include <stdbool.h>
#include <stdint.h>

#include "metrics.h"
#include "snapshot.h"
#include "tls.h"

struct cert_source;

/* The paths are copied; service_name may be NULL. m is borrowed and must
 * outlive the source. 0 or -ENOMEM. */
int cert_source_new(const char *cert_path, const char *key_path, const char *service_name,
		    struct metrics *m, struct cert_source **out);

/* cert_source_free(NULL) is a no-op. No handshake may still be running. */
void cert_source_free(struct cert_source *cs);

/* Read, check and (when different and good) swap in the pair; why says what
 * triggered it ("start", "SIGHUP", "change", "poll") for the log. Returns 1
 * when a new credential now serves, 0 when the files hold the serving pair,
 * or a negative errno when they could not be used (logged and counted; the
 * serving credential, if any, stays). Only one thread may reload. */
int cert_source_reload(struct cert_source *cs, const char *why);

/* True when the files' stat signature moved since the last reload: the
 * cheap test the poll backstop runs. */
bool cert_source_changed(struct cert_source *cs);

/* The directories to watch (one or two; the second is NULL when both files
 * share a directory). Borrowed. */
const char *cert_source_dir(const struct cert_source *cs, unsigned i);

/* A reference to the serving credential (snapshot_get() gives the struct
 * tls_cred), or NULL before the first good load. Any thread. */
struct snapshot *cert_source_acquire(struct cert_source *cs);

#endif
