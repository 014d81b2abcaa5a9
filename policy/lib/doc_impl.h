/* doc_impl.h - the tree builder doc.c and doc_yaml.c share. Private to the
 * doc module: nothing outside policy/doc*.c includes it.
 *
 * Both readers feed the builder the same calls (open a container, add a key,
 * add a scalar, close), so limits, node accounting, duplicate-key detection
 * and the error report are written once. Every call returns 0 or a negative
 * errno; after the first failure the error in *err is final (later failures
 * do not overwrite it). */
#ifndef DRA_GUARD_DOC_IMPL_H
#define DRA_GUARD_DOC_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "doc.h"

struct doc_set {
	struct arena *arena;         /* every node, array and string */
	const struct doc_node **roots;   /* malloc'd (or in a borrowed arena) */
	const struct doc_error **errors; /* the same, parallel to roots; NULL: parsed */
	bool borrowed;               /* everything is in the caller's arena */
	size_t count;
	size_t roots_alloc;
};

struct doc_frame {
	struct doc_node *node;       /* the open container */
	size_t base;                 /* its first entry in builder.pending */
	bool want_value;             /* map: a key was added, its value is next */
};

struct doc_builder {
	struct doc_limits lim;
	struct arena *mem;           /* the caller's arena for everything; NULL: own */
	struct doc_error *err;
	struct doc_set *set;
	struct doc_member *pending;  /* children of the open containers */
	size_t npending;
	size_t pending_alloc;
	struct doc_frame *frames;
	size_t frames_alloc;
	unsigned depth;              /* open containers */
	const struct doc_node *root; /* of the current document, once complete */
	bool in_doc;
	size_t nodes;
	const struct doc_member **scratch;   /* for duplicate-key sorting */
	size_t scratch_alloc;
	bool failed;
	bool fatal;                  /* the failure ends the stream, not one document:
				      * a stream-wide limit or memory */
	uint32_t line_base;          /* lines before the text being read (a stream's
				      * document read on its own) */
};

/* lim NULL means doc_limits_default(); err may be NULL. mem, when not
 * NULL, is the arena (borrowed) that holds everything the build makes and
 * uses, the set included. 0 or -ENOMEM. */
int doc_build_init(struct doc_builder *b, const struct doc_limits *lim, struct arena *mem,
		   struct doc_error *err);

/* doc_parse_yaml() and doc_parse_json() building in mem as doc_build_init()
 * says. */
int doc_parse_yaml_in(const char *text, size_t len, const struct doc_limits *lim, struct arena *mem,
		      struct doc_set **out, struct doc_error *err);
int doc_parse_json_in(const char *text, size_t len, const struct doc_limits *lim, struct arena *mem,
		      struct doc_set **out, struct doc_error *err);

/* Free everything the builder still owns (the set too unless taken). */
void doc_build_release(struct doc_builder *b);

/* Hand the finished set to the caller. */
void doc_build_take(struct doc_builder *b, struct doc_set **out);

/* 0 when an input of len bytes is within the builder's limit; else the
 * -E2BIG failure, recorded as the builder's error. */
int doc_build_size(struct doc_builder *b, size_t len);

/* A reader of one text into a builder (doc_yaml_read, doc_json_read). */
typedef int doc_reader_fn(struct doc_builder *b, const char *text, size_t len);

/* The whole of doc_parse_yaml_in() / doc_parse_json_in(): a builder as
 * doc_build_init() makes it, the size checked, text read by read, the set
 * into *out (NULL on failure). 0 or the builder's error. */
int doc_build_parse(doc_reader_fn *read, const char *text, size_t len, const struct doc_limits *lim,
		    struct arena *mem, struct doc_set **out, struct doc_error *err);

/* Start and end one document of a stream. */
int doc_build_begin_doc(struct doc_builder *b, uint32_t line, uint32_t col);
int doc_build_end_doc(struct doc_builder *b);

/* True when the next node of the open map is a key. */
bool doc_build_want_key(const struct doc_builder *b);

/* A scalar value. text[0..len) is copied (NUL-terminated) for DOC_NUMBER and
 * DOC_STRING and ignored otherwise. */
int doc_build_scalar(struct doc_builder *b, enum doc_type type, const char *text,
		     size_t len, bool boolean, uint32_t line, uint32_t col);

/* The key of the next member of the open map (copied). */
int doc_build_key(struct doc_builder *b, const char *key, size_t len,
		  uint32_t line, uint32_t col);

/* Open a DOC_SEQ or DOC_MAP; close the innermost open one. */
int doc_build_open(struct doc_builder *b, enum doc_type type, uint32_t line, uint32_t col);
int doc_build_close(struct doc_builder *b);

/* After a failure inside a document: keep what was read of it as the set's
 * next document, with the error. Open containers are closed where the
 * error left them (a key without a value dropped, duplicate keys kept), so
 * the partial tree can still be searched, e.g. for an object's kind and
 * name. Then the builder is ready for the next document. 0 or -ENOMEM. */
int doc_build_salvage(struct doc_builder *b);

/* The readers: one YAML text (a whole stream, or one document of one that
 * starts after b->line_base lines), or one JSON value as one document, into
 * b. 0 or the builder's error. */
int doc_yaml_read(struct doc_builder *b, const char *text, size_t len);
int doc_json_read(struct doc_builder *b, const char *text, size_t len);

/* Record an allocation failure (rc -E2BIG: over the limits, else out of
 * memory) as the error that ends the stream, and return it. */
int doc_build_fail_alloc(struct doc_builder *b, int rc, uint32_t line, uint32_t col);

/* Record an error (unless one is recorded already) and return rc. */
int doc_build_fail(struct doc_builder *b, int rc, uint32_t line, uint32_t col,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Append text[0..n) to a message, quoted, shortened and with control and
 * non-ASCII bytes escaped, so hostile input cannot garble an error. */
void doc_quote(char *dst, size_t dstsz, const char *text, size_t n);

/* 1-based line and column (in characters) of text[off]. */
void doc_position(const char *text, size_t len, size_t off, uint32_t *line, uint32_t *col);

/* Move a 1-based line and column from text[from] to text[to] (to >= from). */
void doc_advance_position(const char *text, size_t len, size_t from, size_t to,
			  uint32_t *line, uint32_t *col);

#endif
