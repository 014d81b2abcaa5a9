/* test_options.c - the command-line flag tables (webhook/base/options.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "serve_config.h"

struct cfg {
	bool sw;
	unsigned n;
	uint8_t small;
	size_t bytes;
	unsigned secs;
	unsigned ms;
	int64_t ns;
	int64_t when;
	const char *str;
	char text[8];
	int mode;
	const char *items[3];
	size_t nitems;
	char a[16], b[16];
	int custom;
};

static int set_custom(void *cfg, const struct options_entry *e, const char *v, char *why, size_t n)
{
	struct cfg *c = cfg;

	(void)e;
	if (!v) {
		c->custom = 42;     /* the computed default */
		return 0;
	}
	if (strcmp(v, "odd") != 0 && strcmp(v, "even") != 0) {
		snprintf(why, n, "'%s' is neither odd nor even", v);
		return -EINVAL;
	}
	c->custom = v[0] == 'o' ? 1 : 2;
	return 0;
}

static const struct options_choice modes[] = {
	{ "a", 1, false }, { "b", 2, false }, { "c", 3, false }, { "bee", 2, true }, { NULL, 0, false },
};

#define C(field) OPTIONS_AT(struct cfg, field)

static const struct options_entry entries[] = {
	{ .name = "sw", .type = OPTIONS_BOOL, C(sw), .help = "a switch" },
	{ .name = "n", .type = OPTIONS_UINT, C(n), .min = 1, .max = 10, .def = "5", .env = "T_N", .arg = "N",
	  .help = "a number from 1 to 10" },
	{ .name = "small", .type = OPTIONS_UINT, C(small), .min = 0, .max = 255, .arg = "N", .help = "a byte" },
	{ .name = "bytes", .type = OPTIONS_SIZE, C(bytes), .min = 1024, .max = 4 << 20, .def = "1Mi", .arg = "SIZE",
	  .help = "a size" },
	{ .name = "secs", .type = OPTIONS_DURATION, C(secs), .min = OPTIONS_NS_PER_S, .max = 3600 * OPTIONS_NS_PER_S,
	  .def = "30s", .arg = "DURATION", .help = "seconds" },
	{ .name = "ms", .type = OPTIONS_DURATION, C(ms), .unit_ns = OPTIONS_NS_PER_MS, .max = 10 * OPTIONS_NS_PER_S,
	  .arg = "DURATION", .help = "milliseconds" },
	{ .name = "ns", .type = OPTIONS_DURATION, C(ns), .unit_ns = 1, .max = 9000000000000000000ULL,
	  .arg = "DURATION", .help = "nanoseconds" },
	{ .name = "when", .type = OPTIONS_TIME, C(when), .min = 1, .arg = "TIME", .help = "a time" },
	{ .name = "str", .type = OPTIONS_STRING, C(str), .flags = OPTIONS_NONEMPTY, .arg = "S", .help = "a string" },
	{ .name = "text", .type = OPTIONS_TEXT, C(text), .arg = "T", .help = "a short text" },
	{ .name = "mode", .type = OPTIONS_ENUM, C(mode), .choices = modes, .flags = OPTIONS_NOCASE, .def = "a",
	  .arg = "M", .help = "a, b or c" },
	{ .name = "item", .type = OPTIONS_LIST, OPTIONS_LIST_AT(struct cfg, items, nitems), .arg = "X",
	  .help = "repeatable" },
	{ .name = "alpha", .type = OPTIONS_TEXT, C(a), .group = 1, .flags = OPTIONS_EMPTY_UNSET, .env = "T_A",
	  .arg = "A", .help = "one of two" },
	{ .name = "beta", .type = OPTIONS_TEXT, C(b), .group = 1, .flags = OPTIONS_EMPTY_UNSET, .env = "T_B",
	  .arg = "B", .help = "the other of two" },
	{ .name = "custom", .type = OPTIONS_CUSTOM, .set = set_custom, .flags = OPTIONS_COMPUTED, .arg = "P",
	  .def_help = "computed", .help = "odd or even" },
	{ .name = "only-two", .type = OPTIONS_BOOL, C(sw), .only = 2, .help = "known to variant 2 only" },
	{ .name = "hidden-in-two", .type = OPTIONS_BOOL, C(sw), .hide = 2,
	  .help = "known to both, listed by variant 1 only" },
};

static const struct options_command command = {
	.name = "test", .synopsis = "[FLAGS] ARG...", .intro = "Tests the tables.\n", .outro = "Exit: 0.\n",
	.entries = entries, .nentries = sizeof(entries) / sizeof(entries[0]), .max_args = -1, .variant = 1,
};

static const char *const *fake_env;

static char *env_lookup(const char *name)
{
	size_t n = strlen(name), i;

	for (i = 0; fake_env && fake_env[i]; i++)
		if (strncmp(fake_env[i], name, n) == 0 && fake_env[i][n] == '=')
			return (char *)fake_env[i] + n + 1;
	return NULL;
}

/* A command line given as one string split on spaces ("" an empty one). */
struct line {
	char copy[512];
	char *argv[64];
	int argc;
};

static void split(struct line *l, const char *text)
{
	char *tok, *save = NULL;

	l->argc = 0;
	l->argv[l->argc++] = "test";
	snprintf(l->copy, sizeof(l->copy), "%s", text);
	for (tok = strtok_r(l->copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		l->argv[l->argc++] = strcmp(tok, "''") == 0 ? "" : tok;
	l->argv[l->argc] = NULL;
}

static int parse_with(const struct options_command *cmd, const char *text, const char *const *env, struct cfg *c,
		      struct line *l, int *nargs, char *err)
{
	memset(c, 0, sizeof(*c));
	fake_env = env;
	split(l, text);
	return options_parse(cmd, l->argc, l->argv, env_lookup, c, nargs, err);
}

/* Each type: what a value becomes, and what a bad one is told. */
static void test_values_of_each_type(void **state)
{
	static const struct {
		const char *line;
		const char *err;              /* NULL: accepted */
		size_t off, size;             /* the field that must equal want */
		uint64_t want;
	} cases[] = {
		{ "", NULL, C(n), 5 },
		{ "", NULL, C(bytes), 1 << 20 },
		{ "", NULL, C(secs), 30 },
		{ "", NULL, C(mode), 1 },
		{ "", NULL, C(custom), 42 },
		{ "--sw", NULL, C(sw), 1 },
		{ "--sw=false", NULL, C(sw), 0 },
		{ "--sw=1", NULL, C(sw), 1 },
		{ "--sw=maybe", "--sw: 'maybe' is not true or false", 0, 0, 0 },
		{ "--n 7", NULL, C(n), 7 },
		{ "--n=10", NULL, C(n), 10 },
		{ "--n 0", "--n: 0 is out of range (1 to 10)", 0, 0, 0 },
		{ "--n 11", "--n: 11 is out of range (1 to 10)", 0, 0, 0 },
		{ "--n x", "--n: 'x' is not a whole number", 0, 0, 0 },
		{ "--n -1", "--n: '-1' is not a whole number", 0, 0, 0 },
		{ "--n +1", "--n: '+1' is not a whole number", 0, 0, 0 },
		{ "--n 99999999999999999999999", "--n: '99999999999999999999999' is not a whole number", 0, 0, 0 },
		{ "--small 255", NULL, C(small), 255 },
		{ "--small 256", "--small: 256 is out of range (0 to 255)", 0, 0, 0 },
		{ "--bytes 2Mi", NULL, C(bytes), 2 << 20 },
		{ "--bytes 512Ki", NULL, C(bytes), 512 << 10 },
		{ "--bytes 2k", NULL, C(bytes), 2000 },
		{ "--bytes 3M", NULL, C(bytes), 3000000 },
		{ "--bytes 4096", NULL, C(bytes), 4096 },
		{ "--bytes 100", "--bytes: 100 is out of range (1Ki to 4Mi)", 0, 0, 0 },
		{ "--bytes 1Gi", "--bytes: 1Gi is out of range (1Ki to 4Mi)", 0, 0, 0 },
		{ "--bytes 8Mb", "--bytes: '8Mb' is not a size (bytes, or a number with Ki, Mi, Gi, k, M, G)", 0, 0, 0 },
		{ "--bytes Mi", "--bytes: 'Mi' is not a size", 0, 0, 0 },
		{ "--secs 2m", NULL, C(secs), 120 },
		{ "--secs 1h", NULL, C(secs), 3600 },
		{ "--secs 45", NULL, C(secs), 45 },
		{ "--secs 2000ms", NULL, C(secs), 2 },
		{ "--secs 1500ms", "--secs: '1500ms' is not a whole number of 1s", 0, 0, 0 },
		{ "--secs 2h", "--secs: 2h is out of range (1s to 1h)", 0, 0, 0 },
		{ "--secs 0", "--secs: 0 is out of range (1s to 1h)", 0, 0, 0 },
		{ "--secs soon", "--secs: 'soon' is not a duration", 0, 0, 0 },
		{ "--secs -1s", "--secs: '-1s' is not a duration", 0, 0, 0 },
		{ "--secs 5d", "--secs: '5d' is not a duration", 0, 0, 0 },
		{ "--ms 250ms", NULL, C(ms), 250 },
		{ "--ms 1.5s", NULL, C(ms), 1500 },
		{ "--ms 0", NULL, C(ms), 0 },
		{ "--ms 11s", "--ms: 11s is out of range (0 to 10s)", 0, 0, 0 },
		{ "--ms 1.s", "--ms: '1.s' is not a duration", 0, 0, 0 },
		{ "--ns 1m", NULL, C(ns), 60000000000ULL },
		{ "--ns 0.25s", NULL, C(ns), 250000000ULL },
		{ "--when 2026-12-01T10:00:00Z", NULL, C(when), 1796119200000000000ULL },
		{ "--when 2026-12-01T10:00:00+00:00", NULL, C(when), 1796119200000000000ULL },
		{ "--when 1796119200", NULL, C(when), 1796119200000000000ULL },
		{ "--when 0", "--when: 0 is out of range (after 1970-01-01T00:00:00Z)", 0, 0, 0 },
		{ "--when 1969-12-31T23:59:59Z", "--when: 1969-12-31T23:59:59Z is out of range", 0, 0, 0 },
		{ "--when yesterday", "--when: 'yesterday' is not a time (RFC 3339 in UTC", 0, 0, 0 },
		{ "--when 2026-12-01T10:00:00+01:00", "--when: '2026-12-01T10:00:00+01:00' is not a time", 0, 0, 0 },
		{ "--when 2026-12-01T10:00:00.5Z", "--when: '2026-12-01T10:00:00.5Z' is not a time", 0, 0, 0 },
		{ "--when 2026-12-01T10:00:00-00:00", "--when: '2026-12-01T10:00:00-00:00' is not a time", 0, 0, 0 },
		{ "--when 2026-02-29T10:00:00Z", "--when: '2026-02-29T10:00:00Z' is not a time", 0, 0, 0 },
		{ "--when 2026-1-1T10:00:00Z", "--when: '2026-1-1T10:00:00Z' is not a time", 0, 0, 0 },
		{ "--when 2024-02-29T00:00:00Z", NULL, C(when), 1709164800000000000ULL },
		{ "--when 1970-01-01T00:00:01Z", NULL, C(when), 1000000000ULL },
		{ "--when 2300-01-01T00:00:00Z", "--when: 2300-01-01T00:00:00Z is out of range (before 2262-01-01T00:00:00Z)",
		  0, 0, 0 },
		{ "--when 0900-01-01T00:00:00Z", "--when: 0900-01-01T00:00:00Z is out of range (after 1970-01-01T00:00:00Z)",
		  0, 0, 0 },
		{ "--str ''", "--str: the value is empty", 0, 0, 0 },
		{ "--text 1234567", NULL, C(text), '1' },
		{ "--text 12345678", "--text: longer than 7 bytes", 0, 0, 0 },
		{ "--mode b", NULL, C(mode), 2 },
		{ "--mode C", NULL, C(mode), 3 },
		{ "--mode bee", NULL, C(mode), 2 },
		{ "--mode z", "--mode: 'z' is not a, b or c", 0, 0, 0 },
		{ "--custom odd", NULL, C(custom), 1 },
		{ "--custom three", "--custom: 'three' is neither odd nor even", 0, 0, 0 },
	};
	char err[OPTIONS_ERROR_MAX];
	struct line l;
	struct cfg c;
	size_t i;
	int nargs;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = parse_with(&command, cases[i].line, NULL, &c, &l, &nargs, err);
		uint64_t got = 0;

		if (cases[i].err) {
			if (rc != -EINVAL || strncmp(err, cases[i].err, strlen(cases[i].err)) != 0)
				fail_msg("'%s': rc %d, err '%s' (want '%s...')", cases[i].line, rc, err, cases[i].err);
			continue;
		}
		if (rc != 0)
			fail_msg("'%s': rc %d, err '%s'", cases[i].line, rc, err);
		memcpy(&got, (char *)&c + cases[i].off, cases[i].size < 8 ? cases[i].size : 8);
		if (cases[i].off == offsetof(struct cfg, text))
			got = (unsigned char)c.text[0];
		if (got != cases[i].want)
			fail_msg("'%s': %llu, want %llu", cases[i].line, (unsigned long long)got,
				 (unsigned long long)cases[i].want);
	}
}

/* The shape of a command line: unknown flags, missing values, prefixes,
 * --help, --, positional arguments, repeats. */
static void test_command_lines(void **state)
{
	static const struct {
		const char *line;
		int rc;
		const char *err;              /* the message, or its start */
	} cases[] = {
		{ "--nope", -EINVAL, "unknown flag '--nope'" },
		{ "--nope=1", -EINVAL, "unknown flag '--nope'" },
		{ "-x", -EINVAL, "unknown flag '-x'" },
		{ "--", 0, "" },
		{ "--n", -EINVAL, "--n needs a value (N)" },
		{ "--only-two", -EINVAL, "unknown flag '--only-two'" },
		{ "--hidden-in-two", 0, "" },
		{ "--s 1", -EINVAL, "ambiguous flag '--s' (--sw, --small, --secs, --str)" },
		{ "--n 0 --help", 1, "" },
		{ "--help --nope", 1, "" },
		{ "-h", 1, "" },
		{ "-- --help", 0, "" },
		{ "--str --help", 0, "" },
		{ "--n 0 --n 3", -EINVAL, "--n: 0 is out of range" },
		{ "--nope --n 0", -EINVAL, "unknown flag '--nope'" },
		{ "--item a --item b --item c --item d", -EINVAL, "--item: given more than 3 times" },
		{ "--alpha x --beta y", -EINVAL, "--alpha and --beta are exclusive: give one" },
		{ "--alpha x --alpha y", 0, "" },
		{ "--alpha= --beta y", 0, "" },
	};
	char err[OPTIONS_ERROR_MAX];
	struct line l;
	struct cfg c;
	size_t i;
	int nargs;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = parse_with(&command, cases[i].line, NULL, &c, &l, &nargs, err);

		if (rc != cases[i].rc || (rc < 0 && strncmp(err, cases[i].err, strlen(cases[i].err)) != 0))
			fail_msg("'%s': rc %d, err '%s' (want %d '%s')", cases[i].line, rc, err, cases[i].rc,
				 cases[i].err);
	}
}

static void test_repeats_prefixes_and_arguments(void **state)
{
	struct options_command one = command;
	char err[OPTIONS_ERROR_MAX];
	struct line l;
	struct cfg c;
	int nargs;

	(void)state;
	/* A scalar given twice: the last wins; a list keeps every one. */
	assert_int_equal(parse_with(&command, "--n 3 --n 4 --item x --item y", NULL, &c, &l, &nargs, err), 0);
	assert_int_equal(c.n, 4);
	assert_int_equal(c.nitems, 2);
	assert_string_equal(c.items[0], "x");
	assert_string_equal(c.items[1], "y");
	/* A unique prefix is the flag, as getopt_long has it. */
	assert_int_equal(parse_with(&command, "--te abc --cu even", NULL, &c, &l, &nargs, err), 0);
	assert_string_equal(c.text, "abc");
	assert_int_equal(c.custom, 2);
	/* Arguments anywhere, in their order; "-" is one; after --, all are. */
	assert_int_equal(parse_with(&command, "a --n 3 - b -- --n c", NULL, &c, &l, &nargs, err), 0);
	assert_int_equal(nargs, 5);
	assert_string_equal(l.argv[1], "a");
	assert_string_equal(l.argv[2], "-");
	assert_string_equal(l.argv[3], "b");
	assert_string_equal(l.argv[4], "--n");
	assert_string_equal(l.argv[5], "c");
	assert_int_equal(c.n, 3);
	/* A value taken from the next argument is never an argument. */
	assert_int_equal(parse_with(&command, "--str -h x", NULL, &c, &l, &nargs, err), 0);
	assert_string_equal(c.str, "-h");
	assert_int_equal(nargs, 1);
	one.max_args = 1;
	assert_int_equal(parse_with(&one, "a --sw b", NULL, &c, &l, &nargs, err), -EINVAL);
	assert_string_equal(err, "unexpected argument 'b'");
	one.max_args = 0;
	assert_int_equal(parse_with(&one, "-", NULL, &c, &l, &nargs, err), -EINVAL);
	assert_string_equal(err, "unexpected argument '-'");
}

static void test_environment(void **state)
{
	static const char *const env_n[] = { "T_N=6", NULL };
	static const char *const env_bad[] = { "T_N=lots", NULL };
	static const char *const env_a[] = { "T_A=from-env", NULL };
	static const char *const env_both[] = { "T_A=x", "T_B=y", NULL };
	static const char *const env_empty[] = { "T_A=", "T_B=y", NULL };
	char err[OPTIONS_ERROR_MAX];
	struct line l;
	struct cfg c;
	int nargs;

	(void)state;
	assert_int_equal(parse_with(&command, "", env_n, &c, &l, &nargs, err), 0);
	assert_int_equal(c.n, 6);
	/* The command line wins, and then the variable is not even read. */
	assert_int_equal(parse_with(&command, "--n 2", env_bad, &c, &l, &nargs, err), 0);
	assert_int_equal(c.n, 2);
	assert_int_equal(parse_with(&command, "", env_bad, &c, &l, &nargs, err), -EINVAL);
	assert_string_equal(err, "$T_N: --n: 'lots' is not a whole number");
	/* A group's flag on the command line silences the whole group's variables. */
	assert_int_equal(parse_with(&command, "--beta cli", env_a, &c, &l, &nargs, err), 0);
	assert_string_equal(c.a, "");
	assert_string_equal(c.b, "cli");
	assert_int_equal(parse_with(&command, "", env_a, &c, &l, &nargs, err), 0);
	assert_string_equal(c.a, "from-env");
	assert_int_equal(parse_with(&command, "", env_both, &c, &l, &nargs, err), -EINVAL);
	assert_non_null(strstr(err, "exclusive"));
	/* Given empty, an EMPTY_UNSET flag sets nothing and silences the variables. */
	assert_int_equal(parse_with(&command, "--alpha=", env_a, &c, &l, &nargs, err), 0);
	assert_string_equal(c.a, "");
	assert_int_equal(parse_with(&command, "--beta=", env_a, &c, &l, &nargs, err), 0);
	assert_string_equal(c.a, "");
	/* An empty variable of an EMPTY_UNSET flag is no variable. */
	assert_int_equal(parse_with(&command, "", env_empty, &c, &l, &nargs, err), 0);
	assert_string_equal(c.b, "y");
	/* Without an environment function, none is read. */
	memset(&c, 0, sizeof(c));
	split(&l, "");
	assert_int_equal(options_parse(&command, l.argc, l.argv, NULL, &c, &nargs, err), 0);
	assert_int_equal(c.n, 5);
}

static char *usage_of(const struct options_command *cmd, char *text, size_t n)
{
	FILE *f = fmemopen(text, n, "w");

	assert_non_null(f);
	options_usage(cmd, f);
	fclose(f);
	return text;
}

static void test_help_is_generated_from_the_table(void **state)
{
	static const char *const want[] = {
		"usage: dra-guard test [FLAGS] ARG...\n\nTests the tables.\n",
		"\n  --sw                        a switch\n",
		"\n  --n N                       a number from 1 to 10\n                              [$T_N; default: 5]\n",
		"  --bytes SIZE", "[default: 1Mi]", "[default: 30s]", "[default: computed]", "[$T_A]",
		"  --hidden-in-two", "  --help                      this text\n\nExit: 0.\n",
	};
	struct options_command two = command;
	char text[16384];
	const char *p;
	size_t i;

	(void)state;
	usage_of(&command, text, sizeof(text));
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(text, want[i]))
			fail_msg("--help lacks '%s':\n%s", want[i], text);
	assert_null(strstr(text, "--only-two"));
	for (i = 0; i < command.nentries; i++) {
		char head[64];

		snprintf(head, sizeof(head), "  --%s", command.entries[i].name);
		if (!command.entries[i].only && !strstr(text, head))
			fail_msg("--help lacks %s", head);
	}
	two.variant = 2;
	usage_of(&two, text, sizeof(text));
	assert_non_null(strstr(text, "  --only-two"));
	assert_null(strstr(text, "--hidden-in-two"));
	/* serve's help: every line within 100 columns but the [$VARIABLE;
	 * default: ...] notes, which stay whole for scripts to read; every flag
	 * with its variable. */
	usage_of(serve_config_command(), text, sizeof(text));
	for (p = text; *p; p = strchr(p, '\n') + 1)
		if (strchr(p, '\n') - p > 100 && p[strspn(p, " ")] != '[')
			fail_msg("a line over 100 columns: %.120s", p);
	for (i = 0; i < serve_config_command()->nentries; i++) {
		const struct options_entry *e = &serve_config_command()->entries[i];
		char var[80];

		snprintf(var, sizeof(var), "[$%s", e->env ? e->env : "(none)");
		if (!e->env || strncmp(e->env, "DRA_GUARD_", 10) != 0 || !strstr(text, var))
			fail_msg("--%s: no DRA_GUARD_ variable in --help", e->name);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values_of_each_type),
		cmocka_unit_test(test_command_lines),
		cmocka_unit_test(test_repeats_prefixes_and_arguments),
		cmocka_unit_test(test_environment),
		cmocka_unit_test(test_help_is_generated_from_the_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
