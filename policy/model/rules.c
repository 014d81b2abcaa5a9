/* rules.c - the rule catalogue. */
#include "rules.h"

#include <errno.h>

struct rule_info {
	const char *name;
	enum action builtin;
	const char *summary;
};

static const struct rule_info rule_table[RULE_COUNT] = {
	[RULE_SLICE_MAPPING_MULTIPLIER] = { "slice.mapping.multiplier", ACTION_DENY,
		"a mapping's multiplier must be a quantity greater than zero" },
	[RULE_SLICE_MAPPING_CAPACITY_KEY] = { "slice.mapping.capacity-key", ACTION_DENY,
		"a mapping's capacityKey must be non-empty and name a capacity of the same device" },
	[RULE_SLICE_MAPPING_EMPTY] = { "slice.mapping.empty", ACTION_WARN,
		"a mapping with neither allocationMultiplier nor capacityKey counts as multiplier 1 only by defaulting" },
	[RULE_SLICE_MAPPING_NAME] = { "slice.mapping.name", ACTION_DENY,
		"a mapped resource must be cpu, memory, ephemeral-storage or hugepages-<size>" },
	[RULE_SLICE_MAPPING_SCHEMA] = { "slice.mapping.schema", ACTION_DENY,
		"a mapping entry must be an object with only the fields its API version defines" },
	[RULE_SLICE_MAPPING_SHAREABLE] = { "slice.mapping.shareable", ACTION_DENY,
		"capacityKey needs a device with allowMultipleAllocations: true" },
	[RULE_SLICE_MAPPING_UNITS] = { "slice.mapping.units", ACTION_DENY,
		"mapped amounts must be real: whole bytes, whole hugepages, cpu no finer than 1m, for every "
		"amount a claim can consume" },
	[RULE_SLICE_MAPPING_UNITS_OPEN] = { "slice.mapping.units.open", ACTION_WARN,
		"where a capacity lets claims consume any amount (no step), one unit of it should map a real amount" },
	[RULE_SLICE_MAPPING_BOUNDS] = { "slice.mapping.bounds", ACTION_DENY,
		"the most one allocation can consume must not map more than the driver's max for that resource" },
	[RULE_SLICE_DRIVER] = { "slice.driver", ACTION_DENY,
		"only listed drivers may publish mappings, and only for resources they are allowed" },
	[RULE_SLICE_CANARY] = { "slice.canary", ACTION_DENY,
		"mappings are allowed only on slices of canary nodes" },
	[RULE_SLICE_GENERATION_REGRESS] = { "slice.generation.regress", ACTION_DENY,
		"spec.pool.generation must not go down" },
	[RULE_SLICE_MAPPING_UNVERSIONED] = { "slice.mapping.unversioned", ACTION_WARN,
		"in a pool of several slices, mappings should change together with a pool generation bump" },
	[RULE_SLICE_GENERATION_STALE] = { "slice.generation.stale", ACTION_DENY,
		"a pool's generation must not be below the highest the cluster view has seen for it (a stale writer)" },
	[RULE_SLICE_POOL_COLLISION] = { "slice.pool.collision", ACTION_DENY,
		"no two drivers may publish a device of the same name in pools of the same name, on any node, where "
		"either carries mappings" },
	[RULE_SLICE_SHAPE_FUTURE] = { "slice.shape.future", ACTION_WARN,
		"uses something Kubernetes 1.37 drops or renames" },
	[RULE_SLICE_WRITER] = { "slice.writer", ACTION_DENY,
		"a listed driver's slices may be written only by its ServiceAccounts, the node's kubelet or admins" },
	[RULE_SLICE_WRITER_NODE] = { "slice.writer.node", ACTION_DENY,
		"a node-scoped driver may write only the slices of the node its Pod runs on" },
	[RULE_CLAIM_FREEZE_CREATE] = { "claim.freeze.create", ACTION_DENY,
		"no new ResourceClaims during a rollback freeze" },
	[RULE_CLAIM_FREEZE_ALLOCATE] = { "claim.freeze.allocate", ACTION_DENY,
		"no new allocations during a rollback freeze" },
	[RULE_CLAIM_FREEZE_GATE] = { "claim.freeze.gate", ACTION_DENY,
		"during a rollback freeze only the guard removes its scheduling gate dra-guard.io/freeze from a Pod" },
	[RULE_STATUS_ALLOCATION_WRITER] = { "status.allocation.writer", ACTION_DENY,
		"only the scheduler (or a configured allocator) may write status.allocation and status.reservedFor" },
	[RULE_STATUS_DEVICES_WRITER] = { "status.devices.writer", ACTION_DENY,
		"only a driver's own ServiceAccount, on the claim's node, may write that driver's status.devices entries" },
	[RULE_STATUS_POD_WRITER] = { "status.pod.writer", ACTION_DENY,
		"only the scheduler may write a Pod's status.nodeAllocatableResourceClaimStatuses" },
	[RULE_LEDGER_POOL_FRESH] = { "ledger.pool.fresh", ACTION_DENY,
		"an allocation may use only a complete, settled pool whose device and mappings the ledger can charge" },
	[RULE_LEDGER_DEVICE_DUPLICATE] = { "ledger.device.duplicate", ACTION_DENY,
		"a device held by another live claim may be allocated again only if it allows it and has capacity left" },
	[RULE_LEDGER_NUMA_SPLIT] = { "ledger.numa.split", ACTION_WARN,
		"a claim's devices stay in one NUMA zone where the policy asks for alignment" },
	[RULE_LEDGER_POD_AMOUNTS] = { "ledger.pod.amounts", ACTION_DENY,
		"a Pod's node-allocatable claim statuses must equal what the ledger charges for those claims" },
	[RULE_LEDGER_POD_OMITTED] = { "ledger.pod.omitted", ACTION_WARN,
		"a Pod's node-allocatable claim statuses should name every claim reserved for it whose devices carry "
		"mappings (kube-scheduler 1.36 leaves out claims allocated in an earlier cycle)" },
	[RULE_LEDGER_MAPPING_DRIFT] = { "ledger.mapping.drift", ACTION_WARN,
		"a slice update that changes the mapping of a device with live allocations (they stay charged as before)" },
	[RULE_POLICY_INVALID] = { "policy.invalid", ACTION_DENY,
		"the guard's policy ConfigMap must hold a policy that loads" },
};

const char *rule_name(enum rule_id id)
{
	if ((unsigned)id >= RULE_COUNT)
		return "";
	return rule_table[id].name;
}

int rule_lookup(struct str s)
{
	int i;

	for (i = 0; i < RULE_COUNT; i++)
		if (str_eq_cstr(s, rule_table[i].name))
			return i;
	return -1;
}

enum action rule_builtin_action(enum rule_id id)
{
	if ((unsigned)id >= RULE_COUNT)
		return ACTION_DENY;
	return rule_table[id].builtin;
}

enum action rule_strictest_action(enum rule_id id)
{
	return id == RULE_LEDGER_POD_OMITTED ? ACTION_WARN : ACTION_DENY;
}

bool rule_reads_view(enum rule_id id)
{
	switch (id) {
	case RULE_SLICE_GENERATION_STALE:
	case RULE_SLICE_POOL_COLLISION:
	case RULE_CLAIM_FREEZE_CREATE:      /* the gated Pod of a template's claim */
	case RULE_LEDGER_POOL_FRESH:
	case RULE_LEDGER_DEVICE_DUPLICATE:
	case RULE_LEDGER_NUMA_SPLIT:
	case RULE_LEDGER_POD_AMOUNTS:
	case RULE_LEDGER_POD_OMITTED:
	case RULE_LEDGER_MAPPING_DRIFT:
		return true;
	default:
		return false;
	}
}

const char *rule_summary(enum rule_id id)
{
	if ((unsigned)id >= RULE_COUNT)
		return "";
	return rule_table[id].summary;
}

const char *action_name(enum action a)
{
	switch (a) {
	case ACTION_DENY: return "deny";
	case ACTION_WARN: return "warn";
	case ACTION_DRYRUN: return "dryrun";
	}
	return "deny";
}

int action_parse(struct str s, enum action *out)
{
	if (str_eq_cstr(s, "deny"))
		*out = ACTION_DENY;
	else if (str_eq_cstr(s, "warn"))
		*out = ACTION_WARN;
	else if (str_eq_cstr(s, "dryrun"))
		*out = ACTION_DRYRUN;
	else
		return -EINVAL;
	return 0;
}
