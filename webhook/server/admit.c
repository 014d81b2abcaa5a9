/* admit.c - one admission request on the server, from body to answer. */
#include "admit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "admission.h"
#include "arena.h"
#include "clock.h"
#include "ledger_rules.h"
#include "log.h"
#include "policy.h"
#include "review.h"
#include "review_prefix.h"
#include "snapshot.h"

/* A thread's arena keeps its blocks between requests; one that grew past
 * this for an unusually large review is given back instead. */
#define ARENA_KEEP ((size_t)8 * 1024 * 1024)

struct worker {
	struct arena *arena;
};

static void worker_destroy(void *p)
{
	struct worker *w = p;

	arena_free(w->arena);
	free(w);
}

int admit_init(struct admit *a, const struct serve_config *cfg, struct metrics *m,
	       struct policy_source *policy, struct cluster_view *view)
{
	memset(a, 0, sizeof(*a));
	a->m = m;
	a->policy = policy;
	a->view = view;
	decode_limits_default(&a->lim);
	a->lim.max_depth = cfg->max_json_depth;
	a->opt_validate.self_name = str_from_cstr(cfg->configmap_name);
	a->opt_validate.self_namespace = str_from_cstr(cfg->configmap_namespace);
	a->opt_validate.self_user = str_from_cstr(cfg->self_user);
	a->opt_mutate = a->opt_validate;
	a->opt_mutate.mutate = true;
	a->opt_mutate.mutating_endpoint = true;
	/* Decoding borrows strings from the body, so the arena holds what the
	 * decoder and rules build: a few times the body at most. */
	a->arena_cap = 4 * cfg->max_body + ((size_t)16 << 20);
	return pthread_key_create(&a->worker_key, worker_destroy) == 0 ? 0 : -ENOMEM;
}

void admit_set_ledger(struct admit *a, struct ledger_watch *lw, unsigned recheck_ms, unsigned max_waiters)
{
	a->ledger = lw;
	a->recheck_ms = recheck_ms;
	a->recheck_max = max_waiters;
	atomic_init(&a->rechecking, 0);
}

void admit_set_gate(struct admit *a, struct gate_release *gate)
{
	a->gate = gate;
	atomic_init(&a->gate_warned_ms, 0);
}

/* A withheld gate: counted always, warned of at most every 10 s (a freeze
 * may see many new Pods, and the cause is the same for all). */
static void gate_withheld(struct admit *a, const struct admission_result *res)
{
	int64_t now = clock_mono_ms(), last = atomic_load(&a->gate_warned_ms);
	struct log_line l;

	metrics_gate_withheld(a->m);
	if ((last && now - last < 10000) || !atomic_compare_exchange_strong(&a->gate_warned_ms, &last, now))
		return;
	if (!log_begin(&l, LOG_WARN, "gate: a new Pod was not held at the freeze's scheduling gate: no replica "
		       "could release it (run replicas with --gate-release and the gate-pods RBAC; see "
		       "/readyz gate.live); the freeze refuses its claims instead"))
		return;
	log_strn(&l, "namespace", res->req.namespace.ptr, res->req.namespace.len);
	log_strn(&l, "name", res->req.name.ptr, res->req.name.len);
	log_bool(&l, "gate_release", a->gate != NULL);
	log_end(&l);
}

void admit_set_events(struct admit *a, struct event_sink *es)
{
	a->events = es;
}

void admit_fini(struct admit *a)
{
	struct worker *w = pthread_getspecific(a->worker_key);

	/* Other threads freed theirs as they exited; the key's destructor never
	 * runs for this one. */
	if (w)
		worker_destroy(w);
	pthread_key_delete(a->worker_key);
}

/* This thread's arena, made on its first request. */
static struct arena *worker_arena(struct admit *a)
{
	struct worker *w = pthread_getspecific(a->worker_key);

	if (!w) {
		w = calloc(1, sizeof(*w));
		if (!w)
			return NULL;
		if (pthread_setspecific(a->worker_key, w) != 0) {
			free(w);
			return NULL;
		}
	}
	if (!w->arena && arena_new(a->arena_cap, &w->arena) != 0)
		return NULL;
	return w->arena;
}

static void worker_trim(struct admit *a)
{
	struct worker *w = pthread_getspecific(a->worker_key);

	if (w && w->arena && arena_used(w->arena) > ARENA_KEEP) {
		arena_free(w->arena);
		w->arena = NULL;
	}
}

static enum metrics_result result_of(const struct admission_result *res, int rc)
{
	if (rc != 0 || res->http_status != 200)
		return METRICS_RESULT_ERROR;
	if (res->verdict.allowed)
		return METRICS_RESULT_ALLOWED;
	return res->verdict.code == 403 ? METRICS_RESULT_DENIED : METRICS_RESULT_ERROR;
}

static void log_admission(bool mutate, const struct admission_result *res, enum metrics_result result,
			  unsigned status, const struct policy *pol, uint64_t dur_ns)
{
	const struct admission_request *rq = &res->req;
	const struct verdict *v = &res->verdict;
	const char *rules[RULE_COUNT];
	bool seen[RULE_COUNT] = { false };
	enum log_level level;
	struct log_line l;
	size_t nrules = 0;
	uint32_t i;

	/* Allowed and clean is the common case: debug only, so the request
	 * path writes no log line. */
	if (result == METRICS_RESULT_ERROR)
		level = LOG_WARN;
	else if (result == METRICS_RESULT_DENIED || v->nviolations > 0)
		level = LOG_INFO;
	else
		level = LOG_DEBUG;
	if (!log_begin(&l, level, result == METRICS_RESULT_ALLOWED ? "admission allowed"
				 : result == METRICS_RESULT_DENIED ? "admission denied"
								   : "admission error"))
		return;
	for (i = 0; i < v->nviolations; i++) {
		enum rule_id id = v->violations[i].rule;

		if ((unsigned)id < RULE_COUNT && !seen[id]) {
			seen[id] = true;
			rules[nrules++] = rule_name(id);
		}
	}
	log_str(&l, "endpoint", mutate ? "mutate" : "validate");
	if (res->decoded) {
		log_strn(&l, "uid", rq->uid.ptr, rq->uid.len);
		log_strn(&l, "kind", rq->kind.kind.ptr, rq->kind.kind.len);
		log_strn(&l, "resource", rq->resource.resource.ptr, rq->resource.resource.len);
		if (rq->sub_resource.len)
			log_strn(&l, "subresource", rq->sub_resource.ptr, rq->sub_resource.len);
		log_strn(&l, "name", rq->name.ptr, rq->name.len);
		log_strn(&l, "namespace", rq->namespace.ptr, rq->namespace.len);
		log_strn(&l, "operation", rq->operation_text.ptr, rq->operation_text.len);
		log_strn(&l, "user", rq->user.username.ptr, rq->user.username.len);
	}
	if (res->decoded && (rq->object.kind == OBJECT_RESOURCE_CLAIM || rq->old_object.kind == OBJECT_RESOURCE_CLAIM)) {
		const struct str *uid = rq->object.kind == OBJECT_RESOURCE_CLAIM ? &rq->object.meta.uid
										     : &rq->old_object.meta.uid;

		if (uid->len)
			log_strn(&l, "claim_uid", uid->ptr, uid->len);
	}
	if (res->decoded && v->claim_uids.len)
		log_strn(&l, "claim_uids", v->claim_uids.ptr, v->claim_uids.len);
	log_bool(&l, "allowed", result == METRICS_RESULT_ALLOWED);
	log_uint(&l, "status", status);
	if (res->decoded && status == 200 && !v->allowed)
		log_int(&l, "code", v->code);
	log_str_array(&l, "rules", rules, nrules);
	if (res->decoded && status == 200 && !v->allowed)
		log_strn(&l, "message", v->message.ptr, v->message.len);
	if (res->error[0])
		log_str(&l, "error", res->error);
	if (pol)
		log_str(&l, "policy_hash", pol->hash);
	log_ms(&l, "duration_ms", (double)dur_ns / 1e6);
	log_end(&l);
}

static void log_break_glass(const struct admission_result *res)
{
	const struct admission_request *rq = &res->req;
	struct log_line l;

	if (!log_begin(&l, LOG_WARN, "break-glass bypass used"))
		return;
	log_strn(&l, "uid", rq->uid.ptr, rq->uid.len);
	log_strn(&l, "kind", rq->kind.kind.ptr, rq->kind.kind.len);
	log_strn(&l, "name", rq->name.ptr, rq->name.len);
	log_strn(&l, "namespace", rq->namespace.ptr, rq->namespace.len);
	log_strn(&l, "operation", rq->operation_text.ptr, rq->operation_text.len);
	log_strn(&l, "user", rq->user.username.ptr, rq->user.username.len);
	log_strn(&l, "detail", res->verdict.break_glass_detail.ptr, res->verdict.break_glass_detail.len);
	log_end(&l);
}

/* Count what the answer says. */
static void record(struct admit *a, enum metrics_endpoint ep, const struct admission_result *res,
		   enum metrics_result result, unsigned status, uint64_t dur)
{
	enum object_kind resource = OBJECT_NONE;
	int idx = metrics_http_error_of(status);
	uint32_t i;

	if (res->decoded)
		resource = metrics_kind_of_resource(res->req.resource.resource.ptr, res->req.resource.resource.len);
	metrics_request(a->m, ep, resource, res->decoded ? res->req.operation : ADMISSION_OP_UNKNOWN,
			result, dur);
	if (idx >= 0)
		metrics_http_error(a->m, (enum metrics_http_error)idx);
	if (status != 200)
		return;
	if (result == METRICS_RESULT_DENIED && resource == OBJECT_RESOURCE_SLICE) {
		/* DELETE reviews carry only the old object. */
		const struct k8s_object *o = res->req.object.kind == OBJECT_RESOURCE_SLICE ? &res->req.object
					     : &res->req.old_object;

		if (o->kind == OBJECT_RESOURCE_SLICE)
			metrics_slice_denied(a->m, o->u.slice.driver.ptr, o->u.slice.driver.len);
		else
			metrics_slice_denied(a->m, "", 0);
	}
	for (i = 0; i < res->verdict.nviolations; i++)
		metrics_violation(a->m, res->verdict.violations[i].rule, res->verdict.violations[i].action);
	ledger_watch_count(a->ledger, &res->verdict);
	if (res->verdict.break_glass) {
		metrics_break_glass(a->m, resource);
		log_break_glass(res);
	}
}

/* A denial that a view a moment behind the API server could explain:
 * every denying violation is of a rule that reads the view and says so. */
static bool worth_rechecking(const struct admission_result *res)
{
	const struct verdict *v = &res->verdict;
	uint32_t i;
	bool any = false;

	if (res->http_status != 200 || v->allowed || v->code != 403)
		return false;
	for (i = 0; i < v->nviolations; i++) {
		if (v->violations[i].action != ACTION_DENY)
			continue;
		if (!rule_reads_view(v->violations[i].rule) || !v->violations[i].view_lag)
			return false;
		any = true;
	}
	return any;
}

/* A Pod status ledger.pod.amounts let through undecided because the view
 * has not seen the claim's allocation yet: kube-scheduler patches
 * pods/status milliseconds after the claim's status, and the watch delivers
 * the claim within milliseconds more. Worth deciding again on a newer view
 * (bounded by --view-recheck, as a denial is). */
static bool waits_for_claim(const struct admission_result *res)
{
	const struct verdict *v = &res->verdict;
	uint32_t i;

	if (res->http_status != 200 || !v->allowed)
		return false;
	for (i = 0; i < v->nundecided && i < VERDICT_MAX_UNDECIDED; i++)
		if (v->undecided[i].rule == RULE_LEDGER_POD_AMOUNTS && v->undecided[i].reason == LEDGER_REASON_CLAIM_UNSEEN)
			return true;
	return false;
}

static bool decide_again(const struct admission_result *res)
{
	return worth_rechecking(res) || waits_for_claim(res);
}

/* Decide again on newer views until the denial goes or the wait is over
 * (the watch delivers a release or a slice the scheduler has already seen
 * within milliseconds); *vsnap and *view follow the view used. */
static int recheck(struct admit *a, const struct policy *pol, bool mutate, const char *body, size_t len,
		   struct arena *arena, struct buf *out, struct admission_result *res, struct snapshot **vsnap,
		   const struct view **view)
{
	int64_t deadline = clock_mono_ms() + a->recheck_ms;
	int rc = 0;

	if (atomic_fetch_add(&a->rechecking, 1) >= a->recheck_max) {
		atomic_fetch_sub(&a->rechecking, 1);
		return 0;
	}
	for (;;) {
		struct snapshot *newer = cluster_view_acquire_newer(a->view, view_seq(*view), deadline);

		if (!newer)
			break;
		snapshot_release(*vsnap);
		*vsnap = newer;
		*view = cluster_view_get(newer);
		arena_reset(arena);
		buf_reset(out);
		rc = admission_handle(pol, *view, clock_wall_ns(), mutate ? &a->opt_mutate : &a->opt_validate, &a->lim,
				      body, len, arena, out, res);
		if (rc || !decide_again(res))
			break;
	}
	atomic_fetch_sub(&a->rechecking, 1);
	if (rc == 0)
		ledger_watch_recheck(a->ledger, res->verdict.allowed);
	return rc;
}

/* --- reviews answered without a decision --------------------------------------------- */

/* The answer to a review that was not judged: on /validate a denial with
 * code and message; on /mutate an allow without a patch, as for a review
 * that does not decode (every denial is /validate's, and the mutating
 * webhooks, failurePolicy Ignore, exist so that no write waits on the
 * guard). */
static int encode_unjudged(bool mutate, struct str uid, int32_t code, const char *message, struct buf *out)
{
	struct verdict v;

	buf_reset(out);
	if (!mutate)
		return review_encode_error(uid, code, message, out);
	verdict_init(&v, 0);
	return review_encode(uid, &v, true, out);
}

static void log_unjudged(bool mutate, struct str uid, int32_t code, const char *message, uint64_t dur_ns)
{
	struct log_line l;

	if (!log_begin(&l, LOG_WARN, "admission error"))
		return;
	log_str(&l, "endpoint", mutate ? "mutate" : "validate");
	log_strn(&l, "uid", uid.ptr, uid.len);
	log_bool(&l, "allowed", mutate);
	log_uint(&l, "status", 200);
	log_int(&l, "code", code);
	log_str(&l, "message", message);
	log_ms(&l, "duration_ms", (double)dur_ns / 1e6);
	log_end(&l);
}

/* The uid of body[0..len) for an answer without a decision, found by the
 * prefix scan (a bounded pass with no arena). */
static bool unjudged_uid(const char *body, size_t len, char *tmp, size_t tmpn, struct str *uid)
{
	return review_prefix_uid(body, len, tmp, tmpn, uid) == 0;
}

int admit_refuse(struct admit *a, bool mutate, const char *text, size_t len, int32_t code,
		 const char *message, bool counted, char *out, size_t outn, size_t *outlen, uint64_t start_ns)
{
	char tmp[6 * REVIEW_PREFIX_UID_MAX + 1];
	struct arena *arena;
	struct str uid;
	struct buf b;
	uint64_t dur;
	int rc;

	*outlen = 0;
	if (!unjudged_uid(text, len, tmp, sizeof(tmp), &uid))
		return -ENOENT;
	/* Built in this thread's arena, which holds nothing between requests,
	 * then copied out: the uid may lie in out. */
	arena = worker_arena(a);
	if (!arena)
		return -ENOMEM;
	arena_reset(arena);
	buf_init_in(&b, outn, arena);
	rc = encode_unjudged(mutate, uid, code, message, &b);
	if (rc == 0) {
		dur = clock_mono_ns() - start_ns;
		if (!counted)
			metrics_request(a->m, mutate ? METRICS_EP_MUTATE : METRICS_EP_VALIDATE, OBJECT_NONE,
					ADMISSION_OP_UNKNOWN, METRICS_RESULT_ERROR, dur);
		/* Before the copy, which may overwrite the uid. */
		log_unjudged(mutate, uid, code, message, dur);
		memmove(out, buf_cstr(&b), buf_len(&b));
		*outlen = buf_len(&b);
	}
	arena_reset(arena);
	worker_trim(a);
	return rc;
}

unsigned admit_review(struct admit *a, bool mutate, const char *body, size_t len, struct buf *out,
		      uint64_t start_ns)
{
	enum metrics_endpoint ep = mutate ? METRICS_EP_MUTATE : METRICS_EP_VALIDATE;
	struct admission_result res;
	struct snapshot *snap, *vsnap = NULL;
	const struct view *view = NULL;
	const struct policy *pol;
	struct arena *arena;
	enum metrics_result result;
	unsigned status = 500;
	uint64_t dur;
	int rc = -ENOMEM;
	char tmp[6 * REVIEW_PREFIX_UID_MAX + 1];
	struct str uid;

	memset(&res, 0, sizeof(res));
	buf_reset(out);
	/* Held to the end: a reload during this request does not change it. */
	snap = policy_source_acquire(a->policy);
	if (!snap) {
		static const char no_policy[] = "dra-guard has no valid policy loaded yet (its /readyz says why); "
						"this review was not judged; retry";

		dur = clock_mono_ns() - start_ns;
		if (unjudged_uid(body, len, tmp, sizeof(tmp), &uid) &&
		    encode_unjudged(mutate, uid, 503, no_policy, out) == 0) {
			metrics_request(a->m, ep, OBJECT_NONE, ADMISSION_OP_UNKNOWN, METRICS_RESULT_ERROR, dur);
			log_unjudged(mutate, uid, 503, no_policy, dur);
			return 200;
		}
		buf_reset(out);
		record(a, ep, &res, METRICS_RESULT_ERROR, 503, dur);
		log_msg_str(LOG_WARN, "admission refused: no valid policy loaded", "endpoint",
			    mutate ? "mutate" : "validate");
		return 503;
	}
	pol = snapshot_get(snap);
	/* The view as it is now, held to the end like the policy; none before
	 * the first sync (the replica is not ready then). */
	if (a->view && (vsnap = cluster_view_acquire(a->view)) != NULL)
		view = cluster_view_get(vsnap);
	arena = worker_arena(a);
	if (arena) {
		struct engine_options mo = a->opt_mutate;

		/* Read per request: the Lease's holder comes and goes. */
		mo.gate_unreleasable = !a->gate || !gate_release_live(a->gate);
		arena_reset(arena);
		rc = admission_handle(pol, view, clock_wall_ns(), mutate ? &mo : &a->opt_validate,
				      &a->lim, body, len, arena, out, &res);
		if (rc == 0 && view && a->recheck_ms && decide_again(&res))
			rc = recheck(a, pol, mutate, body, len, arena, out, &res, &vsnap, &view);
	}
	if (rc == 0)
		status = (unsigned)res.http_status;
	result = result_of(&res, rc);
	dur = clock_mono_ns() - start_ns;
	if (rc != 0 && unjudged_uid(body, len, tmp, sizeof(tmp), &uid)) {
		char msg[160];

		/* The answer could not be built (the arena or the answer's cap):
		 * a small one in its place, still inside a review. */
		snprintf(msg, sizeof(msg), "dra-guard could not build the answer to this review within its "
			 "limits (%s); it was not judged", strerror(-rc));
		if (encode_unjudged(mutate, uid, 500, msg, out) == 0) {
			metrics_request(a->m, ep, OBJECT_NONE, ADMISSION_OP_UNKNOWN, METRICS_RESULT_ERROR,
					dur);
			log_unjudged(mutate, uid, 500, msg, dur);
			snapshot_release(vsnap);
			snapshot_release(snap);
			worker_trim(a);
			return 200;
		}
		buf_reset(out);
	}
	record(a, ep, &res, result, status, dur);
	if (rc == 0 && res.verdict.gate_withheld)
		gate_withheld(a, &res);
	log_admission(mutate, &res, result, status, pol, dur);
	/* The validating endpoint decides; the mutating one only repeats the
	 * decision, so only one of the two emits. An allowed review emits only
	 * by a warning that tells the Pod (ledger.pod.omitted). */
	if (a->events && !mutate && rc == 0 && status == 200 && res.decoded)
		event_sink_offer(a->events, &res.req, &res.verdict, clock_wall_ns());
	if (rc != 0) {
		log_msg_str(LOG_ERROR, "admission answer could not be built", "error", strerror(-rc));
		buf_reset(out);
	}
	snapshot_release(vsnap);
	snapshot_release(snap);
	worker_trim(a);
	return status;
}
