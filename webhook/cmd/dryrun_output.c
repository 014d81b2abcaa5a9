/* dryrun_output.c - dry-run's results on stdout: a line per object (text),
 * one JSON document, or a JUnit XML test suite for CI systems that show
 * those. Each reads the result objects dryrun_input.c recorded; none
 * decides anything. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "dryrun_impl.h"

/* --- output -------------------------------------------------------------------------------- */

/* "ResourceClaim/team-a/claim" or "ResourceSlice/slice", and a blank
 * after it; nothing for an input that holds no object (a missing file). */
static void print_object(const json_t *r)
{
	const char *ns = json_string_value(json_object_get(r, "namespace"));
	const char *kind = json_string_value(json_object_get(r, "kind"));
	const char *name = json_string_value(json_object_get(r, "name"));

	if ((!kind || !kind[0]) && (!name || !name[0]))
		return;
	printf("%s/", kind);
	if (ns && ns[0])
		printf("%s/", ns);
	printf("%s ", name);
}

/* Unknown fields (--field-validation Warn or Strict), with where each is. */
static void print_fields(const json_t *r)
{
	json_t *f;
	size_t i;

	json_array_foreach(json_object_get(r, "fields"), i, f) {
		const char *dym = json_string_value(json_object_get(f, "didYouMean"));
		const char *note = json_string_value(json_object_get(f, "note"));

		printf("      field  %s", json_string_value(json_object_get(f, "message")));
		if (dym)
			printf(": did you mean \"%s\"?", dym);
		if (note)
			printf(" (%s)", note);
		printf(" at %s:%lld:%lld\n", json_string_value(json_object_get(f, "file")),
		       (long long)json_integer_value(json_object_get(f, "line")),
		       (long long)json_integer_value(json_object_get(f, "column")));
	}
	if (json_integer_value(json_object_get(r, "fieldsNotListed")))
		printf("      field  and %lld more unknown fields\n",
		       (long long)json_integer_value(json_object_get(r, "fieldsNotListed")));
}

static void print_skipped(const json_t *r, const char *indent)
{
	json_t *sk, *rule;
	size_t i, j;

	json_array_foreach(json_object_get(r, "skipped"), i, sk) {
		printf("%sskipped ", indent);
		json_array_foreach(json_object_get(sk, "rules"), j, rule)
			printf("%s%s", j ? ", " : "", json_string_value(rule));
		printf(": %s\n", json_string_value(json_object_get(sk, "reason")));
	}
}

/* ledger.node.overcommit: each overcommitted node, with what is over. */
static void print_ledger_text(const struct ledger *l)
{
	uint32_t i, j;

	for (i = 0; i < l->nnodes; i++) {
		const struct ledger_node *n = &l->nodes[i];

		if (!n->overcommitted)
			continue;
		printf("WARN  Node/%.*s (the ledger of --view)\n", STR_FMT(n->name));
		for (j = 0; j < n->nresources; j++) {
			const struct ledger_amount *a = &n->resources[j];
			char al[96], t[96], p[96], dr[96];

			if (!a->has_allocatable || a->total <= a->allocatable)
				continue;
			ledger_format_units(a->resource, a->allocatable, al);
			ledger_format_units(a->resource, a->total, t);
			ledger_format_units(a->resource, a->pods, p);
			ledger_format_units(a->resource, a->dra, dr);
			printf("      warn   ledger.node.overcommit: %.*s: %s counted (Pods %s, DRA %s) of %s allocatable\n",
			       STR_FMT(a->resource), t, p, dr, al);
		}
	}
	printf("ledger: %u nodes, %u claims charged, %u overcommitted, %u unbalanced against their Pod statuses\n",
	       l->nnodes, l->claims, l->overcommitted, l->diverging);
}

/* {"nodes": N, ..., "overcommitted": ["node", ...]} for the JSON output. */
static json_t *ledger_json_summary(const struct ledger *l)
{
	json_t *over = json_array(), *unbal = json_array();
	uint32_t i;

	for (i = 0; i < l->nnodes; i++) {
		if (l->nodes[i].overcommitted)
			json_array_append_new(over, json_stringn(l->nodes[i].name.ptr, l->nodes[i].name.len));
		if (l->nodes[i].diverging)
			json_array_append_new(unbal, json_stringn(l->nodes[i].name.ptr, l->nodes[i].name.len));
	}
	return json_pack("{s:I, s:I, s:I, s:o, s:o}", "nodes", (json_int_t)l->nnodes, "claims", (json_int_t)l->claims,
			 "entries", (json_int_t)l->nentries, "overcommitted", over, "unbalanced", unbal);
}

void dryrun_print_text(struct dryrun *d)
{
	size_t i, j, n = json_array_size(d->results);
	json_t *r;

	json_array_foreach(d->results, i, r) {
		const char *error = json_string_value(json_object_get(r, "error"));
		const char *op = json_string_value(json_object_get(r, "operation"));
		const char *sub = json_string_value(json_object_get(r, "subresource"));
		const char *old = json_string_value(json_object_get(r, "old"));
		json_t *viol = json_object_get(r, "violations"), *vi;
		bool allowed = json_is_true(json_object_get(r, "allowed"));
		const char *not_judged = json_string_value(json_object_get(r, "notJudged"));
		const char *verdict = error && json_array_size(viol) == 0 ? "ERROR" : not_judged ? "SKIP"
				      : allowed ? "ALLOW" : "DENY";
		json_t *w;
		size_t k;

		printf("%-5s %s%s%s ", verdict, op && op[0] ? op : "-", sub && sub[0] ? " " : "", sub ? sub : "");
		print_object(r);
		printf("%s", json_string_value(json_object_get(r, "source")));
		if (old)
			printf(" (stored: %s)", old);
		printf("\n");
		if (error && json_array_size(viol) == 0)
			printf("      %s\n", error);
		if (not_judged) {
			printf("      not judged: %s\n", not_judged);
			json_array_foreach(json_object_get(r, "warnings"), k, w)
				printf("      warn   %s\n", json_string_value(w));
		}
		if (!error)
			print_fields(r);     /* Strict: the error names them all */
		json_array_foreach(viol, j, vi)
			printf("      %-6s %s: %s\n", json_string_value(json_object_get(vi, "action")),
			       json_string_value(json_object_get(vi, "rule")),
			       json_string_value(json_object_get(vi, "message")));
		if (json_is_true(json_object_get(r, "subresourceInferred")))
			printf("      note   decided as a status write (--subresource status): only status differs "
			       "from the stored object\n");
		print_skipped(r, "      ");
		if (!json_is_null(json_object_get(r, "patch"))) {
			char *p = json_dumps(json_object_get(r, "patch"), JSON_COMPACT);

			printf("      patch  %s\n", p ? p : "");
			free(p);
		}
	}
	if (d->ledger)
		print_ledger_text(d->ledger);
	printf("%zu %s: %u allowed (%u with warnings), %u denied, %u unusable", n, n == 1 ? "object" : "objects",
	       d->allowed, d->warned, d->denied, d->errors);
	if (d->not_judged)
		printf(", %u not judged (no rule judges their kind)", d->not_judged);
	if (d->skipped)
		printf("; for %u of them some rules did not run (see \"skipped\")", d->skipped);
	printf("\n");
}

void dryrun_print_json(struct dryrun *d)
{
	json_t *top = json_pack("{s:O, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I}}", "results", d->results, "summary",
				"objects", (json_int_t)json_array_size(d->results), "allowed", (json_int_t)d->allowed,
				"denied", (json_int_t)d->denied, "warned", (json_int_t)d->warned,
				"errors", (json_int_t)d->errors, "skipped", (json_int_t)d->skipped,
				"notJudged", (json_int_t)d->not_judged);
	char *s;

	if (top && d->ledger)
		json_object_set_new(top, "ledger", ledger_json_summary(d->ledger));
	s = top ? json_dumps(top, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
	if (s)
		printf("%s\n", s);
	free(s);
	json_decref(top);
}

static void xml_escaped(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			if ((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t')
				fputc(' ', f);
			else
				fputc(*s, f);
		}
	}
}

void dryrun_print_junit(struct dryrun *d)
{
	size_t i, j;
	json_t *r;

	printf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	printf("<testsuite name=\"dra-guard dry-run\" tests=\"%zu\" failures=\"%u\" errors=\"%u\">\n",
	       json_array_size(d->results), d->denied, d->errors);
	json_array_foreach(d->results, i, r) {
		const char *error = json_string_value(json_object_get(r, "error"));
		json_t *viol = json_object_get(r, "violations"), *vi;
		bool allowed = json_is_true(json_object_get(r, "allowed"));

		printf("  <testcase classname=\"");
		xml_escaped(stdout, json_string_value(json_object_get(r, "kind")));
		printf("\" name=\"");
		xml_escaped(stdout, json_string_value(json_object_get(r, "source")));
		printf(" ");
		xml_escaped(stdout, json_string_value(json_object_get(r, "name")));
		printf("\">\n");
		if (json_string_value(json_object_get(r, "notJudged"))) {
			printf("    <skipped message=\"");
			xml_escaped(stdout, json_string_value(json_object_get(r, "notJudged")));
			printf("\"/>\n");
		} else if (error && json_array_size(viol) == 0) {
			printf("    <error message=\"");
			xml_escaped(stdout, error);
			printf("\"/>\n");
		} else if (!allowed) {
			printf("    <failure message=\"denied\">");
			json_array_foreach(viol, j, vi) {
				if (strcmp(json_string_value(json_object_get(vi, "action")), "deny") != 0)
					continue;
				printf("[");
				xml_escaped(stdout, json_string_value(json_object_get(vi, "rule")));
				printf("] ");
				xml_escaped(stdout, json_string_value(json_object_get(vi, "message")));
				printf("\n");
			}
			printf("</failure>\n");
		}
		if (json_array_size(viol) || json_array_size(json_object_get(r, "skipped")) ||
		    json_array_size(json_object_get(r, "fields"))) {
			json_t *sk, *rule, *f;
			size_t k;

			printf("    <system-out>");
			json_array_foreach(json_object_get(r, "fields"), j, f) {
				xml_escaped(stdout, json_string_value(json_object_get(f, "message")));
				if (json_string_value(json_object_get(f, "didYouMean"))) {
					printf(": did you mean \"");
					xml_escaped(stdout, json_string_value(json_object_get(f, "didYouMean")));
					printf("\"?");
				}
				printf("\n");
			}
			json_array_foreach(viol, j, vi) {
				xml_escaped(stdout, json_string_value(json_object_get(vi, "action")));
				printf(" [");
				xml_escaped(stdout, json_string_value(json_object_get(vi, "rule")));
				printf("] ");
				xml_escaped(stdout, json_string_value(json_object_get(vi, "message")));
				printf("\n");
			}
			json_array_foreach(json_object_get(r, "skipped"), j, sk) {
				printf("skipped [");
				json_array_foreach(json_object_get(sk, "rules"), k, rule) {
					printf("%s", k ? ", " : "");
					xml_escaped(stdout, json_string_value(rule));
				}
				printf("] ");
				xml_escaped(stdout, json_string_value(json_object_get(sk, "reason")));
				printf("\n");
			}
			printf("</system-out>\n");
		}
		printf("  </testcase>\n");
	}
	printf("</testsuite>\n");
}
