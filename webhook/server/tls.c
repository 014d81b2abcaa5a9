/* tls.c - the serving certificate: read, check, and hand to GnuTLS. */
#include "tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "mountdir.h"

struct tls_cred {
	gnutls_pcert_st pcert[TLS_CHAIN_MAX];
	unsigned npcert;
	gnutls_privkey_t key;
	struct tls_info info;
};

/* --- reading ---------------------------------------------------------------- */

static void hash_pair(struct tls_pair *p)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0, i;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	p->hash[0] = '\0';
	if (!ctx)
		return;
	if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
	    EVP_DigestUpdate(ctx, p->cert, p->cert_len) == 1 &&
	    EVP_DigestUpdate(ctx, p->key, p->key_len) == 1 &&
	    EVP_DigestFinal_ex(ctx, md, &mdlen) == 1) {
		for (i = 0; i < mdlen && i < 32; i++)
			snprintf(p->hash + 2 * i, 3, "%02x", md[i]);
	}
	EVP_MD_CTX_free(ctx);
}

int tls_pair_read(const char *cert_path, const char *key_path, struct tls_pair *out,
		  char err[static TLS_ERROR_MAX])
{
	char cdir[PATH_MAX], cbase[NAME_MAX + 1], kdir[PATH_MAX], kbase[NAME_MAX + 1];
	struct mountdir_file f[2] = {
		{ .name = cbase, .max = TLS_FILE_MAX },
		{ .name = kbase, .max = TLS_FILE_MAX },
	};
	char why[TLS_ERROR_MAX];
	int rc;

	memset(out, 0, sizeof(*out));
	err[0] = '\0';
	if (mountdir_split(cert_path, cdir, sizeof(cdir), cbase, sizeof(cbase)) != 0 ||
	    mountdir_split(key_path, kdir, sizeof(kdir), kbase, sizeof(kbase)) != 0) {
		snprintf(err, TLS_ERROR_MAX, "certificate or key path too long");
		return -ENAMETOOLONG;
	}
	if (strcmp(cdir, kdir) == 0) {
		/* One Secret: both files from the same version of it. */
		rc = mountdir_read(cdir, f, 2, why, sizeof(why));
		if (rc != 0) {
			snprintf(err, TLS_ERROR_MAX, "reading %.200s: %.280s", cdir, why);
			return rc;
		}
	} else {
		rc = mountdir_read(cdir, &f[0], 1, why, sizeof(why));
		if (rc != 0) {
			snprintf(err, TLS_ERROR_MAX, "reading %.200s: %.280s", cdir, why);
			return rc;
		}
		rc = mountdir_read(kdir, &f[1], 1, why, sizeof(why));
		if (rc != 0) {
			mountdir_release(f, 1);
			snprintf(err, TLS_ERROR_MAX, "reading %.200s: %.280s", kdir, why);
			return rc;
		}
	}
	out->cert = f[0].data;
	out->cert_len = f[0].len;
	out->key = f[1].data;
	out->key_len = f[1].len;
	hash_pair(out);
	return 0;
}

void tls_pair_free(struct tls_pair *p)
{
	if (p->key)
		OPENSSL_cleanse(p->key, p->key_len);
	free(p->cert);
	free(p->key);
	memset(p, 0, sizeof(*p));
}

/* --- checking --------------------------------------------------------------- */

void tls_format_time(int64_t t, char *buf, size_t n)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) || strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(buf, n, "%lld", (long long)t);
}

static int asn1_time_unix(const ASN1_TIME *t, int64_t *out)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	if (!t || ASN1_TIME_to_tm(t, &tm) != 1)
		return -EINVAL;
	*out = (int64_t)timegm(&tm);
	return 0;
}

/* A key file never prompts for a passphrase: an encrypted key is an error. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return 0;
}

static void ssl_error(char *err, const char *what)
{
	unsigned long e = ERR_get_error();
	char detail[256];

	if (e) {
		ERR_error_string_n(e, detail, sizeof(detail));
		snprintf(err, TLS_ERROR_MAX, "%s: %s", what, detail);
	} else {
		snprintf(err, TLS_ERROR_MAX, "%s", what);
	}
	ERR_clear_error();
}

static void leaf_identity(X509 *leaf, struct tls_info *info)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0, i;
	BIGNUM *bn;
	char *hex;

	if (X509_digest(leaf, EVP_sha256(), md, &mdlen) == 1)
		for (i = 0; i < mdlen && 3 * i + 3 <= sizeof(info->fingerprint); i++)
			snprintf(info->fingerprint + 3 * i, 4, i + 1 < mdlen ? "%02X:" : "%02X", md[i]);
	bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(leaf), NULL);
	if (bn) {
		hex = BN_bn2hex(bn);
		if (hex) {
			snprintf(info->serial, sizeof(info->serial), "%s", hex);
			OPENSSL_free(hex);
		}
		BN_free(bn);
	}
	X509_NAME_oneline(X509_get_subject_name(leaf), info->subject, sizeof(info->subject));
}

static bool san_matches(X509 *leaf, const char *name)
{
	unsigned char addr[16];

	if (inet_pton(AF_INET, name, addr) == 1 || inet_pton(AF_INET6, name, addr) == 1)
		return X509_check_ip_asc(leaf, name, 0) == 1;
	return X509_check_host(leaf, name, strlen(name), X509_CHECK_FLAG_NEVER_CHECK_SUBJECT,
			       NULL) == 1;
}

int tls_check(const struct tls_pair *p, const char *service_name, int64_t now,
	      struct tls_info *info, char err[static TLS_ERROR_MAX])
{
	X509 *chain[TLS_CHAIN_MAX] = { NULL };
	EVP_PKEY *pkey = NULL;
	BIO *bio = NULL;
	char when[32];
	unsigned n = 0, i;
	int rc = -EINVAL;

	memset(info, 0, sizeof(*info));
	err[0] = '\0';
	ERR_clear_error();
	bio = BIO_new_mem_buf(p->cert, (int)p->cert_len);
	if (!bio) {
		rc = -ENOMEM;
		goto out;
	}
	for (;;) {
		X509 *x = PEM_read_bio_X509(bio, NULL, no_passphrase, NULL);

		if (!x)
			break;
		if (n == TLS_CHAIN_MAX) {
			X509_free(x);
			snprintf(err, TLS_ERROR_MAX, "certificate file holds more than %d certificates",
				 TLS_CHAIN_MAX);
			goto out;
		}
		chain[n++] = x;
	}
	/* The loop ends on "no start line" after the last certificate; any
	 * other error means a certificate that did not parse. */
	if (ERR_GET_REASON(ERR_peek_last_error()) != PEM_R_NO_START_LINE && ERR_peek_last_error()) {
		ssl_error(err, "certificate file: bad PEM");
		goto out;
	}
	ERR_clear_error();
	if (n == 0) {
		snprintf(err, TLS_ERROR_MAX, "certificate file: no PEM certificate in it");
		goto out;
	}
	BIO_free(bio);
	bio = BIO_new_mem_buf(p->key, (int)p->key_len);
	if (!bio) {
		rc = -ENOMEM;
		goto out;
	}
	pkey = PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL);
	if (!pkey) {
		ssl_error(err, "key file: no unencrypted PEM private key in it");
		goto out;
	}
	if (X509_check_private_key(chain[0], pkey) != 1) {
		ERR_clear_error();
		snprintf(err, TLS_ERROR_MAX, "key does not match the certificate");
		goto out;
	}
	if (asn1_time_unix(X509_get0_notBefore(chain[0]), &info->not_before) != 0 ||
	    asn1_time_unix(X509_get0_notAfter(chain[0]), &info->not_after) != 0) {
		snprintf(err, TLS_ERROR_MAX, "certificate has an unreadable validity period");
		goto out;
	}
	leaf_identity(chain[0], info);
	if (info->not_after <= now) {
		tls_format_time(info->not_after, when, sizeof(when));
		snprintf(err, TLS_ERROR_MAX, "certificate expired at %s (serial %s)", when, info->serial);
		goto out;
	}
	if (info->not_before > now) {
		tls_format_time(info->not_before, when, sizeof(when));
		snprintf(err, TLS_ERROR_MAX, "certificate is not valid before %s (serial %s)", when,
			 info->serial);
		goto out;
	}
	info->chain_len = n;
	info->expiring = info->not_after - now < (int64_t)TLS_EXPIRY_WARN_DAYS * 86400;
	if (service_name && service_name[0]) {
		info->name_checked = true;
		info->name_ok = san_matches(chain[0], service_name);
	}
	rc = 0;
out:
	if (rc != 0 && !err[0])
		snprintf(err, TLS_ERROR_MAX, "%s", strerror(-rc));
	for (i = 0; i < n; i++)
		X509_free(chain[i]);
	EVP_PKEY_free(pkey);
	BIO_free(bio);
	ERR_clear_error();
	return rc;
}

/* --- the GnuTLS credential -------------------------------------------------- */

int tls_cred_new(const struct tls_pair *p, const struct tls_info *info, struct tls_cred **out,
		 char err[static TLS_ERROR_MAX])
{
	struct tls_cred *c = calloc(1, sizeof(*c));
	gnutls_datum_t d;
	unsigned n = TLS_CHAIN_MAX;
	int g, rc = -EINVAL;

	*out = NULL;
	err[0] = '\0';
	if (!c)
		return -ENOMEM;
	d.data = (unsigned char *)p->cert;
	d.size = (unsigned)p->cert_len;
	g = gnutls_pcert_list_import_x509_raw(c->pcert, &n, &d, GNUTLS_X509_FMT_PEM, 0);
	if (g < 0) {
		snprintf(err, TLS_ERROR_MAX, "GnuTLS cannot use the certificate: %s", gnutls_strerror(g));
		goto fail;
	}
	c->npcert = n;
	g = gnutls_privkey_init(&c->key);
	if (g < 0) {
		rc = -ENOMEM;
		goto fail;
	}
	d.data = (unsigned char *)p->key;
	d.size = (unsigned)p->key_len;
	g = gnutls_privkey_import_x509_raw(c->key, &d, GNUTLS_X509_FMT_PEM, NULL, 0);
	if (g < 0) {
		snprintf(err, TLS_ERROR_MAX, "GnuTLS cannot use the key: %s", gnutls_strerror(g));
		goto fail;
	}
	c->info = *info;
	*out = c;
	return 0;
fail:
	tls_cred_free(c);
	return rc;
}

void tls_cred_free(struct tls_cred *c)
{
	unsigned i;

	if (!c)
		return;
	for (i = 0; i < c->npcert; i++)
		gnutls_pcert_deinit(&c->pcert[i]);
	if (c->key)
		gnutls_privkey_deinit(c->key);
	free(c);
}

const struct tls_info *tls_cred_info(const struct tls_cred *c)
{
	return &c->info;
}

void tls_cred_retrieve(const struct tls_cred *c, gnutls_pcert_st **pcert, unsigned *n,
		       gnutls_privkey_t *key)
{
	/* GnuTLS takes non-const pointers but only reads through them. */
	*pcert = (gnutls_pcert_st *)c->pcert;
	*n = c->npcert;
	*key = c->key;
}
