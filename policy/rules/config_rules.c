/* config_rules.c - policy.invalid: the guard checks its own policy ConfigMap. */
#include "config_rules.h"

#include <errno.h>
#include <stdio.h>

static bool is_self(const struct check *c)
{
	struct str name = model_request_name(c->req);
	struct str ns = model_request_namespace(c->req);

	return c->self_name.len && str_eq(name, c->self_name) && str_eq(ns, c->self_namespace);
}

void config_rules_check(struct check *c)
{
	const struct config_map *cm = &c->req->object.u.config_map;
	struct policy_error err;
	char where[POLICY_ERROR_MAX + 400];
	int rc;

	if (!is_self(c))
		return;
	if (!cm->has_policy) {
		check_violation(c, RULE_POLICY_INVALID, "data",
				"data[\"%s\"] is missing; dra-guard would keep its last good policy, but a "
				"new replica would not start ready", POLICY_KEY_DOCUMENT);
		return;
	}
	/* In the request's arena: a write of the ConfigMap costs what any
	 * other request may, and what the check built goes with the request. */
	rc = policy_check_parts(cm->policy.ptr, cm->policy.len,
				cm->has_freeze, cm->freeze.ptr, cm->freeze.len,
				cm->has_freeze_reason, cm->freeze_reason.ptr, cm->freeze_reason.len,
				c->arena, &err);
	if (rc == -ENOMEM || rc == -E2BIG) {
		c->error = rc;
		return;
	}
	if (rc == 0)
		return;
	policy_error_format(&err, where, sizeof(where));
	check_violation_at(c, RULE_POLICY_INVALID,
			   check_printf(c, "data[\"%s\"]", err.source[0] ? err.source : POLICY_KEY_DOCUMENT),
			   "the policy would not load: %s", where);
}
