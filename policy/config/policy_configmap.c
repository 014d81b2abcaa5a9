/* policy_configmap.c - the policy ConfigMap manifest: its shape, its keys
 * loaded as the parts of a policy, and errors placed in the manifest.
 *
 * data["policy.yaml"] is a document inside a string. The loader reports
 * positions inside that string; a user reads the manifest. For a literal
 * block scalar (policy.yaml: |), which is how the document is written in
 * practice, each line of the string is one line of the manifest, indented:
 * the error is moved there, after checking that the manifest's line really
 * holds the string's line. For any other style (quoted, folded, a JSON
 * manifest) the error points at the value and says where inside it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "policy_impl.h"

static const char *const configmap_keys[] = {
	"apiVersion", "kind", "metadata", "data", "immutable", NULL
};
static const char *const configmap_data_keys[] = {
	POLICY_KEY_DOCUMENT, POLICY_KEY_FREEZE, POLICY_KEY_FREEZE_REASON, NULL
};

/* --- positions in the manifest ------------------------------------------------ */

/* Byte offset of the start of 1-based line `line`, or SIZE_MAX. Lines end
 * at \n, \r\n or \r, as the YAML reader counts them. */
static size_t line_start(const char *text, size_t len, uint32_t line)
{
	uint32_t l = 1;
	size_t i;

	for (i = 0; i < len && l < line; i++) {
		if (text[i] == '\n' || (text[i] == '\r' && (i + 1 >= len || text[i + 1] != '\n')))
			l++;
	}
	return l == line ? i : SIZE_MAX;
}

/* Byte offset of 1-based (line, col), columns counting characters. */
static size_t offset_of(const char *text, size_t len, uint32_t line, uint32_t col)
{
	size_t i = line_start(text, len, line);
	uint32_t c = 1;

	if (i == SIZE_MAX)
		return SIZE_MAX;
	while (i < len && c < col && text[i] != '\n' && text[i] != '\r') {
		/* Past one character: its lead byte and continuation bytes. */
		i++;
		while (i < len && ((unsigned char)text[i] & 0xc0) == 0x80)
			i++;
		c++;
	}
	return c == col ? i : SIZE_MAX;
}

static size_t line_end(const char *text, size_t len, size_t i)
{
	while (i < len && text[i] != '\n' && text[i] != '\r')
		i++;
	return i;
}

static uint32_t leading_spaces(const char *text, size_t len, size_t i)
{
	uint32_t n = 0;

	while (i < len && text[i] == ' ' && n < UINT32_MAX) {
		i++;
		n++;
	}
	return n;
}

/* Where the content of the literal block scalar value begins: its first
 * line and its indentation. False for any other kind of scalar. */
static bool literal_block(const char *text, size_t len, const struct doc_node *value, uint32_t *first_line,
			  uint32_t *indent)
{
	size_t i = offset_of(text, len, value->line, value->col), ls;
	uint32_t explicit_indent = 0, line;
	int k;

	if (i == SIZE_MAX || i >= len || text[i] != '|')
		return false;
	for (i++, k = 0; k < 2 && i < len; k++) {
		if (text[i] == '+' || text[i] == '-')
			i++;
		else if (text[i] >= '1' && text[i] <= '9')
			explicit_indent = (uint32_t)(text[i++] - '0');
	}
	*first_line = value->line + 1;
	if (explicit_indent) {
		/* Relative to the entry the scalar is the value of. */
		*indent = leading_spaces(text, len, line_start(text, len, value->line)) + explicit_indent;
		return true;
	}
	/* Otherwise the first line that is not blank sets it. */
	for (line = *first_line; (ls = line_start(text, len, line)) != SIZE_MAX && ls < len; line++) {
		uint32_t sp = leading_spaces(text, len, ls);

		if (ls + sp < len && text[ls + sp] != '\n' && text[ls + sp] != '\r') {
			*indent = sp;
			return true;
		}
	}
	return false;
}

/* Line `line` (1-based) of the string s. */
static bool string_line(struct str s, uint32_t line, struct str *out)
{
	size_t i = 0, start;
	uint32_t l = 1;

	while (l < line) {
		const char *nl = memchr(s.ptr + i, '\n', s.len - i);

		if (!nl)
			return false;
		i = (size_t)(nl - s.ptr) + 1;
		l++;
	}
	start = i;
	while (i < s.len && s.ptr[i] != '\n')
		i++;
	*out = (struct str){ s.ptr + start, i - start };
	return true;
}

/* Move an error inside data["policy.yaml"] into the manifest. */
static void place_in_manifest(const char *text, size_t len, const struct doc_node *value, struct policy_error *e)
{
	uint32_t first_line, indent;
	struct str want;

	if (e->line && literal_block(text, len, value, &first_line, &indent) &&
	    string_line(value->text, e->line, &want)) {
		uint32_t line = first_line + e->line - 1;
		size_t ls = line_start(text, len, line), end;

		if (ls != SIZE_MAX) {
			end = line_end(text, len, ls);
			/* The manifest's line must hold the string's line: if not,
			 * the scalar is not what this reading assumed. */
			if ((want.len == 0 && end - ls <= indent) ||
			    (end - ls >= indent && end - ls - indent == want.len &&
			     memcmp(text + ls + indent, want.ptr, want.len) == 0)) {
				e->line = line;
				e->col += indent;
				e->source[0] = '\0';
				return;
			}
		}
	}
	if (e->line) {
		size_t used = strlen(e->msg);

		snprintf(e->msg + used, sizeof(e->msg) - used, " (at line %u, column %u of data[\"%s\"])", e->line,
			 e->col, POLICY_KEY_DOCUMENT);
	}
	e->line = value->line;
	e->col = value->col;
	e->source[0] = '\0';
}

/* --- the manifest ---------------------------------------------------------------- */

int policy_load_configmap(const char *text, size_t len, const struct doc_node *root, struct policy **out,
			  struct policy_error *errs, size_t cap, size_t *nerr)
{
	struct loader l;
	const struct doc_node *data, *doc = NULL, *freeze = NULL, *reason = NULL;
	size_t saved, shape_errors, kept, n = 0, i;
	int rc, parts_rc;

	*out = NULL;
	*nerr = 0;
	rc = policy_loader_init(&l, errs, cap);
	if (rc)
		return rc;
	if (!policy_check_type_meta(&l, root, "v1", "ConfigMap"))
		goto fail;
	policy_check_keys(&l, root, configmap_keys);
	data = doc_map_get(root, "data");
	saved = policy_path_push_key(&l, STR_LIT("data"));
	if (!data) {
		policy_fail(&l, root->line, root->col, "data is missing (expected data[\"%s\"])", POLICY_KEY_DOCUMENT);
	} else if (policy_expect(&l, data, DOC_MAP)) {
		policy_check_keys(&l, data, configmap_data_keys);
		doc = doc_map_get(data, POLICY_KEY_DOCUMENT);
		freeze = doc_map_get(data, POLICY_KEY_FREEZE);
		reason = doc_map_get(data, POLICY_KEY_FREEZE_REASON);
		if (!doc)
			policy_fail(&l, data->line, data->col, "data[\"%s\"] is missing", POLICY_KEY_DOCUMENT);
		else if (!policy_expect(&l, doc, DOC_STRING))
			doc = NULL;
		if (freeze && !policy_expect(&l, freeze, DOC_STRING))
			doc = NULL;
		if (reason && !policy_expect(&l, reason, DOC_STRING))
			doc = NULL;
	}
	policy_path_pop(&l, saved);
	if (!doc || l.stop)
		goto fail;
	/* The keys load as a mounted ConfigMap's files would; their errors go
	 * after the manifest's own and are placed in the manifest. */
	shape_errors = l.nerr;
	rc = l.rc;
	arena_free(l.a);
	kept = shape_errors < cap ? shape_errors : cap;
	parts_rc = policy_load_parts_all(doc->text.ptr, doc->text.len,
					 freeze != NULL, freeze ? freeze->text.ptr : NULL, freeze ? freeze->text.len : 0,
					 reason != NULL, reason ? reason->text.ptr : NULL, reason ? reason->text.len : 0,
					 out, errs ? errs + kept : NULL, cap - kept, &n);
	if (parts_rc)
		rc = parts_rc;
	for (i = kept; i < cap && i < kept + n; i++) {
		if (strcmp(errs[i].source, POLICY_KEY_DOCUMENT) == 0) {
			place_in_manifest(text, len, doc, &errs[i]);
		} else if (errs[i].source[0]) {
			const struct doc_node *key = strcmp(errs[i].source, POLICY_KEY_FREEZE) == 0 ? freeze : reason;

			errs[i].line = key ? key->line : 0;
			errs[i].col = key ? key->col : 0;
			snprintf(errs[i].path, sizeof(errs[i].path), "data[\"%s\"]", errs[i].source);
			errs[i].source[0] = '\0';
		}
	}
	*nerr = shape_errors + n;
	if (rc && *out) {
		/* The keys load, but the manifest around them is wrong. */
		policy_free(*out);
		*out = NULL;
	}
	return rc;
fail:
	*nerr = l.nerr;
	rc = l.rc ? l.rc : -EINVAL;
	arena_free(l.a);
	return rc;
}
