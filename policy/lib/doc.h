/* doc.h - YAML and JSON documents as a tree with source positions.
 *
 * Policy files, ConfigMap manifests and dry-run inputs are read into this
 * tree so that every error can name a line and a path. Both readers are
 * hostile-input safe: bounded bytes, depth, nodes and documents; duplicate
 * keys are errors; YAML anchors, aliases, merge keys (<<) and tags other than
 * the standard !!str !!int !!float !!bool !!null !!map !!seq are errors.
 *
 * Scalars keep their text: numbers are the literal, exact (no float
 * round trip), so a quantity written as a bare number loses no precision.
 * JSON numbers are kept verbatim. Plain YAML scalars resolve as Kubernetes'
 * YAML decoding (sigs.k8s.io/yaml: go-yaml v2, YAML 1.1) resolves them:
 * null, Null, NULL, ~ and the empty scalar are null; y/yes/true/on and
 * n/no/false/off (lower, Capitalised or UPPER case) are booleans; integers
 * as Go's ParseInt(s, 0, 64) reads them after removing '_' (0x1f, 0o17, 017
 * octal, 0b101); floats as resolve.go's regexp. YAML numbers are written as
 * encoding/json writes the value (0x1f -> 31, +1 -> 1, 1_000 -> 1000,
 * 1.0 -> 1, .5 -> 0.5, 1e3 -> 1000, 1e21 -> 1e+21) but with every digit
 * kept. .inf and .nan are errors (JSON cannot hold them); a float beyond
 * float64's range (1e400) is a string, as Go reads it. Timestamps stay
 * strings. Quoted and block scalars are strings; the core tags (!!str,
 * !!int, ...) apply to any scalar style. Map keys become
 * strings as sigs.k8s.io/yaml makes them: `1:` is "1", `yes:` is "true";
 * null and float keys are errors. Duplicates are found after that
 * conversion (`1:` and `"1":` collide).
 *
 * Positions are 1-based; columns count characters, not bytes.
 *
 * A doc_set owns every node of every document it holds; nodes are immutable
 * once parsed and may be read from any thread. The functions keep no state:
 * any number of parses may run at once. */
#ifndef DRA_GUARD_DOC_H
#define DRA_GUARD_DOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "str.h"

enum doc_type {
	DOC_NULL = 0,
	DOC_BOOL,
	DOC_NUMBER,      /* text holds a valid JSON number literal */
	DOC_STRING,      /* text holds the decoded string (may contain NUL bytes) */
	DOC_SEQ,
	DOC_MAP,
};

struct doc_node;

struct doc_member {
	struct str key;
	uint32_t line, col;          /* of the key */
	const struct doc_node *value;
};

struct doc_node {
	enum doc_type type;
	uint32_t line, col;          /* 1-based position of the node's first byte */
	bool boolean;                /* DOC_BOOL */
	struct str text;             /* DOC_NUMBER, DOC_STRING (NUL-terminated) */
	const struct doc_node **items;   /* DOC_SEQ */
	const struct doc_member *members; /* DOC_MAP, in document order */
	size_t n;                    /* items or members */
};

/* No tree is ever deeper than this, whatever the limits ask for, so code
 * that walks a tree recursively (doc_to_json()) has a bounded stack. */
#define DOC_DEPTH_MAX 1000

struct doc_limits {
	size_t max_bytes;            /* input size */
	unsigned max_depth;          /* nesting of maps and sequences (<= DOC_DEPTH_MAX) */
	size_t max_nodes;            /* nodes over all documents */
	size_t max_docs;             /* documents in one YAML stream */
};

#define DOC_ERROR_MAX 384

struct doc_error {
	char msg[DOC_ERROR_MAX];     /* what was wrong, without the position */
	uint32_t line, col;          /* 1-based; 0 when unknown */
	size_t doc_index;            /* 0-based document in the stream */
};

struct doc_set;

/* max_bytes 16 MiB, max_depth DOC_DEPTH_MAX (a claim's opaque parameters
 * may nest deep, and dry-run must read what the cluster takes), max_nodes
 * 4 Mi, max_docs 10000. */
void doc_limits_default(struct doc_limits *lim);

/* Parse a YAML stream (one or more documents; JSON is YAML too, but use
 * doc_parse_json() for it). An empty stream gives zero documents. text need
 * not be NUL-terminated. lim NULL means doc_limits_default(); max_depth
 * above DOC_DEPTH_MAX counts as DOC_DEPTH_MAX. err may be NULL.
 * Returns 0 with *out owned by the caller (doc_set_free()), or -EINVAL
 * (malformed or refused input), -E2BIG (over a limit) or -ENOMEM, with *out
 * NULL and err filled: message, position (0 when it has none, as for the
 * byte limit) and the document's index. */
int doc_parse_yaml(const char *text, size_t len, const struct doc_limits *lim,
		   struct doc_set **out, struct doc_error *err);

/* Parse one JSON value (RFC 8259; duplicate keys rejected) as a one-document
 * set. Same returns as doc_parse_yaml(). */
int doc_parse_json(const char *text, size_t len, const struct doc_limits *lim,
		   struct doc_set **out, struct doc_error *err);

/* JSON when the first non-blank byte is '{' or '[', YAML otherwise. */
int doc_parse(const char *text, size_t len, const struct doc_limits *lim,
	      struct doc_set **out, struct doc_error *err);

/* doc_parse() whose set, nodes, strings and working arrays all come from
 * arena a (borrowed): a parse bounded by a request's memory. The set lives
 * as long as the arena's current contents; doc_set_free() of it only
 * forgets it. Over a's cap: -E2BIG. libyaml's parser keeps its own small
 * state and one event at a time on the heap. */
int doc_parse_in(const char *text, size_t len, const struct doc_limits *lim, struct arena *a,
		 struct doc_set **out, struct doc_error *err);

/* Parse a stream of manifests document by document, so that one broken
 * document hides nothing else. Text that starts with '{' or '[' and has no
 * line beginning with "---" is one JSON value (one document); anything else
 * is a YAML stream (JSON documents between "---" lines too), cut at its document
 * markers (doc_next_span()) and each piece parsed on its own. A document
 * that does not parse is kept in the set all the same: doc_set_error() gives
 * its error (message, position, index) and doc_set_root() what could be read
 * of it before the error (complete values up to it, open maps and sequences
 * closed where it stopped; a DOC_NULL root when nothing was read), so a
 * caller can still name the object it was meant to be. Returns 0 with *out
 * (even when documents failed), or -E2BIG/-ENOMEM when the stream as a
 * whole is over a limit (bytes, documents, nodes, memory), with *out NULL
 * and err filled. err may be NULL. */
int doc_parse_stream(const char *text, size_t len, const struct doc_limits *lim,
		     struct doc_set **out, struct doc_error *err);

/* One document of a YAML stream, as its markers delimit it. */
struct doc_span {
	size_t off, len;             /* text[off, off + len) */
	uint32_t line;               /* 1-based line of text[off] */
};

/* The next document of the YAML stream text[0..len) from *pos (start at 0,
 * with *line 1), found without parsing: a document runs from a line that
 * begins with "---" (and a blank or the line's end) to the next such line;
 * comments, blank lines and directives before a marker go with the
 * document the marker starts. Advances *pos and *line; false at the end. */
bool doc_next_span(const char *text, size_t len, size_t *pos, uint32_t *line, struct doc_span *out);

/* doc_set_free(NULL) is a no-op. */
void doc_set_free(struct doc_set *set);

/* The source position of what path names under root, the path written as
 * messages write it: members by name (a.b) or quoted (a["b.c"]), sequence
 * items by index ([3]). A member's position is its key's. As far as the
 * path resolves: a part that is not there leaves the position of the last
 * part found (root for none). False only without a root. */
bool doc_path_position(const struct doc_node *root, struct str path, uint32_t *line, uint32_t *col);

size_t doc_set_count(const struct doc_set *set);

/* Document i's root (borrowed; never NULL for i < count: an empty YAML
 * document is a DOC_NULL node). */
const struct doc_node *doc_set_root(const struct doc_set *set, size_t i);

/* Document i's error when it did not parse (doc_parse_stream()), else NULL.
 * Borrowed from the set. */
const struct doc_error *doc_set_error(const struct doc_set *set, size_t i);

/* The member named key of a DOC_MAP, or NULL (also when n is not a map). */
const struct doc_node *doc_map_get(const struct doc_node *n, const char *key);

/* "map", "sequence", "string", ... for messages. */
const char *doc_type_name(enum doc_type t);

/* Append n as compact JSON: members in document order, numbers verbatim,
 * strings escaped as jw.h escapes them. 0, -E2BIG (the buffer's cap) or
 * -ENOMEM; on failure the buffer holds what it held before. */
int doc_to_json(const struct doc_node *n, struct buf *out);

/* Where the parts of a tree's JSON came from. */
struct doc_locator;

/* doc_to_json() that also records the byte range each node and each key
 * takes in the JSON (offsets from where it begins in out), at most
 * max_spans of them (nodes plus keys), so that doc_locate() can turn an
 * offset of that JSON (a decoder's error) into a source position. 0 with
 * *loc (doc_locator_free()), -E2BIG (the buffer's cap or max_spans) or
 * -ENOMEM, with *loc NULL and the buffer as it was. */
int doc_to_json_located(const struct doc_node *n, struct buf *out, size_t max_spans,
			struct doc_locator **loc);

/* The source line and column of the innermost node or key whose JSON holds
 * offset (or of the last one before it). False when nothing was recorded. */
bool doc_locate(const struct doc_locator *loc, size_t offset, uint32_t *line, uint32_t *col);

/* doc_locator_free(NULL) is a no-op. */
void doc_locator_free(struct doc_locator *loc);

#endif
