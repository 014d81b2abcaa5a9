/* vap.h - the stateless rules as ValidatingAdmissionPolicies.
 *
 * From one policy snapshot, a YAML stream of admissionregistration.k8s.io/v1
 * ValidatingAdmissionPolicy objects and their bindings that the API server
 * evaluates itself, so the rules that need nothing but the request keep
 * holding while the webhook is out of the path. One policy and one binding
 * per rule, named "dra-guard.<rule id>"; the binding's validationActions
 * follow the rule's action (deny [Deny], warn [Warn], dryrun [Audit]).
 *
 * What the policy document says (drivers, bounds, canary nodes, identities,
 * the freeze scope) is written into the expressions; the freeze itself is
 * read at admission time from the policy ConfigMap through paramKind, so
 * patching its freeze key flips the policies as it flips the webhook.
 *
 * A policy never denies what the engine allows: where CEL cannot reach the
 * engine's exact answer (quantity products, integers past 2^53) it allows,
 * and vap_rule_info() says so. Pure: no I/O, no clock, no globals. */
#ifndef DRA_GUARD_VAP_H
#define DRA_GUARD_VAP_H

#include <stdbool.h>

#include "buf.h"
#include "policy.h"
#include "rules.h"
#include "str.h"

/* The largest stream vap_render() writes (the example policy gives about
 * 150 KiB). */
#define VAP_OUTPUT_MAX (8 * 1024 * 1024)

/* "dra-guard." + the longest rule id, with the NUL. */
#define VAP_NAME_MAX 64

struct vap_options {
	struct str param_namespace;   /* the policy ConfigMap read for the freeze */
	struct str param_name;
};

enum vap_coverage {
	VAP_FULL = 0,      /* expressed: the API server gives the engine's verdict */
	VAP_PARTIAL,       /* expressed, and never denies what the engine allows; some of
			    * what the engine denies it allows (vap_rule_info() says what) */
	VAP_NONE,          /* cannot be expressed: no policy */
	VAP_IDLE,          /* nothing to check under this policy: no policy */
};

struct vap_rule_info {
	enum vap_coverage coverage;
	const char *why;   /* what is not expressed and why; NULL when nothing. Static. */
};

/* How rule id is expressed under p. */
void vap_rule_info(const struct policy *p, enum rule_id id, struct vap_rule_info *out);

/* "full", "partial", "none", "idle". */
const char *vap_coverage_name(enum vap_coverage c);

/* "dra-guard.slice.mapping.name": the name of rule id's policy and binding. */
void vap_object_name(enum rule_id id, char buf[VAP_NAME_MAX]);

/* True when rule id, expressed under p, is a slice rule at deny whose
 * policy passes a violation an UPDATE leaves as the stored slice had it:
 * the engine warns such a violation instead of denying it, and the policy
 * gives no warning (a second policy bound to Warn would judge every UPDATE
 * twice). */
bool vap_rule_ratchets(const struct policy *p, enum rule_id id);

/* Append the YAML stream for p to out: a comment naming the policy's hash,
 * then each expressed rule's policy and binding, in rule order. Returns 0;
 * -EINVAL when opt names no ConfigMap or the policy holds text that cannot
 * be written into CEL (invalid UTF-8); -E2BIG past VAP_OUTPUT_MAX or out's
 * cap; -ENOMEM. out keeps what was appended before a failure. */
int vap_render(const struct policy *p, const struct vap_options *opt, struct buf *out);

#endif
