/* log.c - structured logs: one JSON object per line on stderr. */
#include "log.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "jw.h"

/* Room kept at the end of every line for the dropped-field count and "}\n". */
#define LOG_TAIL_RESERVE 64

static atomic_int log_threshold = LOG_INFO;
static atomic_int log_fd = -1;

static const char *const level_names[] = {
	[LOG_DEBUG] = "debug",
	[LOG_INFO] = "info",
	[LOG_WARN] = "warn",
	[LOG_ERROR] = "error",
};

int log_level_parse(const char *s, enum log_level *out)
{
	unsigned i;

	for (i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	if (strcmp(s, "warning") == 0) {
		*out = LOG_WARN;
		return 0;
	}
	return -EINVAL;
}

const char *log_level_name(enum log_level l)
{
	if ((unsigned)l > LOG_ERROR)
		return "error";
	return level_names[l];
}

void log_set_level(enum log_level l)
{
	atomic_store(&log_threshold, (int)l);
}

bool log_enabled(enum log_level l)
{
	return (int)l >= atomic_load_explicit(&log_threshold, memory_order_relaxed);
}

void log_set_fd(int fd)
{
	atomic_store(&log_fd, fd);
}

void log_format_time(int64_t ns, char buf[static LOG_TIME_MAX])
{
	time_t secs = (time_t)(ns / 1000000000);
	unsigned ms = (unsigned)((ns / 1000000) % 1000);
	struct tm tm;
	size_t n;

	if (ns < 0 || !gmtime_r(&secs, &tm) ||
	    (n = strftime(buf, LOG_TIME_MAX - 8, "%Y-%m-%dT%H:%M:%S", &tm)) == 0) {
		snprintf(buf, LOG_TIME_MAX, "1970-01-01T00:00:00.000Z");
		return;
	}
	snprintf(buf + n, LOG_TIME_MAX - n, ".%03uZ", ms % 1000);
}

bool log_begin(struct log_line *l, enum log_level level, const char *msg)
{
	char ts[LOG_TIME_MAX];
	struct jw_mark m;

	l->on = false;
	l->dropped = 0;
	buf_init(&l->b, LOG_LINE_MAX);
	if (!log_enabled(level))
		return false;
	log_format_time(clock_wall_ns(), ts);
	jw_init(&l->w, &l->b);
	jw_object_begin(&l->w);
	jw_kcstr(&l->w, "time", ts);
	jw_kcstr(&l->w, "level", log_level_name(level));
	jw_mark(&l->w, &m);
	if (jw_kcstr(&l->w, "msg", msg ? msg : "") != 0) {
		/* Not even the message fits: say so rather than write nothing. */
		jw_rewind(&l->w, &m);
		if (jw_kcstr(&l->w, "msg", "(message too long)") != 0) {
			buf_free(&l->b);
			return false;
		}
	}
	l->on = true;
	return true;
}

/* Before a field: where to come back to if it is dropped. */
static bool field_begin(struct log_line *l, struct jw_mark *m)
{
	if (!l->on)
		return false;
	jw_mark(&l->w, m);
	return true;
}

/* Undo a field that failed or went past the line's budget. */
static void field_done(struct log_line *l, const struct jw_mark *m, int rc)
{
	if (rc == 0 && buf_len(&l->b) <= LOG_LINE_MAX - LOG_TAIL_RESERVE)
		return;
	jw_rewind(&l->w, m);
	l->dropped++;
}

void log_strn(struct log_line *l, const char *key, const char *val, size_t n)
{
	struct jw_mark m;

	if (field_begin(l, &m))
		field_done(l, &m, jw_kstring(&l->w, key, val ? val : "", val ? n : 0));
}

void log_str(struct log_line *l, const char *key, const char *val)
{
	log_strn(l, key, val, val ? strlen(val) : 0);
}

void log_int(struct log_line *l, const char *key, int64_t val)
{
	struct jw_mark m;

	if (field_begin(l, &m))
		field_done(l, &m, jw_kint(&l->w, key, val));
}

void log_uint(struct log_line *l, const char *key, uint64_t val)
{
	struct jw_mark m;

	if (field_begin(l, &m))
		field_done(l, &m, jw_kuint(&l->w, key, val));
}

void log_bool(struct log_line *l, const char *key, bool val)
{
	struct jw_mark m;

	if (field_begin(l, &m))
		field_done(l, &m, jw_kbool(&l->w, key, val));
}

void log_ms(struct log_line *l, const char *key, double val)
{
	struct jw_mark m;

	if (!field_begin(l, &m))
		return;
	/* JSON has no inf or nan */
	if (!isfinite(val)) {
		jw_key(&l->w, key);
		field_done(l, &m, jw_null(&l->w));
		return;
	}
	field_done(l, &m, jw_kfixed(&l->w, key, val, 3));
}

void log_str_array(struct log_line *l, const char *key, const char *const *vals, size_t n)
{
	struct jw_mark m;
	size_t i;

	if (!field_begin(l, &m))
		return;
	jw_key(&l->w, key);
	jw_array_begin(&l->w);
	for (i = 0; i < n; i++)
		jw_cstr(&l->w, vals[i]);
	field_done(l, &m, jw_array_end(&l->w));
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return;     /* nowhere left to report a failing log */
		}
		p += w;
		n -= (size_t)w;
	}
}

void log_end(struct log_line *l)
{
	int fd;

	if (!l->on)
		return;
	/* The reserve at the end of the budget guarantees these fit (a line
	 * whose message alone ran past it ends without them: no part is cut). */
	if (l->dropped) {
		struct jw_mark m;

		jw_mark(&l->w, &m);
		if (jw_kuint(&l->w, "fields_dropped", l->dropped) != 0)
			jw_rewind(&l->w, &m);
	}
	if (jw_object_end(&l->w) == 0 && buf_add_char(&l->b, '\n') != 0)
		buf_truncate(&l->b, buf_len(&l->b) - 1);
	fd = atomic_load(&log_fd);
	write_all(fd >= 0 ? fd : STDERR_FILENO, buf_cstr(&l->b), buf_len(&l->b));
	buf_free(&l->b);
	l->on = false;
}

void log_msg(enum log_level level, const char *msg)
{
	struct log_line l;

	if (log_begin(&l, level, msg))
		log_end(&l);
}

void log_msg_str(enum log_level level, const char *msg, const char *key, const char *val)
{
	struct log_line l;

	if (log_begin(&l, level, msg)) {
		log_str(&l, key, val);
		log_end(&l);
	}
}
