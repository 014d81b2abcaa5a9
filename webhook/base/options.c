/* options.c - the command-line flags of every dra-guard subcommand. */
#include "options.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "timefmt.h"

/* The most flags one subcommand has (serve has about 40): the parser keeps
 * one mark per flag on the stack. */
#define OPTIONS_MAX_ENTRIES 64
#define HELP_COLUMN 30
#define HELP_WIDTH 100

/* --- values ------------------------------------------------------------------------------- */

static void store_uint(void *p, size_t size, unsigned long long v)
{
	switch (size) {
	case 1: { uint8_t x = (uint8_t)v; memcpy(p, &x, 1); break; }
	case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
	case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
	default: { uint64_t x = v; memcpy(p, &x, 8); break; }
	}
}

/* The largest value a field of size bytes holds. */
static unsigned long long field_max(size_t size)
{
	return size >= 8 ? ULLONG_MAX : (1ULL << (size * 8)) - 1;
}

/* Decimal digits only (no sign, no space): 0 or -EINVAL (also on overflow). */
static int whole(const char *s, size_t len, unsigned long long *out)
{
	unsigned long long n = 0;
	size_t i;

	if (len == 0)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (s[i] < '0' || s[i] > '9' || n > (ULLONG_MAX - d) / 10)
			return -EINVAL;
		n = n * 10 + d;
	}
	*out = n;
	return 0;
}

static const struct {
	const char *suffix;
	unsigned long long mult;
} size_units[] = {
	{ "Ki", 1ULL << 10 }, { "Mi", 1ULL << 20 }, { "Gi", 1ULL << 30 },
	{ "k", 1000ULL }, { "K", 1000ULL }, { "M", 1000000ULL }, { "G", 1000000000ULL },
};

static int parse_size(const char *v, unsigned long long *out)
{
	size_t len = strlen(v), i;
	unsigned long long mult = 1, n;

	for (i = 0; i < sizeof(size_units) / sizeof(size_units[0]); i++) {
		size_t sl = strlen(size_units[i].suffix);

		if (len > sl && strcmp(v + len - sl, size_units[i].suffix) == 0) {
			mult = size_units[i].mult;
			len -= sl;
			break;
		}
	}
	if (whole(v, len, &n) != 0 || n > ULLONG_MAX / mult)
		return -EINVAL;
	*out = n * mult;
	return 0;
}

/* "1Mi" for 1048576: the largest binary unit that divides it exactly. */
static void format_size(unsigned long long n, char *buf, size_t len)
{
	if (n && n % (1ULL << 30) == 0)
		snprintf(buf, len, "%lluGi", n >> 30);
	else if (n && n % (1ULL << 20) == 0)
		snprintf(buf, len, "%lluMi", n >> 20);
	else if (n && n % (1ULL << 10) == 0)
		snprintf(buf, len, "%lluKi", n >> 10);
	else
		snprintf(buf, len, "%llu", n);
}

/* "30", "30s", "2m", "1h", "500ms", "1.5s" into ns. */
static int parse_duration(const char *v, unsigned long long *out)
{
	static const struct {
		const char *suffix;
		unsigned long long ns;
	} units[] = {
		{ "ms", OPTIONS_NS_PER_MS }, { "s", OPTIONS_NS_PER_S }, { "m", 60 * OPTIONS_NS_PER_S },
		{ "h", 3600 * OPTIONS_NS_PER_S },
	};
	size_t len = strlen(v), i, ilen, flen = 0;
	unsigned long long unit = OPTIONS_NS_PER_S, in, fr = 0, scale = 1, ns;
	const char *dot;

	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t sl = strlen(units[i].suffix);

		if (len > sl && strcmp(v + len - sl, units[i].suffix) == 0) {
			unit = units[i].ns;
			len -= sl;
			break;
		}
	}
	dot = memchr(v, '.', len);
	ilen = dot ? (size_t)(dot - v) : len;
	if (dot) {
		flen = len - ilen - 1;
		if (flen == 0 || flen > 9 || whole(dot + 1, flen, &fr) != 0)
			return -EINVAL;
		for (i = 0; i < flen; i++)
			scale *= 10;
	}
	if (whole(v, ilen, &in) != 0 || in > ULLONG_MAX / unit)
		return -EINVAL;
	ns = in * unit;
	/* fr < scale <= 1e9 and unit <= 3.6e12: fr * (unit / scale) cannot overflow. */
	if (fr && (unit % scale != 0 || ns > ULLONG_MAX - fr * (unit / scale)))
		return -EINVAL;
	*out = ns + (fr ? fr * (unit / scale) : 0);
	return 0;
}

/* "1h", "5m", "30s", "500ms", "0": the largest unit that divides it exactly. */
static void format_duration(unsigned long long ns, char *buf, size_t len)
{
	if (ns == 0)
		snprintf(buf, len, "0");
	else if (ns % (3600 * OPTIONS_NS_PER_S) == 0)
		snprintf(buf, len, "%lluh", ns / (3600 * OPTIONS_NS_PER_S));
	else if (ns % (60 * OPTIONS_NS_PER_S) == 0)
		snprintf(buf, len, "%llum", ns / (60 * OPTIONS_NS_PER_S));
	else if (ns % OPTIONS_NS_PER_S == 0)
		snprintf(buf, len, "%llus", ns / OPTIONS_NS_PER_S);
	else if (ns % OPTIONS_NS_PER_MS == 0)
		snprintf(buf, len, "%llums", ns / OPTIONS_NS_PER_MS);
	else
		snprintf(buf, len, "%lluns", ns);
}

/* RFC 3339 in UTC (2026-12-01T10:00:00Z, whole seconds) or seconds since
 * the epoch, into ns: 0, -EINVAL for text that is neither, -ERANGE for a
 * time an int64 of ns cannot hold (*out then INT64_MIN before 1970,
 * INT64_MAX after 2261). */
static int parse_time(const char *s, int64_t *out)
{
	unsigned long long secs;

	if (whole(s, strlen(s), &secs) == 0) {
		if (secs > (unsigned long long)INT64_MAX / OPTIONS_NS_PER_S)
			return -EINVAL;
		*out = (int64_t)secs * (int64_t)OPTIONS_NS_PER_S;
		return 0;
	}
	return timefmt_parse(str_from_cstr(s), TIMEFMT_UTC | TIMEFMT_WHOLE_SECONDS, out);
}

static int parse_bool(const char *v, bool *out)
{
	if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
		*out = true;
	else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
		*out = false;
	else
		return -EINVAL;
	return 0;
}

/* "a, b or c": the listed choices of an enum. */
static void choices_text(const struct options_choice *c, char *buf, size_t len)
{
	size_t n = 0, i, k = 0, used = 0;

	for (i = 0; c[i].name; i++)
		n += !c[i].alias;
	buf[0] = '\0';
	for (i = 0; c[i].name && used < len; i++) {
		int w;

		if (c[i].alias)
			continue;
		w = snprintf(buf + used, len - used, "%s%s", k == 0 ? "" : k + 1 == n ? " or " : ", ", c[i].name);
		if (w < 0)
			break;
		used += (size_t)w;
		k++;
	}
}

static int set_enum(const struct options_entry *e, void *dst, const char *v, char *why, size_t n)
{
	char list[256];
	size_t i;

	for (i = 0; e->choices[i].name; i++) {
		const char *name = e->choices[i].name;

		if ((e->flags & OPTIONS_NOCASE) ? strcasecmp(v, name) == 0 : strcmp(v, name) == 0) {
			store_uint(dst, e->size, (unsigned long long)(unsigned)e->choices[i].value);
			return 0;
		}
	}
	choices_text(e->choices, list, sizeof(list));
	snprintf(why, n, "'%s' is not %s", v, list);
	return -EINVAL;
}

/* Store v into cfg as e says; why says what is wrong with it (the caller
 * names the flag). */
static int set_value(const struct options_entry *e, void *cfg, const char *v, char *why, size_t n)
{
	unsigned char *dst = (unsigned char *)cfg + e->off;
	unsigned long long x;
	char lo[32], hi[32];

	if (v && !v[0] && (e->flags & OPTIONS_NONEMPTY)) {
		snprintf(why, n, "the value is empty");
		return -EINVAL;
	}
	switch (e->type) {
	case OPTIONS_BOOL: {
		bool b;

		if (parse_bool(v, &b) != 0) {
			snprintf(why, n, "'%s' is not true or false", v);
			return -EINVAL;
		}
		memcpy(dst, &b, sizeof(b));
		return 0;
	}
	case OPTIONS_UINT:
		if (whole(v, strlen(v), &x) != 0) {
			snprintf(why, n, "'%s' is not a whole number", v);
			return -EINVAL;
		}
		if (x < e->min || x > e->max || x > field_max(e->size)) {
			snprintf(why, n, "%s is out of range (%llu to %llu)", v, e->min, e->max);
			return -EINVAL;
		}
		store_uint(dst, e->size, x);
		return 0;
	case OPTIONS_SIZE:
		if (parse_size(v, &x) != 0) {
			snprintf(why, n, "'%s' is not a size (bytes, or a number with Ki, Mi, Gi, k, M, G)", v);
			return -EINVAL;
		}
		if (x < e->min || x > e->max || x > field_max(e->size)) {
			format_size(e->min, lo, sizeof(lo));
			format_size(e->max, hi, sizeof(hi));
			snprintf(why, n, "%s is out of range (%s to %s)", v, lo, hi);
			return -EINVAL;
		}
		store_uint(dst, e->size, x);
		return 0;
	case OPTIONS_DURATION: {
		unsigned long long unit = e->unit_ns ? e->unit_ns : OPTIONS_NS_PER_S;

		if (parse_duration(v, &x) != 0) {
			snprintf(why, n, "'%s' is not a duration (a number with ms, s, m or h; seconds without)", v);
			return -EINVAL;
		}
		if (x < e->min || x > e->max) {
			format_duration(e->min, lo, sizeof(lo));
			format_duration(e->max, hi, sizeof(hi));
			snprintf(why, n, "%s is out of range (%s to %s)", v, lo, hi);
			return -EINVAL;
		}
		if (x % unit != 0) {
			format_duration(unit, lo, sizeof(lo));
			snprintf(why, n, "'%s' is not a whole number of %s", v, lo);
			return -EINVAL;
		}
		store_uint(dst, e->size, x / unit);
		return 0;
	}
	case OPTIONS_TIME: {
		int64_t t;

		int rc = parse_time(v, &t);

		if (rc == -ERANGE && t == INT64_MAX) {
			snprintf(why, n, "%s is out of range (before 2262-01-01T00:00:00Z)", v);
			return -EINVAL;
		}
		if (rc && rc != -ERANGE) {
			snprintf(why, n, "'%s' is not a time (RFC 3339 in UTC, e.g. 2026-12-01T10:00:00Z, or seconds "
				 "since the epoch)", v);
			return -EINVAL;
		}
		if (rc || t < 0 || (unsigned long long)t < e->min) {
			snprintf(why, n, "%s is out of range (after 1970-01-01T00:00:00Z)", v);
			return -EINVAL;
		}
		memcpy(dst, &t, sizeof(t));
		return 0;
	}
	case OPTIONS_STRING:
		memcpy(dst, &v, sizeof(v));
		return 0;
	case OPTIONS_TEXT:
		if (strlen(v) >= e->size) {
			snprintf(why, n, "longer than %zu bytes", e->size - 1);
			return -EINVAL;
		}
		memcpy(dst, v, strlen(v) + 1);
		return 0;
	case OPTIONS_ENUM:
		return set_enum(e, dst, v, why, n);
	case OPTIONS_LIST: {
		size_t count, cap = e->size / sizeof(const char *);

		memcpy(&count, (unsigned char *)cfg + e->count_off, sizeof(count));
		if (count >= cap) {
			snprintf(why, n, "given more than %zu times", cap);
			return -EINVAL;
		}
		memcpy(dst + count * sizeof(const char *), &v, sizeof(v));
		count++;
		memcpy((unsigned char *)cfg + e->count_off, &count, sizeof(count));
		return 0;
	}
	case OPTIONS_CUSTOM:
		return e->set(cfg, e, v, why, n);
	}
	snprintf(why, n, "unknown type");
	return -EINVAL;
}

/* --- the command line --------------------------------------------------------------------- */

static bool knows(const struct options_command *cmd, const struct options_entry *e)
{
	return !e->only || (e->only & cmd->variant);
}

const struct options_entry *options_find(const struct options_command *cmd, const char *name)
{
	size_t i;

	for (i = 0; i < cmd->nentries; i++)
		if (knows(cmd, &cmd->entries[i]) && strcmp(cmd->entries[i].name, name) == 0)
			return &cmd->entries[i];
	return NULL;
}

/* The flag named name[0..len): exactly, else by a unique prefix. */
static int lookup(const struct options_command *cmd, const char *name, size_t len,
		  const struct options_entry **out, char *err)
{
	const struct options_entry *found = NULL;
	size_t i, matches = 0, used;

	for (i = 0; i < cmd->nentries; i++) {
		const struct options_entry *e = &cmd->entries[i];

		if (!knows(cmd, e) || strncmp(e->name, name, len) != 0)
			continue;
		if (e->name[len] == '\0') {
			*out = e;
			return 0;
		}
		found = e;
		matches++;
	}
	if (matches == 1 && len > 0) {
		*out = found;
		return 0;
	}
	if (matches == 0 || len == 0) {
		snprintf(err, OPTIONS_ERROR_MAX, "unknown flag '--%.*s'", (int)(len > 200 ? 200 : len), name);
		return -EINVAL;
	}
	used = (size_t)snprintf(err, OPTIONS_ERROR_MAX, "ambiguous flag '--%.*s' (", (int)(len > 200 ? 200 : len),
				name);
	for (i = 0; i < cmd->nentries && used < OPTIONS_ERROR_MAX - 2; i++) {
		const struct options_entry *e = &cmd->entries[i];

		if (knows(cmd, e) && strncmp(e->name, name, len) == 0)
			used += (size_t)snprintf(err + used, OPTIONS_ERROR_MAX - used, "%s--%s",
						 err[used - 1] == '(' ? "" : ", ", e->name);
	}
	if (used < OPTIONS_ERROR_MAX - 2)
		snprintf(err + used, OPTIONS_ERROR_MAX - used, ")");
	return -EINVAL;
}

/* One argument at argv[*a]: a flag (with its value, which may take the
 * next argument) or a positional one (*e NULL). *a is left on the last
 * argument used. 1 for --help, 2 past "--", 0, or -EINVAL. */
static int next_arg(const struct options_command *cmd, int argc, char **argv, int *a,
		    const struct options_entry **e, const char **val, char *err)
{
	const char *arg = argv[*a], *name, *eq;
	size_t len;
	int rc;

	*e = NULL;
	*val = arg;
	if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
		return 1;
	if (strcmp(arg, "--") == 0)
		return 2;
	if (arg[0] != '-' || strcmp(arg, "-") == 0)
		return 0;
	if (arg[1] != '-') {
		snprintf(err, OPTIONS_ERROR_MAX, "unknown flag '%.200s'", arg);
		return -EINVAL;
	}
	name = arg + 2;
	eq = strchr(name, '=');
	len = eq ? (size_t)(eq - name) : strlen(name);
	if ((rc = lookup(cmd, name, len, e, err)) != 0)
		return rc;
	if (eq) {
		*val = eq + 1;
	} else if (!(*e)->arg) {
		*val = (*e)->type == OPTIONS_BOOL ? "true" : "";
	} else if (*a + 1 < argc) {
		*val = argv[++*a];
	} else {
		snprintf(err, OPTIONS_ERROR_MAX, "--%s needs a value (%s)", (*e)->name, (*e)->arg);
		return -EINVAL;
	}
	return 0;
}

static bool unset(const struct options_entry *e, const char *v)
{
	return (e->flags & OPTIONS_EMPTY_UNSET) && v && !v[0];
}

static void exclusive(const struct options_entry *a, const struct options_entry *b, char *err)
{
	snprintf(err, OPTIONS_ERROR_MAX, "--%s and --%s are exclusive: give one", a->name, b->name);
}

int options_parse(const struct options_command *cmd, int argc, char **argv, options_env_fn *env, void *cfg,
		  int *nargs, char err[static OPTIONS_ERROR_MAX])
{
	const struct options_entry *on_cli[OPTIONS_MAX_ENTRIES] = { NULL };   /* group -> its flag given */
	const struct options_entry *from_env[OPTIONS_MAX_ENTRIES] = { NULL };
	bool given[OPTIONS_MAX_ENTRIES] = { false }, group_given[OPTIONS_MAX_ENTRIES] = { false };
	char why[OPTIONS_ERROR_MAX];
	const struct options_entry *e;
	const char *v, *extra = NULL;
	int a, rc, npos = 0;
	bool flags_done = false;
	size_t i;

	err[0] = '\0';
	*nargs = 0;
	if (cmd->nentries > OPTIONS_MAX_ENTRIES) {
		snprintf(err, OPTIONS_ERROR_MAX, "more than %d flags in the table", OPTIONS_MAX_ENTRIES);
		return -EINVAL;
	}
	for (i = 0; i < cmd->nentries; i++) {
		if (cmd->entries[i].group >= OPTIONS_MAX_ENTRIES) {
			snprintf(err, OPTIONS_ERROR_MAX, "--%s: group %u past the table's %d", cmd->entries[i].name,
				 cmd->entries[i].group, OPTIONS_MAX_ENTRIES);
			return -EINVAL;
		}
	}
	/* First --help, wherever it is, then the shape of the line: every
	 * flag known and with its value, before any value is looked at. */
	for (a = 1; a < argc && !flags_done; a++) {
		rc = next_arg(cmd, argc, argv, &a, &e, &v, why);
		if (rc == 1)
			return 1;
		flags_done = rc == 2;
	}
	flags_done = false;
	for (a = 1; a < argc; a++) {
		rc = flags_done ? 0 : next_arg(cmd, argc, argv, &a, &e, &v, err);
		if (rc < 0)
			return rc;
		if (rc == 2) {
			flags_done = true;
			continue;
		}
		if (flags_done || !e) {
			if (cmd->max_args >= 0 && npos == cmd->max_args && !extra)
				extra = argv[a];
			npos++;
			continue;
		}
		/* Given empty, an EMPTY_UNSET flag sets nothing, but still
		 * silences its variable (and its group's). */
		given[e - cmd->entries] = true;
		group_given[e->group] = e->group != 0;
		if (e->group && !unset(e, v)) {
			if (on_cli[e->group] && on_cli[e->group] != e) {
				exclusive(on_cli[e->group], e, err);
				return -EINVAL;
			}
			on_cli[e->group] = e;
		}
	}
	if (extra) {
		snprintf(err, OPTIONS_ERROR_MAX, "unexpected argument '%.200s'", extra);
		return -EINVAL;
	}
	/* Defaults, then the environment where the command line is silent. A
	 * group's flag on the command line silences the environment of the
	 * whole group, whichever flag each uses. */
	for (i = 0; i < cmd->nentries; i++) {
		e = &cmd->entries[i];
		if (!knows(cmd, e) || given[i])
			continue;
		v = env && e->env && !group_given[e->group] ? env(e->env) : NULL;
		if (v && !unset(e, v)) {
			if (e->group && from_env[e->group]) {
				exclusive(from_env[e->group], e, err);
				return -EINVAL;
			}
			if (e->group)
				from_env[e->group] = e;
			if (set_value(e, cfg, v, why, sizeof(why)) != 0) {
				snprintf(err, OPTIONS_ERROR_MAX, "$%s: --%s: %.400s", e->env, e->name, why);
				return -EINVAL;
			}
			continue;
		}
		if (!e->def && !(e->flags & OPTIONS_COMPUTED))
			continue;
		if (e->def && unset(e, e->def))
			continue;
		if (set_value(e, cfg, e->def, why, sizeof(why)) != 0) {
			snprintf(err, OPTIONS_ERROR_MAX, "the default of --%s: %.400s", e->name, why);
			return -EINVAL;
		}
	}
	/* The command line, in its order; the positional arguments move to
	 * the front (each to a slot already read). */
	for (a = 1, flags_done = false; a < argc; a++) {
		if (flags_done) {
			argv[1 + (*nargs)++] = argv[a];
			continue;
		}
		rc = next_arg(cmd, argc, argv, &a, &e, &v, err);
		if (rc == 2) {
			flags_done = true;
			continue;
		}
		if (!e) {
			argv[1 + (*nargs)++] = (char *)v;
			continue;
		}
		if (unset(e, v))
			continue;
		if (set_value(e, cfg, v, why, sizeof(why)) != 0) {
			snprintf(err, OPTIONS_ERROR_MAX, "--%s: %.440s", e->name, why);
			return -EINVAL;
		}
	}
	return 0;
}

/* --- --help ------------------------------------------------------------------------------- */

/* text, wrapped at HELP_WIDTH, its lines after the first indented to col. */
static void wrapped(FILE *f, const char *text, size_t col)
{
	size_t room = HELP_WIDTH - col, at = 0, len = strlen(text);

	while (len - at > room) {
		size_t cut = at + room;

		while (cut > at && text[cut] != ' ')
			cut--;
		if (cut == at)
			cut = at + room;    /* one word longer than the line */
		fprintf(f, "%.*s\n%*s", (int)(cut - at), text + at, (int)col, "");
		at = cut;
		while (text[at] == ' ')
			at++;
	}
	fprintf(f, "%s\n", text + at);
}

static const char *default_text(const struct options_entry *e)
{
	if (e->def_help)
		return e->def_help;
	if (!e->def || (e->type == OPTIONS_BOOL && !e->env))
		return NULL;
	return e->def[0] ? e->def : "\"\"";
}

void options_usage(const struct options_command *cmd, FILE *f)
{
	size_t i;

	fprintf(f, "usage: dra-guard %s%s%s\n", cmd->name, cmd->synopsis[0] ? " " : "", cmd->synopsis);
	if (cmd->intro)
		fprintf(f, "\n%s", cmd->intro);
	if (cmd->env_note)
		fprintf(f, "Every flag can also be set by its environment variable; a flag given on the\n"
			"command line wins.\n");
	fprintf(f, "\nflags:\n");
	for (i = 0; i < cmd->nentries; i++) {
		const struct options_entry *e = &cmd->entries[i];
		const char *def = default_text(e);
		char head[96], note[256];
		int w;

		if (!knows(cmd, e) || (e->hide & cmd->variant))
			continue;
		w = snprintf(head, sizeof(head), "  --%s%s%s", e->name, e->arg ? " " : "", e->arg ? e->arg : "");
		if (w >= HELP_COLUMN - 1)
			fprintf(f, "%s\n%*s", head, HELP_COLUMN, "");
		else
			fprintf(f, "%-*s", HELP_COLUMN, head);
		wrapped(f, e->help, HELP_COLUMN);
		if (!e->env && !def)
			continue;
		if (e->env)
			snprintf(note, sizeof(note), "[$%s%s%s]", e->env, def ? "; default: " : "", def ? def : "");
		else
			snprintf(note, sizeof(note), "[default: %s]", def);
		/* One line, however long: scripts read the default from it. */
		fprintf(f, "%*s%s\n", HELP_COLUMN, "", note);
	}
	fprintf(f, "%-*s%s\n", HELP_COLUMN, "  --help", "this text");
	if (cmd->outro)
		fprintf(f, "\n%s", cmd->outro);
}

int options_cli(const struct options_command *cmd, int argc, char **argv, options_env_fn *env, void *cfg,
		int *nargs)
{
	char err[OPTIONS_ERROR_MAX];
	int rc = options_parse(cmd, argc, argv, env, cfg, nargs, err);

	if (rc == 1) {
		options_usage(cmd, stdout);
		return 0;
	}
	if (rc == 0)
		return -1;
	fprintf(stderr, "dra-guard %s: %s\nRun 'dra-guard %s --help' for the usage.\n", cmd->name, err, cmd->name);
	return 2;
}
