/* options.h - the command-line flags of every dra-guard subcommand, from
 * one kind of table.
 *
 * A subcommand describes each flag once: its name, type, bounds, default,
 * environment variable (serve's only) and help line, and where in the
 * subcommand's own struct the value goes. From that one table come the
 * parsing, the checks, the error messages (naming the flag, the value and
 * what is allowed) and --help, so the three cannot disagree.
 *
 * Precedence: a flag on the command line, then its environment variable,
 * then its default. Every occurrence on the command line is checked; for a
 * flag given twice the last wins, a repeatable one collects them all.
 * --help (or -h) anywhere short-circuits everything else; "--" ends the
 * flags. A flag may be abbreviated to a unique prefix, as getopt_long
 * allows. */
#ifndef DRA_GUARD_OPTIONS_H
#define DRA_GUARD_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define OPTIONS_ERROR_MAX 512

enum options_type {
	OPTIONS_BOOL,         /* a switch; --x=true|false|1|0 too; bool */
	OPTIONS_UINT,         /* a whole number in [min, max]; an unsigned field of any width */
	OPTIONS_SIZE,         /* bytes: N, or N with Ki, Mi, Gi, k, K, M, G; size_t in [min, max] */
	OPTIONS_DURATION,     /* N (seconds) or N with ms, s, m, h, decimals allowed; [min, max]
			       * in ns, stored as a whole number of `unit_ns` in an unsigned or
			       * int64_t field */
	OPTIONS_TIME,         /* RFC 3339 in UTC or seconds since the epoch; int64_t ns */
	OPTIONS_STRING,       /* borrowed: a const char * to argv or the environment */
	OPTIONS_TEXT,         /* copied into a char array, refused when it does not fit */
	OPTIONS_ENUM,         /* one of `choices`; an int (enum) field */
	OPTIONS_LIST,         /* repeatable: const char *[size], the count a size_t at count_off */
	OPTIONS_CUSTOM,       /* set() parses and stores */
};

/* Entry flags. */
#define OPTIONS_NONEMPTY    0x1u   /* "" is refused */
#define OPTIONS_EMPTY_UNSET 0x2u   /* "" is as if not given (an empty environment variable) */
#define OPTIONS_NOCASE      0x4u   /* enum values compared without case */
#define OPTIONS_COMPUTED    0x8u   /* no default text: set() is called with NULL for it */

struct options_choice {
	const char *name;
	int value;
	bool alias;                   /* accepted, not listed */
};

struct options_entry;

/* A custom value's parser: store v (NULL: the computed default) into cfg.
 * 0, or -EINVAL with err saying what is wrong with the value (the flag's
 * name is put in front by the caller). */
typedef int options_set_fn(void *cfg, const struct options_entry *e, const char *v, char *err, size_t errn);

struct options_entry {
	const char *name;             /* without the leading -- */
	enum options_type type;
	size_t off, size;             /* the field in the subcommand's struct (OPTIONS_AT) */
	size_t count_off;             /* OPTIONS_LIST: the size_t count */
	const char *env;              /* NULL: none */
	const char *def;              /* parsed as if given; NULL: the field is left as it is */
	const char *def_help;         /* --help's default when def is not it; NULL: def */
	const char *arg;              /* metavariable; NULL for a switch */
	const char *help;
	unsigned long long min, max;  /* UINT, SIZE; DURATION in ns; TEXT: max is ignored */
	uint64_t unit_ns;             /* DURATION: what one unit of the field is (0: 1 s) */
	const struct options_choice *choices;   /* ENUM, ended by { NULL } */
	options_set_fn *set;          /* CUSTOM */
	unsigned flags;               /* OPTIONS_NONEMPTY ... */
	unsigned group;               /* nonzero: at most one flag of the group may be given */
	unsigned only;                /* variants that know the flag; 0: every one */
	unsigned hide;                /* variants whose --help does not list it */
};

#define OPTIONS_AT(type, field) .off = offsetof(type, field), .size = sizeof(((type *)0)->field)
#define OPTIONS_LIST_AT(type, field, count) \
	OPTIONS_AT(type, field), .count_off = offsetof(type, count)

#define OPTIONS_NS_PER_S 1000000000ULL
#define OPTIONS_NS_PER_MS 1000000ULL

/* One subcommand: its table and the text around the generated flags. */
struct options_command {
	const char *name;             /* "dry-run": messages say "dra-guard dry-run: ..." */
	const char *synopsis;         /* after "usage: dra-guard NAME " */
	const char *intro;            /* paragraphs before the flags; may be NULL */
	const char *outro;            /* after the flags (exit status); may be NULL */
	const struct options_entry *entries;
	size_t nentries;
	int max_args;                 /* positional arguments allowed; -1: any number */
	unsigned variant;             /* picks entries by only/hide; 0 for most */
	bool env_note;                /* --help says flags can be set by environment */
};

/* Where the environment is read from: getenv, or a stand-in in tests. */
typedef char *options_env_fn(const char *name);

/* Parse argv[1..argc) (argv[0] is the subcommand) into cfg, then the
 * environment (env may be NULL), then the defaults. The positional
 * arguments are moved, in order, to argv[1..1 + *nargs). Returns 0; 1 when
 * --help was asked for (nothing else is checked); -EINVAL with err naming
 * the flag (or $VARIABLE), the value and what is allowed. */
int options_parse(const struct options_command *cmd, int argc, char **argv, options_env_fn *env, void *cfg,
		  int *nargs, char err[static OPTIONS_ERROR_MAX]);

/* The --help text of cmd to f. */
void options_usage(const struct options_command *cmd, FILE *f);

/* options_parse() as a subcommand's main wants it: --help printed on
 * stdout, or a usage error on stderr as one line and where the usage is.
 * Returns -1 to go on, else the exit status (0 after --help, 2). */
int options_cli(const struct options_command *cmd, int argc, char **argv, options_env_fn *env, void *cfg,
		int *nargs);

/* The flag of cmd named name (exactly), or NULL. */
const struct options_entry *options_find(const struct options_command *cmd, const char *name);

#endif
