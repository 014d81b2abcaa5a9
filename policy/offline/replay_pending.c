/* replay_pending.c - why Pods were pending in a replayed log, as the live
 * guard tells it (replay.h): the Events its refusals ask for, by reason,
 * and the pending time of the claims they held back, in the live guard's
 * own pending table (pending.h) and histogram buckets. */
#include <errno.h>
#include <string.h>

#include "events.h"
#include "replay_impl.h"

int replay_note_events(struct replay *r, const struct audit_event *ev, const struct admission_request *rq,
		       const struct verdict *v)
{
	struct events_report rep[EVENTS_PER_REVIEW];
	size_t n = 0, i;
	int k, rc;

	/* No Event for an allowed or a dryRun review, exactly as the server. */
	events_from_review(rq, v, ev->stage_ns, rep, EVENTS_PER_REVIEW, &n);
	for (i = 0; i < n; i++) {
		k = events_rule_index(rep[i].rule);
		if (k >= 0)
			r->refusals[k]++;
		if (!rep[i].pending)
			continue;
		/* The log says the write went through (a what-if policy, or a
		 * guard that warned): when the scheduler would have succeeded
		 * instead is not in the log, so no pending time is made up. */
		if (replay_success(ev)) {
			r->held_written++;
			continue;
		}
		rc = pending_table_refused(r->held, &rep[i]);
		if (rc == -E2BIG)
			r->held_full = true;
		if (rc)
			return rc;
	}
	return 0;
}

static void held_done(void *ctx, enum rule_id rule, double seconds)
{
	struct replay *r = ctx;

	pending_hist_observe(&r->held_hist, rule, seconds);
}

int replay_sweep_held(struct replay *r, int64_t t)
{
	int rc = replay_publish(r);

	if (rc)
		return rc;
	pending_table_sweep(r->held, r->view, t, held_done, r);
	return 0;
}
