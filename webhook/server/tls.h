/* tls.h - the serving certificate: read, check, and hand to GnuTLS.
 *
 * A pair is read from two PEM files (the certificate file may hold a chain,
 * leaf first) and checked with OpenSSL before it can serve: both parse, the
 * key belongs to the leaf, the leaf is valid now. What only deserves a
 * warning - expiry within TLS_EXPIRY_WARN_DAYS, SANs without the service
 * name - is reported in struct tls_info for the caller to log. A checked
 * pair becomes a credential: the GnuTLS certificate list and private key a
 * handshake uses, immutable once made, so any number of handshakes on any
 * threads can use one credential at once. */
#ifndef DRA_GUARD_TLS_H
#define DRA_GUARD_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>

/* Largest certificate or key file accepted. */
#define TLS_FILE_MAX (1024 * 1024)
/* Longest chain accepted, leaf included. */
#define TLS_CHAIN_MAX 16
#define TLS_EXPIRY_WARN_DAYS 30
#define TLS_ERROR_MAX 512

struct tls_pair {
	char *cert;                   /* PEM, NUL-terminated */
	size_t cert_len;
	char *key;
	size_t key_len;
	char hash[65];                /* SHA-256 (hex) of both files: same hash, same pair */
};

struct tls_info {
	char fingerprint[96];         /* SHA-256 of the leaf's DER, "AB:CD:..." */
	char serial[96];              /* hex */
	char subject[256];
	int64_t not_before;           /* Unix time */
	int64_t not_after;
	unsigned chain_len;
	bool expiring;                /* not_after within TLS_EXPIRY_WARN_DAYS */
	bool name_checked;            /* a service name was given */
	bool name_ok;                 /* ... and the leaf's SANs include it */
};

struct tls_cred;

/* Read the two files (one version of a kubelet-mounted Secret when both sit
 * in the same directory). 0, or a negative errno with err filled. */
int tls_pair_read(const char *cert_path, const char *key_path, struct tls_pair *out,
		  char err[static TLS_ERROR_MAX]);

/* Wipe and free. tls_pair_free() on a zeroed pair is a no-op. */
void tls_pair_free(struct tls_pair *p);

/* Check p at time now (Unix seconds). service_name (NULL or "" for none) is
 * matched against the leaf's DNS and IP SANs. Returns 0 with info filled,
 * or -EINVAL with err saying what is wrong: unparsable PEM, no certificate,
 * a chain longer than TLS_CHAIN_MAX, key not matching, expired, not yet
 * valid. */
int tls_check(const struct tls_pair *p, const char *service_name, int64_t now,
	      struct tls_info *info, char err[static TLS_ERROR_MAX]);

/* A credential from a checked pair (info is copied into it). 0, -EINVAL
 * when GnuTLS refuses the PEM (err says why), -ENOMEM. */
int tls_cred_new(const struct tls_pair *p, const struct tls_info *info, struct tls_cred **out,
		 char err[static TLS_ERROR_MAX]);

/* tls_cred_free(NULL) is a no-op. No handshake may still use it. */
void tls_cred_free(struct tls_cred *c);

const struct tls_info *tls_cred_info(const struct tls_cred *c);

/* What a gnutls_certificate_retrieve_function2 returns. GnuTLS neither
 * changes nor frees these: they belong to the credential. */
void tls_cred_retrieve(const struct tls_cred *c, gnutls_pcert_st **pcert, unsigned *n,
		       gnutls_privkey_t *key);

/* "2026-11-29T10:00:00Z" into buf (at least 32 bytes). */
void tls_format_time(int64_t t, char *buf, size_t n);

#endif
