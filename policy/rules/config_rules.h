/* config_rules.h - policy.invalid: the guard checks its own policy ConfigMap.
 *
 * A typo in an emergency must be caught by the API server, not discovered
 * when the replicas reload: CREATE/UPDATE of the ConfigMap the guard reads
 * (named by engine_options.self_name/self_namespace) is denied when its keys
 * would not load, with the line and path of the error. */
#ifndef DRA_GUARD_CONFIG_RULES_H
#define DRA_GUARD_CONFIG_RULES_H

#include "check.h"

/* policy.invalid on a ConfigMap CREATE or UPDATE. */
void config_rules_check(struct check *c);

#endif
