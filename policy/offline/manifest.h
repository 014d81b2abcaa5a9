/* manifest.h - Kubernetes objects out of manifest files.
 *
 * What `kubectl apply -f` and `kubectl get -o yaml|json` deal in: YAML
 * streams of many documents, JSON files, kind: List (and typed lists such as
 * ResourceSliceList) whose items are the objects. A manifest set reads any
 * number of such texts into entries, one per object or per thing that is
 * not a usable object, each with its file, document, list item, line and
 * column and its identity (group, version, kind, namespace, name). It is
 * the one reader for dry-run's inputs and its stored objects (--old), and
 * for any other command that reads objects from files.
 *
 * Nothing is dropped silently: a document that does not parse is an entry
 * with its error and whatever kind and name could be read before it
 * (doc_parse_stream()), and the documents after it are read all the same;
 * a document or list item that is not a map is an entry with an error;
 * only empty documents (between two "---") are not entries.
 *
 * Namespaces: an object of a kind known to be namespaced that names no
 * namespace gets the set's default one, as kubectl would apply it, so that
 * a manifest without a namespace and its stored namesake have the same
 * identity. id.namespace is that effective namespace.
 *
 * A set owns the trees of everything added to it; the texts may be freed as
 * soon as manifest_set_add() returns. Pointers to entries are valid until
 * the next add; what entries point to (file names, messages, trees) until
 * manifest_set_free(). Pure; one set per thread. */
#ifndef DRA_GUARD_MANIFEST_H
#define DRA_GUARD_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "doc.h"
#include "str.h"

/* entry.item outside a List. */
#define MANIFEST_NO_ITEM SIZE_MAX

struct manifest_id {
	struct str group;            /* "" for the core group (apiVersion "v1") */
	struct str version;
	struct str kind;
	struct str namespace;        /* effective; "" for cluster-scoped or unknown */
	struct str name;             /* "" when it has none (generateName) */
};

struct manifest_entry {
	const char *file;            /* the name given to manifest_set_add() */
	size_t doc;                  /* 0-based document in the file */
	size_t item;                 /* index in a List's items, or MANIFEST_NO_ITEM */
	uint32_t line, col;          /* of the object, or of the error; 0 if none */
	const struct doc_node *node; /* the object (a map); NULL for an error */
	struct manifest_id id;       /* as far as it could be read */
	bool namespace_defaulted;    /* id.namespace is the set's default */
	const char *error;           /* NULL, or why this is not a usable object */
	const struct doc_node *partial;  /* a document that did not parse: what
					  * was read of it before the error, so
					  * its position can be named; else NULL */
};

struct manifest_options {
	struct doc_limits doc;       /* for each text */
	size_t max_entries;          /* over all texts */
	const char *default_namespace;   /* for namespaced kinds that name none */
};

struct manifest_set;

/* Documents of 64 MiB at most, 100000 entries, namespace "default". */
void manifest_options_default(struct manifest_options *opt);

/* A new empty set (opt NULL: the defaults; the default namespace string is
 * borrowed). 0 or -ENOMEM. */
int manifest_set_new(const struct manifest_options *opt, struct manifest_set **out);

/* manifest_set_free(NULL) is a no-op. */
void manifest_set_free(struct manifest_set *s);

/* Read every object of text[0..len) (a YAML stream, or JSON when it starts
 * with '{' or '['), named file in entries (copied). Problems with single
 * documents are entries, not failures; a text that is over the document
 * limits as a whole is one error entry. Returns 0; -E2BIG once the set
 * holds max_entries (the entry that would go over is an error entry saying
 * so, and nothing more is added); -ENOMEM. */
int manifest_set_add(struct manifest_set *s, const char *file, const char *text, size_t len);

/* An error entry for an input that could not be read at all (a file that
 * does not exist): file and message are copied. Same returns. */
int manifest_set_add_error(struct manifest_set *s, const char *file, const char *msg);

size_t manifest_set_count(const struct manifest_set *s);

/* Entry i (borrowed), i < count. */
const struct manifest_entry *manifest_set_entry(const struct manifest_set *s, size_t i);

/* The object entry with the same group, kind, namespace and name as id (the
 * version does not matter: one object is served in several), or NULL; an id
 * without a name matches nothing. When two or more entries share that
 * identity, *second (when not NULL) gets another one, else NULL. The first
 * lookup after an add sorts an index (n log n); 0 / -ENOMEM in *rc. */
const struct manifest_entry *manifest_set_find(struct manifest_set *s, const struct manifest_id *id,
					       const struct manifest_entry **second, int *rc);

/* Identity of an object's map as written: apiVersion split into group and
 * version, kind, metadata.namespace and metadata.name (each "" when absent
 * or not a string). */
void manifest_id_read(const struct doc_node *n, struct manifest_id *out);

/* True for kinds known to be namespaced (ResourceClaim, Pod, ConfigMap, ...);
 * false for cluster-scoped ones (ResourceSlice, Node, ...) and for kinds it
 * does not know. */
bool manifest_kind_namespaced(struct str group, struct str kind);

#endif
