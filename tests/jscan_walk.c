/* jscan_walk.c - see jscan_walk.h. */
#include "jscan_walk.h"

#include <stdbool.h>

static int read_value(struct jscan *s, struct arena *a, const struct jscan_walk_hooks *hooks)
{
	struct jscan_str js;
	struct str text, dec;
	bool b;
	int rc;

	switch (jscan_peek(s)) {
	case JSCAN_OBJECT:
		if ((rc = jscan_object_enter(s)) != 0)
			return rc;
		while ((rc = jscan_object_next(s, &js)) == 1) {
			if (jscan_str_decode(&js, a, &dec) != 0)
				return JSCAN_WALK_BAD_STRING;
			if ((rc = jscan_walk_value(s, a, hooks)) != 0)
				return rc;
		}
		return rc;
	case JSCAN_ARRAY:
		if ((rc = jscan_array_enter(s)) != 0)
			return rc;
		while ((rc = jscan_array_next(s)) == 1)
			if ((rc = jscan_walk_value(s, a, hooks)) != 0)
				return rc;
		return rc;
	case JSCAN_STRING:
		if ((rc = jscan_string(s, &js)) != 0)
			return rc;
		return jscan_str_decode(&js, a, &dec) == 0 ? 0 : JSCAN_WALK_BAD_STRING;
	case JSCAN_NUMBER:
		return jscan_number(s, &text);
	case JSCAN_TRUE:
	case JSCAN_FALSE:
		return jscan_bool(s, &b);
	case JSCAN_NULL:
		rc = jscan_null(s);
		return rc == 1 ? 0 : rc < 0 ? rc : -EINVAL;
	case JSCAN_EOF:
	case JSCAN_INVALID:
		break;
	}
	/* Let the scanner produce its own error for what is there. */
	return jscan_skip(s, NULL);
}

int jscan_walk_value(struct jscan *s, struct arena *a, const struct jscan_walk_hooks *hooks)
{
	struct jscan mark = *s;
	int rc = read_value(s, a, hooks), skip_rc = jscan_skip(&mark, NULL);

	if (rc == JSCAN_WALK_BAD_STRING)
		return rc;
	if (rc != skip_rc || (rc == 0 && mark.p != s->p))
		hooks->mismatch(rc, skip_rc, jscan_offset(&mark));
	return rc;
}

int jscan_walk(const char *text, size_t len, unsigned max_depth, struct arena *a,
	       const struct jscan_walk_hooks *hooks)
{
	struct jscan s;
	int rc;

	jscan_init(&s, text, len, max_depth);
	rc = jscan_walk_value(&s, a, hooks);
	if (rc == 0)
		rc = jscan_finish(&s);
	return rc;
}
