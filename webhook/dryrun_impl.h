/* dryrun_impl.h - what the files of dra-guard dry-run share. Private to
 * webhook/dryrun*.c.
 *
 * dryrun.c reads the command line and the policy and runs the inputs;
 * dryrun_input.c walks the inputs (files, directories, documents, lists)
 * and decides each object or review, recording one result each;
 * dryrun_output.c prints the results as text, JSON or JUnit XML. */
#ifndef DRA_GUARD_DRYRUN_IMPL_H
#define DRA_GUARD_DRYRUN_IMPL_H

#include <stddef.h>

#include <jansson.h>

#include "arena.h"
#include "decode.h"
#include "doc.h"
#include "engine.h"
#include "policy.h"

#define DRYRUN_MAX_INPUT (64 * 1024 * 1024)     /* one input file */
#define DRYRUN_ARENA_CAP (256 * 1024 * 1024)    /* one object's decision */
#define DRYRUN_MAX_LIST 4096                    /* --group, --extra, inputs */
#define DRYRUN_MAX_OBJECTS 100000

enum output_format { OUTPUT_TEXT, OUTPUT_JSON, OUTPUT_JUNIT };

struct extra_kv {
	struct str key;
	struct str value;
};

struct dryrun {
	const char *policy_path;
	struct policy *policy;
	struct engine_options opt;
	int64_t now_ns;                       /* the wall clock when the run began */
	struct decode_limits lim;
	enum admission_op operation;          /* UNKNOWN: CREATE, or UPDATE with --old */
	const char *old_path;
	struct doc_set *old_set;
	const char *user;
	const char *groups[DRYRUN_MAX_LIST];
	size_t ngroups;
	struct extra_kv extras[DRYRUN_MAX_LIST];
	size_t nextras;
	const char *subresource;
	enum output_format output;
	int warn_exit_code;                   /* -1: warnings exit 0 */

	json_t *results;                      /* result objects in input order */
	unsigned allowed, denied, warned, errors;
	size_t objects;
};

/* Decide every object in the file at path ("-" for stdin), or in every
 * manifest (.yaml, .yml, .json) of the directory dir, in name order; each
 * object, and each input that cannot be read, adds one result
 * (dryrun_input.c). a is reset for each object. */
void dryrun_run_file(struct dryrun *d, const char *path, struct arena *a);
void dryrun_run_dir(struct dryrun *d, const char *dir, struct arena *a);

/* The results on stdout, one way each (dryrun_output.c). */
void dryrun_print_text(struct dryrun *d);
void dryrun_print_json(struct dryrun *d);
void dryrun_print_junit(struct dryrun *d);

#endif
