/* dryrun_impl.h - what the files of dra-guard dry-run share. Private to
 * webhook/dryrun*.c.
 *
 * dryrun.c reads the command line, the policy and the stored objects
 * (--old) and runs the inputs; dryrun_input.c decides each object or review
 * an input holds, recording one result each; dryrun_output.c prints the
 * results as text, JSON or JUnit XML. Inputs are read through the inputs
 * and manifest modules, the synthetic requests made by synth. */
#ifndef DRA_GUARD_DRYRUN_IMPL_H
#define DRA_GUARD_DRYRUN_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "decode.h"
#include "engine.h"
#include "manifest.h"
#include "ledger.h"
#include "policy.h"
#include "synth.h"
#include "view.h"

#define DRYRUN_MAX_INPUT (64 * 1024 * 1024)     /* one input file */
#define DRYRUN_ARENA_CAP (256 * 1024 * 1024)    /* one object's decision */
#define DRYRUN_MAX_LIST 4096                    /* --group, --extra, --old, inputs */
#define DRYRUN_MAX_OBJECTS 100000               /* results of one run */
/* What the results of one run may hold (their text: messages are at most
 * 16 KiB each, so DRYRUN_MAX_OBJECTS of them fit). */
#define DRYRUN_RESULTS_CAP ((size_t)4 << 30)

enum output_format { OUTPUT_TEXT, OUTPUT_JSON, OUTPUT_JUNIT };

/* --field-validation, named as the API server's ?fieldValidation= is:
 * what an unknown field in a bare object does (fieldcheck.h). */
enum field_validation { FIELDS_WARN, FIELDS_STRICT, FIELDS_IGNORE };

#define DRYRUN_MAX_FIELDS 32                    /* unknown fields listed per object */

/* One result: what the three outputs say of an object, a review or an
 * unusable entry. Strings are NUL-terminated copies in the run's results
 * arena. */
enum dryrun_result_kind {
	DRYRUN_DECIDED,        /* the engine answered */
	DRYRUN_NOT_JUDGED,     /* no rule judges its kind */
	DRYRUN_UNUSABLE,       /* it could not be read or decided */
};

struct dryrun_violation {
	const char *rule, *action;
	struct str path, message;
	bool located;                         /* line and col say where path is in the result's file */
	uint32_t line, col;
};

struct dryrun_field {                     /* an unknown field (--field-validation) */
	const char *path, *message;
	const char *did_you_mean, *note;      /* NULL when there is none */
	uint32_t line, col;
};

struct dryrun_skip {
	const char *rules[4];
	size_t nrules;
	const char *reason;
};

struct dryrun_result {
	enum dryrun_result_kind kind;
	const char *source;
	struct str object_kind, namespace, name;
	const char *operation;                /* "" when there is none */
	struct str subresource;
	bool subresource_inferred;
	const char *old;                      /* the stored object's source, or NULL */
	bool allowed;
	const char *not_judged;               /* NOT_JUDGED: why */
	const char *error;                    /* UNUSABLE: what is wrong; DECIDED: a denial without violations */
	const char *file;                     /* where the object or the error is, or NULL */
	uint32_t line, col;                   /* UNUSABLE: where the error is (0: unknown) */
	struct dryrun_violation *violations;
	size_t nviolations;
	struct str *warnings;
	size_t nwarnings;
	struct dryrun_field *fields;
	size_t nfields, fields_not_listed;
	struct str patch;                     /* compact JSONPatch text; len 0 when none */
	struct dryrun_skip skipped[SYNTH_SKIP_MAX];
	size_t nskipped;
};

struct dryrun {
	const char *policy_path;
	struct policy *policy;
	struct engine_options opt;
	int64_t now_ns;                       /* the wall clock when the run began */
	struct decode_limits lim;
	enum admission_op operation;          /* UNKNOWN: CREATE, or UPDATE of a stored namesake */
	const char *old_paths[DRYRUN_MAX_LIST];
	size_t nold;
	struct manifest_set *old_set;         /* NULL without --old */
	const char *namespace;                /* for namespaced objects that name none */
	struct synth_identity who;
	struct str groups[DRYRUN_MAX_LIST];
	struct synth_extra extras[DRYRUN_MAX_LIST];
	const char *subresource;
	enum output_format output;
	int warn_exit_code;                   /* -1: warnings exit 0 */
	enum field_validation fields;

	const char *view_paths[DRYRUN_MAX_LIST];   /* --view */
	size_t nview;
	struct view_builder *view_builder;    /* NULL without --view */
	const struct view *view;
	struct ledger *ledger;                /* the view's, after the inputs */

	struct arena *kept;                   /* the results' text */
	struct dryrun_result *results;        /* in input order */
	size_t nresults, results_alloc;
	unsigned allowed, denied, warned, errors, skipped, not_judged;
};

/* Decide every object of one INPUT (a file, a directory, or - for stdin),
 * adding one result per object, review or unusable entry (dryrun_input.c).
 * a is reset for each object. 0, or -E2BIG when the run holds
 * DRYRUN_MAX_OBJECTS results (one more says so). */
int dryrun_run_input(struct dryrun *d, const char *path, struct arena *a);

/* "file#doc" or "file#doc/items[i]": where an entry came from, into buf. */
void dryrun_source(const struct manifest_entry *e, char *buf, size_t n);

/* "file:line:col" (or "file:line", or "file") of an entry, into buf. */
void dryrun_position(const char *file, uint32_t line, uint32_t col, char *buf, size_t n);

/* Load the policy in text[0..len), called name in messages. On failure
 * every error found is printed to stderr, one a line, each after prefix,
 * then a line that counts them; returns policy_load_all()'s error
 * (dryrun_lint.c). */
int dryrun_policy_load(const char *name, const char *prefix, const char *text, size_t len,
		       struct policy **out);

/* The results on stdout, one way each (dryrun_output.c). */
void dryrun_print_text(struct dryrun *d);
void dryrun_print_json(struct dryrun *d);
void dryrun_print_junit(struct dryrun *d);

#endif
