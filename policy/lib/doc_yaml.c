/* doc_yaml.c - the YAML reader: libyaml events into the doc tree.
 *
 * Kubernetes reads YAML with sigs.k8s.io/yaml: go-yaml v2 decodes into
 * interface{} values (YAML 1.1 resolution, goyaml.v2/resolve.go) and the
 * result is marshalled to JSON with encoding/json. This reader gives the tree
 * that JSON would hold, with these deliberate differences:
 *
 *  - numbers keep their exact value. Go turns floats (and decimal integers
 *    beyond 64 bits) into float64; here 0.1000000000000000000001 stays as
 *    written. Spelling follows encoding/json's float format (1.0 -> 1,
 *    1e3 -> 1000, 1e21 -> 1e+21, 1e-7 -> 1e-7), so integral values read as
 *    integers wherever Kubernetes would accept them as integers;
 *  - .inf and .nan are errors (encoding/json refuses them too);
 *  - map keys: Go converts bool keys to "true"/"false" and int keys to their
 *    decimal text; float keys it prints with float32 rounding and null,
 *    uint64 and big-integer keys it refuses. Here float keys are refused as
 *    well (quote them), and keys that collide after conversion (1 and "1")
 *    are duplicates instead of one silently winning;
 *  - anchors, aliases, merge keys and tags outside the YAML core set are
 *    errors instead of features.
 *
 * Timestamps stay strings, as go-yaml v2 keeps them when decoding into
 * interface{}. */
#include "doc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "buf.h"
#include "doc_impl.h"

/* Non-decimal integer literals past 64 bits are converted digit by digit;
 * longer ones are refused rather than spending quadratic time on them. */
#define YAML_BIGINT_DIGITS_MAX 4096
/* The largest finite float64 plus half an ulp (2^1024 - 2^970): decimal
 * values at or above it are +Inf to Go, which then reads them as strings. */
static const char float64_overflow_digits[] =
	"17976931348623158079372897140530341507993413271003782693617377898044496829276475094664"
	"90179775872070963302864166928879109465555478519404026306574886715058206819089020007083"
	"83676273854845817711531764475730270069855571366959622842914819860834936475292719074168"
	"444365510704342711559699508093042880177904174497792";
#define FLOAT64_OVERFLOW_DP 309

#define YAML_TAG_PREFIX "tag:yaml.org,2002:"

enum scalar_kind {
	SK_NULL,
	SK_BOOL,
	SK_INT,
	SK_FLOAT,
	SK_STRING,
	SK_NONFINITE,          /* .inf, .nan: no JSON spelling */
};

struct scalar {
	enum scalar_kind kind;
	bool boolean;
	bool fits_int64;       /* SK_INT: Go gives int (not uint64 or big.Int) */
	const char *text;      /* SK_INT, SK_FLOAT: JSON number; SK_STRING: value */
	size_t len;
};

enum tag_kind {
	TAG_NONE,
	TAG_STR,
	TAG_INT,
	TAG_FLOAT,
	TAG_BOOL,
	TAG_NULL,
	TAG_MAP,
	TAG_SEQ,
	TAG_OTHER,
};

struct yaml_reader {
	struct doc_builder *b;
	const char *text;
	size_t len;
	struct buf num;        /* the normalised number being built */
	struct buf plain;      /* the scalar without '_' */
	struct buf digits;     /* significant digits of a decimal */
};

/* --- plain scalar resolution (goyaml.v2 resolve.go) ----------------------- */

static const char *const null_words[] = { "", "~", "null", "Null", "NULL" };
static const char *const true_words[] = {
	"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
};
static const char *const false_words[] = {
	"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
};
static const char *const nonfinite_words[] = {
	".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF",
	"+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
};

#define NWORDS(t) (sizeof(t) / sizeof((t)[0]))

static bool word_in(const char *s, size_t n, const char *const *words, size_t nwords)
{
	size_t i;

	for (i = 0; i < nwords; i++)
		if (strlen(words[i]) == n && memcmp(words[i], s, n) == 0)
			return true;
	return false;
}

static unsigned digit_value(char c)
{
	if (c >= '0' && c <= '9')
		return (unsigned)(c - '0');
	if (c >= 'a' && c <= 'f')
		return (unsigned)(c - 'a' + 10);
	if (c >= 'A' && c <= 'F')
		return (unsigned)(c - 'A' + 10);
	return 99;
}

static char lower(char c)
{
	return (char)(c | 0x20);
}

/* An integer as Go's strconv.ParseInt(s, 0, 64) reads its syntax. */
struct int_lit {
	bool sign;             /* written with + or - */
	bool neg;
	unsigned base;
	const char *digits;    /* after sign and prefix; empty only for "0" */
	size_t n;
};

static bool parse_go_int(const char *s, size_t n, struct int_lit *lit)
{
	size_t i = 0;

	memset(lit, 0, sizeof(*lit));
	if (n > 0 && (s[0] == '+' || s[0] == '-')) {
		lit->sign = true;
		lit->neg = s[0] == '-';
		i = 1;
	}
	if (i == n)
		return false;
	lit->base = 10;
	if (s[i] == '0') {
		char p = n - i >= 3 ? lower(s[i + 1]) : '\0';

		lit->base = p == 'b' ? 2 : p == 'o' ? 8 : p == 'x' ? 16 : 8;
		i += p == 'b' || p == 'o' || p == 'x' ? 2 : 1;
	}
	lit->digits = s + i;
	lit->n = n - i;
	for (; i < n; i++)
		if (digit_value(s[i]) >= lit->base)
			return false;
	return true;
}

/* The literal's magnitude when it fits 64 bits. */
static bool int_lit_u64(const struct int_lit *lit, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; i < lit->n; i++) {
		unsigned d = digit_value(lit->digits[i]);

		if (v > (UINT64_MAX - d) / lit->base)
			return false;
		v = v * lit->base + d;
	}
	*out = v;
	return true;
}

/* Decimal digits of a magnitude beyond 64 bits, into out. */
static int bigint_to_decimal(const struct int_lit *lit, struct buf *out)
{
	enum { LIMB = 1000000000 };
	/* A base-16 digit adds under 1.21 decimal digits: 9 per limb. */
	uint32_t limbs[YAML_BIGINT_DIGITS_MAX * 2 / 9 + 2];
	size_t nl = 0, i, j;
	int rc;

	if (lit->base == 10)
		return buf_add(out, lit->digits, lit->n);
	i = 0;
	while (i < lit->n && lit->digits[i] == '0')
		i++;
	if (lit->n - i > YAML_BIGINT_DIGITS_MAX)
		return -E2BIG;
	for (; i < lit->n; i++) {
		uint64_t carry = digit_value(lit->digits[i]);

		for (j = 0; j < nl; j++) {
			uint64_t v = (uint64_t)limbs[j] * lit->base + carry;

			limbs[j] = (uint32_t)(v % LIMB);
			carry = v / LIMB;
		}
		if (carry)
			limbs[nl++] = (uint32_t)carry;
	}
	if (nl == 0)
		return buf_add_char(out, '0');
	rc = buf_printf(out, "%" PRIu32, limbs[nl - 1]);
	for (j = nl - 1; rc == 0 && j-- > 0;)
		rc = buf_printf(out, "%09" PRIu32, limbs[j]);
	return rc;
}

/* A decimal as the float regexp of resolve.go matches it:
 * ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
struct dec_lit {
	bool neg;
	const char *ip, *fp, *ep;  /* integer, fraction and exponent digits */
	size_t in, fn, en;
	bool exp_neg;
};

static size_t count_digits(const char *s, size_t i, size_t n)
{
	size_t j = i;

	while (j < n && s[j] >= '0' && s[j] <= '9')
		j++;
	return j - i;
}

static bool match_yaml_float(const char *s, size_t n, struct dec_lit *d)
{
	size_t i = 0;

	memset(d, 0, sizeof(*d));
	if (i < n && (s[i] == '+' || s[i] == '-'))
		d->neg = s[i++] == '-';
	d->ip = s + i;
	d->in = count_digits(s, i, n);
	i += d->in;
	if (i < n && s[i] == '.') {
		i++;
		d->fp = s + i;
		d->fn = count_digits(s, i, n);
		i += d->fn;
		if (d->in == 0 && d->fn == 0)
			return false;
	} else if (d->in == 0) {
		return false;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			d->exp_neg = s[i++] == '-';
		d->ep = s + i;
		d->en = count_digits(s, i, n);
		if (d->en == 0)
			return false;
		i += d->en;
	}
	return i == n;
}

/* Go's strconv.underscoreOK for a decimal: '_' only between digits. */
static bool underscores_ok(const char *s, size_t n)
{
	char saw = '^';
	size_t i = 0;

	if (n > 0 && (s[0] == '+' || s[0] == '-'))
		i = 1;
	for (; i < n; i++) {
		if (s[i] >= '0' && s[i] <= '9') {
			saw = '0';
		} else if (s[i] == '_') {
			if (saw != '0')
				return false;
			saw = '_';
		} else {
			if (saw == '_')
				return false;
			saw = '!';
		}
	}
	return saw != '_';
}

static int add_zeros(struct buf *out, int64_t n)
{
	int rc = 0;

	for (; rc == 0 && n > 0; n--)
		rc = buf_add_char(out, '0');
	return rc;
}

/* The exact value of d as a JSON number, spelled the way encoding/json
 * spells a float64 ('f' between 1e-6 and 1e21, else 'e'), into r->num.
 * *overflow when float64 would be infinite (Go then keeps the text as a
 * string); values below 1e-324 are zero, as float64 makes them. */
static int format_decimal(struct yaml_reader *r, const struct dec_lit *d, bool *overflow)
{
	struct buf *out = &r->num, *dg = &r->digits;
	int64_t exp = 0, dp, nd;
	size_t lead = 0, i;
	bool seen = false;
	const char *D;
	int rc = 0;

	*overflow = false;
	buf_reset(out);
	buf_reset(dg);
	for (i = 0; i < d->en; i++)
		if (exp < INT64_C(1000000000000000))
			exp = exp * 10 + (d->ep[i] - '0');
	if (d->exp_neg)
		exp = -exp;
	for (i = 0; rc == 0 && i < d->in + d->fn; i++) {
		char c = i < d->in ? d->ip[i] : d->fp[i - d->in];

		if (!seen && c == '0') {
			lead++;
			continue;
		}
		seen = true;
		rc = buf_add_char(dg, c);
	}
	if (rc)
		return rc;
	D = buf_cstr(dg);
	nd = (int64_t)buf_len(dg);
	while (nd > 0 && D[nd - 1] == '0')
		nd--;
	dp = (int64_t)d->in - (int64_t)lead + exp;
	if (nd == 0 || dp <= -324)
		return buf_add_cstr(out, d->neg ? "-0" : "0");
	if (dp > FLOAT64_OVERFLOW_DP) {
		*overflow = true;
		return 0;
	}
	if (dp == FLOAT64_OVERFLOW_DP) {
		size_t tn = sizeof(float64_overflow_digits) - 1;
		size_t m = (size_t)nd < tn ? (size_t)nd : tn;
		int c = memcmp(D, float64_overflow_digits, m);

		if (c > 0 || (c == 0 && (size_t)nd >= tn)) {
			*overflow = true;
			return 0;
		}
	}
	if (d->neg)
		rc = buf_add_char(out, '-');
	if (rc == 0 && dp >= -5 && dp <= 21) {
		if (dp <= 0) {
			rc = buf_add(out, "0.", 2);
			if (rc == 0)
				rc = add_zeros(out, -dp);
			if (rc == 0)
				rc = buf_add(out, D, (size_t)nd);
		} else if (dp < nd) {
			rc = buf_add(out, D, (size_t)dp);
			if (rc == 0)
				rc = buf_add_char(out, '.');
			if (rc == 0)
				rc = buf_add(out, D + dp, (size_t)(nd - dp));
		} else {
			rc = buf_add(out, D, (size_t)nd);
			if (rc == 0)
				rc = add_zeros(out, dp - nd);
		}
	} else if (rc == 0) {
		rc = buf_add_char(out, D[0]);
		if (rc == 0 && nd > 1) {
			rc = buf_add_char(out, '.');
			if (rc == 0)
				rc = buf_add(out, D + 1, (size_t)nd - 1);
		}
		if (rc == 0)
			rc = buf_printf(out, "e%c%" PRId64, dp - 1 < 0 ? '-' : '+',
					dp - 1 < 0 ? 1 - dp : dp - 1);
	}
	return rc;
}

static void set_number(struct yaml_reader *r, struct scalar *sc, enum scalar_kind kind)
{
	sc->kind = kind;
	sc->text = buf_cstr(&r->num);
	sc->len = buf_len(&r->num);
}

static int set_int_u64(struct yaml_reader *r, struct scalar *sc, bool neg, uint64_t v,
		       bool fits_int64)
{
	int rc;

	buf_reset(&r->num);
	rc = buf_printf(&r->num, "%s%" PRIu64, neg && v ? "-" : "", v);
	if (rc == 0) {
		set_number(r, sc, SK_INT);
		sc->fits_int64 = fits_int64;
	}
	return rc;
}

/* A scalar starting with a digit or a sign, as resolve.go's 'D'/'S' case. */
static int resolve_numeric(struct yaml_reader *r, const char *s, size_t n, struct scalar *sc)
{
	struct int_lit lit, bin;
	struct dec_lit dec;
	const char *p;
	size_t pn, i;
	uint64_t v = 0;
	bool int_ok, small = false, overflow;
	int rc = 0;

	buf_reset(&r->plain);
	for (i = 0; rc == 0 && i < n; i++)
		if (s[i] != '_')
			rc = buf_add_char(&r->plain, s[i]);
	if (rc)
		return rc;
	p = buf_cstr(&r->plain);
	pn = buf_len(&r->plain);

	int_ok = parse_go_int(p, pn, &lit);
	if (int_ok)
		small = int_lit_u64(&lit, &v);
	if (small) {
		bool fits = lit.neg ? v <= (uint64_t)INT64_MAX + 1 : v <= (uint64_t)INT64_MAX;

		if (fits || !lit.sign)
			return set_int_u64(r, sc, lit.neg, v, fits);
	}
	if (match_yaml_float(p, pn, &dec)) {
		rc = format_decimal(r, &dec, &overflow);
		if (rc || !overflow) {
			if (rc == 0)
				set_number(r, sc, SK_FLOAT);
			return rc;
		}
	}
	/* Go re-reads what follows "0b" as base 2 with a sign allowed, so
	 * 0b-101 is -5 (unsigned spellings were read above). */
	if (pn > 3 && p[0] == '0' && p[1] == 'b' && (p[2] == '-' || p[2] == '+')) {
		bin.sign = true;
		bin.neg = p[2] == '-';
		bin.base = 2;
		bin.digits = p + 3;
		bin.n = pn - 3;
		for (i = 0; i < bin.n && digit_value(bin.digits[i]) < 2; i++)
			;
		if (i == bin.n && int_lit_u64(&bin, &v) &&
		    v <= (uint64_t)INT64_MAX + (bin.neg ? 1 : 0))
			return set_int_u64(r, sc, bin.neg, v, true);
	}
	/* An unsigned literal past 64 bits is a big.Int to Go: exact. */
	if (int_ok && !small && !lit.sign) {
		buf_reset(&r->num);
		rc = bigint_to_decimal(&lit, &r->num);
		if (rc == 0) {
			set_number(r, sc, SK_INT);
			sc->fits_int64 = false;
		}
		return rc;
	}
	sc->kind = SK_STRING;
	sc->text = s;
	sc->len = n;
	return 0;
}

/* Resolve s as go-yaml v2 resolves an untagged plain scalar. Number text
 * lives in r->num until the next call. 0, -E2BIG or -ENOMEM. */
static int resolve_plain(struct yaml_reader *r, const char *s, size_t n, struct scalar *sc)
{
	struct dec_lit dec;
	bool overflow;
	size_t i;
	int rc = 0;

	memset(sc, 0, sizeof(*sc));
	sc->kind = SK_STRING;
	sc->text = s;
	sc->len = n;
	if (word_in(s, n, null_words, NWORDS(null_words))) {
		sc->kind = SK_NULL;
		return 0;
	}
	if (word_in(s, n, true_words, NWORDS(true_words)) ||
	    word_in(s, n, false_words, NWORDS(false_words))) {
		sc->kind = SK_BOOL;
		sc->boolean = word_in(s, n, true_words, NWORDS(true_words));
		return 0;
	}
	if (word_in(s, n, nonfinite_words, NWORDS(nonfinite_words))) {
		sc->kind = SK_NONFINITE;
		return 0;
	}
	if (s[0] == '.') {
		/* strconv.ParseFloat on the text itself: '_' between digits. */
		if (!underscores_ok(s, n))
			return 0;
		buf_reset(&r->plain);
		for (i = 0; rc == 0 && i < n; i++)
			if (s[i] != '_')
				rc = buf_add_char(&r->plain, s[i]);
		if (rc)
			return rc;
		if (!match_yaml_float(buf_cstr(&r->plain), buf_len(&r->plain), &dec))
			return 0;
		rc = format_decimal(r, &dec, &overflow);
		if (rc == 0 && !overflow)
			set_number(r, sc, SK_FLOAT);
		return rc;
	}
	if ((s[0] >= '0' && s[0] <= '9') || s[0] == '+' || s[0] == '-')
		return resolve_numeric(r, s, n, sc);
	return 0;
}

/* --- tags ----------------------------------------------------------------- */

static enum tag_kind classify_tag(const char *tag)
{
	static const struct {
		const char *name;
		enum tag_kind kind;
	} core[] = {
		{ "str", TAG_STR }, { "int", TAG_INT }, { "float", TAG_FLOAT },
		{ "bool", TAG_BOOL }, { "null", TAG_NULL }, { "map", TAG_MAP },
		{ "seq", TAG_SEQ },
	};
	size_t i, plen = strlen(YAML_TAG_PREFIX);

	if (!tag)
		return TAG_NONE;
	if (strncmp(tag, YAML_TAG_PREFIX, plen) != 0)
		return TAG_OTHER;
	for (i = 0; i < sizeof(core) / sizeof(core[0]); i++)
		if (strcmp(tag + plen, core[i].name) == 0)
			return core[i].kind;
	return TAG_OTHER;
}

/* The tag as its author most likely wrote it (!!x for the core prefix).
 * libyaml decodes %XX escapes in tags, so bytes that could garble a message
 * become '?'. */
static void tag_display(const char *tag, char *dst, size_t n)
{
	size_t plen = strlen(YAML_TAG_PREFIX);
	char *p;

	if (strncmp(tag, YAML_TAG_PREFIX, plen) == 0)
		snprintf(dst, n, "!!%.64s", tag + plen);
	else
		snprintf(dst, n, "%.64s", tag);
	for (p = dst; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			*p = '?';
}

static const char *kind_name(enum scalar_kind k)
{
	switch (k) {
	case SK_NULL:
		return "null";
	case SK_BOOL:
		return "a boolean";
	case SK_INT:
		return "an integer";
	case SK_FLOAT:
		return "a float";
	case SK_STRING:
		return "a string";
	case SK_NONFINITE:
		return "a non-finite float";
	}
	return "a value";
}

/* --- events --------------------------------------------------------------- */

/* Lines count from the start of the stream, also when one document of it
 * is read on its own. */
static uint32_t mark_line(const struct yaml_reader *r, const yaml_mark_t *m)
{
	uint64_t line = (uint64_t)m->line + 1 + r->b->line_base;

	return line >= UINT32_MAX ? UINT32_MAX : (uint32_t)line;
}

static uint32_t mark_col(const yaml_mark_t *m)
{
	return m->column >= UINT32_MAX ? UINT32_MAX : (uint32_t)m->column + 1;
}

static int reject_tag(struct yaml_reader *r, const char *tag, const char *what,
		      uint32_t line, uint32_t col)
{
	char t[96];

	tag_display(tag, t, sizeof(t));
	if (classify_tag(tag) == TAG_OTHER)
		return doc_build_fail(r->b, -EINVAL, line, col,
				      "tag %s is not allowed; use !!str, !!int, !!float, !!bool, !!null, !!map or !!seq, or no tag",
				      t);
	return doc_build_fail(r->b, -EINVAL, line, col, "tag %s does not fit a %s", t, what);
}

/* Resolve an event's scalar: tag first, then style (quoted and block
 * scalars are strings), then the plain-scalar rules. */
static int resolve_event_scalar(struct yaml_reader *r, const yaml_event_t *ev,
				struct scalar *sc, uint32_t line, uint32_t col)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t n = ev->data.scalar.length;
	const char *tag = (const char *)ev->data.scalar.tag;
	enum tag_kind tk = classify_tag(tag);
	char q[DOC_ERROR_MAX / 2], t[96];
	int rc;

	memset(sc, 0, sizeof(*sc));
	if (tk == TAG_OTHER || tk == TAG_MAP || tk == TAG_SEQ)
		return reject_tag(r, tag, "scalar", line, col);
	if (tk == TAG_STR || (tk == TAG_NONE && ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)) {
		sc->kind = SK_STRING;
		sc->text = s;
		sc->len = n;
		return 0;
	}
	rc = resolve_plain(r, s, n, sc);
	if (rc == -E2BIG)
		return doc_build_fail(r->b, rc, line, col,
				      "integer literal longer than %d digits", YAML_BIGINT_DIGITS_MAX);
	if (rc)
		return doc_build_fail(r->b, rc, line, col, "out of memory");
	if (tk == TAG_FLOAT && sc->kind == SK_INT && sc->fits_int64) {
		/* go-yaml turns an int under !!float into a float64. */
		struct dec_lit d = { 0 };
		bool overflow;

		d.neg = sc->text[0] == '-';
		d.ip = sc->text + d.neg;
		d.in = sc->len - d.neg;
		buf_reset(&r->plain);
		rc = buf_add(&r->plain, d.ip, d.in);
		d.ip = buf_cstr(&r->plain);
		if (rc == 0)
			rc = format_decimal(r, &d, &overflow);
		if (rc)
			return doc_build_fail(r->b, rc, line, col, "out of memory");
		set_number(r, sc, SK_FLOAT);
	}
	if (sc->kind == SK_NONFINITE) {
		doc_quote(q, sizeof(q), s, n);
		return doc_build_fail(r->b, -EINVAL, line, col,
				      "%s is not a number JSON can hold (Kubernetes rejects it too); quote it to make it a string",
				      q);
	}
	if ((tk == TAG_INT && sc->kind != SK_INT) ||
	    (tk == TAG_FLOAT && sc->kind != SK_FLOAT) ||
	    (tk == TAG_BOOL && sc->kind != SK_BOOL) ||
	    (tk == TAG_NULL && sc->kind != SK_NULL)) {
		doc_quote(q, sizeof(q), s, n);
		tag_display(tag, t, sizeof(t));
		return doc_build_fail(r->b, -EINVAL, line, col, "%s reads as %s, not as %s",
				      q, kind_name(sc->kind), t);
	}
	return 0;
}

static int on_scalar(struct yaml_reader *r, const yaml_event_t *ev)
{
	uint32_t line = mark_line(r, &ev->start_mark), col = mark_col(&ev->start_mark);
	const char *s = (const char *)ev->data.scalar.value;
	size_t n = ev->data.scalar.length;
	struct scalar sc;
	char q[DOC_ERROR_MAX / 2];
	int rc;

	if (ev->data.scalar.anchor)
		return doc_build_fail(r->b, -EINVAL, line, col,
				      "anchors (&%.64s) are not allowed; write the content out",
				      (const char *)ev->data.scalar.anchor);
	rc = resolve_event_scalar(r, ev, &sc, line, col);
	if (rc)
		return rc;
	if (!doc_build_want_key(r->b)) {
		switch (sc.kind) {
		case SK_NULL:
			return doc_build_scalar(r->b, DOC_NULL, NULL, 0, false, line, col);
		case SK_BOOL:
			return doc_build_scalar(r->b, DOC_BOOL, NULL, 0, sc.boolean, line, col);
		case SK_INT:
		case SK_FLOAT:
			return doc_build_scalar(r->b, DOC_NUMBER, sc.text, sc.len, false, line, col);
		default:
			return doc_build_scalar(r->b, DOC_STRING, sc.text, sc.len, false, line, col);
		}
	}
	/* A key: JSON keys are strings, converted as sigs.k8s.io/yaml does. */
	doc_quote(q, sizeof(q), s, n);
	switch (sc.kind) {
	case SK_STRING:
		if (n == 2 && memcmp(s, "<<", 2) == 0 && !ev->data.scalar.tag &&
		    ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
			return doc_build_fail(r->b, -EINVAL, line, col,
					      "merge keys (<<) are not allowed; write the keys out");
		return doc_build_key(r->b, s, n, line, col);
	case SK_BOOL:
		return doc_build_key(r->b, sc.boolean ? "true" : "false",
				     sc.boolean ? 4 : 5, line, col);
	case SK_INT:
		if (sc.fits_int64)
			return doc_build_key(r->b, sc.text, sc.len, line, col);
		return doc_build_fail(r->b, -EINVAL, line, col,
				      "map key %s is an integer beyond 64-bit signed range; quote it", q);
	case SK_NULL:
		return doc_build_fail(r->b, -EINVAL, line, col,
				      "map key %s is null; keys must be strings (quote it)", q);
	default:
		return doc_build_fail(r->b, -EINVAL, line, col,
				      "map key %s is %s, which Kubernetes turns into text with float32 rounding; quote it",
				      q, kind_name(sc.kind));
	}
}

static int on_open(struct yaml_reader *r, const yaml_event_t *ev, enum doc_type type)
{
	uint32_t line = mark_line(r, &ev->start_mark), col = mark_col(&ev->start_mark);
	const yaml_char_t *anchor, *tag;
	enum tag_kind tk;

	if (type == DOC_SEQ) {
		anchor = ev->data.sequence_start.anchor;
		tag = ev->data.sequence_start.tag;
	} else {
		anchor = ev->data.mapping_start.anchor;
		tag = ev->data.mapping_start.tag;
	}
	if (anchor)
		return doc_build_fail(r->b, -EINVAL, line, col,
				      "anchors (&%.64s) are not allowed; write the content out",
				      (const char *)anchor);
	tk = classify_tag((const char *)tag);
	if (tk != TAG_NONE && tk != (type == DOC_SEQ ? TAG_SEQ : TAG_MAP))
		return reject_tag(r, (const char *)tag, doc_type_name(type), line, col);
	return doc_build_open(r->b, type, line, col);
}

/* Turn libyaml's error into ours, with the position. */
static int parser_fail(struct yaml_reader *r, const yaml_parser_t *p)
{
	const char *problem = p->problem ? p->problem : "malformed YAML";
	uint32_t line, col;
	char extra[128] = "";

	switch (p->error) {
	case YAML_MEMORY_ERROR:
		return doc_build_fail(r->b, -ENOMEM, 0, 0, "out of memory");
	case YAML_READER_ERROR:
		doc_position(r->text, r->len, p->problem_offset, &line, &col);
		line = line > UINT32_MAX - r->b->line_base ? UINT32_MAX : line + r->b->line_base;
		if (p->problem_value != -1)
			snprintf(extra, sizeof(extra), " (byte 0x%02x)", (unsigned)p->problem_value & 0xff);
		return doc_build_fail(r->b, -EINVAL, line, col,
				      "%s%s; the input must be UTF-8 text without control characters",
				      problem, extra);
	default:
		line = mark_line(r, &p->problem_mark);
		col = mark_col(&p->problem_mark);
		if (p->problem_mark.index < r->len && r->text[p->problem_mark.index] == '\t')
			snprintf(extra, sizeof(extra), "; indent with spaces, tabs cannot indent YAML");
		if (p->context)
			return doc_build_fail(r->b, -EINVAL, line, col,
					      "%s %s (started at line %u, column %u)%s", problem,
					      p->context, mark_line(r, &p->context_mark),
					      mark_col(&p->context_mark), extra);
		return doc_build_fail(r->b, -EINVAL, line, col, "%s%s", problem, extra);
	}
}

/* Whether a document start carries %YAML or %TAG directives. */
static bool has_directives(const yaml_event_t *ev)
{
	return ev->data.document_start.version_directive ||
	       ev->data.document_start.tag_directives.start != ev->data.document_start.tag_directives.end;
}

static int read_events(struct yaml_reader *r, yaml_parser_t *parser)
{
	yaml_event_t ev;
	bool done = false, open_end = false;
	int rc = 0;

	while (rc == 0 && !done) {
		uint32_t line, col;

		if (!yaml_parser_parse(parser, &ev))
			return parser_fail(r, parser);
		line = mark_line(r, &ev.start_mark);
		col = mark_col(&ev.start_mark);
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		case YAML_DOCUMENT_START_EVENT:
			/* YAML 1.2 lets directives follow only an end marker;
			 * libyaml also takes them after a document that ended
			 * without one, which the document-wise reader
			 * (doc_stream.c) cannot tell from a "%" line that goes on
			 * a plain scalar. */
			if (open_end && has_directives(&ev))
				rc = doc_build_fail(r->b, -EINVAL, line, col,
						    "a %%YAML or %%TAG directive must follow the end marker (...) of"
						    " the document before it; add a line \"...\" before the directive");
			else
				rc = doc_build_begin_doc(r->b, line, col);
			break;
		case YAML_DOCUMENT_END_EVENT:
			open_end = ev.data.document_end.implicit;
			rc = doc_build_end_doc(r->b);
			break;
		case YAML_ALIAS_EVENT:
			rc = doc_build_fail(r->b, -EINVAL, line, col,
					    "aliases (*%.64s) are not allowed; write the content out",
					    (const char *)ev.data.alias.anchor);
			break;
		case YAML_SCALAR_EVENT:
			rc = on_scalar(r, &ev);
			break;
		case YAML_SEQUENCE_START_EVENT:
			rc = on_open(r, &ev, DOC_SEQ);
			break;
		case YAML_MAPPING_START_EVENT:
			rc = on_open(r, &ev, DOC_MAP);
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			rc = doc_build_close(r->b);
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	return rc;
}

int doc_yaml_read(struct doc_builder *b, const char *text, size_t len)
{
	struct yaml_reader r;
	yaml_parser_t parser;
	size_t scratch_cap;
	int rc;

	memset(&r, 0, sizeof(r));
	r.b = b;
	r.text = text;
	r.len = len;
	scratch_cap = len > SIZE_MAX / 4 ? SIZE_MAX / 2 : 2 * len + 8 * YAML_BIGINT_DIGITS_MAX;
	buf_init_in(&r.num, scratch_cap, b->mem);
	buf_init_in(&r.plain, scratch_cap, b->mem);
	buf_init_in(&r.digits, scratch_cap, b->mem);
	if (!yaml_parser_initialize(&parser)) {
		b->fatal = true;
		return doc_build_fail(b, -ENOMEM, 0, 0, "out of memory");
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)(text ? text : ""), len);
	yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
	rc = read_events(&r, &parser);
	yaml_parser_delete(&parser);
	buf_free(&r.num);
	buf_free(&r.plain);
	buf_free(&r.digits);
	return rc;
}

int doc_parse_yaml(const char *text, size_t len, const struct doc_limits *lim,
		   struct doc_set **out, struct doc_error *err)
{
	return doc_parse_yaml_in(text, len, lim, NULL, out, err);
}

int doc_parse_yaml_in(const char *text, size_t len, const struct doc_limits *lim, struct arena *mem,
		      struct doc_set **out, struct doc_error *err)
{
	return doc_build_parse(doc_yaml_read, text, len, lim, mem, out, err);
}
