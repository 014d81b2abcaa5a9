/* names.c - what counts as a valid name where the guard checks one. */
#include "names.h"

#include <string.h>

#define HUGEPAGES_PREFIX "hugepages-"

enum node_resource names_node_resource(struct str name, struct quantity *page_size)
{
	struct quantity q;
	size_t plen = sizeof(HUGEPAGES_PREFIX) - 1;

	if (str_eq_cstr(name, "cpu"))
		return NODE_RESOURCE_CPU;
	if (str_eq_cstr(name, "memory"))
		return NODE_RESOURCE_MEMORY;
	if (str_eq_cstr(name, "ephemeral-storage"))
		return NODE_RESOURCE_EPHEMERAL_STORAGE;
	if (!str_has_prefix(name, HUGEPAGES_PREFIX) || name.len == plen)
		return NODE_RESOURCE_INVALID;
	/* Kubernetes parses the size without trimming anything. */
	if (quantity_parse_strict(name.ptr + plen, name.len - plen, &q) != 0)
		return NODE_RESOURCE_INVALID;
	if (quantity_sign(&q) <= 0 || !quantity_is_integer(&q))
		return NODE_RESOURCE_INVALID;
	if (page_size)
		*page_size = q;
	return NODE_RESOURCE_HUGEPAGES;
}

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* One RFC 1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63 bytes. */
static bool is_dns_label(const char *p, size_t n)
{
	size_t i;

	if (n == 0 || n > 63 || !is_lower_alnum(p[0]) || !is_lower_alnum(p[n - 1]))
		return false;
	for (i = 1; i + 1 < n; i++)
		if (!is_lower_alnum(p[i]) && p[i] != '-')
			return false;
	return true;
}

bool names_is_dns_subdomain(struct str s)
{
	size_t start = 0, i;

	if (s.len == 0 || s.len > 253)
		return false;
	for (i = 0; i <= s.len; i++) {
		if (i == s.len || s.ptr[i] == '.') {
			if (!is_dns_label(s.ptr + start, i - start))
				return false;
			start = i + 1;
		}
	}
	return true;
}

#define SA_PREFIX "system:serviceaccount:"

bool names_is_serviceaccount(struct str s)
{
	size_t plen = sizeof(SA_PREFIX) - 1, i;
	struct str ns, name;

	if (!str_has_prefix(s, SA_PREFIX))
		return false;
	for (i = plen; i < s.len && s.ptr[i] != ':'; i++)
		;
	if (i == s.len)
		return false;
	ns.ptr = s.ptr + plen;
	ns.len = i - plen;
	name.ptr = s.ptr + i + 1;
	name.len = s.len - i - 1;
	return is_dns_label(ns.ptr, ns.len) && names_is_dns_subdomain(name);
}

#define NODE_PREFIX "system:node:"

bool names_kubelet_node(struct str username, struct str *node)
{
	size_t plen = sizeof(NODE_PREFIX) - 1;

	if (!str_has_prefix(username, NODE_PREFIX) || username.len == plen)
		return false;
	node->ptr = username.ptr + plen;
	node->len = username.len - plen;
	return true;
}

void names_split_api_version(struct str api_version, struct str *group, struct str *version)
{
	const char *slash = api_version.len ? memchr(api_version.ptr, '/', api_version.len) : NULL;

	if (!slash) {
		*group = STR_LIT("");
		*version = api_version;
		return;
	}
	group->ptr = api_version.ptr;
	group->len = (size_t)(slash - api_version.ptr);
	version->ptr = slash + 1;
	version->len = api_version.len - group->len - 1;
}
