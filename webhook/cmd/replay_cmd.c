/* replay_cmd.c - dra-guard replay: what a policy would have said of a
 * recorded audit log, and the ledger through it (policy/offline/replay.h does the
 * work; this file reads the files and prints).
 *
 * Logs are read in large chunks and cut into lines here; a gzip'd log
 * (magic 1f 8b) is read through a pipe from `gzip -dc`, which runs on
 * another core while this one replays and adds no library to the guard.
 *
 * Exit codes, as dry-run's: 0 nothing would be denied, 1 some write would
 * be denied, 2 unusable input or policy (a log that cannot be read, a
 * gzip stream that is cut, a cap passed), --warn-exit-code N when there
 * were warnings, corrupt lines or ledger divergences but no denial. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "dryrun_impl.h"
#include "fileio.h"
#include "ledger.h"
#include "options.h"
#include "policy.h"
#include "replay.h"

extern char **environ;

#define REPLAY_CHUNK ((size_t)4 << 20)
#define REPLAY_MAX_DUMP ((size_t)4 << 30)
#define REPLAY_MAX_LOGS 1024

struct replay_cli {
	struct replay_options o;
	const char *policy_path;
	const char *view_path;
	int64_t view_ns;              /* --view-time; 1 (long before) when not given */
	const char *logs[REPLAY_MAX_LOGS];
	size_t nlogs;
	enum output_format output;
	int warn_exit_code;
	bool no_ledger;
	bool read_error;
	bool readiness;               /* dra-guard readiness, or replay --report readiness */
};

/* A usage error: its one line is printed; then where the usage is. */
static int usage_error(const struct replay_cli *c)
{
	fprintf(stderr, "Run 'dra-guard %s --help' for the usage.\n", c->readiness ? "readiness" : "replay");
	return 2;
}

static int set_self(void *cfg, const struct options_entry *e, const char *v, char *why, size_t n)
{
	struct replay_options *o = &((struct replay_cli *)cfg)->o;
	const char *slash = strchr(v, '/');

	(void)e;
	if (!slash || slash == v || !slash[1] || strchr(slash + 1, '/')) {
		snprintf(why, n, "'%s' is not NAMESPACE/NAME", v);
		return -EINVAL;
	}
	o->self_namespace = (struct str){ v, (size_t)(slash - v) };
	o->self_name = str_from_cstr(slash + 1);
	return 0;
}

/* Which of the two commands a flag is for (options_entry.only, .hide). */
enum { REPLAY = 1, READINESS = 2 };

#define R(field) OPTIONS_AT(struct replay_cli, field)
#define FOREVER 9000000000000000000ULL    /* ns, about 285 years */

static const struct options_choice replay_outputs[] = {
	{ "text", OUTPUT_TEXT, false }, { "json", OUTPUT_JSON, false }, { "junit", OUTPUT_JUNIT, false },
	{ "markdown", OUTPUT_TEXT, true }, { NULL, 0, false },
};

/* readiness: the text is Markdown. */
static const struct options_choice readiness_outputs[] = {
	{ "markdown", OUTPUT_TEXT, false }, { "json", OUTPUT_JSON, false }, { "text", OUTPUT_TEXT, true },
	{ NULL, 0, false },
};

static const struct options_choice reports[] = {
	{ "replay", 0, false }, { "readiness", 1, false }, { NULL, 0, false },
};

static const struct options_entry replay_flags[] = {
	{ .name = "policy", .type = OPTIONS_STRING, R(policy_path), .arg = "FILE", .def_help = "the built-in policy",
	  .help = "the policy to judge with (readiness: with the thresholds of its promotion section)" },
	{ .name = "view", .type = OPTIONS_STRING, R(view_path), .arg = "DUMP",
	  .help = "the cluster at the log's start: kubectl get resourceslices,resourceclaims,pods,nodes,configmaps"
	  " -A -o json" },
	{ .name = "view-time", .type = OPTIONS_TIME, R(view_ns), .min = 1, .arg = "TIME",
	  .def_help = "unknown, long before the log (ledger entries show 1970)",
	  .help = "when the dump was taken (RFC 3339 or epoch seconds)" },
	{ .name = "output", .type = OPTIONS_ENUM, R(output), .choices = replay_outputs, .only = REPLAY,
	  .arg = "FORMAT", .def_help = "text", .help = "text, json or junit" },
	{ .name = "output", .type = OPTIONS_ENUM, R(output), .choices = readiness_outputs, .only = READINESS,
	  .arg = "FORMAT", .help = "markdown (default) or json" },
	{ .name = "examples", .type = OPTIONS_UINT, R(o.examples), .max = 100000, .hide = READINESS, .arg = "N",
	  .def_help = "5", .help = "events shown per rule" },
	{ .name = "max-refused", .type = OPTIONS_UINT, R(o.max_refused), .max = 1000000, .hide = READINESS,
	  .arg = "N", .def_help = "1000", .help = "refused writes listed" },
	{ .name = "sample", .type = OPTIONS_DURATION, R(o.sample_ns), .unit_ns = 1, .min = OPTIONS_NS_PER_MS,
	  .max = FOREVER, .arg = "DURATION", .def_help = "1s", .help = "how often (log time) the ledger is checked" },
	{ .name = "reorder-window", .type = OPTIONS_DURATION, R(o.reorder_ns), .unit_ns = 1, .max = FOREVER,
	  .arg = "DURATION", .def_help = "10s", .help = "how far out of stageTimestamp order events may be" },
	{ .name = "max-line", .type = OPTIONS_SIZE, R(o.max_line), .min = 1, .max = INT64_MAX, .arg = "BYTES",
	  .def_help = "64Mi", .help = "the longest line read; longer ones are corrupt" },
	{ .name = "max-state", .type = OPTIONS_SIZE, R(o.store_bytes), .min = 1, .max = INT64_MAX, .arg = "BYTES",
	  .def_help = "4Gi", .help = "cap on the object texts kept for oldObject" },
	{ .name = "max-pending", .type = OPTIONS_UINT, R(o.max_pending), .min = 1, .max = 1UL << 28, .arg = "N",
	  .def_help = "100000", .help = "claims held back by a refusal at once" },
	{ .name = "self", .type = OPTIONS_CUSTOM, .set = set_self, .arg = "NAMESPACE/NAME",
	  .def_help = "dra-guard/dra-guard-policy", .help = "the guard's policy ConfigMap" },
	{ .name = "warn-exit-code", .type = OPTIONS_UINT, R(warn_exit_code), .max = 255, .hide = READINESS,
	  .arg = "N", .help = "exit N on warnings, corrupt lines or divergences without denials" },
	{ .name = "no-ledger", .type = OPTIONS_BOOL, R(no_ledger), .hide = READINESS,
	  .help = "leave the final ledger out of the report" },
	{ .name = "report", .type = OPTIONS_ENUM, R(readiness), .choices = reports, .hide = READINESS,
	  .arg = "KIND", .def_help = "replay",
	  .help = "replay, or readiness: the go/no-go readiness report instead (as dra-guard readiness)" },
};

static const struct options_command replay_command = {
	.name = "replay",
	.synopsis = "[FLAGS] LOG...",
	.intro = "Replay Kubernetes audit logs (audit.k8s.io/v1 Events, one JSON a line, gzip'd or not;\n"
		 "- for stdin) through the guard's engine and ledger: what the policy would have said of\n"
		 "every write the guard judges, and the ledger's divergences over the log's time.\n",
	.outro = "Exit: 0 nothing would be denied, 1 a write would be denied, 2 unusable input or policy.\n"
		 "dra-guard readiness --help: the go/no-go promotion report over the same replay.\n",
	.entries = replay_flags,
	.nentries = sizeof(replay_flags) / sizeof(replay_flags[0]),
	.max_args = -1,
	.variant = REPLAY,
};

static const struct options_command readiness_command = {
	.name = "readiness",
	.synopsis = "[FLAGS] LOG...",
	.intro = "Replays Kubernetes audit logs (audit.k8s.io/v1 Events, one JSON a line, gzip'd or not;\n"
		 "- for stdin) as dra-guard replay does, and prints the go/no-go report for promoting the\n"
		 "alpha: one verdict per criterion with its evidence, against the thresholds of the\n"
		 "policy's promotion section (docs/replay.md).\n",
	.outro = "Exit: 0 go, 1 no-go, 2 unusable input or policy.\n",
	.entries = replay_flags,
	.nentries = sizeof(replay_flags) / sizeof(replay_flags[0]),
	.max_args = -1,
	.variant = READINESS,
};

/* -1 to go on, else the exit code. */
static int parse_args(struct replay_cli *c, int argc, char **argv)
{
	int i, nlogs, rc, stdins = 0;

	rc = options_cli(c->readiness ? &readiness_command : &replay_command, argc, argv, NULL, c, &nlogs);
	if (rc >= 0)
		return rc;
	if (c->readiness && c->output == OUTPUT_JUNIT) {
		fprintf(stderr, "dra-guard readiness: --output junit: expected markdown or json\n");
		return 2;
	}
	if (nlogs == 0) {
		fprintf(stderr, "dra-guard %s: no LOG given\n", c->readiness ? "readiness" : "replay");
		return usage_error(c);
	}
	for (i = 1; i <= nlogs; i++) {
		if ((size_t)(i - 1) >= REPLAY_MAX_LOGS) {
			fprintf(stderr, "dra-guard replay: more than %d logs\n", REPLAY_MAX_LOGS);
			return 2;
		}
		c->logs[c->nlogs++] = argv[i];
		stdins += strcmp(argv[i], "-") == 0;
	}
	stdins += c->view_path && strcmp(c->view_path, "-") == 0;
	if (stdins > 1) {
		fprintf(stderr, "dra-guard replay: - (stdin) is named more than once; it can be read once\n");
		return 2;
	}
	return -1;
}

/* --- reading the logs -------------------------------------------------------------------------- */

struct reader {
	char *data;
	size_t cap, start, end;
	uint64_t line_no;
	bool skipping;            /* inside a line over max_line */
	size_t skipped_len;
};

/* Feed every whole line in the reader to the replay; at eof the rest too. */
static int lines(struct replay *r, const struct replay_options *o, struct reader *rd, bool eof)
{
	int rc;

	for (;;) {
		char *p = rd->data + rd->start;
		size_t avail = rd->end - rd->start;
		char *nl = memchr(p, '\n', avail);
		size_t len;

		if (!nl) {
			if (rd->skipping) {
				rd->skipped_len += avail;
				rd->start = rd->end;
			} else if (avail > o->max_line) {
				rd->skipping = true;
				rd->skipped_len = avail;
				rd->start = rd->end;
			}
			if (!eof || rd->start == rd->end) {
				if (eof && rd->skipping) {
					replay_line_too_long(r, ++rd->line_no, rd->skipped_len);
					rd->skipping = false;
				}
				return 0;
			}
			len = avail;
			rd->line_no++;
			rd->start = rd->end;
			return replay_line(r, p, len, rd->line_no);
		}
		len = (size_t)(nl - p);
		rd->start += len + 1;
		rd->line_no++;
		if (rd->skipping) {
			replay_line_too_long(r, rd->line_no, rd->skipped_len + len);
			rd->skipping = false;
			continue;
		}
		if (len > o->max_line) {
			replay_line_too_long(r, rd->line_no, len);
			continue;
		}
		rc = replay_line(r, p, len, rd->line_no);
		if (rc)
			return rc;
	}
}

/* A child `gzip -dc -- path`; its stdout as *fd. */
static int spawn_gunzip(const char *path, pid_t *pid, int *fd)
{
	int pipefd[2];
	posix_spawn_file_actions_t fa;
	char *argv[] = { "gzip", "-dc", "--", (char *)path, NULL };
	int rc;

	if (pipe(pipefd))
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
	posix_spawn_file_actions_addclose(&fa, pipefd[0]);
	posix_spawn_file_actions_addclose(&fa, pipefd[1]);
	rc = posix_spawnp(pid, "gzip", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	if (rc) {
		close(pipefd[0]);
		return -rc;
	}
	*fd = pipefd[0];
	return 0;
}

/* Replay one log. 0; 2 when it could not be read whole (said on stderr);
 * or the replay's negative error. */
static int replay_log(struct replay *r, const struct replay_options *o, const char *path, struct reader *rd)
{
	unsigned char magic[2];
	pid_t child = -1;
	int fd, rc = 0, status;
	ssize_t got;
	bool gz = false;

	fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "dra-guard replay: %s: %s\n", path, strerror(errno));
		return 2;
	}
	rd->start = rd->end = 0;
	rd->line_no = 0;
	rd->skipping = false;
	got = read(fd, rd->data, 2);
	if (got == 2 && memcmp(rd->data, "\x1f\x8b", 2) == 0) {
		memcpy(magic, rd->data, 2);
		if (fd == STDIN_FILENO) {
			fprintf(stderr, "dra-guard replay: -: stdin is gzip'd; name the file, or pipe it through gzip -dc\n");
			return 2;
		}
		close(fd);
		gz = true;
		rc = spawn_gunzip(path, &child, &fd);
		if (rc) {
			fprintf(stderr, "dra-guard replay: %s: cannot run gzip -dc: %s\n", path, strerror(-rc));
			return 2;
		}
	} else if (got > 0) {
		rd->end = (size_t)got;
	}
	for (;;) {
		/* The unread part (at most a line) goes to the front before each
		 * read, so the buffer touches only a line and a chunk of memory. */
		if (rd->start > 0) {
			memmove(rd->data, rd->data + rd->start, rd->end - rd->start);
			rd->end -= rd->start;
			rd->start = 0;
		}
		if (rd->cap - rd->end < REPLAY_CHUNK) {
			/* the carried part of a line is at most max_line */
			fprintf(stderr, "dra-guard replay: internal: reader full\n");
			rc = 2;
			break;
		}
		got = read(fd, rd->data + rd->end, REPLAY_CHUNK);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			fprintf(stderr, "dra-guard replay: %s: %s\n", path, strerror(errno));
			rc = 2;
			break;
		}
		rd->end += (size_t)got;
		rc = lines(r, o, rd, got == 0);
		if (rc || got == 0)
			break;
	}
	if (fd != STDIN_FILENO)
		close(fd);
	if (gz) {
		while (waitpid(child, &status, 0) < 0 && errno == EINTR)
			;
		if (rc == 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
			fprintf(stderr, "dra-guard replay: %s: gzip -dc failed (a cut or corrupt gzip stream); "
				"the lines before the damage were replayed\n", path);
			rc = 2;
		}
	}
	(void)magic;
	return rc;
}

/* --- printing --------------------------------------------------------------------------------- */

static const char *js(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

static long long ji(json_t *o, const char *k)
{
	return (long long)json_integer_value(json_object_get(o, k));
}

static void print_event(FILE *f, json_t *e, const char *indent)
{
	fprintf(f, "%sline %lld %s %s %s%s%s %s%s%s by %s (recorded %lld)", indent, ji(e, "line"), js(e, "time"),
		js(e, "operation"), js(e, "resource"), *js(e, "subresource") ? "/" : "", js(e, "subresource"),
		js(e, "namespace"), *js(e, "namespace") ? "/" : "", js(e, "name"), *js(e, "user") ? js(e, "user") : "?",
		ji(e, "recorded"));
	if (json_object_get(e, "rules")) {
		size_t i;
		json_t *x;

		fprintf(f, " [");
		json_array_foreach(json_object_get(e, "rules"), i, x)
			fprintf(f, "%s%s", i ? ", " : "", json_string_value(x));
		fprintf(f, "]");
	}
	fprintf(f, ": %s\n", js(e, "message"));
}

/* Why Pods were pending: the live guard's Events by reason, the pending
 * times of the claims they held back, and those still held at the end
 * (as dra-guard pending lists a replica's). */
static void print_pending(json_t *p)
{
	json_t *x, *b, *claims = json_object_get(p, "claims");
	long long refusals = 0, allocated = 0;
	size_t i, j;
	char *text, err[256];

	json_array_foreach(json_object_get(p, "reasons"), i, x) {
		refusals += ji(x, "refusals");
		allocated += ji(x, "allocated");
	}
	printf("\nwhy pending: %lld refusals that emit an Event; %lld claims allocated after a refusal; %zu still "
	       "refused at the end\n", refusals, allocated, json_array_size(claims));
	json_array_foreach(json_object_get(p, "reasons"), i, x) {
		long long prev = 0;

		printf("  %-22s refusals %lld", js(x, "reason"), ji(x, "refusals"));
		if (!json_object_get(x, "buckets")) {
			printf(" (a Pod status write: no pending time)\n");
			continue;
		}
		printf(", allocated after %lld", ji(x, "allocated"));
		if (ji(x, "allocated"))
			printf(", %.3fs in all;", json_real_value(json_object_get(x, "sumSeconds")));
		json_array_foreach(json_object_get(x, "buckets"), j, b) {
			if (ji(b, "count") == prev)
				continue;
			printf(" le %s: %lld", js(b, "le"), ji(b, "count") - prev);
			prev = ji(b, "count");
		}
		printf("\n");
	}
	if (ji(p, "refusedButWritten"))
		printf("  %lld refused allocations succeeded in the log (no pending time: the log cannot say when they "
		       "would have)\n", ji(p, "refusedButWritten"));
	if (!json_array_size(claims))
		return;
	printf("claims still refused at the end of the log\n");
	text = json_dumps(claims, JSON_COMPACT);
	if (!text || pending_print_claims(stdout, text, strlen(text), err, sizeof(err)))
		printf("  (not listed: %s)\n", text ? err : "out of memory");
	free(text);
}

/* A report built as JSON: printed as it is for --output json (*rep stays
 * NULL), else read back for the text, JUnit or Markdown printers. 0, or
 * -EPROTO said on stderr (cmd names the command). */
static int report_out(const char *cmd, const struct buf *out, bool json, json_t **rep)
{
	json_error_t jerr;

	*rep = NULL;
	if (json) {
		fwrite(buf_cstr(out), 1, buf_len(out), stdout);
		fputc('\n', stdout);
		return 0;
	}
	*rep = json_loadb(buf_cstr(out), buf_len(out), 0, &jerr);
	if (!*rep) {
		fprintf(stderr, "dra-guard %s: internal: the report does not read back: %s\n", cmd, jerr.text);
		return -EPROTO;
	}
	return 0;
}

static void print_text(json_t *rep, const struct ledger *l)
{
	json_t *w = json_object_get(rep, "window"), *in = json_object_get(rep, "input");
	json_t *wr = json_object_get(rep, "writes"), *nj = json_object_get(wr, "notJudged");
	json_t *dv = json_object_get(rep, "divergence"), *fz = json_object_get(rep, "freeze");
	json_t *x, *e, *lc = json_object_get(dv, "longestClean");
	size_t i, j;

	printf("replay of %lld lines (%lld bytes), %s to %s\n", ji(w, "lines"), ji(w, "bytes"),
	       json_is_string(json_object_get(w, "from")) ? js(w, "from") : "-",
	       json_is_string(json_object_get(w, "to")) ? js(w, "to") : "-");
	printf("  %lld writes of the guarded resources (%lld succeeded, %lld failed); %lld other lines skipped; "
	       "%lld corrupt; %lld out of order\n", ji(wr, "total"), ji(wr, "succeeded"), ji(wr, "failed"),
	       ji(in, "skipped"), ji(in, "corrupt"), ji(in, "outOfOrder"));
	printf("  judged %lld: would deny %lld, would warn %lld; %lld that succeeded would be refused; "
	       "not judged %lld (old object unknown) + %lld (object not in the log); undecidable %lld\n",
	       ji(wr, "judged"), ji(wr, "wouldDeny"), ji(wr, "wouldWarn"), ji(wr, "wouldRefuse"),
	       ji(nj, "oldObjectUnknown"), ji(nj, "objectNotRecorded"), ji(wr, "undecidable"));
	if (ji(wr, "notApplied"))
		printf("  %lld writes not applied to the view; the first: %s\n", ji(wr, "notApplied"),
		       js(wr, "firstNotApplied"));
	json_array_foreach(json_object_get(in, "corruptLines"), i, x)
		printf("  corrupt line %lld: %s\n", ji(x, "line"), js(x, "error"));
	printf("\nrules\n");
	if (json_array_size(json_object_get(rep, "rules")) == 0)
		printf("  (no rule objected to any write)\n");
	json_array_foreach(json_object_get(rep, "rules"), i, x) {
		printf("  %-28s would deny %lld, would warn %lld, dryrun %lld\n", js(x, "rule"), ji(x, "wouldDeny"),
		       ji(x, "wouldWarn"), ji(x, "dryrun"));
		json_array_foreach(json_object_get(x, "events"), j, e) {
			printf("    %s ", js(e, "action"));
			print_event(stdout, e, "");
		}
	}
	json_array_foreach(json_object_get(rep, "undecidable"), i, x)
		print_event(stdout, x, "  undecidable: ");
	if (json_array_size(json_object_get(rep, "wouldRefuse"))) {
		printf("\nwrites that succeeded and the policy would refuse\n");
		json_array_foreach(json_object_get(rep, "wouldRefuse"), i, x)
			print_event(stdout, x, "  ");
	}
	printf("\nfreeze: %lld changes, %s at the end\n", ji(fz, "changes"),
	       json_is_true(json_object_get(fz, "frozenAtEnd")) ? "on" : "off");
	json_array_foreach(json_object_get(fz, "events"), i, x)
		printf("  %s at %s\n", json_is_true(json_object_get(x, "freeze")) ? "on " : "off", js(x, "at"));
	print_pending(json_object_get(rep, "pending"));
	printf("\nledger: %lld samples; %lld divergences that outlasted the settle window (%s); at most %lld "
	       "overcommitted and %lld diverging nodes; admitted: %lld duplicate allocations, %lld from a stale pool, "
	       "%lld NUMA splits\n", ji(dv, "samples"), ji(dv, "divergentIntervals"), js(dv, "settleWindow"),
	       ji(dv, "maxOvercommittedNodes"), ji(dv, "maxDivergingNodes"), ji(dv, "admittedDuplicates"),
	       ji(dv, "admittedStalePoolAllocations"), ji(dv, "admittedNumaSplits"));
	printf("  longest window without divergence: %.3fs (%s to %s)\n",
	       json_real_value(json_object_get(lc, "seconds")),
	       json_is_string(json_object_get(lc, "from")) ? js(lc, "from") : "-",
	       json_is_string(json_object_get(lc, "to")) ? js(lc, "to") : "-");
	json_array_foreach(json_object_get(dv, "timeline"), i, x) {
		if (!ji(x, "overcommittedNodes") && !ji(x, "divergingNodes"))
			continue;
		printf("  %s to %s: %lld overcommitted, %lld diverging%s:", js(x, "from"), js(x, "to"),
		       ji(x, "overcommittedNodes"), ji(x, "divergingNodes"),
		       json_is_true(json_object_get(x, "settled")) ? "" : " (within the settle window)");
		json_array_foreach(json_object_get(x, "nodes"), j, e)
			printf(" %s", json_string_value(e));
		printf("\n");
	}
	if (l) {
		struct buf t;

		buf_init(&t, (size_t)1 << 30);
		printf("\nledger at the end\n");
		if (ledger_table(l, (struct str){ "", 0 }, true, &t) == 0)
			fwrite(buf_cstr(&t), 1, buf_len(&t), stdout);
		buf_free(&t);
	}
}

static void xml(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			fputc((unsigned char)*s < 0x20 && *s != '\n' ? ' ' : *s, f);
		}
	}
}

static void print_junit(json_t *rep)
{
	json_t *rules = json_object_get(rep, "rules"), *x, *e, *dv = json_object_get(rep, "divergence");
	json_t *in = json_object_get(rep, "input");
	size_t i, j, failures = 0;
	long long div = ji(dv, "divergentIntervals") + ji(dv, "admittedDuplicates") +
			ji(dv, "admittedStalePoolAllocations") + ji(dv, "admittedNumaSplits");

	json_array_foreach(rules, i, x)
		failures += ji(x, "wouldDeny") > 0;
	failures += div > 0;
	printf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	printf("<testsuite name=\"dra-guard replay\" tests=\"%zu\" failures=\"%zu\" errors=\"%d\">\n",
	       json_array_size(rules) + 2, failures, ji(in, "corrupt") > 0);
	json_array_foreach(rules, i, x) {
		printf("  <testcase classname=\"rule\" name=\"");
		xml(stdout, js(x, "rule"));
		printf("\">\n");
		if (ji(x, "wouldDeny"))
			printf("    <failure message=\"would deny %lld writes\">", ji(x, "wouldDeny"));
		else
			printf("    <system-out>");
		json_array_foreach(json_object_get(x, "events"), j, e) {
			char line[2048];

			snprintf(line, sizeof(line), "%s line %lld %s %s %s/%s/%s by %s: %s\n", js(e, "action"),
				 ji(e, "line"), js(e, "time"), js(e, "operation"), js(e, "resource"), js(e, "namespace"),
				 js(e, "name"), js(e, "user"), js(e, "message"));
			xml(stdout, line);
		}
		printf(ji(x, "wouldDeny") ? "</failure>\n" : "</system-out>\n");
		printf("  </testcase>\n");
	}
	printf("  <testcase classname=\"ledger\" name=\"divergence\">\n");
	if (div)
		printf("    <failure message=\"%lld divergences\">%lld settled divergent intervals, %lld duplicate "
		       "allocations, %lld allocations from a stale pool, %lld NUMA splits admitted</failure>\n", div,
		       ji(dv, "divergentIntervals"), ji(dv, "admittedDuplicates"), ji(dv, "admittedStalePoolAllocations"),
		       ji(dv, "admittedNumaSplits"));
	printf("  </testcase>\n");
	printf("  <testcase classname=\"input\" name=\"corrupt lines\">\n");
	if (ji(in, "corrupt")) {
		printf("    <error message=\"%lld corrupt lines\">", ji(in, "corrupt"));
		json_array_foreach(json_object_get(in, "corruptLines"), i, x) {
			char line[512];

			snprintf(line, sizeof(line), "line %lld: %s\n", ji(x, "line"), js(x, "error"));
			xml(stdout, line);
		}
		printf("</error>\n");
	}
	printf("  </testcase>\n");
	printf("</testsuite>\n");
}

static const char *md_title(const char *name)
{
	static const char *const titles[][2] = {
		{ "driverCoverage", "Driver coverage" }, { "rollbackDrill", "Rollback drill" },
		{ "restartsAndUpgrades", "Restarts and upgrades" }, { "zeroDivergenceWindow", "Zero-divergence window" },
		{ "pendingSLO", "Pending SLO" }, { "capacitySLO", "Capacity SLO" },
	};
	size_t i;

	for (i = 0; i < sizeof(titles) / sizeof(titles[0]); i++)
		if (strcmp(titles[i][0], name) == 0)
			return titles[i][1];
	return name;
}

/* Markdown cells: no '|' or newline may break the table. */
static void md(const char *s)
{
	for (; *s; s++)
		fputs(*s == '|' ? "\\|" : *s == '\n' ? " " : (char[2]){ *s, 0 }, stdout);
}

static void print_markdown(json_t *rep)
{
	json_t *w = json_object_get(rep, "window"), *c, *ev, *x;
	size_t i, j;
	bool go = strcmp(js(rep, "verdict"), "go") == 0;

	printf("# dra-guard readiness: %s\n\n", go ? "GO" : "NO-GO");
	printf("Window %s to %s (%.0f s): %lld audit lines, %lld writes of the resources the guard reads, "
	       "%lld corrupt lines. Policy sha256 `%.12s`.\n\n",
	       json_is_string(json_object_get(w, "from")) ? js(w, "from") : "-",
	       json_is_string(json_object_get(w, "to")) ? js(w, "to") : "-",
	       json_real_value(json_object_get(w, "seconds")), ji(w, "lines"), ji(w, "writes"), ji(w, "corruptLines"),
	       js(rep, "policy"));
	printf("| Criterion | Verdict | Evidence |\n|---|---|---|\n");
	json_array_foreach(json_object_get(rep, "criteria"), i, c) {
		printf("| %s | **%s** | ", md_title(js(c, "name")), strcmp(js(c, "verdict"), "go") == 0 ? "go" : "NO-GO");
		md(js(c, "summary"));
		printf(" |\n");
	}
	json_array_foreach(json_object_get(rep, "criteria"), i, c) {
		const char *name = js(c, "name");

		ev = json_object_get(c, "evidence");
		printf("\n## %s: %s\n\n", md_title(name), strcmp(js(c, "verdict"), "go") == 0 ? "go" : "NO-GO");
		if (strcmp(name, "driverCoverage") == 0) {
			printf("| Driver | Slice writes | Refused | Published mappings | First refused |\n|---|---|---|---|---|\n");
			json_array_foreach(json_object_get(ev, "drivers"), j, x) {
				json_t *f = json_object_get(x, "firstRefused");

				printf("| ");
				md(js(x, "name"));
				printf(" | %lld | %lld | %s | ", ji(x, "sliceWrites"), ji(x, "refused"),
				       json_is_true(json_object_get(x, "publishedMappings")) ? "yes" : "no");
				if (f)
					printf("line %lld, %s", ji(f, "line"), js(f, "rule"));
				printf(" |\n");
			}
		} else if (strcmp(name, "rollbackDrill") == 0) {
			if (json_array_size(json_object_get(ev, "drills")) == 0)
				printf("No freeze was turned on and off in the window.\n");
			json_array_foreach(json_object_get(ev, "drills"), j, x)
				printf("- freeze on %s, off %s: %s\n", js(x, "on"), js(x, "off"),
				       json_is_true(json_object_get(x, "clean")) ? "no divergence through it"
										: "the ledger diverged during it");
			if (json_is_true(json_object_get(ev, "frozenAtEnd")))
				printf("- a freeze is still on at the end of the window\n");
		} else if (strcmp(name, "restartsAndUpgrades") == 0) {
			printf("- pools that came back after all their slices went: %lld\n- generation bumps: %lld\n"
			       "- slice deletions by a kubelet (node restarts): %lld of %lld\n"
			       "- allocations from a pool still settling, admitted: %lld\n- duplicate allocations admitted: %lld\n",
			       ji(ev, "poolsRepublished"), ji(ev, "generationBumps"), ji(ev, "sliceDeletesByKubelet"),
			       ji(ev, "sliceDeletes"), ji(ev, "stalePoolAllocationsAdmitted"), ji(ev, "duplicatesAdmitted"));
		} else if (strcmp(name, "zeroDivergenceWindow") == 0) {
			printf("- longest: %.1f s, %s to %s (required: %lld s)\n- divergences in the window: %lld\n",
			       json_real_value(json_object_get(ev, "seconds")),
			       json_is_string(json_object_get(ev, "from")) ? js(ev, "from") : "-",
			       json_is_string(json_object_get(ev, "to")) ? js(ev, "to") : "-", ji(ev, "requiredSeconds"),
			       ji(ev, "divergences"));
		} else if (strcmp(name, "pendingSLO") == 0) {
			printf("| Pods with claims bound | p50 | p99 | max | still pending |\n|---|---|---|---|---|\n"
			       "| %lld | %.2f s (SLO %lld s) | %.2f s (SLO %lld s) | %.2f s | %lld |\n", ji(ev, "pods"),
			       json_real_value(json_object_get(ev, "p50Seconds")), ji(ev, "sloP50Seconds"),
			       json_real_value(json_object_get(ev, "p99Seconds")), ji(ev, "sloP99Seconds"),
			       json_real_value(json_object_get(ev, "maxSeconds")), ji(ev, "stillPending"));
		} else if (strcmp(name, "capacitySLO") == 0) {
			printf("- ledger samples: %lld\n- most nodes overcommitted at once: %lld\n"
			       "- most nodes within %lld %% of allocatable at once: %lld%s%s\n", ji(ev, "samples"),
			       ji(ev, "maxOvercommittedNodes"), ji(ev, "headroomPercent"), ji(ev, "maxNodesWithinHeadroom"),
			       *js(ev, "example") ? ", e.g. " : "", js(ev, "example"));
		}
	}
}

/* --- main ------------------------------------------------------------------------------------ */

static int load_policy(struct replay_cli *c, struct policy **pol)
{
	char *text = NULL;
	size_t len = 0;
	int rc;

	if (!c->policy_path)
		return policy_builtin(pol) == 0 ? 0 : (fprintf(stderr, "dra-guard replay: out of memory\n"), -ENOMEM);
	rc = fileio_read(c->policy_path, 4 * 1024 * 1024, &text, &len);
	if (rc) {
		fprintf(stderr, "dra-guard replay: --policy %s: %s\n", c->policy_path, strerror(-rc));
		return rc;
	}
	rc = dryrun_policy_load(c->policy_path, "dra-guard replay: --policy ", text, len, pol);
	free(text);
	return rc;
}

static int load_view(struct replay_cli *c, struct replay *r)
{
	char *text = NULL, err[512];
	size_t len = 0;
	int rc = fileio_read(c->view_path, REPLAY_MAX_DUMP, &text, &len);

	if (rc) {
		fprintf(stderr, "dra-guard replay: --view %s: %s\n", c->view_path, strerror(-rc));
		return rc;
	}
	/* Without --view-time the dump is taken as existing since long before the log. */
	rc = replay_seed(r, text, len, c->view_ns ? c->view_ns : 1, err, sizeof(err));
	free(text);
	if (rc)
		fprintf(stderr, "dra-guard replay: --view %s: %s\n", c->view_path,
			rc == -EBADMSG ? err : rc == -E2BIG ? "over a cap (--max-state)" : "out of memory");
	return rc;
}

static int run(int argc, char **argv, bool readiness)
{
	struct replay_cli c;
	struct policy *pol = NULL;
	struct replay *r = NULL;
	struct reader rd;
	struct replay_totals t;
	struct buf out;
	json_t *rep = NULL;
	size_t i;
	int rc, code = 2;
	bool unreadable = false;

	/* The ledger is rebuilt every sample and freed: without these glibc
	 * gives the memory back to the kernel and asks again each time (brk
	 * and TLB flushes were a fifth of the CPU). */
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	memset(&c, 0, sizeof(c));
	memset(&rd, 0, sizeof(rd));
	buf_init(&out, (size_t)1 << 31);
	replay_options_default(&c.o);
	c.warn_exit_code = -1;
	c.readiness = readiness;
	rc = parse_args(&c, argc, argv);
	if (rc >= 0)
		return rc;
	if (load_policy(&c, &pol))
		goto out;
	c.o.policy = pol;
	if (replay_new(&c.o, &r)) {
		fprintf(stderr, "dra-guard replay: out of memory\n");
		goto out;
	}
	if (c.view_path && load_view(&c, r))
		goto out;
	rd.cap = c.o.max_line + 2 * REPLAY_CHUNK;
	rd.data = malloc(rd.cap);
	if (!rd.data) {
		fprintf(stderr, "dra-guard replay: out of memory\n");
		goto out;
	}
	for (i = 0; i < c.nlogs; i++) {
		rc = replay_log(r, &c.o, c.logs[i], &rd);
		if (rc == 2) {
			unreadable = true;
			continue;
		}
		if (rc)
			break;
	}
	if (rc == 0 || rc == 2)
		rc = replay_finish(r);
	if (rc < 0) {
		if (rc == -E2BIG && *replay_cap(r))
			fprintf(stderr, "dra-guard replay: %s was passed (--max-pending %u); the replay stopped\n",
				replay_cap(r), c.o.max_pending);
		else
			fprintf(stderr, "dra-guard replay: %s\n", rc == -E2BIG
				? "a cap of the view or of the stored objects was passed (--max-state); the replay stopped"
				: "out of memory");
		goto out;
	}
	if (c.readiness) {
		bool go = false;

		rc = replay_readiness_json(r, &out, &go);
		if (rc) {
			fprintf(stderr, "dra-guard readiness: the report could not be written (out of memory)\n");
			goto out;
		}
		if (report_out("readiness", &out, c.output == OUTPUT_JSON, &rep) != 0)
			goto out;
		if (rep)
			print_markdown(rep);
		code = unreadable ? 2 : go ? 0 : 1;
		goto out;
	}
	rc = replay_report_json(r, !c.no_ledger, &out);
	if (rc) {
		fprintf(stderr, "dra-guard replay: the report could not be written (out of memory)\n");
		goto out;
	}
	if (report_out("replay", &out, c.output == OUTPUT_JSON, &rep) != 0)
		goto out;
	if (rep && c.output == OUTPUT_JUNIT)
		print_junit(rep);
	else if (rep)
		print_text(rep, c.no_ledger ? NULL : replay_ledger(r));
	replay_totals(r, &t);
	if (unreadable)
		code = 2;
	else if (t.would_deny)
		code = 1;
	else if ((t.would_warn || t.corrupt || t.divergences || t.overcommitted) && c.warn_exit_code >= 0)
		code = c.warn_exit_code;
	else
		code = 0;
out:
	json_decref(rep);
	buf_free(&out);
	free(rd.data);
	replay_free(r);
	policy_free(pol);
	return code;
}

int replay_main(int argc, char **argv)
{
	return run(argc, argv, false);
}

int readiness_main(int argc, char **argv)
{
	return run(argc, argv, true);
}
