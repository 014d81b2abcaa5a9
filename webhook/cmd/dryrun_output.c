/* dryrun_output.c - dry-run's results on stdout: a line per object (text),
 * one JSON document, or a JUnit XML test suite for CI systems that show
 * those. Each reads the results dryrun_input.c recorded; none decides
 * anything. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dryrun_impl.h"
#include "jw.h"

/* --- output -------------------------------------------------------------------------------- */

/* "ResourceClaim/team-a/claim" or "ResourceSlice/slice", and a blank
 * after it; nothing for an input that holds no object (a missing file). */
static void print_object(const struct dryrun_result *r)
{
	if (!r->object_kind.ptr[0] && !r->name.ptr[0])
		return;
	printf("%s/", r->object_kind.ptr);
	if (r->namespace.ptr[0])
		printf("%s/", r->namespace.ptr);
	printf("%s ", r->name.ptr);
}

/* Unknown fields (--field-validation Warn or Strict), with where each is. */
static void print_fields(const struct dryrun_result *r)
{
	size_t i;

	for (i = 0; i < r->nfields; i++) {
		const struct dryrun_field *f = &r->fields[i];

		printf("      field  %s", f->message);
		if (f->did_you_mean)
			printf(": did you mean \"%s\"?", f->did_you_mean);
		if (f->note)
			printf(" (%s)", f->note);
		printf(" at %s:%lld:%lld\n", r->file ? r->file : "", (long long)f->line, (long long)f->col);
	}
	if (r->fields_not_listed)
		printf("      field  and %lld more unknown fields\n", (long long)r->fields_not_listed);
}

static void print_skipped(const struct dryrun_result *r, const char *indent)
{
	size_t i, j;

	for (i = 0; i < r->nskipped; i++) {
		printf("%sskipped ", indent);
		for (j = 0; j < r->skipped[i].nrules; j++)
			printf("%s%s", j ? ", " : "", r->skipped[i].rules[j]);
		printf(": %s\n", r->skipped[i].reason);
	}
}

/* An unusable entry, or a denial the engine could not tie to a rule. */
static bool is_error(const struct dryrun_result *r)
{
	return r->error && r->nviolations == 0;
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
static void ledger_json_summary(struct jw *w, const struct ledger *l)
{
	uint32_t i;

	jw_object_begin(w);
	jw_kuint(w, "nodes", l->nnodes);
	jw_kuint(w, "claims", l->claims);
	jw_kuint(w, "entries", l->nentries);
	jw_key(w, "overcommitted");
	jw_array_begin(w);
	for (i = 0; i < l->nnodes; i++)
		if (l->nodes[i].overcommitted)
			jw_string(w, l->nodes[i].name.ptr, l->nodes[i].name.len);
	jw_array_end(w);
	jw_key(w, "unbalanced");
	jw_array_begin(w);
	for (i = 0; i < l->nnodes; i++)
		if (l->nodes[i].diverging)
			jw_string(w, l->nodes[i].name.ptr, l->nodes[i].name.len);
	jw_array_end(w);
	jw_object_end(w);
}

void dryrun_print_text(struct dryrun *d)
{
	size_t i, j, k, n = d->nresults;

	for (i = 0; i < n; i++) {
		const struct dryrun_result *r = &d->results[i];
		const char *verdict = is_error(r) ? "ERROR" : r->not_judged ? "SKIP" : r->allowed ? "ALLOW" : "DENY";

		printf("%-5s %s%s%s ", verdict, r->operation[0] ? r->operation : "-", r->subresource.ptr[0] ? " " : "",
		       r->subresource.ptr);
		print_object(r);
		printf("%s", r->source);
		if (r->old)
			printf(" (stored: %s)", r->old);
		printf("\n");
		if (is_error(r))
			printf("      %s\n", r->error);
		if (r->not_judged) {
			printf("      not judged: %s\n", r->not_judged);
			for (k = 0; k < r->nwarnings; k++)
				printf("      warn   %s\n", r->warnings[k].ptr);
		}
		if (!r->error)
			print_fields(r);     /* Strict: the error names them all */
		for (j = 0; j < r->nviolations; j++)
			printf("      %-6s %s: %s\n", r->violations[j].action, r->violations[j].rule,
			       r->violations[j].message.ptr);
		if (r->subresource_inferred)
			printf("      note   decided as a status write (--subresource status): only status differs "
			       "from the stored object\n");
		print_skipped(r, "      ");
		if (r->patch.len)
			printf("      patch  %s\n", r->patch.ptr);
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

static void violation_json(struct jw *w, const struct dryrun_result *r, const struct dryrun_violation *v)
{
	jw_object_begin(w);
	jw_kcstr(w, "rule", v->rule);
	jw_kcstr(w, "action", v->action);
	jw_kstring(w, "path", v->path.ptr, v->path.len);
	jw_kstring(w, "message", v->message.ptr, v->message.len);
	if (v->located) {
		jw_kcstr(w, "file", r->file);
		jw_kuint(w, "line", v->line);
		jw_kuint(w, "column", v->col);
	}
	jw_object_end(w);
}

static void field_json(struct jw *w, const struct dryrun_result *r, const struct dryrun_field *f)
{
	jw_object_begin(w);
	jw_kcstr(w, "problem", "unknown");
	jw_kcstr(w, "path", f->path);
	jw_kcstr(w, "message", f->message);
	jw_kcstr(w, "file", r->file ? r->file : "");
	jw_kuint(w, "line", f->line);
	jw_kuint(w, "column", f->col);
	if (f->did_you_mean)
		jw_kcstr(w, "didYouMean", f->did_you_mean);
	if (f->note)
		jw_kcstr(w, "note", f->note);
	jw_object_end(w);
}

/* One result's members, in the order the output always had. */
static void result_json(struct jw *w, const struct dryrun_result *r)
{
	size_t i, j;

	jw_object_begin(w);
	jw_kcstr(w, "source", r->source);
	jw_kstring(w, "kind", r->object_kind.ptr, r->object_kind.len);
	jw_kstring(w, "namespace", r->namespace.ptr, r->namespace.len);
	jw_kstring(w, "name", r->name.ptr, r->name.len);
	jw_kcstr(w, "operation", r->operation);
	jw_kstring(w, "subresource", r->subresource.ptr, r->subresource.len);
	jw_kbool(w, "subresourceInferred", r->subresource_inferred);
	jw_key(w, "old");
	if (r->old)
		jw_cstr(w, r->old);
	else
		jw_null(w);
	jw_kbool(w, "judged", r->kind != DRYRUN_NOT_JUDGED);
	jw_kbool(w, "allowed", r->allowed);
	if (r->kind == DRYRUN_NOT_JUDGED) {
		jw_kcstr(w, "notJudged", r->not_judged);
	} else if (r->kind == DRYRUN_UNUSABLE) {
		jw_kcstr(w, "error", r->error);
		if (r->file)
			jw_kcstr(w, "file", r->file);
		if (r->line) {
			jw_kuint(w, "line", r->line);
			jw_kuint(w, "column", r->col);
		}
	}
	jw_key(w, "violations");
	jw_array_begin(w);
	for (i = 0; i < r->nviolations; i++)
		violation_json(w, r, &r->violations[i]);
	jw_array_end(w);
	if (r->kind == DRYRUN_DECIDED && r->error)
		jw_kcstr(w, "error", r->error);
	jw_key(w, "warnings");
	jw_array_begin(w);
	for (i = 0; i < r->nwarnings; i++)
		jw_string(w, r->warnings[i].ptr, r->warnings[i].len);
	jw_array_end(w);
	jw_key(w, "fields");
	jw_array_begin(w);
	for (i = 0; i < r->nfields; i++)
		field_json(w, r, &r->fields[i]);
	jw_array_end(w);
	if (r->fields_not_listed)
		jw_kuint(w, "fieldsNotListed", r->fields_not_listed);
	jw_key(w, "patch");
	if (r->patch.len)
		jw_json(w, r->patch.ptr, r->patch.len);
	else
		jw_null(w);
	jw_key(w, "skipped");
	jw_array_begin(w);
	for (i = 0; i < r->nskipped; i++) {
		jw_object_begin(w);
		jw_key(w, "rules");
		jw_array_begin(w);
		for (j = 0; j < r->skipped[i].nrules; j++)
			jw_cstr(w, r->skipped[i].rules[j]);
		jw_array_end(w);
		jw_kcstr(w, "reason", r->skipped[i].reason);
		jw_object_end(w);
	}
	jw_array_end(w);
	jw_object_end(w);
}

/* One document, laid out as jansson's JSON_INDENT(2) laid it out when
 * dry-run was written with it: scripts that read the output see the same
 * bytes. */
void dryrun_print_json(struct dryrun *d)
{
	struct buf b;
	struct jw w;
	size_t i;
	int rc;

	buf_init(&b, DRYRUN_RESULTS_CAP * 2);
	jw_init_style(&w, &b, 2, JW_PLAIN_ESCAPES);
	jw_object_begin(&w);
	jw_key(&w, "results");
	jw_array_begin(&w);
	for (i = 0; i < d->nresults; i++)
		result_json(&w, &d->results[i]);
	jw_array_end(&w);
	jw_key(&w, "summary");
	jw_object_begin(&w);
	jw_kuint(&w, "objects", d->nresults);
	jw_kuint(&w, "allowed", d->allowed);
	jw_kuint(&w, "denied", d->denied);
	jw_kuint(&w, "warned", d->warned);
	jw_kuint(&w, "errors", d->errors);
	jw_kuint(&w, "skipped", d->skipped);
	jw_kuint(&w, "notJudged", d->not_judged);
	jw_object_end(&w);
	if (d->ledger) {
		jw_key(&w, "ledger");
		ledger_json_summary(&w, d->ledger);
	}
	jw_object_end(&w);
	rc = jw_finish(&w);
	if (rc == 0)
		printf("%s\n", buf_cstr(&b));
	else
		fprintf(stderr, "dra-guard dry-run: cannot write the JSON output: %s\n", strerror(-rc));
	buf_free(&b);
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
	size_t i, j, k;

	printf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	printf("<testsuite name=\"dra-guard dry-run\" tests=\"%zu\" failures=\"%u\" errors=\"%u\">\n",
	       d->nresults, d->denied, d->errors);
	for (i = 0; i < d->nresults; i++) {
		const struct dryrun_result *r = &d->results[i];

		printf("  <testcase classname=\"");
		xml_escaped(stdout, r->object_kind.ptr);
		printf("\" name=\"");
		xml_escaped(stdout, r->source);
		printf(" ");
		xml_escaped(stdout, r->name.ptr);
		printf("\">\n");
		if (r->not_judged) {
			printf("    <skipped message=\"");
			xml_escaped(stdout, r->not_judged);
			printf("\"/>\n");
		} else if (is_error(r)) {
			printf("    <error message=\"");
			xml_escaped(stdout, r->error);
			printf("\"/>\n");
		} else if (!r->allowed) {
			printf("    <failure message=\"denied\">");
			for (j = 0; j < r->nviolations; j++) {
				if (strcmp(r->violations[j].action, "deny") != 0)
					continue;
				printf("[");
				xml_escaped(stdout, r->violations[j].rule);
				printf("] ");
				xml_escaped(stdout, r->violations[j].message.ptr);
				printf("\n");
			}
			printf("</failure>\n");
		}
		if (r->nviolations || r->nskipped || r->nfields) {
			printf("    <system-out>");
			for (j = 0; j < r->nfields; j++) {
				xml_escaped(stdout, r->fields[j].message);
				if (r->fields[j].did_you_mean) {
					printf(": did you mean \"");
					xml_escaped(stdout, r->fields[j].did_you_mean);
					printf("\"?");
				}
				printf("\n");
			}
			for (j = 0; j < r->nviolations; j++) {
				xml_escaped(stdout, r->violations[j].action);
				printf(" [");
				xml_escaped(stdout, r->violations[j].rule);
				printf("] ");
				xml_escaped(stdout, r->violations[j].message.ptr);
				printf("\n");
			}
			for (j = 0; j < r->nskipped; j++) {
				printf("skipped [");
				for (k = 0; k < r->skipped[j].nrules; k++) {
					printf("%s", k ? ", " : "");
					xml_escaped(stdout, r->skipped[j].rules[k]);
				}
				printf("] ");
				xml_escaped(stdout, r->skipped[j].reason);
				printf("\n");
			}
			printf("</system-out>\n");
		}
		printf("  </testcase>\n");
	}
	printf("</testsuite>\n");
}
