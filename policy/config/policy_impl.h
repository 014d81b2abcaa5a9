/* policy_impl.h - what the policy loader's files share; policy/ only.
 *
 * policy_read.c reads typed values out of a doc tree and keeps the path
 * stack that errors name; policy_doc.c loads the sections of a Policy
 * document with them; policy_configmap.c reads the policy ConfigMap
 * manifest; policy.c assembles snapshots (keys, freeze, hash) and answers
 * lookups. Not part of the policy.h interface. */
#ifndef DRA_GUARD_POLICY_IMPL_H
#define DRA_GUARD_POLICY_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "doc.h"
#include "policy.h"

/* A ConfigMap holds at most 1 MiB; a policy is a small fraction of that. */
#define POLICY_TEXT_MAX (1024 * 1024)
#define POLICY_STORAGE_CAP (8 * 1024 * 1024)
#define POLICY_LIST_MAX 4096
/* YAML nodes and nesting of one policy document: many times what the
 * largest real policy needs (a few lists of POLICY_LIST_MAX entries). */
#define POLICY_NODES_MAX 65536
#define POLICY_DEPTH_MAX 64
#define POLICY_PATH_MAX 256

/* One load in progress: the snapshot being built (in its own arena), the
 * errors found so far, and the path of the node being read.
 *
 * A load does not stop at the first error: every section and value is
 * read, and each error is recorded (up to err_cap of them; all are
 * counted), so a lint shows them all at once. What depends on a value that
 * failed is skipped, not guessed. Only running out of memory stops it. */
struct loader {
	struct arena *a;
	struct policy *p;
	struct policy_error *err;     /* err[0 .. err_cap) */
	size_t err_cap;
	size_t nerr;                  /* errors found (may exceed err_cap) */
	const char *source;
	char path[POLICY_PATH_MAX];
	size_t path_len;
	int rc;                       /* 0, -EINVAL once an error is found, -ENOMEM
				       * (-E2BIG: over a borrowed arena's cap) */
	bool stop;                    /* out of memory: read nothing more */
	bool borrowed;                /* l->a is the caller's: the parse goes there
				       * too, and the policy is only checked */
};

/* Record an error: -EINVAL with the message, the current path and the
 * position. */
void policy_fail(struct loader *l, uint32_t line, uint32_t col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Record -ENOMEM (the arena is out of room or memory) and stop the load. */
void policy_fail_nomem(struct loader *l);

/* Push ".key" (or "[\"key\"]", or "[i]") on the path; returns the length to
 * pop back to with policy_path_pop(). */
size_t policy_path_push_key(struct loader *l, struct str key);
size_t policy_path_push_index(struct loader *l, size_t i);
void policy_path_pop(struct loader *l, size_t saved);

/* Typed readers: true when n is what was asked for (copied into the
 * snapshot's arena), false with the error recorded otherwise. */
bool policy_expect(struct loader *l, const struct doc_node *n, enum doc_type t);
bool policy_check_keys(struct loader *l, const struct doc_node *n, const char *const *allowed);
bool policy_copy_str(struct loader *l, struct str in, struct str *out);
bool policy_read_string(struct loader *l, const struct doc_node *n, struct str *out);
bool policy_read_nonempty_string(struct loader *l, const struct doc_node *n, struct str *out);

/* A check of one list item beyond being a non-empty string. */
typedef bool (*item_check_fn)(struct loader *l, const struct doc_node *n, struct str s);

/* Sort list's items into list->sorted and pick its glob patterns, for
 * lookups in log n. false with *dup set when an item appears twice (nothing
 * recorded), or with the error recorded (out of memory). */
bool policy_index_list(struct loader *l, struct string_list *list, struct str *dup);

/* Record "<what> \"item\" <after>" at every item of seq after the first
 * occurrence of its value (n log n). */
void policy_fail_duplicates(struct loader *l, const struct doc_node *seq, const struct str *items,
			    const char *what, const char *after);

/* A sequence of distinct non-empty strings; null means an empty list. */
bool policy_read_string_list(struct loader *l, const struct doc_node *n,
			     struct string_list *out, item_check_fn check);
bool policy_read_action(struct loader *l, const struct doc_node *n, enum action *out);
bool policy_read_quantity(struct loader *l, const struct doc_node *n, struct quantity *out);
/* A duration string of hour, minute and second parts in that order, each
 * at most once ("4h", "90m", "1h30m", "45s"), within [min_s, max_s]. */
bool policy_read_duration(struct loader *l, const struct doc_node *n, uint32_t min_s, uint32_t max_s,
			  uint32_t *out);

/* apiVersion and kind of root are exactly these. */
bool policy_check_type_meta(struct loader *l, const struct doc_node *root,
			    const char *api_version, const char *kind);

/* The promotion section (policy_promotion.c). */
void policy_load_promotion(struct loader *l, const struct doc_node *n);

/* Load a Policy document's sections into l->p. */
void policy_load_document(struct loader *l, const struct doc_node *root);

/* A loader recording up to cap errors in errs (NULL: none kept, all
 * counted), with an empty snapshot in its own arena. 0 or -ENOMEM. */
int policy_loader_init(struct loader *l, struct policy_error *errs, size_t cap);

/* policy_loader_init() building in a, the caller's arena (borrowed): for a
 * check that must stay inside a request's memory. 0 or the arena's error. */
int policy_loader_init_in(struct loader *l, struct arena *a, struct policy_error *errs, size_t cap);

/* policy_load_parts() that keeps up to cap errors and counts all in *nerr;
 * each error's source names the key its position is in. */
int policy_load_parts_all(const char *doc, size_t doc_len,
			  bool has_freeze, const char *freeze, size_t freeze_len,
			  bool has_reason, const char *reason, size_t reason_len,
			  struct policy **out, struct policy_error *errs, size_t cap, size_t *nerr);

/* The ConfigMap manifest root (read from text[0..len)): its shape, then its
 * keys as parts, with every error placed in the manifest (source ""). Same
 * returns as policy_load_parts_all(). policy_configmap.c. */
int policy_load_configmap(const char *text, size_t len, const struct doc_node *root, struct policy **out,
			  struct policy_error *errs, size_t cap, size_t *nerr);

#endif
