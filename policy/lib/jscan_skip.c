/* jscan_skip.c - skipping a whole value: jscan_skip(), byte by byte and a
 * block at a time.
 *
 * Most of a review is skipped, so this is where the scanner spends most of
 * its time, and it has its own machinery: a depth counter with a bit stack
 * instead of the calls' state, and the classified blocks below. It shares
 * only the token grammar (jscan_impl.h) with the pull calls in jscan.c.
 *
 * A block at a time, for jscan_skip() of an object or array. Byte by byte,
 * each string's end comes from a load-compare-mask-count chain whose
 * result addresses the next load, and the skip waits on that chain. A
 * classified 64-byte block has no such chain (simdjson's first stage, done
 * lazily as the walk reaches each block). SSE2 compares give masks of the
 * quotes, backslashes, whitespace and control bytes - the last two only
 * when the block has a byte at or below ' ', which compact text does not,
 * and backslashes only when there is one. With what is carried from the
 * block before (inside a string or not, first byte escaped or not):
 *   escaped   the byte after each run of backslashes of odd length;
 *   quotes    the quotes that are not escaped;
 *   string    prefix XOR of the quotes: 1 from each opening quote up to,
 *             not including, its closing quote;
 *   tokens    the bytes that are not whitespace, not in a string after
 *             its opening quote, and not a closing quote.
 * A token is a structural byte, the opening quote of a string, or a byte
 * of a number, a literal or garbage. The next one is a count of trailing
 * zeros away, and the grammar looks at token bytes only: a string is
 * followed by the token after its closing quote; a number or literal is
 * checked byte by byte by its grammar and the tokens it covered are
 * dropped; what follows, garbage included, must be what the grammar wants
 * next. What the walk jumps over is checked all the same: a block with a
 * control byte inside a string is never entered, and a string that may
 * hold a backslash (a block since its opening quote had one) has its
 * escapes checked byte by byte. The walk starts at the opening bracket,
 * outside any string, so it needs nothing from earlier calls, and commits
 * only the whole container. On anything else it gives up, and the
 * byte-by-byte skip does the call: every error (code, message, offset) is
 * that skip's. A valid container with 64 bytes of text from its start is
 * always skipped a block at a time, which the tests check. */
#include "jscan.h"

#include <errno.h>
#include <string.h>

#include "jscan_impl.h"

#define EVEN_BITS 0x5555555555555555ULL
#define ODD_BITS  0xaaaaaaaaaaaaaaaaULL
#define BLOCK 64

/* --- skipping byte by byte ---------------------------------------------------- */

#define KIND_WORDS ((JSCAN_DEPTH_LIMIT + 63) / 64)

/* jscan_skip() of any value, and the reference for every error of one.
 * One loop with a depth counter, not a recursion. Which kind of container
 * is open is a bit stack: the innermost 64 levels in a register (bit 0 the
 * innermost, set for an object), older words in kinds[]. The usual steps
 * of compact text (a comma and the next key, a key and its colon) are
 * tested first, two bytes at once; anything else takes the general step,
 * which says what is wrong. */
static NOINLINE int skip_bytes(struct jscan *s, struct str *raw)
{
	uint64_t kinds[KIND_WORDS], top = 0;
	const char *p, *end = s->end, *start;
	const char *msg = jscan_msg_value;
	unsigned depth = 0, room;
	bool integer, esc;
	unsigned char c;

	if (s->error)
		return s->error;
	room = s->depth < s->max_depth ? s->max_depth - s->depth : 0;
	p = jscan_skip_ws(s->p, end);
	start = p;

value:
	if (p == end)
		goto eof;
	c = (unsigned char)*p;
	if (c == '"') {
		p = jscan_string_end(s, p, end, &esc);
		if (!p)
			return s->error;
		p++;
		goto after;
	}
	if (c == '{' || c == '[') {
		if (depth >= room) {
			msg = jscan_msg_depth;
			goto too_deep;
		}
		if (depth != 0 && (depth & 63) == 0)
			kinds[(depth >> 6) - 1] = top;
		top = top << 1 | (c == '{');
		depth++;
		p = jscan_skip_ws(p + 1, end);
		if (p < end && (unsigned char)*p == c + 2) {  /* '}' or ']' */
			p++;
			goto close;
		}
		if (top & 1)
			goto key;
		goto value;
	}
	switch (c) {
	case '-':
	case '0': case '1': case '2': case '3': case '4':
	case '5': case '6': case '7': case '8': case '9':
		p = jscan_scan_number(s, p, &integer);
		if (!p)
			return s->error;
		goto after;
	case 't': case 'f': case 'n':
		p = jscan_scan_literal(s, p);
		if (!p)
			return s->error;
		goto after;
	default:
		msg = jscan_msg_value;
		goto fail;
	}

after:
	/* A value ended at p. */
	if (depth == 0)
		goto done;
	if (likely(end - p >= 2)) {
		c = (unsigned char)p[0];
		if (c == ',') {
			if (top & 1) {
				if (p[1] == '"') {
					p++;
					goto key_quote;
				}
			} else if ((unsigned char)p[1] > ' ') {
				p++;
				goto value;
			}
		} else if (c == ((top & 1) ? '}' : ']')) {
			p++;
			goto close;
		}
	}
	p = jscan_skip_ws(p, end);
	if (p == end)
		goto eof;
	c = (unsigned char)*p++;
	if (c == ',') {
		p = jscan_skip_ws(p, end);
		if (top & 1)
			goto key;
		goto value;
	}
	if (c == ((top & 1) ? '}' : ']'))
		goto close;
	p--;
	msg = (top & 1) ? jscan_msg_obj_sep : jscan_msg_arr_sep;
	goto fail;

close:
	depth--;
	top >>= 1;
	if (depth != 0 && (depth & 63) == 0)
		top = kinds[(depth >> 6) - 1];
	goto after;

key:
	if (p == end)
		goto eof;
	if (*p != '"') {
		msg = jscan_msg_key;
		goto fail;
	}
key_quote:
	p = jscan_string_end(s, p, end, &esc);
	if (!p)
		return s->error;
	if (likely(end - p >= 3 && p[1] == ':' && (unsigned char)p[2] > ' ')) {
		p += 2;
		goto value;
	}
	p = jscan_skip_ws(p + 1, end);
	if (p == end)
		goto eof;
	if (*p != ':') {
		msg = jscan_msg_colon;
		goto fail;
	}
	p = jscan_skip_ws(p + 1, end);
	goto value;

done:
	if (raw) {
		raw->ptr = start;
		raw->len = (size_t)(p - start);
	}
	s->p = p;
	return 0;
eof:
	return jscan_set_error(s, -EINVAL, p, jscan_msg_eof);
too_deep:
	return jscan_set_error(s, -E2BIG, p, msg);
fail:
	return jscan_set_error(s, -EINVAL, p, msg);
}

/* --- skipping a container a block at a time ---------------------------------
 * See the top of the file. The walk keeps its state in locals. */

/* The byte classes of one 64-byte block, bit i for byte i. */
struct block_bits {
	uint64_t quote;         /* '"' */
	uint64_t backslash;
	uint64_t space;         /* ' ', '\t', '\n', '\r' */
	uint64_t control;       /* below 0x20, whitespace included */
};

/* Compiled where the scanner uses it, and in the portable build of the
 * tests, which check it against the portable code. */
#if defined(__SSE2__)
static inline uint64_t bits64(__m128i a, __m128i b, __m128i c, __m128i d)
{
	return (uint64_t)(unsigned)_mm_movemask_epi8(a) |
	       (uint64_t)(unsigned)_mm_movemask_epi8(b) << 16 |
	       (uint64_t)(unsigned)_mm_movemask_epi8(c) << 32 |
	       (uint64_t)(unsigned)_mm_movemask_epi8(d) << 48;
}

static inline __m128i is_control(__m128i v)
{
	return _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1f)), _mm_set1_epi8(0x1f));
}

static inline __m128i is_ctl_space(__m128i v)
{
	return _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\t')),
					 _mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))),
			    _mm_cmpeq_epi8(v, _mm_set1_epi8('\r')));
}

/* The masks compact text does not need: backslashes, and whitespace and
 * control bytes, for a block that has some. */
static NOINLINE void classify_sse2_rare(const char *p, struct block_bits *out)
{
	const __m128i v0 = _mm_loadu_si128((const __m128i *)(const void *)p);
	const __m128i v1 = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
	const __m128i v2 = _mm_loadu_si128((const __m128i *)(const void *)(p + 32));
	const __m128i v3 = _mm_loadu_si128((const __m128i *)(const void *)(p + 48));
	const __m128i space = _mm_set1_epi8(' '), bs = _mm_set1_epi8('\\');

	out->backslash = bits64(_mm_cmpeq_epi8(v0, bs), _mm_cmpeq_epi8(v1, bs),
				_mm_cmpeq_epi8(v2, bs), _mm_cmpeq_epi8(v3, bs));
	out->space = bits64(_mm_cmpeq_epi8(v0, space), _mm_cmpeq_epi8(v1, space),
			    _mm_cmpeq_epi8(v2, space), _mm_cmpeq_epi8(v3, space));
	out->control = bits64(is_control(v0), is_control(v1), is_control(v2), is_control(v3));
	if (out->control)
		out->space |= bits64(is_ctl_space(v0), is_ctl_space(v1), is_ctl_space(v2),
				     is_ctl_space(v3));
}

static inline void classify_sse2(const char *p, struct block_bits *out)
{
	const __m128i v0 = _mm_loadu_si128((const __m128i *)(const void *)p);
	const __m128i v1 = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
	const __m128i v2 = _mm_loadu_si128((const __m128i *)(const void *)(p + 32));
	const __m128i v3 = _mm_loadu_si128((const __m128i *)(const void *)(p + 48));
	const __m128i quote = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\');
	const __m128i top = _mm_set1_epi8(' ');
	__m128i rare, low;

	out->quote = bits64(_mm_cmpeq_epi8(v0, quote), _mm_cmpeq_epi8(v1, quote),
			    _mm_cmpeq_epi8(v2, quote), _mm_cmpeq_epi8(v3, quote));
	/* Compact JSON has no byte at or below ' ' and backslashes are rare:
	 * one test (a backslash, or the smallest byte at or below ' ') tells
	 * whether the other masks are needed. */
	low = _mm_min_epu8(_mm_min_epu8(v0, v1), _mm_min_epu8(v2, v3));
	rare = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v0, bs), _mm_cmpeq_epi8(v1, bs)),
			    _mm_or_si128(_mm_cmpeq_epi8(v2, bs), _mm_cmpeq_epi8(v3, bs)));
	rare = _mm_or_si128(rare, _mm_cmpeq_epi8(_mm_max_epu8(low, top), top));
	out->backslash = 0;
	out->space = 0;
	out->control = 0;
	if (unlikely(_mm_movemask_epi8(rare)))
		classify_sse2_rare(p, out);
}
#endif

#if !JSCAN_SSE2
/* Eight bytes as a little-endian word: byte i in bits 8i..8i+7. */
static inline uint64_t load_le64(const char *p)
{
	uint64_t x;

	memcpy(&x, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	x = __builtin_bswap64(x);
#endif
	return x;
}

/* 0x80 in each byte of x that is zero, and nowhere else: adding 0x7f to
 * the low seven bits carries into bit 7 exactly when they are not all
 * zero, and no carry crosses a byte. */
static inline uint64_t zero_bytes(uint64_t x)
{
	return ~(((x & ~HIGHS) + ~HIGHS) | x | ~HIGHS);
}

/* 0x80 in each byte of x below n (n at most 0x80), exactly. */
static inline uint64_t bytes_below(uint64_t x, unsigned n)
{
	return ~(((x & ~HIGHS) + ONES * (0x80 - n)) | x) & HIGHS;
}

/* Bit 7 of byte i of m (other bits clear) as bit i of the result: the
 * multiply moves bit 8i to bit 56 + i, and nothing else reaches the top
 * byte. */
static inline uint64_t gather_high(uint64_t m)
{
	return ((m >> 7) * 0x0102040810204080ULL) >> 56;
}

/* The same bits as classify_sse2(), eight bytes at a time in a word. */
static inline void classify_portable(const char *p, struct block_bits *out)
{
	int i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < BLOCK; i += 8) {
		uint64_t x = load_le64(p + i);
		uint64_t ctl = bytes_below(x, 0x20);
		uint64_t sp = zero_bytes(x ^ ONES * ' ');

		if (ctl)
			sp |= zero_bytes(x ^ ONES * '\t') | zero_bytes(x ^ ONES * '\n') |
			      zero_bytes(x ^ ONES * '\r');
		out->quote |= gather_high(zero_bytes(x ^ ONES * '"')) << i;
		out->backslash |= gather_high(zero_bytes(x ^ ONES * '\\')) << i;
		out->space |= gather_high(sp) << i;
		out->control |= gather_high(ctl) << i;
	}
}
#endif

static inline void classify(const char *p, struct block_bits *out)
{
#if JSCAN_SSE2
	classify_sse2(p, out);
#else
	classify_portable(p, out);
#endif
}

/* The bytes a backslash escapes: the byte after each run of backslashes of
 * odd length. *carry (0 or 1) tells that the first byte is escaped by the
 * block before, and is set for the block after. Adding the first bit of a
 * run to the run carries into the bit after it; a run that starts at an
 * even position has odd length exactly when that bit is odd, and the other
 * way round. A run still open at bit 63 carries out of the word (the
 * addition overflows) when it started at an odd position. */
static inline uint64_t escaped_bytes(uint64_t bs, uint64_t *carry)
{
	uint64_t in = *carry, starts, even, odd;

	if (likely(!(bs | in)))
		return 0;
	bs &= ~in;              /* an escaped backslash escapes nothing */
	starts = bs & ~(bs << 1);
	even = (bs + (starts & EVEN_BITS)) & ~bs & ODD_BITS;
	*carry = __builtin_add_overflow(bs, starts & ODD_BITS, &odd);
	odd &= ~bs & EVEN_BITS;
	return even | odd | in;
}

/* Bit i is the XOR of bits 0..i: applied to the quotes, 1 from each
 * opening quote up to its closing quote, the latter excluded. */
static inline uint64_t prefix_xor(uint64_t x)
{
	x ^= x << 1;
	x ^= x << 2;
	x ^= x << 4;
	x ^= x << 8;
	x ^= x << 16;
	x ^= x << 32;
	return x;
}

/* What one block walk carries from block to block. Offsets count from
 * the start of the text. */
struct walk {
	const char *base;
	size_t len;
	uint64_t in_string;     /* all ones when the next block starts in a string */
	uint64_t escape;        /* 1 when the next block's first byte is escaped */
	size_t esc_end;         /* end of the last block holding a backslash */
};

/* A block's tokens, or ok false when the block is dirty. */
struct block_tokens {
	uint64_t tokens;
	bool ok;
};

/* The tokens of the 64 bytes at p, the block at offset blk, carrying
 * string and escape state from the block before it. */
static inline struct block_tokens block_tokens(struct walk *w, const char *p, size_t blk)
{
	struct block_bits m;
	uint64_t escaped, quotes, string, interior;

	classify(p, &m);
	escaped = escaped_bytes(m.backslash, &w->escape);
	quotes = m.quote & ~escaped;
	string = prefix_xor(quotes) ^ w->in_string;
	w->in_string = (uint64_t)0 - (string >> 63);
	interior = string & ~quotes;
	/* A control byte elsewhere is a token no grammar rule takes. */
	if (unlikely(m.control & interior))
		return (struct block_tokens){ 0, false };
	if (unlikely(m.backslash))
		w->esc_end = blk + BLOCK;
	/* string ^ quotes: the interior and the closing quotes. */
	return (struct block_tokens){ ~(m.space | (string ^ quotes)), true };
}

/* The last block, shorter than 64 bytes: the rest reads as spaces. */
static NOINLINE struct block_tokens last_block_tokens(struct walk *w, size_t blk)
{
	char pad[BLOCK];
	size_t left = w->len - blk;

	memcpy(pad, w->base + blk, left);
	memset(pad + left, ' ', BLOCK - left);
	return block_tokens(w, pad, blk);
}

/* Classify the block at offset blk (before the end of the text). */
static NOINLINE struct block_tokens classify_block(struct walk *w, size_t blk)
{
	if (unlikely(w->len - blk < BLOCK))
		return last_block_tokens(w, blk);
	return block_tokens(w, w->base + blk, blk);
}

/* Where the walk stands: the block at offset blk, and its tokens not yet
 * taken. */
struct cursor {
	size_t blk;
	uint64_t tok;
};

/* Move c to the next block; false at the end of the text or before a
 * dirty block. */
static inline bool next_block(struct walk *w, struct cursor *c)
{
	size_t n = c->blk + BLOCK;
	struct block_tokens b;

	if (n >= w->len)
		return false;
	b = classify_block(w, n);
	if (!b.ok)
		return false;
	c->blk = n;
	c->tok = b.tokens;
	return true;
}

/* Offset of the next token, taken. */
static inline bool take_token(struct walk *w, struct cursor *c, size_t *at)
{
	while (unlikely(c->tok == 0))
		if (!next_block(w, c))
			return false;
	*at = c->blk + (unsigned)__builtin_ctzll(c->tok);
	c->tok &= c->tok - 1;
	return true;
}

/* Drop the tokens before offset at, the end of a number or literal just
 * scanned (at most the end of the text). */
static inline bool seek(struct walk *w, struct cursor *c, size_t at)
{
	while (unlikely(at - c->blk >= BLOCK)) {
		if (!next_block(w, c)) {
			if (c->blk + BLOCK < w->len)
				return false;   /* dirty */
			c->tok = 0;             /* at the end of the text */
			return true;
		}
	}
	c->tok &= ~0ULL << (at - c->blk);
	return true;
}

/* The string opening at offset open is sound: no backslash since open,
 * or its escapes check out byte by byte. Called once the token after the
 * string is taken, so the blocks up to its end are classified. (Where the
 * string ends is the same either way: a quote after an odd run of
 * backslashes is escaped, and pairing each backslash with the byte after
 * it says the same.) */
static inline bool string_ok(const struct walk *w, size_t open)
{
	struct fault f;
	bool esc;

	if (likely(w->esc_end <= open))
		return true;
	return jscan_string_scan(w->base + open + 1, w->base + w->len, &esc, &f) != NULL;
}

/* jscan_skip() of the object or array at p, a block at a time; false to
 * leave the call to skip_bytes(), with nothing changed. */
static bool skip_blocks(struct jscan *s, const char *p, struct str *raw)
{
	uint64_t kinds[KIND_WORDS], top = 0;
	struct walk w = { s->base, (size_t)(s->end - s->base), 0, 0, 0 };
	const char *b = s->base, *q;
	struct block_tokens first;
	struct cursor c;
	struct fault f;
	size_t t, open, start = (size_t)(p - b), stop;
	unsigned depth = 0, room = s->depth < s->max_depth ? s->max_depth - s->depth : 0;
	bool integer;

	first = classify_block(&w, start);
	if (!first.ok)
		return false;
	c.blk = start;
	c.tok = first.tokens;
	if (!take_token(&w, &c, &t))
		return false;

value:
	if (b[t] == '"') {
		/* The closing quote is no token: the next one follows it. */
		open = t;
		if (!take_token(&w, &c, &t) || !string_ok(&w, open))
			return false;
		goto after_taken;
	}
	if (b[t] == '{' || b[t] == '[') {
		if (depth >= room)
			return false;
		if (depth != 0 && (depth & 63) == 0)
			kinds[(depth >> 6) - 1] = top;
		top = top << 1 | (b[t] == '{');
		depth++;
		open = t;
		if (!take_token(&w, &c, &t))
			return false;
		if (b[t] == b[open] + 2)        /* '}' or ']' */
			goto close;
		if (top & 1)
			goto key;
		goto value;
	}
	switch (b[t]) {
	case '-':
	case '0': case '1': case '2': case '3': case '4':
	case '5': case '6': case '7': case '8': case '9':
		q = jscan_number_end(b + t, s->end, &integer, &f);
		goto scalar;
	case 't': case 'f': case 'n':
		q = jscan_literal_end(b + t, s->end, &f);
		goto scalar;
	default:
		return false;
	}

scalar:
	if (!q || !seek(&w, &c, (size_t)(q - b)))
		return false;

after:
	if (!take_token(&w, &c, &t))
		return false;
after_taken:
	if (b[t] == ',') {
		if (!take_token(&w, &c, &t))
			return false;
		if (top & 1)
			goto key;
		goto value;
	}
	if (b[t] != ((top & 1) ? '}' : ']'))
		return false;

close:
	depth--;
	if (depth == 0) {
		stop = t + 1;
		goto done;
	}
	top >>= 1;
	if ((depth & 63) == 0)
		top = kinds[(depth >> 6) - 1];
	goto after;

key:
	if (b[t] != '"')
		return false;
	open = t;
	if (!take_token(&w, &c, &t) || b[t] != ':' || !string_ok(&w, open))
		return false;
	if (!take_token(&w, &c, &t))
		return false;
	goto value;

done:
	if (raw) {
		raw->ptr = p;
		raw->len = stop - start;
	}
	s->p = b + stop;
	return true;
}

int jscan_skip(struct jscan *s, struct str *raw)
{
	const char *p;

	if (s->error)
		return s->error;
	/* A string or scalar is quicker byte by byte; so is a container too
	 * close to the end for a whole block. A container the blocks do not
	 * take (or that is not JSON) goes byte by byte from the start, which
	 * says exactly what is wrong. */
	p = jscan_skip_ws(s->p, s->end);
	if (s->end - p >= BLOCK && (*p == '{' || *p == '[') && skip_blocks(s, p, raw))
		return 0;
	return skip_bytes(s, raw);
}
