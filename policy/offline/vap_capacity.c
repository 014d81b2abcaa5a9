/* vap_capacity.c - capacity mode in CEL: the amounts one allocation can
 * consume of a device's capacity, and what they map.
 *
 * slice_rules.c judges a mapping with a capacityKey over the amounts the
 * scheduler lets one allocation consume (its requestPolicy: default,
 * validRange min/max/step, validValues) times the multiplier. CEL in the
 * 1.36 API server has no product, quotient or remainder of quantities, so
 * amounts go through integers: a quantity that is a whole number below 2^53,
 * or a whole number of millis below 4e12, is held exactly as an int (with
 * its scale: whole or milli), confirmed by an exact comparison
 * (vap_cel.c). Products, remainders and the top of a step lattice are then
 * int arithmetic. Where an amount has no such form (nano quantities, amounts
 * past the bounds) the test says "cannot tell", and every caller reads that
 * so as to flag nothing: an amount left out of a list, a product not
 * judged. vap.c lists this among the rules' gaps.
 *
 * Every expression here runs inside a mapping scan (vap_mapping_chunks(),
 * vap_mapping_chunk_lists(): i, d, k, m bound) and binds the capacity as
 * cap. */
#include "vap_impl.h"

/* --- the capacity and its request policy ------------------------------------------ */

#define RP "cap.requestPolicy"
#define RANGE_F RP ".validRange"
#define USABLE(q) "(isQuantity(" q ") && sign(quantity(" q ")) >= 0)"
#define QVALUE "quantity(cap.value)"
#define QDEFAULT "quantity(" RP ".default)"
#define QMIN "quantity(" RANGE_F ".min)"
#define QMAX "quantity(" RANGE_F ".max)"
#define QSTEP "quantity(" RANGE_F ".step)"

#define HAS_RP "has(" RP ")"
#define HAS_DEFAULT "(" HAS_RP " && has(" RP ".default) && " USABLE(RP ".default") ")"
/* validRange applies when it has a usable min (has_range() in slice_rules.c). */
#define RANGE "(" HAS_RP " && has(" RANGE_F ") && has(" RANGE_F ".min) && " USABLE(RANGE_F ".min") ")"
#define STEP "(" RANGE " && has(" RANGE_F ".step) && " USABLE(RANGE_F ".step") " && sign(" QSTEP ") > 0)"
#define MAXU "(" RANGE " && has(" RANGE_F ".max) && " USABLE(RANGE_F ".max") ")"
#define VALUES "(" HAS_RP " && has(" RP ".validValues) && size(" RP ".validValues) > 0)"
/* The top of what one allocation can consume before the lattice: the value,
 * or validRange.max below it (range_upper()). */
#define MAX_BELOW "(" MAXU " && " QMAX ".isLessThan(" QVALUE "))"
#define UPPER "(" MAX_BELOW " ? " QMAX " : " QVALUE ")"
#define UPPER_TEXT "string(" MAX_BELOW " ? " RANGE_F ".max : cap.value)"
#define UPPER_FROM "(" MAX_BELOW " ? 'requestPolicy.validRange.max' : 'the capacity\\'s value')"

/* The capacity a mapping names, bound as cap, for body; false when the
 * key names none (slice.mapping.capacity-key says so) or its value cannot
 * be used. */
static void with_capacity(struct cel *c, const char *body)
{
	cel_add(c, "has(m.capacityKey) && has(d.capacity) && m.capacityKey in d.capacity &&\n"
		"[d.capacity[m.capacityKey]].exists(cap, " USABLE("cap.value") " &&\n  %s)", body);
}

/* --- exact integers ---------------------------------------------------------------- */

/* The int x is, if x is a whole number below 2^53; else -1. */
static void int_whole(struct cel *c, const char *x)
{
	cel_add(c, "(");
	cel_is_whole(c, x);
	cel_add(c, " ? int(%s.asApproximateFloat() + 0.5) : -1)", x);
}

/* The int x * 1000 is, if x is a whole number of millis below 4e12; else -1. */
static void int_milli(struct cel *c, const char *x)
{
	cel_add(c, "(");
	cel_is_milli(c, x);
	cel_add(c, " ? int(%s.asApproximateFloat() * 1000.0 + 0.5) : -1)", x);
}

/* [whole, milli] of x (each -1 when x has no such form), x evaluated once:
 * a CEL list expression. */
static void int_forms(struct cel *c, const char *x, const char *name)
{
	cel_add(c, "[%s].map(%s, [", x, name);
	int_whole(c, name);
	cel_add(c, ", ");
	int_milli(c, name);
	cel_add(c, "])[0]");
}

/* x (a quantity, >= 0) is a whole multiple of s (> 0): true only when it
 * certainly is; both held as whole ints, or both as millis. */
static void is_multiple(struct cel *c, const char *x, const char *s)
{
	cel_add(c, "[");
	int_forms(c, x, "mx");
	cel_add(c, "].exists(fx, [");
	int_forms(c, s, "ms");
	cel_add(c, "].exists(fs, (fx[0] >= 0 && fs[0] > 0 && fx[0] %% fs[0] == 0) || "
		"(fx[0] < 0 && fx[1] >= 0 && fs[1] > 0 && fx[1] %% fs[1] == 0) || "
		"(fx[0] >= 0 && fs[0] < 0 && fs[1] > 0 && fx[0] <= 9223372036854 && (fx[0] * 1000) %% fs[1] == 0)))");
}

/* policy_allows(): may one allocation consume amount a (a quantity
 * expression, bound once)? Where a step multiple cannot be told, no. */
static void allows(struct cel *c, const char *a)
{
	cel_add(c, "[%s].exists(aq, !" HAS_RP " ||\n"
		"    (" HAS_DEFAULT " && aq.compareTo(" QDEFAULT ") == 0) ||\n"
		"    (" RANGE " ? !aq.isLessThan(" QMIN ") && (!" MAXU " || !aq.isGreaterThan(" QMAX ")) && (!" STEP " || ", a);
	is_multiple(c, "aq.sub(" QMIN ")", QSTEP);
	cel_add(c, ") :\n     " VALUES " ? " RP ".validValues.exists(v, " USABLE("v") " && quantity(v).compareTo(aq) == 0) : "
		"true))");
}

/* --- the amounts ----------------------------------------------------------------------- */

/* visit_certain_amounts(): every amount one allocation can certainly consume
 * that decides units, as [a, b, where from]: the amount is a + b, both
 * quantities as written ('0' for b but for min + step). CEL lists hold one
 * type, so every entry is text. */
#define AMOUNT "quantity(am[0]).add(quantity(am[1]))"
#define AMOUNT_TEXT "(am[1] == '0' ? am[0] : am[0] + ' + ' + am[1])"

static void certain_amounts(struct cel *c)
{
	cel_add(c, "((" HAS_DEFAULT " ? [[string(" RP ".default), '0', "
		"'requestPolicy.default, what a claim that asks for none consumes']] :\n    ");
	allows(c, QVALUE);
	cel_add(c, " ? [[string(cap.value), '0', 'the whole value, what a claim that asks for none consumes']] : []) +\n"
		"  (!" HAS_RP " ? [] : " RANGE " ? [[string(" RANGE_F ".min), '0', 'requestPolicy.validRange.min']] +\n"
		"    (" STEP " && !" QMIN ".add(" QSTEP ").isGreaterThan(" UPPER ") ? [[string(" RANGE_F ".min), "
		"string(" RANGE_F ".step), 'requestPolicy.validRange.min + step']] : []) +\n"
		"    (" MAXU " && ");
	allows(c, QMAX);
	cel_add(c, " ? [[string(" RANGE_F ".max), '0', 'requestPolicy.validRange.max']] : []) :\n"
		"    has(" RP ".validValues) ? " RP ".validValues.transformList(j, v, " USABLE("v") " && "
		"!quantity(v).isGreaterThan(" QVALUE "), [string(v), '0', 'requestPolicy.validValues[' + string(j) + ']']) "
		": []))");
}

/* x as [int, scale] (scale 0 whole, 1 milli; the int -1 when x has
 * neither exact form), x evaluated once: a CEL list expression. */
static void int_pair(struct cel *c, const char *x, const char *name)
{
	cel_add(c, "[");
	int_forms(c, x, name);
	cel_add(c, "].map(f, f[0] >= 0 ? [f[0], 0] : [f[1], 1])[0]");
}

/* Over xa, xu, D and the mapping's k: the product is a fraction of the
 * resource's accounting unit (a millicore, a byte). */
#define FRACTION \
	"(k == 'cpu' ? D == 1000000 && ((xa[0] % 1000) * (xu[0] % 1000)) % 1000 != 0 :\n" \
	"        ((xa[0] % D) * (xu[0] % D)) % D != 0)"
/* k names hugepages of a size held exactly: a positive whole number below
 * 2^53 (slice.mapping.name judges the others; a larger size is not judged). */
#define PAGE_EXACT \
	"(k.startsWith('hugepages-') && size(k) > 10 && isQuantity(k.substring(10)) && sign(" VAP_PAGE ") > 0 && " \
	VAP_PAGE ".isLessThan(variables.whole) &&\n" \
	"        quantity(string(int(" VAP_PAGE ".asApproximateFloat() + 0.5))).compareTo(" VAP_PAGE ") == 0)"
/* The product, whole bytes, is not whole pages: without overflow the
 * product itself, else, both whole, its remainder; else not judged. */
#define PARTIAL_PAGE \
	"[int(" VAP_PAGE ".asApproximateFloat() + 0.5)].exists(P, P >= 1 &&\n" \
	"          (xa[0] <= 9223372036854775807 / xu[0] ? (xa[0] * xu[0] / D) % P != 0 :\n" \
	"           D == 1 && P < 3037000499 && ((xa[0] % P) * (xu[0] % P)) % P != 0))"

/* units_problem() of the product, over xa, xu, D; a name the engine does
 * not take for a node resource is never judged here. */
#define PRODUCT_BAD \
	"((k == 'cpu' || k == 'memory' || k == 'ephemeral-storage') ? " FRACTION " :\n" \
	"        " PAGE_EXACT " && (" FRACTION " || " PARTIAL_PAGE "))"
#define PRODUCT_WHY \
	"(k == 'cpu' ? 'cpu is accounted in whole millicores (1m); this is finer' : " FRACTION " ? " \
	"'this is a fractional number of bytes' : 'this is not a whole number of pages of the hugepage size')"

#define UNIT "(has(m.allocationMultiplier) ? quantity(m.allocationMultiplier) : variables.one)"
#define UNIT_USABLE "(!has(m.allocationMultiplier) || (isQuantity(m.allocationMultiplier) && " \
	"sign(quantity(m.allocationMultiplier)) > 0))"
#define UNIT_TEXT "(has(m.allocationMultiplier) ? m.allocationMultiplier : '1')"

/* The product of amount xa and unit xu (int pairs) is xa[0] * xu[0] / D. */
#define SCALE_OF_PRODUCT "[xa[1] + xu[1] == 0 ? 1 : xa[1] + xu[1] == 1 ? 1000 : 1000000]"

void vap_capacity_units_msgs(struct cel *c)
{
	cel_add(c, "has(d.capacity) && m.capacityKey in d.capacity && " UNIT_USABLE " ?\n"
		"  [d.capacity[m.capacityKey]].map(cap, " USABLE("cap.value") " ? [");
	int_pair(c, UNIT, "qu");
	cel_add(c, "].map(xu, xu[0] > 0 ?\n  ");
	certain_amounts(c);
	cel_add(c, ".map(am, [");
	int_pair(c, AMOUNT, "qa");
	cel_add(c, "].map(xa, xa[0] >= 0 ?\n    " SCALE_OF_PRODUCT ".map(D, %s ?\n"
		"      [" VAP_MAPPING_PATH " + '.capacityKey: consuming ' + " AMOUNT_TEXT " + ' of capacity \"' + "
		"m.capacityKey + '\" (' + am[2] + ') at allocationMultiplier ' + " UNIT_TEXT " + ' maps an amount of ' + "
		"k + ' that cannot be real: ' + %s] : [])[0] : [])[0]).flatten() : [])[0] : [])[0] : []",
		PRODUCT_BAD, PRODUCT_WHY);
}

/* --- slice.mapping.units.open ------------------------------------------------------------ */

/* open_ended(): claims pick any amount (no policy, a default alone, or a
 * validRange without a step); and one unit of the capacity is consumable
 * (the top is at least 1). */
#define OPEN_ENDED "(!" HAS_RP " || (" RANGE " ? !" STEP " : !" VALUES "))"

void vap_units_open_bad(struct cel *c, const char *unit_bad)
{
	struct cel body;

	cel_init(&body);
	cel_add(&body, OPEN_ENDED " && !" UPPER ".isLessThan(variables.one) &&\n  (%s)", unit_bad);
	with_capacity(c, cel_text(&body));
	if (body.rc && !c->rc)
		c->rc = body.rc;
	cel_free(&body);
}

void vap_units_open_msg(struct cel *c, const char *unit_why)
{
	cel_add(c, "[d.capacity[m.capacityKey]].map(cap, " VAP_MAPPING_PATH " + '.capacityKey: capacity \"' + "
		"m.capacityKey + '\" lets a claim consume any amount up to ' + " UPPER_TEXT " + ' (no "
		"requestPolicy.validRange.step), and one unit maps ' + " UNIT_TEXT " + ' of ' + k + ', which cannot be "
		"real: ' + %s + '; set a step so that every consumable amount maps a real one')[0]", unit_why);
}

/* --- slice.mapping.bounds ------------------------------------------------------------------ */

/* largest_amount(), as [quantity, as written, where from] candidates (text) the
 * largest of which is the most one allocation can consume: the value, the
 * top of the range or of its step lattice, or the validValues up to the
 * value (the largest is over a bound when any is). Empty when nothing is
 * consumable or the lattice top cannot be worked out exactly. */
static void bound_candidates(struct cel *c)
{
	cel_add(c, "(" RANGE " ? (" QMIN ".isGreaterThan(" UPPER ") ? [] : !" STEP " ? [[" UPPER_TEXT ", " UPPER_TEXT ", "
		UPPER_FROM "]] :\n    [" UPPER "].map(up, [[");
	int_milli(c, QMIN);
	cel_add(c, ", ");
	int_milli(c, "up");
	cel_add(c, ", ");
	int_milli(c, QSTEP);
	cel_add(c, ", 1], [");
	int_whole(c, QMIN);
	cel_add(c, ", ");
	int_whole(c, "up");
	cel_add(c, ", ");
	int_whole(c, QSTEP);
	cel_add(c, ", 0]].filter(t, t[0] >= 0 && t[1] >= t[0] && t[2] > 0).map(t,\n"
		"      [t[0] + (t[1] - t[0]) / t[2] * t[2]].map(l, [string(l) + (t[3] == 1 ? 'm' : ''), "
		"t[3] == 1 && l %% 1000 != 0 ? string(l) + 'm' : string(t[3] == 1 ? l / 1000 : l), "
		"'the largest validRange.min + k * step under the top of the range'])[0]))[0]) :\n"
		"  " VALUES " ? " RP ".validValues.filter(v, " USABLE("v") " && !quantity(v).isGreaterThan(" QVALUE ")).map(v, "
		"[string(v), string(v), 'the largest of requestPolicy.validValues']) :\n"
		"  [[string(cap.value), string(cap.value), 'the capacity\\'s value']])");
}

void vap_capacity_bounds_msgs(struct cel *c, const char *over, const char *tail)
{
	cel_add(c, "has(d.capacity) && m.capacityKey in d.capacity ?\n"
		"  [d.capacity[m.capacityKey]].map(cap, " USABLE("cap.value") " ?\n  ");
	bound_candidates(c);
	cel_add(c, ".map(L, [quantity(L[0])].map(c, [" UNIT "].map(u, %s ?\n"
		"    [" VAP_MAPPING_PATH " + '.capacityKey: one allocation can consume up to ' + L[1] + ' of capacity \"' + "
		"m.capacityKey + '\" (' + L[2] + '), which maps ' + L[1] + (" UNIT_TEXT " == '1' ? '' : ' x ' + " UNIT_TEXT
		") + %s] : [])[0])[0]).flatten() : [])[0] : []", over, tail);
}
