/* doc.h - YAML and JSON documents as a tree with source positions.
 *
 * Policy files, ConfigMap manifests and dry-run inputs are read into this
 * tree so that every error can name a line and a path. Both readers are
 * hostile-input safe: bounded bytes, depth, nodes and documents; duplicate
 * keys are errors; YAML anchors, aliases, merge keys (<<) and tags other than
 * the standard !!str !!int !!float !!bool !!null !!map !!seq are errors.
 *
 * Scalars keep their text: numbers are the literal (normalised to valid JSON
 * number syntax for YAML spellings such as 0x1f or +1), so a quantity written
 * as a bare number loses no precision. Plain YAML scalars resolve as
 * Kubernetes' YAML decoding (go-yaml v2, YAML 1.1) resolves them: null, ~ and
 * the empty scalar are null; true/false/yes/no/on/off (and y/n) in their
 * case variants are booleans; integers and floats as YAML 1.1 defines them;
 * everything else is a string. Quoted scalars are always strings.
 *
 * A doc_set owns every node of every document it holds; nodes are immutable
 * once parsed and may be read from any thread. */
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

struct doc_limits {
	size_t max_bytes;            /* input size */
	unsigned max_depth;          /* nesting of maps and sequences */
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

/* max_bytes 16 MiB, max_depth 64, max_nodes 4 Mi, max_docs 10000. */
void doc_limits_default(struct doc_limits *lim);

/* Parse a YAML stream (one or more documents; JSON is YAML too, but use
 * doc_parse_json() for it). An empty stream gives zero documents.
 * Returns 0, -EINVAL (err filled), -E2BIG over a limit (err filled), -ENOMEM. */
int doc_parse_yaml(const char *text, size_t len, const struct doc_limits *lim,
		   struct doc_set **out, struct doc_error *err);

/* Parse one JSON value (RFC 8259; duplicate keys rejected) as a one-document
 * set. Same returns as doc_parse_yaml(). */
int doc_parse_json(const char *text, size_t len, const struct doc_limits *lim,
		   struct doc_set **out, struct doc_error *err);

/* JSON when the first non-blank byte is '{' or '[', YAML otherwise. */
int doc_parse(const char *text, size_t len, const struct doc_limits *lim,
	      struct doc_set **out, struct doc_error *err);

/* doc_set_free(NULL) is a no-op. */
void doc_set_free(struct doc_set *set);

size_t doc_set_count(const struct doc_set *set);

/* Document i's root (borrowed; never NULL for i < count: an empty YAML
 * document is a DOC_NULL node). */
const struct doc_node *doc_set_root(const struct doc_set *set, size_t i);

/* The member named key of a DOC_MAP, or NULL (also when n is not a map). */
const struct doc_node *doc_map_get(const struct doc_node *n, const char *key);

/* "map", "sequence", "string", ... for messages. */
const char *doc_type_name(enum doc_type t);

/* Write n as compact JSON: numbers verbatim, strings escaped. 0, -E2BIG
 * (the buffer's cap), -ENOMEM. */
int doc_to_json(const struct doc_node *n, struct buf *out);

#endif
