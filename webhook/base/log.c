/* log.c - structured logs: one JSON object per line on stderr. */
#include "log.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

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
	int rc;

	l->on = false;
	l->dropped = 0;
	buf_init(&l->b, LOG_LINE_MAX);
	if (!log_enabled(level))
		return false;
	log_format_time(clock_wall_ns(), ts);
	rc = buf_printf(&l->b, "{\"time\":\"%s\",\"level\":\"%s\",\"msg\":", ts, log_level_name(level));
	if (rc == 0)
		rc = buf_add_json_str(&l->b, msg ? msg : "", msg ? strlen(msg) : 0);
	if (rc != 0) {
		/* Not even the message fits: say so rather than write nothing. */
		buf_reset(&l->b);
		rc = buf_printf(&l->b, "{\"time\":\"%s\",\"level\":\"%s\",\"msg\":\"(message too long)\"",
				ts, log_level_name(level));
		if (rc != 0) {
			buf_free(&l->b);
			return false;
		}
	}
	l->on = true;
	return true;
}

/* Undo a field that failed or went past the line's budget. */
static void field_done(struct log_line *l, size_t start, int rc)
{
	if (rc == 0 && buf_len(&l->b) <= LOG_LINE_MAX - LOG_TAIL_RESERVE)
		return;
	buf_truncate(&l->b, start);
	l->dropped++;
}

static int add_key(struct log_line *l, const char *key)
{
	int rc = buf_add_char(&l->b, ',');

	if (rc == 0)
		rc = buf_add_json_str(&l->b, key, strlen(key));
	if (rc == 0)
		rc = buf_add_char(&l->b, ':');
	return rc;
}

void log_strn(struct log_line *l, const char *key, const char *val, size_t n)
{
	size_t start;
	int rc;

	if (!l->on)
		return;
	start = buf_len(&l->b);
	rc = add_key(l, key);
	if (rc == 0)
		rc = buf_add_json_str(&l->b, val ? val : "", val ? n : 0);
	field_done(l, start, rc);
}

void log_str(struct log_line *l, const char *key, const char *val)
{
	log_strn(l, key, val, val ? strlen(val) : 0);
}

/* A field whose value is already JSON text (a number, a literal). */
static void add_raw(struct log_line *l, const char *key, const char *text)
{
	size_t start = buf_len(&l->b);
	int rc = add_key(l, key);

	if (rc == 0)
		rc = buf_add_cstr(&l->b, text);
	field_done(l, start, rc);
}

void log_int(struct log_line *l, const char *key, int64_t val)
{
	char text[32];

	if (!l->on)
		return;
	snprintf(text, sizeof(text), "%" PRId64, val);
	add_raw(l, key, text);
}

void log_uint(struct log_line *l, const char *key, uint64_t val)
{
	char text[32];

	if (!l->on)
		return;
	snprintf(text, sizeof(text), "%" PRIu64, val);
	add_raw(l, key, text);
}

void log_bool(struct log_line *l, const char *key, bool val)
{
	if (l->on)
		add_raw(l, key, val ? "true" : "false");
}

void log_ms(struct log_line *l, const char *key, double val)
{
	char text[DBL_MAX_10_EXP + 16]; /* the longest "%.3f" of a finite double */

	if (!l->on)
		return;
	if (!isfinite(val)) {
		add_raw(l, key, "null"); /* JSON has no inf or nan */
		return;
	}
	snprintf(text, sizeof(text), "%.3f", val);
	add_raw(l, key, text);
}

void log_str_array(struct log_line *l, const char *key, const char *const *vals, size_t n)
{
	size_t start, i;
	int rc;

	if (!l->on)
		return;
	start = buf_len(&l->b);
	rc = add_key(l, key);
	if (rc == 0)
		rc = buf_add_char(&l->b, '[');
	for (i = 0; rc == 0 && i < n; i++) {
		if (i > 0)
			rc = buf_add_char(&l->b, ',');
		if (rc == 0)
			rc = buf_add_json_str(&l->b, vals[i], strlen(vals[i]));
	}
	if (rc == 0)
		rc = buf_add_char(&l->b, ']');
	field_done(l, start, rc);
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
	/* The reserve at the end of the budget guarantees these fit. */
	if (l->dropped)
		buf_printf(&l->b, ",\"fields_dropped\":%u", l->dropped);
	buf_add_cstr(&l->b, "}\n");
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
