/* gate.c - holding new Pods at a scheduling gate during a rollback freeze. */
#include "gate.h"

#include <errno.h>

#include "buf.h"
#include "jw.h"
#include "names.h"

bool gate_wanted(const struct policy *p, bool frozen, const struct k8s_object *pod, struct str ns)
{
	const struct pod *pd = &pod->u.pod;

	if (!frozen || !p->freeze_gate_pods || pod->kind != OBJECT_POD)
		return false;
	if (pd->nresource_claims == 0 || pd->node_name.len || pd->has_freeze_gate)
		return false;
	return !p->freeze_scoped || policy_list_has(&p->freeze_namespaces, ns);
}

/* JSON Pointer escaping of the annotation key: "/" becomes "~1". */
#define ANNOTATION_POINTER "/metadata/annotations/dra-guard.io~1freeze-reason"

int gate_pod_patch(const struct policy *p, const struct k8s_object *pod, struct arena *a, struct str *patch)
{
	struct str reason = p->freeze_reason.len ? p->freeze_reason : STR_LIT("no reason given");
	struct buf b;
	struct jw w;
	int rc;

	if (reason.len > GATE_REASON_MAX)
		reason.len = GATE_REASON_MAX;
	buf_init(&b, 2 * 6 * GATE_REASON_MAX + 512);
	jw_init(&w, &b);
	jw_array_begin(&w);
	jw_object_begin(&w);
	jw_kcstr(&w, "op", "add");
	if (pod->u.pod.has_scheduling_gates) {
		jw_kcstr(&w, "path", "/spec/schedulingGates/-");
		jw_key(&w, "value");
	} else {
		jw_kcstr(&w, "path", "/spec/schedulingGates");
		jw_key(&w, "value");
		jw_array_begin(&w);
	}
	jw_object_begin(&w);
	jw_kcstr(&w, "name", MODEL_FREEZE_GATE);
	jw_object_end(&w);
	if (!pod->u.pod.has_scheduling_gates)
		jw_array_end(&w);
	jw_object_end(&w);
	/* An existing annotation of this key (someone copied a gated Pod's
	 * metadata) is replaced by "add", as JSONPatch defines it. */
	jw_object_begin(&w);
	jw_kcstr(&w, "op", "add");
	if (pod->meta.has_annotations) {
		jw_kcstr(&w, "path", ANNOTATION_POINTER);
		jw_kstring(&w, "value", reason.ptr, reason.len);
	} else {
		jw_kcstr(&w, "path", "/metadata/annotations");
		jw_key(&w, "value");
		jw_object_begin(&w);
		jw_kstring(&w, MODEL_FREEZE_ANNOTATION, reason.ptr, reason.len);
		jw_object_end(&w);
	}
	jw_object_end(&w);
	jw_array_end(&w);
	rc = jw_finish(&w);
	if (rc == 0)
		rc = arena_strdup(a, buf_cstr(&b), buf_len(&b), patch);
	buf_free(&b);
	return rc;
}

void gate_lease_judge(const struct gate_lease_state *s, struct gate_lease_verdict *out)
{
	uint32_t lasts = s->duration_s && s->duration_s < s->configured_s ? s->duration_s : s->configured_s;
	bool too_long = s->duration_s > s->configured_s;
	bool lasted = s->since_renewal_ms >= (int64_t)lasts * 1000;

	out->foreign = s->holder == GATE_HOLDER_FOREIGN || (s->holder != GATE_HOLDER_NONE && too_long);
	out->live = (s->holder == GATE_HOLDER_SELF || s->holder == GATE_HOLDER_PEER) && !too_long && !lasted;
	out->take_over = s->holder == GATE_HOLDER_NONE || s->holder == GATE_HOLDER_FOREIGN || lasted;
}

int gate_holder_pod(struct str holder, struct str *pod)
{
	size_t i, us = holder.len;

	for (i = holder.len; i > 0; i--) {
		if (holder.ptr[i - 1] == '_') {
			us = i - 1;
			break;
		}
	}
	if (us == holder.len || us + 1 == holder.len)
		return -EINVAL;
	for (i = us + 1; i < holder.len; i++)
		if (holder.ptr[i] < '0' || holder.ptr[i] > '9')
			return -EINVAL;
	/* A Pod's name: a DNS subdomain, as the API server checks it. */
	if (!names_is_dns_subdomain((struct str){ holder.ptr, us }))
		return -EINVAL;
	pod->ptr = holder.ptr;
	pod->len = us;
	return 0;
}

bool gate_removed(const struct k8s_object *old_pod, const struct k8s_object *new_pod)
{
	return old_pod->kind == OBJECT_POD && new_pod->kind == OBJECT_POD && old_pod->u.pod.has_freeze_gate &&
	       !new_pod->u.pod.has_freeze_gate;
}
