/* doc_path.c - where a path, as messages write it, is in a doc tree.
 *
 * Rules name what they refuse by a path into the object
 * (spec.devices[3].nodeAllocatableResourceMappings["memory"].allocationMultiplier);
 * dry-run turns that into the line and column the user wrote it at. */
#include "doc.h"

#include <string.h>

/* The member of map n called key[0..len). */
static const struct doc_member *member(const struct doc_node *n, const char *key, size_t len)
{
	size_t i;

	if (n->type != DOC_MAP)
		return NULL;
	for (i = 0; i < n->n; i++)
		if (n->members[i].key.len == len && memcmp(n->members[i].key.ptr, key, len) == 0)
			return &n->members[i];
	return NULL;
}

bool doc_path_position(const struct doc_node *root, struct str path, uint32_t *line, uint32_t *col)
{
	const struct doc_node *n = root;
	size_t i = 0;

	if (!root)
		return false;
	*line = root->line;
	*col = root->col;
	while (i < path.len) {
		const char *p = path.ptr + i;
		size_t rest = path.len - i, k;
		const struct doc_member *m = NULL;

		if (*p == '.') {
			i++;
			continue;
		}
		if (rest >= 2 && p[0] == '[' && p[1] == '"') {
			/* ["key"]: up to the closing "] */
			const char *end = NULL;

			for (k = 2; k + 1 < rest; k++)
				if (p[k] == '"' && p[k + 1] == ']')
					end = p + k;
			if (!end)
				return true;
			m = member(n, p + 2, (size_t)(end - p - 2));
			i += (size_t)(end - p) + 2;
		} else if (*p == '[') {
			size_t idx = 0;

			for (k = 1; k < rest && p[k] >= '0' && p[k] <= '9'; k++)
				idx = idx * 10 + (size_t)(p[k] - '0');
			if (k == 1 || k >= rest || p[k] != ']' || n->type != DOC_SEQ || idx >= n->n)
				return true;
			n = n->items[idx];
			*line = n->line;
			*col = n->col;
			i += k + 1;
			continue;
		} else {
			for (k = 0; k < rest && p[k] != '.' && p[k] != '['; k++)
				;
			m = member(n, p, k);
			i += k;
		}
		if (!m)
			return true;
		/* A member is where its key is: that is the line a reader looks for. */
		*line = m->line;
		*col = m->col;
		n = m->value;
	}
	return true;
}
