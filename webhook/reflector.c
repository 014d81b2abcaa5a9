/* reflector.c - the list/watch transition function. */
#include "reflector.h"

static const char *const state_names[REFLECTOR_STATE_COUNT] = {
	"list_wait", "listing", "streaming", "watch_wait", "watching",
};

void reflector_init(struct reflector *r)
{
	*r = (struct reflector){ .state = REFLECTOR_LIST_WAIT, .reason = REFLECTOR_START };
}

bool reflector_in_flight(const struct reflector *r)
{
	return r->state == REFLECTOR_LISTING || r->state == REFLECTOR_STREAMING || r->state == REFLECTOR_WATCHING;
}

const char *reflector_state_name(enum reflector_state s)
{
	return (unsigned)s < REFLECTOR_STATE_COUNT ? state_names[s] : "?";
}

/* Half the wait plus full jitter over the other half: replicas do not
 * retry in step. */
static int64_t jittered(int64_t now_ms, unsigned wait_ms, unsigned rnd)
{
	return now_ms + wait_ms / 2 + rnd % (wait_ms / 2 + 1);
}

/* A LIST from the start, for why: the table being built (if any) goes. */
static unsigned relist(struct reflector *r, enum reflector_reason why)
{
	unsigned act = r->building ? REFLECTOR_ACT_ABORT : 0;

	r->building = false;
	r->paging = false;
	r->reason = why;
	r->state = REFLECTOR_LIST_WAIT;
	return act;
}

/* A failed request: the error backoff doubles (250 ms to 30 s). */
static unsigned backoff(struct reflector *r, int64_t now_ms, unsigned rnd)
{
	r->backoff_ms = r->backoff_ms ? r->backoff_ms * 2 : REFLECTOR_BACKOFF_MIN_MS;
	if (r->backoff_ms > REFLECTOR_BACKOFF_MAX_MS)
		r->backoff_ms = REFLECTOR_BACKOFF_MAX_MS;
	r->due_ms = jittered(now_ms, r->backoff_ms, rnd);
	return REFLECTOR_ACT_ERROR;
}

static unsigned send(struct reflector *r, bool stream)
{
	unsigned act = 0;

	if (r->state == REFLECTOR_WATCH_WAIT) {
		r->state = REFLECTOR_WATCHING;
		return REFLECTOR_ACT_WATCH;
	}
	/* A streaming list only from the start of a LIST: a page's continue
	 * token belongs to a paged one. */
	r->state = stream && !r->paging && !r->no_stream ? REFLECTOR_STREAMING : REFLECTOR_LISTING;
	if (!r->building)
		act |= REFLECTOR_ACT_BEGIN;
	r->building = true;
	if (!r->paging)
		act |= REFLECTOR_ACT_COUNT_LIST;
	return act | (r->state == REFLECTOR_STREAMING ? REFLECTOR_ACT_LIST_STREAM : REFLECTOR_ACT_LIST_PAGE);
}

unsigned reflector_step(struct reflector *r, const struct reflector_event *ev, int64_t now_ms, unsigned rnd)
{
	bool waiting = r->state == REFLECTOR_LIST_WAIT || r->state == REFLECTOR_WATCH_WAIT;
	bool listing = r->state == REFLECTOR_LISTING || r->state == REFLECTOR_STREAMING;
	unsigned act = 0;

	switch (ev->kind) {
	case REFLECTOR_EV_SEND:
		return waiting && now_ms >= r->due_ms ? send(r, ev->stream) : 0;
	case REFLECTOR_EV_BEGIN_FAILED:
		if (!listing)
			return 0;
		r->building = false;
		r->state = REFLECTOR_LIST_WAIT;
		r->due_ms = now_ms + REFLECTOR_RETRY_MS;
		return 0;
	case REFLECTOR_EV_NOT_SENT:
		if (waiting)
			return 0;
		r->state = listing ? REFLECTOR_LIST_WAIT : REFLECTOR_WATCH_WAIT;
		r->due_ms = now_ms + REFLECTOR_RETRY_MS;
		return 0;
	case REFLECTOR_EV_PAGE:
		if (r->state != REFLECTOR_LISTING)
			return 0;
		if (!ev->more)
			return REFLECTOR_ACT_COMMIT;
		r->paging = true;
		r->state = REFLECTOR_LIST_WAIT;
		r->due_ms = now_ms;
		return 0;
	case REFLECTOR_EV_INITIAL_END:
		return r->state == REFLECTOR_STREAMING ? REFLECTOR_ACT_COMMIT : 0;
	case REFLECTOR_EV_COMMITTED:
		if (!listing)
			return 0;
		/* A streaming list goes on as the WATCH; after pages one is sent. */
		r->state = r->state == REFLECTOR_STREAMING ? REFLECTOR_WATCHING : REFLECTOR_WATCH_WAIT;
		r->building = false;
		r->paging = false;
		r->synced = true;
		r->backoff_ms = 0;
		r->due_ms = now_ms;
		return 0;
	case REFLECTOR_EV_COMMIT_FAILED:
		if (!listing)
			return 0;
		act = relist(r, REFLECTOR_ERROR);
		return act | backoff(r, now_ms, rnd);
	case REFLECTOR_EV_EXPIRED:
		if (waiting)
			return 0;
		/* client-go's backoff manager: a server that expires every watch
		 * at once is listed a few times a minute, not ten times a second. */
		if (!r->last_expiry_ms || now_ms - r->last_expiry_ms > REFLECTOR_EXPIRY_BACKOFF_RESET_MS)
			r->expiry_backoff_ms = REFLECTOR_EXPIRY_BACKOFF_MIN_MS;
		else if ((r->expiry_backoff_ms *= 2) > REFLECTOR_BACKOFF_MAX_MS)
			r->expiry_backoff_ms = REFLECTOR_BACKOFF_MAX_MS;
		r->last_expiry_ms = now_ms;
		act = relist(r, REFLECTOR_EXPIRED);
		r->due_ms = jittered(now_ms, r->expiry_backoff_ms, rnd);
		return act;
	case REFLECTOR_EV_STREAM_REFUSED:
		if (r->state != REFLECTOR_STREAMING)
			return 0;
		r->no_stream = true;
		act = relist(r, r->reason);
		r->due_ms = now_ms;
		return act | REFLECTOR_ACT_NO_STREAM;
	case REFLECTOR_EV_FAILED:
		if (waiting)
			return 0;
		/* A LIST cut short, or a body not as the API server sends it,
		 * leaves nothing to resume from: listed again. A WATCH that
		 * failed resumes where it was. */
		if (listing || ev->garbage)
			act = relist(r, ev->garbage ? REFLECTOR_DECODE : REFLECTOR_ERROR);
		else
			r->state = REFLECTOR_WATCH_WAIT;
		return act | backoff(r, now_ms, rnd);
	case REFLECTOR_EV_SILENT:
		if (r->state != REFLECTOR_WATCHING)
			return 0;
		r->state = REFLECTOR_WATCH_WAIT;
		r->due_ms = now_ms;
		return 0;
	case REFLECTOR_EV_SHORT:
		if (r->state != REFLECTOR_WATCHING)
			return 0;
		r->state = REFLECTOR_WATCH_WAIT;
		return backoff(r, now_ms, rnd);
	case REFLECTOR_EV_ENDED:
		if (r->state != REFLECTOR_WATCHING)
			return 0;
		r->state = REFLECTOR_WATCH_WAIT;
		r->backoff_ms = 0;
		r->due_ms = now_ms;
		return 0;
	default:
		return 0;
	}
}
