/* events.c - which Kubernetes Events a refusal asks for, and what they say. */
#include "events.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "jw.h"
#include "names.h"
#include "timefmt.h"

/* What to do, per rule: the note's second half. The rule's own message
 * (the first half) says what is wrong and, where the rule knows, when it
 * clears ("clears at ..."). */
static const char *advice(enum rule_id rule)
{
	switch (rule) {
	case RULE_LEDGER_POOL_FRESH:
		return "Nothing to do: the scheduler retries, and the Pod starts once the pool is complete and "
		       "settled (see the time above), within kube-scheduler's retry backoff after it (1 s doubling "
		       "to 10 s by default); if it stays, check the driver's ResourceSlices.";
	case RULE_LEDGER_DEVICE_DUPLICATE:
		return "The scheduler retries with another device; clears when the holder releases the device. "
		       "If it repeats, compare the claims named above with GET /debug/ledger.";
	case RULE_LEDGER_NUMA_SPLIT:
		return "The scheduler retries; clears when devices of one NUMA zone are free on a node, or when "
		       "the policy's numaAlign is turned off for the driver.";
	case RULE_LEDGER_POD_AMOUNTS:
		return "kube-scheduler retries the binding; clears when the Pod's status carries the amounts the "
		       "mappings give (a mapping changed under the claim? see GET /debug/ledger).";
	case RULE_LEDGER_POD_OMITTED:
		return "Nothing was refused, and the Pod runs; but the node is committed that much more than "
		       "kube-scheduler counts until the Pod ends. To have it counted, delete the Pod (its controller "
		       "makes a new one, scheduled with all its claims in one cycle); meanwhile see "
		       "GET /debug/ledger?node=<node> (uncounted).";
	case RULE_CLAIM_FREEZE_ALLOCATE:
	case RULE_CLAIM_FREEZE_CREATE:
		return "Clears when an operator ends the freeze (freeze: \"false\" in the guard's policy "
		       "ConfigMap); break-glass groups bypass it.";
	default:
		return "";
	}
}

/* The rules that emit, in the one order every per-reason series and
 * report follows (the metrics' label values, replay's report). */
static const enum rule_id emitting[EVENTS_RULES] = {
	RULE_LEDGER_POOL_FRESH, RULE_LEDGER_DEVICE_DUPLICATE, RULE_LEDGER_NUMA_SPLIT,
	RULE_LEDGER_POD_AMOUNTS, RULE_CLAIM_FREEZE_ALLOCATE, RULE_CLAIM_FREEZE_CREATE,
	RULE_LEDGER_POD_OMITTED,
};

enum rule_id events_rule_at(size_t i)
{
	return emitting[i];
}

int events_rule_index(enum rule_id rule)
{
	int i;

	for (i = 0; i < EVENTS_RULES; i++)
		if (emitting[i] == rule)
			return i;
	return -1;
}

bool events_rule_emits(enum rule_id rule)
{
	return events_rule_index(rule) >= 0;
}

/* A refused allocation (or creation) holds a Pod Pending: pending time is
 * measured. A refused Pod status write holds a binding, not a claim. */
bool events_rule_holds(enum rule_id rule)
{
	return events_rule_emits(rule) && rule != RULE_LEDGER_POD_AMOUNTS && rule != RULE_LEDGER_POD_OMITTED;
}

bool events_rule_warns(enum rule_id rule)
{
	return rule == RULE_LEDGER_POD_OMITTED;
}

void events_reason(enum rule_id rule, char out[static EVENTS_REASON_MAX])
{
	const char *s = rule_name(rule);
	size_t o = 0;
	bool up = true;

	for (; *s && o < EVENTS_REASON_MAX - 1; s++) {
		if (*s == '.' || *s == '-' || *s == '_') {
			up = true;
			continue;
		}
		out[o++] = up && *s >= 'a' && *s <= 'z' ? (char)(*s - 'a' + 'A') : *s;
		up = false;
	}
	out[o] = '\0';
}

/* Copy s into dst[n], whole: a name longer than the field is not one the
 * API server accepts, so the copy is refused (false) rather than cut. */
static bool copy_str(char *dst, size_t n, struct str s)
{
	if (s.len >= n) {
		dst[0] = '\0';
		return false;
	}
	/* An absent field is {NULL, 0}: memcpy's arguments must not be NULL. */
	if (s.len)
		memcpy(dst, s.ptr, s.len);
	dst[s.len] = '\0';
	return true;
}

/* The length of s[0..n) cut to at most max bytes at a character boundary. */
static size_t utf8_cut(const char *s, size_t n, size_t max)
{
	if (n <= max)
		return n;
	while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
		max--;
	return max;
}

/* "<message>. <advice>": the message is cut (with "...") to leave the advice whole. */
static void make_note(char out[static EVENTS_NOTE_MAX], const struct violation *vi)
{
	const char *adv = advice(vi->rule);
	size_t alen = strlen(adv), room = EVENTS_NOTE_MAX - 1 - alen - 2, mlen = vi->message.len;
	bool cut = false;

	while (mlen && (vi->message.ptr[mlen - 1] == '.' || vi->message.ptr[mlen - 1] == ' '))
		mlen--;
	if (mlen > room) {
		mlen = utf8_cut(vi->message.ptr, mlen, room - 3);
		cut = true;
	}
	snprintf(out, EVENTS_NOTE_MAX, "%.*s%s. %s", (int)mlen, vi->message.ptr, cut ? "..." : "", adv);
}

/* The names go into the API path and the Event: only what the API server
 * itself accepts as object names (a review may come from anyone who can
 * reach the webhook port). */
static bool names_ok(struct str ns, struct str name)
{
	return ns.len <= 63 && names_is_dns_subdomain(ns) && !memchr(ns.ptr, '.', ns.len) &&
	       names_is_dns_subdomain(name);
}

static bool claim_ref(const struct admission_request *rq, struct events_ref *out)
{
	const struct k8s_object *o = &rq->object;
	struct str name = o->meta.name.len ? o->meta.name : rq->name;
	struct str ns = o->meta.namespace.len ? o->meta.namespace : rq->namespace;

	memset(out, 0, sizeof(*out));
	snprintf(out->kind, sizeof(out->kind), "ResourceClaim");
	if (rq->kind.version.len && rq->kind.version.len < 16)
		snprintf(out->api_version, sizeof(out->api_version), "resource.k8s.io/%.*s", STR_FMT(rq->kind.version));
	else
		snprintf(out->api_version, sizeof(out->api_version), "resource.k8s.io/v1");
	return names_ok(ns, name) && copy_str(out->name, sizeof(out->name), name) &&
	       copy_str(out->namespace, sizeof(out->namespace), ns) &&
	       copy_str(out->uid, sizeof(out->uid), o->meta.uid);
}

static void pod_ref_init(struct events_ref *out)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->kind, sizeof(out->kind), "Pod");
	snprintf(out->api_version, sizeof(out->api_version), "v1");
}

/* The Pod a claim status is written for: the first Pod in reservedFor
 * (kube-scheduler writes the allocation and the reservation together). */
static bool reserved_pod(const struct admission_request *rq, const struct events_ref *claim, struct events_ref *out)
{
	const struct resource_claim *cl = &rq->object.u.claim;
	uint32_t i;

	for (i = 0; i < cl->nreserved_for; i++) {
		const struct consumer_ref *c = &cl->reserved_for[i];

		if (c->api_group.len || !str_eq_cstr(c->resource, "pods") || !names_is_dns_subdomain(c->name))
			continue;
		pod_ref_init(out);
		snprintf(out->namespace, sizeof(out->namespace), "%s", claim->namespace);
		return copy_str(out->name, sizeof(out->name), c->name) && copy_str(out->uid, sizeof(out->uid), c->uid);
	}
	return false;
}

/* Fill the objects of r for the review; false when the review names none. */
static bool objects_of(const struct admission_request *rq, struct events_report *r)
{
	const struct k8s_object *o = &rq->object;

	if (o->kind == OBJECT_RESOURCE_CLAIM) {
		struct events_ref claim;

		if (!claim_ref(rq, &claim))
			return false;
		snprintf(r->action, sizeof(r->action), "%s",
			 rq->operation == ADMISSION_OP_CREATE ? "Create" : "Allocate");
		r->claim = claim;
		if (reserved_pod(rq, &claim, &r->regarding)) {
			r->related = claim;
			r->has_related = true;
			snprintf(r->pod, sizeof(r->pod), "%s", r->regarding.name);
		} else {
			r->regarding = claim;
		}
		return true;
	}
	if (o->kind == OBJECT_POD) {
		struct str name = o->meta.name.len ? o->meta.name : rq->name;
		struct str ns = o->meta.namespace.len ? o->meta.namespace : rq->namespace;

		pod_ref_init(&r->regarding);
		snprintf(r->action, sizeof(r->action), "UpdatePodStatus");
		if (!names_ok(ns, name))
			return false;
		return copy_str(r->regarding.name, sizeof(r->regarding.name), name) &&
		       copy_str(r->regarding.namespace, sizeof(r->regarding.namespace), ns) &&
		       copy_str(r->regarding.uid, sizeof(r->regarding.uid), o->meta.uid) &&
		       copy_str(r->pod, sizeof(r->pod), name);
	}
	return false;
}

/* A refused claim creation regards the claim, which does not exist; the
 * Pods that name it (found in the view by the rule) are told instead: the
 * first takes the report's place (and its pending time), the others follow
 * while there is room. */
static void tell_held_pods(const struct verdict *v, struct events_report *first, struct events_report *out,
			   size_t max, size_t *n)
{
	const struct events_report proto = *first;
	uint32_t i;
	bool placed = false;

	for (i = 0; i < v->nheld_pods && i < VERDICT_MAX_HELD_PODS; i++) {
		const struct verdict_pod *vp = &v->held_pods[i];
		struct events_report t = proto;

		if (placed && *n >= max)
			return;
		pod_ref_init(&t.regarding);
		snprintf(t.regarding.namespace, sizeof(t.regarding.namespace), "%s", proto.claim.namespace);
		if (!names_is_dns_subdomain(vp->name) ||
		    !copy_str(t.regarding.name, sizeof(t.regarding.name), vp->name) ||
		    !copy_str(t.regarding.uid, sizeof(t.regarding.uid), vp->uid))
			continue;
		t.related = proto.claim;
		t.has_related = true;
		snprintf(t.pod, sizeof(t.pod), "%s", t.regarding.name);
		t.pending = !placed && proto.pending;
		if (placed)
			out[(*n)++] = t;
		else
			*first = t;
		placed = true;
	}
}

void events_from_review(const struct admission_request *rq, const struct verdict *v, int64_t now_ns,
			struct events_report *out, size_t max, size_t *n)
{
	bool seen[RULE_COUNT] = { false };
	uint32_t i;

	*n = 0;
	if (max > EVENTS_PER_REVIEW)
		max = EVENTS_PER_REVIEW;
	/* A dry run changes nothing, so it emits nothing (sideEffects: NoneOnDryRun). */
	if (rq->dry_run)
		return;
	for (i = 0; i < v->nviolations && *n < max; i++) {
		const struct violation *vi = &v->violations[i];
		struct events_report *r = &out[*n];
		bool tells = vi->action == ACTION_DENY ? !v->allowed
						       : vi->action == ACTION_WARN && events_rule_warns(vi->rule);

		if (!tells || (unsigned)vi->rule >= RULE_COUNT || !events_rule_emits(vi->rule) || seen[vi->rule])
			continue;
		seen[vi->rule] = true;
		memset(r, 0, sizeof(*r));
		if (!objects_of(rq, r))
			return;
		r->rule = vi->rule;
		events_reason(vi->rule, r->reason);
		make_note(r->note, vi);
		/* Held back: a claim waiting for its creation or allocation. A
		 * freeze's refusal of a claim's metadata UPDATE (its owner or
		 * pod-claim-name) holds nothing back. */
		r->pending = events_rule_holds(vi->rule) && rq->object.kind == OBJECT_RESOURCE_CLAIM &&
			     !(vi->rule == RULE_CLAIM_FREEZE_CREATE && rq->operation != ADMISSION_OP_CREATE);
		r->observed_ns = now_ns;
		(*n)++;
		if (vi->rule == RULE_CLAIM_FREEZE_CREATE && v->nheld_pods)
			tell_held_pods(v, r, out, max, n);
	}
}

static void ref_key(char *out, size_t n, const struct events_ref *r)
{
	snprintf(out, n, "%s/%s/%s/%s", r->kind, r->namespace, r->name, r->uid);
}

void events_key(const struct events_report *r, char out[static EVENTS_KEY_MAX])
{
	char reg[400], rel[400] = "";

	ref_key(reg, sizeof(reg), &r->regarding);
	if (r->has_related)
		ref_key(rel, sizeof(rel), &r->related);
	snprintf(out, EVENTS_KEY_MAX, "%s|%s|%s|%s|%s", r->reason, r->action, EVENTS_CONTROLLER, reg, rel);
}

void events_object_key(const struct events_report *r, char out[static EVENTS_KEY_MAX])
{
	ref_key(out, EVENTS_KEY_MAX, &r->regarding);
}

void events_name(const struct events_report *r, int64_t first_ns, char out[static 254])
{
	char suffix[24];
	int sl = snprintf(suffix, sizeof(suffix), ".%" PRIx64, (uint64_t)first_ns);
	int room = 253 - sl;

	snprintf(out, 254, "%.*s%s", room, r->regarding.name, suffix);
}

void events_microtime(int64_t ns, char out[static EVENTS_TIME_MAX])
{
	char whole[TIMEFMT_MAX];
	int64_t frac = ns % 1000000000;

	if (frac < 0)
		frac += 1000000000;
	timefmt_rfc3339(ns - frac, whole);
	/* "...:SSZ" -> "...:SS.ffffffZ" */
	snprintf(out, EVENTS_TIME_MAX, "%.*s.%06" PRId64 "Z", (int)strlen(whole) - 1, whole, frac / 1000);
}

static void add_ref(struct jw *w, const char *key, const struct events_ref *r)
{
	jw_key(w, key);
	jw_object_begin(w);
	jw_kcstr(w, "apiVersion", r->api_version);
	jw_kcstr(w, "kind", r->kind);
	jw_kcstr(w, "namespace", r->namespace);
	jw_kcstr(w, "name", r->name);
	if (r->uid[0])
		jw_kcstr(w, "uid", r->uid);
	jw_object_end(w);
}

static void add_series(struct jw *w, uint64_t count, int64_t last_ns)
{
	char t[EVENTS_TIME_MAX];

	events_microtime(last_ns, t);
	jw_key(w, "series");
	jw_object_begin(w);
	jw_kuint(w, "count", count);
	jw_kcstr(w, "lastObservedTime", t);
	jw_object_end(w);
}

int events_create_json(const struct events_report *r, const char *name, const char *instance, int64_t first_ns,
		       uint64_t count, int64_t last_ns, struct buf *out)
{
	char t[EVENTS_TIME_MAX];
	size_t start = buf_len(out);
	struct jw w;
	int rc;

	events_microtime(first_ns, t);
	jw_init(&w, out);
	jw_object_begin(&w);
	jw_kcstr(&w, "apiVersion", "events.k8s.io/v1");
	jw_kcstr(&w, "kind", "Event");
	jw_key(&w, "metadata");
	jw_object_begin(&w);
	jw_kcstr(&w, "name", name);
	jw_kcstr(&w, "namespace", r->regarding.namespace);
	jw_object_end(&w);
	jw_kcstr(&w, "eventTime", t);
	jw_kcstr(&w, "type", "Warning");
	jw_kcstr(&w, "reportingController", EVENTS_CONTROLLER);
	jw_kstring(&w, "reportingInstance", instance, strnlen(instance, EVENTS_INSTANCE_MAX));
	jw_kcstr(&w, "action", r->action);
	jw_kcstr(&w, "reason", r->reason);
	jw_kcstr(&w, "note", r->note);
	add_ref(&w, "regarding", &r->regarding);
	if (r->has_related)
		add_ref(&w, "related", &r->related);
	if (count >= 2)
		add_series(&w, count, last_ns);
	jw_object_end(&w);
	rc = jw_finish(&w);
	if (rc)
		buf_truncate(out, start);
	return rc;
}

int events_series_patch_json(uint64_t count, int64_t last_ns, struct buf *out)
{
	size_t start = buf_len(out);
	struct jw w;
	int rc;

	if (count < 2)
		return -EINVAL;
	jw_init(&w, out);
	jw_object_begin(&w);
	add_series(&w, count, last_ns);
	jw_object_end(&w);
	rc = jw_finish(&w);
	if (rc)
		buf_truncate(out, start);
	return rc;
}
