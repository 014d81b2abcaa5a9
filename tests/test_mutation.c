/* test_mutation.c - the mapping fingerprint label. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mutation.h"
#include "testrealloc.h"

static void field(struct quantity_field *f, const char *text)
{
	memset(f, 0, sizeof(*f));
	if (!text)
		return;
	f->present = true;
	f->text = str_from_cstr(text);
	f->err = quantity_parse(text, strlen(text), &f->value);
}

static void mapping(struct mapping *m, const char *res, const char *mult, const char *key)
{
	memset(m, 0, sizeof(*m));
	m->resource = str_from_cstr(res);
	field(&m->multiplier, mult);
	if (key) {
		m->has_capacity_key = true;
		m->capacity_key = str_from_cstr(key);
	}
}

static void fingerprint(const struct resource_slice *s, char out[MUTATION_FINGERPRINT_LEN + 1])
{
	struct arena *a = NULL;

	assert_int_equal(arena_new(1 << 20, &a), 0);
	assert_int_equal(mutation_fingerprint(s, a, out), 0);
	arena_free(a);
}

struct fixture {
	struct mapping m0[2], m1[1];
	struct device d[2];
	struct resource_slice s;
};

static void build(struct fixture *f, const char *mem, const char *cpu_mult)
{
	memset(f, 0, sizeof(*f));
	mapping(&f->m0[0], "memory", mem, NULL);
	mapping(&f->m0[1], "cpu", "2", NULL);
	mapping(&f->m1[0], "cpu", cpu_mult, "dra.example.com/cpu");
	f->d[0].name = STR_LIT("accel-0");
	f->d[0].mappings = f->m0;
	f->d[0].nmappings = 2;
	f->d[1].name = STR_LIT("socket-0");
	f->d[1].index = 1;
	f->d[1].mappings = f->m1;
	f->d[1].nmappings = 1;
	f->s.devices = f->d;
	f->s.ndevices = 2;
}

static void test_respelled_quantities_keep_the_fingerprint(void **state)
{
	struct fixture a, b, c;
	char fa[17], fb[17], fc[17];

	(void)state;
	build(&a, "8Gi", NULL);
	build(&b, "8192Mi", "1");          /* same amounts; capacity multiplier defaulted */
	build(&c, "8589934592", NULL);
	fingerprint(&a.s, fa);
	fingerprint(&b.s, fb);
	fingerprint(&c.s, fc);
	assert_string_equal(fa, fb);
	assert_string_equal(fa, fc);
	assert_int_equal(strlen(fa), MUTATION_FINGERPRINT_LEN);
}

static void test_order_does_not_matter(void **state)
{
	struct fixture a, b;
	struct mapping tmp;
	struct device dtmp;
	char fa[17], fb[17];

	(void)state;
	build(&a, "8Gi", NULL);
	build(&b, "8Gi", NULL);
	tmp = b.m0[0];
	b.m0[0] = b.m0[1];
	b.m0[1] = tmp;
	dtmp = b.d[0];
	b.d[0] = b.d[1];
	b.d[1] = dtmp;
	fingerprint(&a.s, fa);
	fingerprint(&b.s, fb);
	assert_string_equal(fa, fb);
}

static void test_any_change_changes_it(void **state)
{
	struct fixture a, b, c;
	char fa[17], fb[17], fc[17];

	(void)state;
	build(&a, "8Gi", NULL);
	build(&b, "16Gi", NULL);
	build(&c, "8Gi", "2");
	fingerprint(&a.s, fa);
	fingerprint(&b.s, fb);
	fingerprint(&c.s, fc);
	assert_string_not_equal(fa, fb);
	assert_string_not_equal(fa, fc);
}

/* An allocation that fails while the canonical text grows is -ENOMEM,
 * wherever it fails: the cap (-E2BIG) was not what stopped it. */
static void test_out_of_memory_is_not_too_big(void **state)
{
	struct fixture f;
	struct arena *a = NULL;
	char name[400], out[MUTATION_FINGERPRINT_LEN + 1];
	int len, rc, enomem = 0;

	(void)state;
	for (len = 1; len < (int)sizeof(name); len++) {
		memset(name, 'd', (size_t)len);
		build(&f, "8Gi", "1500m");
		f.d[0].name = (struct str){ name, (size_t)len };
		assert_int_equal(arena_new(1 << 20, &a), 0);
		realloc_budget = 1;
		rc = mutation_fingerprint(&f.s, a, out);
		realloc_budget = -1;
		arena_free(a);
		if (rc != 0)
			assert_int_equal(rc, -ENOMEM);
		enomem += rc == -ENOMEM;
	}
	/* The second growth came in every part of the text at some length. */
	assert_true(enomem > 100);
}

static void test_patch_forms(void **state)
{
	struct fixture f;
	struct k8s_object obj;
	struct arena *a = NULL;
	struct str patch;
	char fp[17], want[256];

	(void)state;
	build(&f, "8Gi", NULL);
	memset(&obj, 0, sizeof(obj));
	obj.kind = OBJECT_RESOURCE_SLICE;
	obj.u.slice = f.s;
	assert_int_equal(arena_new(1 << 20, &a), 0);
	fingerprint(&f.s, fp);

	assert_int_equal(mutation_slice_patch(&obj, a, &patch), 0);
	snprintf(want, sizeof(want), "[{\"op\":\"add\",\"path\":\"/metadata/labels\",\"value\":"
		 "{\"dra-guard.io/mappings\":\"%s\"}}]", fp);
	assert_true(str_eq_cstr(patch, want));

	obj.meta.has_labels = true;
	assert_int_equal(mutation_slice_patch(&obj, a, &patch), 0);
	snprintf(want, sizeof(want), "[{\"op\":\"add\",\"path\":\"/metadata/labels/dra-guard.io~1mappings\","
		 "\"value\":\"%s\"}]", fp);
	assert_true(str_eq_cstr(patch, want));

	obj.meta.has_mapping_label = true;
	obj.meta.mapping_label = str_from_cstr(fp);
	assert_int_equal(mutation_slice_patch(&obj, a, &patch), 0);
	assert_int_equal(patch.len, 0);                 /* up to date: no patch */

	obj.u.slice.ndevices = 0;
	assert_int_equal(mutation_slice_patch(&obj, a, &patch), 0);
	assert_true(str_eq_cstr(patch, "[{\"op\":\"remove\",\"path\":\"/metadata/labels/dra-guard.io~1mappings\"}]"));
	arena_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_respelled_quantities_keep_the_fingerprint),
		cmocka_unit_test(test_order_does_not_matter),
		cmocka_unit_test(test_any_change_changes_it),
		cmocka_unit_test(test_patch_forms),
		cmocka_unit_test(test_out_of_memory_is_not_too_big),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
