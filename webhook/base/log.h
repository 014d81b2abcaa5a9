/* log.h - structured logs: one JSON object per line on stderr.
 *
 * Every line has "time" (RFC 3339, UTC, milliseconds), "level" and "msg",
 * then the fields the caller adds, in order. A line is built in memory and
 * written with one write(2), so lines from different threads never
 * interleave. A field that would push a line past LOG_LINE_MAX is dropped
 * whole and counted in a final "fields_dropped" member: a log line is never
 * cut in the middle of a value.
 *
 * Usage:
 *	struct log_line l;
 *	if (log_begin(&l, LOG_WARN, "policy reload failed")) {
 *		log_str(&l, "file", path);
 *		log_int(&l, "line", 12);
 *		log_end(&l);
 *	}
 *
 * The level threshold is process-wide; everything else is per line, so all
 * functions are safe from any thread. */
#ifndef DRA_GUARD_LOG_H
#define DRA_GUARD_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "jw.h"

enum log_level {
	LOG_DEBUG = 0,
	LOG_INFO,
	LOG_WARN,
	LOG_ERROR,
};

/* Longest line written, newline included. */
#define LOG_LINE_MAX (64 * 1024)

struct log_line {               /* fields are private; w points at b: a line stays where log_begin() put it */
	struct buf b;
	struct jw w;                    /* writes the line's object on b */
	bool on;
	unsigned dropped;
};

/* Parse "debug", "info", "warn", "error". 0, or -EINVAL. */
int log_level_parse(const char *s, enum log_level *out);

/* "debug" etc. Static storage. */
const char *log_level_name(enum log_level l);

/* Set the threshold: lines below it are not built at all. */
void log_set_level(enum log_level l);

/* True when a line at level l would be written. */
bool log_enabled(enum log_level l);

/* Send lines to fd instead of stderr (tests). -1 restores stderr. */
void log_set_fd(int fd);

/* Start a line. Returns false (and the line is inert: the field calls and
 * log_end() do nothing) when the level is below the threshold. */
bool log_begin(struct log_line *l, enum log_level level, const char *msg);

/* Add a field. Strings are escaped as JSON; a NULL string is written as "". */
void log_str(struct log_line *l, const char *key, const char *val);
void log_strn(struct log_line *l, const char *key, const char *val, size_t n);
void log_int(struct log_line *l, const char *key, int64_t val);
void log_uint(struct log_line *l, const char *key, uint64_t val);
void log_bool(struct log_line *l, const char *key, bool val);
/* val printed with 3 decimals (durations in milliseconds). */
void log_ms(struct log_line *l, const char *key, double val);
/* A JSON array of strings. */
void log_str_array(struct log_line *l, const char *key, const char *const *vals, size_t n);

/* Write the line and release its memory. */
void log_end(struct log_line *l);

/* One-call forms for lines with no or one field. */
void log_msg(enum log_level level, const char *msg);
void log_msg_str(enum log_level level, const char *msg, const char *key, const char *val);

/* "2026-11-29T10:00:00.123Z" for the wall-clock time ns (nanoseconds since
 * the epoch) into buf (at least LOG_TIME_MAX bytes). */
#define LOG_TIME_MAX 32
void log_format_time(int64_t ns, char buf[static LOG_TIME_MAX]);

#endif
