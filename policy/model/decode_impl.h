/* decode_impl.h - what the files of the decode module share. Private to the
 * module: nothing outside policy/decode*.c includes it.
 *
 * decode.c holds the error reports and the readers of single values;
 * decode_fields.c the field-table reader, lists and keyed maps;
 * decode_slice.c, decode_claim.c and decode_pod.c (Pod and ConfigMap) the
 * tables and decoders of each kind; decode_review.c the object around them
 * (metadata, kind, marks), the AdmissionReview and the entry points.
 *
 * The helpers a decoder calls for nearly every member and that are small
 * next to a call (the path, the offset, the next key or element, room in
 * an array) are static inline here, so the split costs the request path no
 * call. The value readers are not: each is defined once in decode.c, where
 * link-time optimisation inlines the scanner's calls into it once and then
 * it into its callers. Inline copies of them in every caller measured
 * worse: 0.7% more instructions per slice review than before the split,
 * 2.3% in the profile-guided release build; as it is, about none. */
#ifndef DRA_GUARD_DECODE_IMPL_H
#define DRA_GUARD_DECODE_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arena.h"
#include "decode.h"
#include "jscan.h"
#include "model.h"

#define PATH_SEGS 24
#define MSG_KEY_MAX 64      /* longest map key quoted in a message */

struct request_state;
struct map_memo;

/* Recently parsed quantity texts: a slice repeats the same few ("1",
 * "8Gi") on every device, and parsing is pure, so equal text gives an
 * equal result. One slot per text, chosen by a hash of it (decode.c): a
 * lookup is one comparison, where scanning 16 slots cost more than the
 * parse it saved (a 128-device review reads about 650 quantities, 17 of
 * them distinct). A power of two. */
#define QCACHE 32

struct qcache_entry {
	struct str text;
	int err;
	struct quantity value;
};

struct seg {
	const char *name;   /* NULL for an array index */
	size_t len;
	uint32_t index;
};

struct dctx {
	struct jscan s;
	const char *text;
	size_t text_len;
	const struct decode_limits *lim;
	struct arena *a;
	struct decode_error *err;
	int bad_json;               /* code for text that is not JSON */
	int schema_err;             /* code for a wrong type or shape here */
	int rc;                     /* the error in err, 0 if none */
	int held_rc;                /* an object's -EPROTO, reported last */
	struct decode_error held;
	enum api_version version;   /* of the object being decoded */
	const struct resource_slice *ref;  /* object's slice, while oldObject is decoded */
	struct map_memo *memo;      /* while spec.devices is decoded (decode_slice.c) */
	struct request_state *req;  /* while the request object is read (decode_review.c) */
	struct str req_group;       /* request.kind, for messages */
	struct str req_version;
	struct qcache_entry qcache[QCACHE];
	unsigned npath;
	struct seg path[PATH_SEGS];
};

/* --- errors (decode.c) ---------------------------------------------------- */

/* Each records the first error in d->err, with the path, stops the scanner
 * and returns the code (or the error already recorded). */

/* At a byte offset of the text. */
int decode_fail_at(struct dctx *d, int code, size_t offset, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* At the current position. */
int decode_fail(struct dctx *d, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The scanner's own error: the text is not JSON. */
int decode_scan_fail(struct dctx *d);

/* The arena's error rc (-ENOMEM when 0). */
int decode_mem_fail(struct dctx *d, int rc);

/* More than limit entries of what. */
int decode_limit_fail(struct dctx *d, const char *what, uint32_t limit);

/* A duplicate member or key (what) at key. */
int decode_key_fail(struct dctx *d, const char *what, const struct jscan_str *key);

/* The value here is not what the schema says (want). */
int decode_type_fail(struct dctx *d, const char *want);

/* --- the path and the scanner, for every member -------------------------- */

/* a[0..len) equals b[0..len), compared 8 bytes at a time without a call.
 * For the member names and quantities the decoder compares (about 2,100
 * comparisons of 2 to 40 bytes in a 128-device review) a call to the
 * library's memcmp costs more than the comparison; loads never leave
 * [0, len). */
static inline bool decode_same_bytes(const char *a, const char *b, size_t len)
{
	uint64_t x, y;
	uint32_t u, v;
	size_t i;

	if (len >= 8) {
		for (i = 0; i + 8 < len; i += 8) {
			memcpy(&x, a + i, 8);
			memcpy(&y, b + i, 8);
			if (x != y)
				return false;
		}
		memcpy(&x, a + len - 8, 8);
		memcpy(&y, b + len - 8, 8);
		return x == y;
	}
	if (len >= 4) {
		memcpy(&u, a, 4);
		memcpy(&v, b, 4);
		if (u != v)
			return false;
		memcpy(&u, a + len - 4, 4);
		memcpy(&v, b + len - 4, 4);
		return u == v;
	}
	for (i = 0; i < len; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

static inline void decode_path_push(struct dctx *d, const char *name, size_t len)
{
	if (d->npath < PATH_SEGS) {
		d->path[d->npath].name = name;
		d->path[d->npath].len = len;
	}
	d->npath++;
}

static inline void decode_path_push_index(struct dctx *d)
{
	if (d->npath < PATH_SEGS) {
		d->path[d->npath].name = NULL;
		d->path[d->npath].index = 0;
	}
	d->npath++;
}

static inline void decode_path_set_index(struct dctx *d, uint32_t i)
{
	if (d->npath - 1 < PATH_SEGS)
		d->path[d->npath - 1].index = i;
}

static inline void decode_path_pop(struct dctx *d)
{
	d->npath--;
}

/* Offset of the next value (after jscan_peek()) or of the current position. */
static inline size_t decode_here(const struct dctx *d)
{
	return jscan_offset(&d->s);
}

static inline int decode_next_elem(struct dctx *d)
{
	int r = jscan_array_next(&d->s);

	return r < 0 ? decode_scan_fail(d) : r;
}

static inline int decode_next_key(struct dctx *d, struct jscan_str *key)
{
	int r = jscan_object_next(&d->s, key);

	return r < 0 ? decode_scan_fail(d) : r;
}

/* Room for element n of an arena array of size-byte elements. Arrays grow
 * by doubling from 4, so the capacity follows from n: it is full when n is
 * 4 or more and a power of two. NULL on failure (reported). */
static inline void *decode_reserve(struct dctx *d, void *arr, uint32_t n, size_t size)
{
	void *p;

	if (n != 0 && (n < 4 || (n & (n - 1)) != 0))
		return arr;
	p = arena_grow(d->a, arr, (size_t)n * size, (size_t)(n ? 2 * n : 4) * size);
	if (!p)
		decode_mem_fail(d, arena_error(d->a));
	return p;
}

/* --- values (decode.c) ---------------------------------------------------- */

/* Each reads (or skips) the value here: 0, or the error it reported. */

/* Skip it, validating it. */
int decode_skip(struct dctx *d);

/* Consume null if it is next. */
int decode_take_null(struct dctx *d);

/* A string; null leaves it absent. *present (optional) tells. */
int decode_read_str_opt(struct dctx *d, struct str *out, bool *present);

static inline int decode_read_str(struct dctx *d, struct str *out)
{
	return decode_read_str_opt(d, out, NULL);
}

int decode_read_bool(struct dctx *d, bool *out);

/* An int64 written as a JSON integer (as encoding/json wants it). */
int decode_read_int64(struct dctx *d, int64_t *out, bool *present);

/* A Quantity: a JSON string or a bare number. A text that does not parse is
 * kept with its error for the rules to report; another JSON type is a
 * schema error. */
int decode_read_quantity(struct dctx *d, struct quantity_field *q);

/* An object or null kept as its JSON text (len 0 for null): for members
 * the cluster view reads later and the request path does not. */
int decode_read_raw_object(struct dctx *d, struct str *raw);

/* The same for an array. */
int decode_read_raw_array(struct dctx *d, struct str *raw);

/* An object whose content no rule reads: only whether it is there. */
int decode_read_present_object(struct dctx *d, bool *present);

/* Enter the object (array) here: 1 entered, 0 it was null (consumed), or
 * an error. */
int decode_enter_object(struct dctx *d);
int decode_enter_array(struct dctx *d);

/* A map key, decoded. */
int decode_read_key(struct dctx *d, const struct jscan_str *key, struct str *out);

/* --- tables of fields (decode_fields.c) ----------------------------------- */

enum field_type {
	F_STR,          /* struct str; flag: bool set when a string was there */
	F_BOOL,         /* bool */
	F_INT64,        /* int64_t; flag: bool set when a number was there */
	F_QUANTITY,     /* struct quantity_field */
	F_PRESENT,      /* an object no rule reads; flag: bool set when not null */
	F_CALL,         /* call(d, obj) decodes the value */
};

#define NO_FLAG ((size_t)-1)

struct field {
	const char *name;
	size_t len;
	enum field_type type;
	size_t off;
	size_t flag;
	int (*call)(struct dctx *d, void *obj);
};

#define FSTR(n, T, m) { n, sizeof(n) - 1, F_STR, offsetof(T, m), NO_FLAG, NULL }
#define FSTRF(n, T, m, f) { n, sizeof(n) - 1, F_STR, offsetof(T, m), offsetof(T, f), NULL }
#define FBOOL(n, T, m) { n, sizeof(n) - 1, F_BOOL, offsetof(T, m), NO_FLAG, NULL }
#define FINT(n, T, m) { n, sizeof(n) - 1, F_INT64, offsetof(T, m), NO_FLAG, NULL }
#define FINTF(n, T, m, f) { n, sizeof(n) - 1, F_INT64, offsetof(T, m), offsetof(T, f), NULL }
#define FQTY(n, T, m) { n, sizeof(n) - 1, F_QUANTITY, offsetof(T, m), NO_FLAG, NULL }
#define FPRESENT(n, T, f) { n, sizeof(n) - 1, F_PRESENT, 0, offsetof(T, f), NULL }
#define FCALL(n, fn) { n, sizeof(n) - 1, F_CALL, 0, NO_FLAG, fn }
#define FNAME(n) { n, sizeof(n) - 1, F_CALL, 0, NO_FLAG, NULL }
/* A member seen is one bit of a uint32_t (how a key given twice is caught),
 * so a field table holds at most 32 entries. COUNT() of a table is checked
 * against that when it is compiled. */
#define DECODE_MAX_FIELDS 32
#define COUNT(a)                                                                            \
	((int)(sizeof(a) / sizeof((a)[0]) +                                                 \
	       0 * sizeof(struct {                                                          \
		       _Static_assert(sizeof(a) / sizeof((a)[0]) <= DECODE_MAX_FIELDS,      \
				      "a field table has more entries than the seen mask");  \
		       int unused;                                                          \
	       })))

/* The first member a schema does not have, as prefix + name. */
struct unknown_note {
	struct str *out;
	const char *prefix;
};

#define NEXT_UNKNOWN 2

/* The next member of the object being read that f names: returns 1 with
 * *id set and its name pushed on the path (pop it after the value), 0 after
 * the closing brace, or an error. A member named twice is an error. Other
 * members are skipped, or, when unknown is not NULL, returned as
 * NEXT_UNKNOWN with the key in *unknown and the value not consumed. */
int decode_next_member(struct dctx *d, const struct field *f, int n, uint32_t *seen, int *id,
		       struct jscan_str *unknown);

/* Read the object here into obj as the table says; null is an absent
 * object. Members not in the table are skipped, or noted in *unknown. */
int decode_fields(struct dctx *d, const struct field *f, int n, void *obj,
		  const struct unknown_note *unknown);

/* The array here into a growing arena array (*arr, *n) of size-byte
 * elements, each zeroed and then filled by elem. */
int decode_list(struct dctx *d, void **arr, uint32_t *n, size_t size, const char *what,
		int (*elem)(struct dctx *d, void *e));

/* A list of strings. */
int decode_read_str_list(struct dctx *d, struct str **out, uint32_t *n);

/* A list of which only the first entry is decoded (by first) and all are
 * counted. */
int decode_count_list(struct dctx *d, uint32_t *count, int (*first)(struct dctx *d, void *obj),
		      void *obj);

/* Start element n of an arena array of size-byte elements keyed by a map
 * key: check the cap (at most max_map_entries among [from, n)), decode the
 * key into *k and make room. *grown gets the array (moved or not); element
 * n is the caller's to fill (a constant-size initialisation there is far
 * cheaper than a memset of a size known only here). 0 or an error
 * (reported). Duplicates are found by decode_map_sort() once the map has
 * been read. */
int decode_map_entry(struct dctx *d, const struct jscan_str *key, void *arr, uint32_t from,
		     uint32_t n, size_t size, const char *what, struct str *k, void **grown);

/* Largest element decode_map_sort() moves through its own buffer. */
#define DECODE_MAP_ELEM_MAX 512

/* Sort elements [from, n) of a keyed arena array by key (a struct str that
 * must be each element's first member) and refuse a key that appears twice
 * ("duplicate <what> ..."; at is the map's offset, used when the key's own
 * cannot be told). n log n, so a map of many keys costs no more than its
 * reading; rules look keys up by binary search. 0 or the error reported. */
int decode_map_sort(struct dctx *d, void *arr, uint32_t from, uint32_t n, size_t size, const char *what,
		    size_t at);

/* name -> Quantity, for consumedCapacity and a Pod's claim resources. */
int decode_quantity_map(struct dctx *d, struct named_quantity **out, uint32_t *nout);

/* --- the kinds' sections, for decode_review.c ----------------------------- */

/* spec of a ResourceSlice (decode_slice.c). */
extern const struct field decode_slice_spec_fields[];
extern const int decode_slice_spec_nfields;

/* spec and status of a ResourceClaim (decode_claim.c). */
extern const struct field decode_claim_spec_fields[];
extern const int decode_claim_spec_nfields;
extern const struct field decode_claim_status_fields[];
extern const int decode_claim_status_nfields;

/* spec and status of a Pod (decode_pod.c). */
extern const struct field decode_pod_spec_fields[];
extern const int decode_pod_spec_nfields;
extern const struct field decode_pod_status_fields[];
extern const int decode_pod_status_nfields;

/* status of a Node (decode_pod.c). */
extern const struct field decode_node_status_fields[];
extern const int decode_node_status_nfields;

/* data of a ConfigMap (decode_pod.c): the guard's keys are kept. */
int decode_config_data(struct dctx *d, struct config_map *cm);

#endif
