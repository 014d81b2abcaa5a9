/* fuzz_audit.c - libFuzzer target: the audit-line reader, and the replay
 * of whatever lines the input holds.
 *
 * Each line of the input is read with audit_parse(): it must return 0, 1
 * or -EBADMSG (with a message), and what it keeps of a line must lie
 * inside that line, objects as whole JSON objects. The lines are then
 * replayed under the built-in policy with small caps and a short window:
 * nothing may crash or leak, a corrupt line is counted, never fatal, and
 * the report must be JSON. Any disagreement aborts. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "jscan.h"
#include "policy.h"
#include "replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail_at(int line)
{
	fprintf(stderr, "fuzz_audit.c:%d: check failed\n", line);
	abort();
}

#define check(cond) ((cond) ? (void)0 : fail_at(__LINE__))

static void check_inside(struct str s, const char *line, size_t len)
{
	if (s.len)
		check(s.ptr >= line && s.ptr + s.len <= line + len);
}

static void check_object(struct str s, const char *line, size_t len)
{
	struct jscan j;

	check_inside(s, line, len);
	if (!s.len)
		return;
	check(s.ptr[0] == '{' && s.ptr[s.len - 1] == '}');
	jscan_init(&j, s.ptr, s.len, JSCAN_DEPTH_LIMIT);
	check(jscan_skip(&j, NULL) == 0 && jscan_finish(&j) == 0);
}

static void read_line(const char *line, size_t len)
{
	struct audit_event ev;
	char err[AUDIT_ERROR_MAX];
	int rc = audit_parse(line, len, &ev, err, sizeof(err));

	check(rc == 0 || rc == 1 || rc == -EBADMSG);
	if (rc == -EBADMSG)
		check(err[0] != '\0');
	if (rc != 0)
		return;
	check(ev.verb != AUDIT_VERB_OTHER && ev.kind != OBJECT_OTHER);
	check(ev.name.len || ev.verb == AUDIT_CREATE);
	check_inside(ev.audit_id, line, len);
	check_inside(ev.namespace, line, len);
	check_inside(ev.name, line, len);
	check_inside(ev.subresource, line, len);
	check_object(ev.user, line, len);
	check_object(ev.impersonated, line, len);
	check_object(ev.request_object, line, len);
	check_object(ev.response_object, line, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct policy *pol;
	struct replay_options o;
	struct replay *r = NULL;
	struct replay_totals t;
	struct buf out;
	const char *p = (const char *)data, *end = p + size;
	uint64_t no = 0;
	struct jscan j;
	int rc;

	if (!pol && policy_builtin(&pol) != 0)
		abort();
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);

		read_line(p, len);
		p += len + (nl != NULL);
	}
	replay_options_default(&o);
	o.policy = pol;
	o.store_bytes = 1 << 20;
	o.reorder_bytes = 1 << 16;
	o.reorder_ns = 1000000000LL;
	check(replay_new(&o, &r) == 0);
	for (p = (const char *)data; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		rc = replay_line(r, p, len, ++no);
		check(rc == 0 || rc == -E2BIG);
		if (rc)
			goto done;
		p += len + (nl != NULL);
	}
	rc = replay_finish(r);
	check(rc == 0 || rc == -E2BIG);
	if (rc)
		goto done;
	replay_totals(r, &t);
	check(t.lines == no);
	buf_init(&out, 1 << 26);
	check(replay_report_json(r, true, &out) == 0);
	jscan_init(&j, buf_cstr(&out), buf_len(&out), 0);
	check(jscan_skip(&j, NULL) == 0 && jscan_finish(&j) == 0);
	buf_free(&out);
done:
	replay_free(r);
	return 0;
}
