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

#include "cli.h"
#include "dryrun_impl.h"
#include "fileio.h"
#include "jscan.h"
#include "ledger.h"
#include "options.h"
#include "policy.h"
#include "replay.h"
#include "timefmt.h"

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

/* The text of a string as the log wrote it (raw, between its quotes)
 * appended to b, escapes resolved. */
static int add_text(struct buf *b, struct str raw)
{
	struct jscan_str js = { raw.ptr, raw.len, raw.len && memchr(raw.ptr, '\\', raw.len) != NULL };
	struct str dec;
	char *d;
	int rc;

	if (!js.escaped)
		return buf_add_str(b, raw);
	d = malloc(raw.len + 1);
	if (!d)
		return -ENOMEM;
	rc = jscan_str_decode_to(&js, d, raw.len + 1, &dec);
	rc = buf_add_str(b, rc == 0 ? dec : raw);
	free(d);
	return rc;
}

/* A log time; "" for none. */
static const char *time_text(int64_t ns, char t[static 40], const char *none)
{
	if (!ns)
		return none;
	replay_format_time(ns, t);
	return t;
}

/* "line N TIME OP resource/sub ns/name by USER (recorded CODE) [rules]: message" */
static int event_text(struct buf *b, const struct replay_example *e, const char *indent)
{
	char t[40];
	uint32_t i;
	int rc;

	replay_format_time(e->time_ns, t);
	rc = buf_printf(b, "%sline %" PRIu64 " %s %s ", indent, e->line, t, e->operation);
	rc = rc ? rc : add_text(b, e->resource);
	if (rc == 0 && e->subresource.len)
		rc = buf_add_char(b, '/');
	rc = rc ? rc : add_text(b, e->subresource);
	rc = rc ? rc : buf_add_char(b, ' ');
	rc = rc ? rc : add_text(b, e->namespace);
	if (rc == 0 && e->namespace.len)
		rc = buf_add_char(b, '/');
	rc = rc ? rc : add_text(b, e->name);
	rc = rc ? rc : buf_add_cstr(b, " by ");
	rc = rc ? rc : e->user.len ? add_text(b, e->user) : buf_add_char(b, '?');
	rc = rc ? rc : buf_printf(b, " (recorded %d)", e->recorded);
	if (rc == 0 && e->kind == REPLAY_EXAMPLE_REFUSED) {
		rc = buf_add_cstr(b, " [");
		for (i = 0; rc == 0 && i < e->nrules; i++)
			rc = buf_printf(b, "%s%s", i ? ", " : "", rule_name(e->rules[i]));
		rc = rc ? rc : buf_add_char(b, ']');
	}
	rc = rc ? rc : buf_add_cstr(b, ": ");
	rc = rc ? rc : buf_add_str(b, e->message);
	return rc ? rc : buf_add_char(b, '\n');
}

static void print_event(FILE *f, const struct replay_example *e, const char *indent)
{
	struct buf b;

	buf_init(&b, (size_t)16 << 20);
	if (event_text(&b, e, indent) == 0)
		fwrite(buf_cstr(&b), 1, buf_len(&b), f);
	buf_free(&b);
}

/* Why Pods were pending: the live guard's Events by reason, the pending
 * times of the claims they held back, and those still held at the end
 * (as dra-guard pending lists a replica's). */
static void print_pending(const struct replay_report *rep)
{
	uint64_t refusals = 0, allocated = 0;
	size_t i, b;
	char err[256], le[PENDING_LE_MAX], reason[EVENTS_REASON_MAX];
	struct buf claims;

	for (i = 0; i < EVENTS_RULES; i++) {
		refusals += rep->reasons[i].refusals;
		allocated += rep->reasons[i].holds ? rep->reasons[i].allocated : 0;
	}
	printf("\nwhy pending: %" PRIu64 " refusals that emit an Event; %" PRIu64 " claims allocated after a refusal; "
	       "%u still refused at the end\n", refusals, allocated, pending_table_count(rep->held));
	for (i = 0; i < EVENTS_RULES; i++) {
		const struct replay_reason *x = &rep->reasons[i];
		uint64_t prev = 0, cum = 0;

		events_reason(x->rule, reason);
		printf("  %-22s refusals %" PRIu64, reason, x->refusals);
		if (!x->holds) {
			printf(" (a Pod status write: no pending time)\n");
			continue;
		}
		printf(", allocated after %" PRIu64, x->allocated);
		if (x->allocated)
			printf(", %.3fs in all;", x->sum_seconds);
		for (b = 0; b <= PENDING_BUCKETS; b++) {
			cum += x->counts[b];
			if (cum == prev)
				continue;
			pending_bucket_label(b, le);
			printf(" le %s: %" PRIu64, le, cum - prev);
			prev = cum;
		}
		printf("\n");
	}
	if (rep->refused_but_written)
		printf("  %" PRIu64 " refused allocations succeeded in the log (no pending time: the log cannot say when "
		       "they would have)\n", rep->refused_but_written);
	if (!pending_table_count(rep->held))
		return;
	printf("claims still refused at the end of the log\n");
	/* the same printer as dra-guard pending's, which reads the list a replica serves */
	buf_init(&claims, (size_t)1 << 31);
	if (pending_table_json(rep->held, rep->held_at_ns, &claims) != 0)
		printf("  (not listed: out of memory)\n");
	else if (pending_print_claims(stdout, buf_cstr(&claims), buf_len(&claims), err, sizeof(err)))
		printf("  (not listed: %s)\n", err);
	buf_free(&claims);
}

static void print_text(const struct replay_report *rep)
{
	char t1[40], t2[40], settle[TIMEFMT_MAX];
	uint32_t i, j;
	bool any = false;

	printf("replay of %" PRIu64 " lines (%" PRIu64 " bytes), %s to %s\n", rep->lines, rep->bytes,
	       time_text(rep->from_ns, t1, "-"), time_text(rep->to_ns, t2, "-"));
	printf("  %" PRIu64 " writes of the guarded resources (%" PRIu64 " succeeded, %" PRIu64 " failed); %" PRIu64
	       " other lines skipped; %" PRIu64 " corrupt; %" PRIu64 " out of order\n", rep->writes, rep->succeeded,
	       rep->failed, rep->skipped, rep->corrupt, rep->out_of_order);
	printf("  judged %" PRIu64 ": would deny %" PRIu64 ", would warn %" PRIu64 "; %" PRIu64 " that succeeded would "
	       "be refused; not judged %" PRIu64 " (old object unknown) + %" PRIu64 " (object not in the log); "
	       "undecidable %" PRIu64 "\n", rep->judged, rep->would_deny, rep->would_warn, rep->would_refuse,
	       rep->not_judged_old, rep->not_judged_patch, rep->undecidable);
	if (rep->not_applied)
		printf("  %" PRIu64 " writes not applied to the view; the first: %s\n", rep->not_applied,
		       rep->first_not_applied);
	for (i = 0; i < rep->ncorrupt_lines; i++)
		printf("  corrupt line %" PRIu64 ": %s\n", rep->corrupt_lines[i].line, rep->corrupt_lines[i].error);
	printf("\nrules\n");
	for (i = 0; i < RULE_COUNT; i++)
		any |= rep->rules[i].deny || rep->rules[i].warn || rep->rules[i].dryrun;
	if (!any)
		printf("  (no rule objected to any write)\n");
	for (i = 0; i < RULE_COUNT; i++) {
		const struct replay_rule_stats *st = &rep->rules[i];

		if (!st->deny && !st->warn && !st->dryrun)
			continue;
		printf("  %-28s would deny %" PRIu64 ", would warn %" PRIu64 ", dryrun %" PRIu64 "\n",
		       rule_name((enum rule_id)i), st->deny, st->warn, st->dryrun);
		for (j = 0; j < st->nexamples; j++) {
			printf("    %s ", action_name(st->examples[j].action));
			print_event(stdout, &st->examples[j], "");
		}
	}
	for (i = 0; i < rep->nundecidable_ex; i++)
		print_event(stdout, &rep->undecidable_ex[i], "  undecidable: ");
	if (rep->nrefused) {
		printf("\nwrites that succeeded and the policy would refuse\n");
		for (i = 0; i < rep->nrefused; i++)
			print_event(stdout, &rep->refused[i], "  ");
	}
	printf("\nfreeze: %" PRIu64 " changes, %s at the end\n", rep->freeze_changes, rep->frozen_at_end ? "on" : "off");
	for (i = 0; i < rep->nfreeze; i++)
		printf("  %s at %s\n", rep->freeze[i].on ? "on " : "off", time_text(rep->freeze[i].at, t1, ""));
	print_pending(rep);
	timefmt_duration(rep->settle_ns, settle);
	printf("\nledger: %" PRIu64 " samples; %" PRIu64 " divergences that outlasted the settle window (%s); at most %u "
	       "overcommitted and %u diverging nodes; admitted: %" PRIu64 " duplicate allocations, %" PRIu64 " from a "
	       "stale pool, %" PRIu64 " NUMA splits\n", rep->samples, rep->divergent_intervals, settle,
	       rep->max_overcommitted, rep->max_diverging, rep->admitted_duplicates, rep->admitted_stale_pool,
	       rep->admitted_numa_splits);
	printf("  longest window without divergence: %.3fs (%s to %s)\n",
	       (double)(rep->clean_to_ns - rep->clean_from_ns) / 1e9, time_text(rep->clean_from_ns, t1, "-"),
	       time_text(rep->clean_to_ns, t2, "-"));
	for (i = 0; i < rep->ntimeline; i++) {
		const struct replay_interval *iv = &rep->timeline[i];
		const char *p = iv->nodes;

		if (!iv->overcommitted && !iv->diverging)
			continue;
		printf("  %s to %s: %u overcommitted, %u diverging%s:", time_text(iv->from_ns, t1, ""),
		       time_text(iv->to_ns, t2, ""), iv->overcommitted, iv->diverging,
		       replay_interval_settled(rep, iv) ? "" : " (within the settle window)");
		while (*p) {
			const char *c = strchr(p, ',');
			int n = c ? (int)(c - p) : (int)strlen(p);

			printf(" %.*s", n, p);
			p += n + (c != NULL);
		}
		printf("\n");
	}
	if (rep->ledger) {
		struct buf t;

		buf_init(&t, (size_t)1 << 30);
		printf("\nledger at the end\n");
		if (ledger_table(rep->ledger, (struct str){ "", 0 }, true, &t) == 0)
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

/* s cut as snprintf() into n bytes would cut it, then escaped for XML. */
static void xml_cut(FILE *f, struct buf *b, size_t n)
{
	if (buf_len(b) >= n)
		buf_truncate(b, n - 1);
	xml(f, buf_cstr(b));
}

static void print_junit(const struct replay_report *rep)
{
	uint32_t i, j, nrules = 0;
	size_t failures = 0;
	uint64_t div = rep->divergent_intervals + rep->admitted_duplicates + rep->admitted_stale_pool +
		       rep->admitted_numa_splits;
	struct buf line;

	buf_init(&line, (size_t)16 << 20);
	for (i = 0; i < RULE_COUNT; i++) {
		const struct replay_rule_stats *st = &rep->rules[i];

		nrules += st->deny || st->warn || st->dryrun;
		failures += st->deny > 0;
	}
	failures += div > 0;
	printf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	printf("<testsuite name=\"dra-guard replay\" tests=\"%u\" failures=\"%zu\" errors=\"%d\">\n", nrules + 2,
	       failures, rep->corrupt > 0);
	for (i = 0; i < RULE_COUNT; i++) {
		const struct replay_rule_stats *st = &rep->rules[i];

		if (!st->deny && !st->warn && !st->dryrun)
			continue;
		printf("  <testcase classname=\"rule\" name=\"");
		xml(stdout, rule_name((enum rule_id)i));
		printf("\">\n");
		if (st->deny)
			printf("    <failure message=\"would deny %" PRIu64 " writes\">", st->deny);
		else
			printf("    <system-out>");
		for (j = 0; j < st->nexamples; j++) {
			const struct replay_example *e = &st->examples[j];
			char t[40];
			int rc;

			replay_format_time(e->time_ns, t);
			buf_reset(&line);
			rc = buf_printf(&line, "%s line %" PRIu64 " %s %s ", action_name(e->action), e->line, t,
					e->operation);
			rc = rc ? rc : add_text(&line, e->resource);
			rc = rc ? rc : buf_add_char(&line, '/');
			rc = rc ? rc : add_text(&line, e->namespace);
			rc = rc ? rc : buf_add_char(&line, '/');
			rc = rc ? rc : add_text(&line, e->name);
			rc = rc ? rc : buf_add_cstr(&line, " by ");
			rc = rc ? rc : add_text(&line, e->user);
			rc = rc ? rc : buf_add_cstr(&line, ": ");
			rc = rc ? rc : buf_add_str(&line, e->message);
			rc = rc ? rc : buf_add_char(&line, '\n');
			if (rc == 0)
				xml_cut(stdout, &line, 2048);
		}
		printf(st->deny ? "</failure>\n" : "</system-out>\n");
		printf("  </testcase>\n");
	}
	printf("  <testcase classname=\"ledger\" name=\"divergence\">\n");
	if (div)
		printf("    <failure message=\"%" PRIu64 " divergences\">%" PRIu64 " settled divergent intervals, %" PRIu64
		       " duplicate allocations, %" PRIu64 " allocations from a stale pool, %" PRIu64 " NUMA splits "
		       "admitted</failure>\n", div, rep->divergent_intervals, rep->admitted_duplicates,
		       rep->admitted_stale_pool, rep->admitted_numa_splits);
	printf("  </testcase>\n");
	printf("  <testcase classname=\"input\" name=\"corrupt lines\">\n");
	if (rep->corrupt) {
		printf("    <error message=\"%" PRIu64 " corrupt lines\">", rep->corrupt);
		for (i = 0; i < rep->ncorrupt_lines; i++) {
			buf_reset(&line);
			if (buf_printf(&line, "line %" PRIu64 ": %s\n", rep->corrupt_lines[i].line,
				       rep->corrupt_lines[i].error) == 0)
				xml_cut(stdout, &line, 512);
		}
		printf("</error>\n");
	}
	printf("  </testcase>\n");
	printf("</testsuite>\n");
	buf_free(&line);
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

static void md_section(const struct replay_criterion *c)
{
	printf("\n## %s: %s\n\n", md_title(c->name), c->go ? "go" : "NO-GO");
}

static void print_markdown(const struct replay_readiness *rep)
{
	const struct replay_criterion *all[] = { &rep->drivers.c, &rep->drill.c, &rep->restarts.c, &rep->window.c,
						 &rep->pending.c, &rep->capacity.c };
	char t1[40], t2[40];
	size_t i;

	printf("# dra-guard readiness: %s\n\n", rep->go ? "GO" : "NO-GO");
	printf("Window %s to %s (%.0f s): %" PRIu64 " audit lines, %" PRIu64 " writes of the resources the guard reads, "
	       "%" PRIu64 " corrupt lines. Policy sha256 `%.12s`.\n\n", time_text(rep->from_ns, t1, "-"),
	       time_text(rep->to_ns, t2, "-"), replay_seconds_written((double)(rep->to_ns - rep->from_ns) / 1e9),
	       rep->lines, rep->writes, rep->corrupt_lines, rep->policy);
	printf("| Criterion | Verdict | Evidence |\n|---|---|---|\n");
	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		printf("| %s | **%s** | ", md_title(all[i]->name), all[i]->go ? "go" : "NO-GO");
		md(all[i]->summary);
		printf(" |\n");
	}

	md_section(&rep->drivers.c);
	printf("| Driver | Slice writes | Refused | Published mappings | First refused |\n|---|---|---|---|---|\n");
	for (i = 0; i < rep->drivers.ndrivers; i++) {
		const struct replay_driver *d = &rep->drivers.drivers[i];

		printf("| ");
		md(d->name);
		printf(" | %" PRIu64 " | %" PRIu64 " | %s | ", d->writes, d->denied, d->mappings ? "yes" : "no");
		if (d->denied)
			printf("line %" PRIu64 ", %s", d->first_denied_line, d->first_denied_rule);
		printf(" |\n");
	}

	md_section(&rep->drill.c);
	if (rep->drill.ndrills == 0)
		printf("No freeze was turned on and off in the window.\n");
	for (i = 0; i < rep->drill.ndrills; i++)
		printf("- freeze on %s, off %s: %s\n", time_text(rep->drill.drills[i].on_ns, t1, ""),
		       time_text(rep->drill.drills[i].off_ns, t2, ""),
		       rep->drill.drills[i].clean ? "no divergence through it" : "the ledger diverged during it");
	if (rep->drill.frozen_at_end)
		printf("- a freeze is still on at the end of the window\n");

	md_section(&rep->restarts.c);
	printf("- pools that came back after all their slices went: %" PRIu64 "\n- generation bumps: %" PRIu64 "\n"
	       "- slice deletions by a kubelet (node restarts): %" PRIu64 " of %" PRIu64 "\n"
	       "- allocations from a pool still settling, admitted: %" PRIu64 "\n- duplicate allocations admitted: %"
	       PRIu64 "\n", rep->restarts.pools_republished, rep->restarts.generation_bumps,
	       rep->restarts.slice_deletes_by_kubelet, rep->restarts.slice_deletes, rep->restarts.stale_pool_admitted,
	       rep->restarts.duplicates_admitted);

	md_section(&rep->window.c);
	printf("- longest: %.1f s, %s to %s (required: %u s)\n- divergences in the window: %" PRIu64 "\n",
	       replay_seconds_written((double)(rep->window.to_ns - rep->window.from_ns) / 1e9),
	       time_text(rep->window.from_ns, t1, "-"), time_text(rep->window.to_ns, t2, "-"),
	       rep->window.required_seconds, rep->window.divergences);

	md_section(&rep->pending.c);
	printf("| Pods with claims bound | p50 | p99 | max | still pending |\n|---|---|---|---|---|\n"
	       "| %" PRIu64 " | %.2f s (SLO %u s) | %.2f s (SLO %u s) | %.2f s | %" PRIu64 " |\n", rep->pending.pods,
	       replay_seconds_written(rep->pending.p50_seconds < 0 ? 0 : rep->pending.p50_seconds),
	       rep->pending.slo_p50_seconds,
	       replay_seconds_written(rep->pending.p99_seconds < 0 ? 0 : rep->pending.p99_seconds),
	       rep->pending.slo_p99_seconds, replay_seconds_written(rep->pending.max_seconds),
	       rep->pending.still_pending);

	md_section(&rep->capacity.c);
	printf("- ledger samples: %" PRIu64 "\n- most nodes overcommitted at once: %u\n"
	       "- most nodes within %u %% of allocatable at once: %u%s%s\n", rep->capacity.samples,
	       rep->capacity.max_overcommitted, rep->capacity.headroom_percent, rep->capacity.max_within_headroom,
	       *rep->capacity.example ? ", e.g. " : "", rep->capacity.example);
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
	struct replay_report report;
	struct buf out;
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
		struct replay_readiness rd_rep;

		replay_readiness_get(r, &rd_rep);
		if (c.output == OUTPUT_JSON) {
			rc = replay_readiness_write_json(&rd_rep, &out);
			if (rc) {
				fprintf(stderr, "dra-guard readiness: the report could not be written (out of memory)\n");
				goto out;
			}
			fwrite(buf_cstr(&out), 1, buf_len(&out), stdout);
			fputc('\n', stdout);
		} else {
			print_markdown(&rd_rep);
		}
		code = unreadable ? 2 : rd_rep.go ? 0 : 1;
		goto out;
	}
	replay_report_get(r, !c.no_ledger, &report);
	if (c.output == OUTPUT_JSON) {
		rc = replay_report_write_json(&report, &out);
		if (rc) {
			fprintf(stderr, "dra-guard replay: the report could not be written (out of memory)\n");
			goto out;
		}
		fwrite(buf_cstr(&out), 1, buf_len(&out), stdout);
		fputc('\n', stdout);
	} else if (c.output == OUTPUT_JUNIT) {
		print_junit(&report);
	} else {
		print_text(&report);
	}
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
