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

void dryrun_print_text(struct dryrun *d)
{
	size_t i, j;
	json_t *r;

	json_array_foreach(d->results, i, r) {
		const char *error = json_string_value(json_object_get(r, "error"));
		json_t *viol = json_object_get(r, "violations"), *vi;
		bool allowed = json_is_true(json_object_get(r, "allowed"));
		const char *verdict = error && json_array_size(viol) == 0 ? "ERROR" : allowed ? "ALLOW" : "DENY";

		printf("%-5s %s %s/%s %s\n", verdict, json_string_value(json_object_get(r, "operation")),
		       json_string_value(json_object_get(r, "kind")), json_string_value(json_object_get(r, "name")),
		       json_string_value(json_object_get(r, "source")));
		if (error && json_array_size(viol) == 0)
			printf("      %s\n", error);
		json_array_foreach(viol, j, vi)
			printf("      %-6s %s: %s\n", json_string_value(json_object_get(vi, "action")),
			       json_string_value(json_object_get(vi, "rule")),
			       json_string_value(json_object_get(vi, "message")));
		if (!json_is_null(json_object_get(r, "patch"))) {
			char *p = json_dumps(json_object_get(r, "patch"), JSON_COMPACT);

			printf("      patch  %s\n", p ? p : "");
			free(p);
		}
	}
	printf("%zu objects: %u allowed (%u with warnings), %u denied, %u unusable\n",
	       json_array_size(d->results), d->allowed, d->warned, d->denied, d->errors);
}

void dryrun_print_json(struct dryrun *d)
{
	json_t *top = json_pack("{s:O, s:{s:i, s:i, s:i, s:i}}", "results", d->results, "summary",
				"allowed", (int)d->allowed, "denied", (int)d->denied, "warned", (int)d->warned,
				"errors", (int)d->errors);
	char *s = top ? json_dumps(top, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;

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
		if (error && json_array_size(viol) == 0) {
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
		if (json_array_size(viol)) {
			printf("    <system-out>");
			json_array_foreach(viol, j, vi) {
				xml_escaped(stdout, json_string_value(json_object_get(vi, "action")));
				printf(" [");
				xml_escaped(stdout, json_string_value(json_object_get(vi, "rule")));
				printf("] ");
				xml_escaped(stdout, json_string_value(json_object_get(vi, "message")));
				printf("\n");
			}
			printf("</system-out>\n");
		}
		printf("  </testcase>\n");
	}
	printf("</testsuite>\n");
}
