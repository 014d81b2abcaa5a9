/* names.h - what counts as a valid name where the guard checks one.
 *
 * Shared by the policy loader (which refuses a policy naming a resource the
 * scheduler cannot account) and the slice rules (which refuse mappings of
 * such resources). Pure. */
#ifndef DRA_GUARD_NAMES_H
#define DRA_GUARD_NAMES_H

#include <stdbool.h>

#include "quantity.h"
#include "str.h"

enum node_resource {
	NODE_RESOURCE_INVALID = 0,
	NODE_RESOURCE_CPU,
	NODE_RESOURCE_MEMORY,
	NODE_RESOURCE_EPHEMERAL_STORAGE,
	NODE_RESOURCE_HUGEPAGES,
};

/* Classify a node resource name: cpu, memory, ephemeral-storage, or
 * hugepages-<size> where size is a positive whole number of bytes (a
 * quantity: hugepages-2Mi, hugepages-1Gi). page_size, when not NULL, gets the
 * page size of a hugepages name. Anything else is NODE_RESOURCE_INVALID. */
enum node_resource names_node_resource(struct str name, struct quantity *page_size);

/* The accepted forms, for messages. */
#define NAMES_NODE_RESOURCES_ACCEPTED "cpu, memory, ephemeral-storage, hugepages-<size> (e.g. hugepages-2Mi)"

/* True for "system:serviceaccount:<namespace>:<name>" with both parts
 * non-empty DNS labels/subdomains as Kubernetes allows them. */
bool names_is_serviceaccount(struct str s);

/* True for a DNS subdomain (RFC 1123, at most 253 bytes): a DRA driver name. */
bool names_is_dns_subdomain(struct str s);

/* True for "system:node:<name>"; *node gets <name>. */
bool names_kubelet_node(struct str username, struct str *node);

/* Split an apiVersion "group/version" into its parts; a core "v1" has an
 * empty group. Both point into api_version. */
void names_split_api_version(struct str api_version, struct str *group, struct str *version);

#endif
