/* decode_slice.c - a ResourceSlice's spec into struct resource_slice.
 *
 * The largest object the guard reads and the one on the hot path: up to 128
 * devices, each with capacity and the mapping maps of both shapes (1.36
 * nodeAllocatableResourceMappings, 1.37 nodeAllocatableResources), and the
 * oldObject shortcut for devices whose text did not change. Each kind has
 * its own file: kinds share the machinery of decode.c and decode_fields.c,
 * never each other's tables. */
#include <stddef.h>
#include <string.h>

#include "decode_impl.h"
#include "jscan.h"

/* --- maps that repeat from device to device ---------------------------------
 *
 * The devices of a slice are mostly alike: a driver publishes the same
 * capacity map and the same mappings for every device of a model, byte for
 * byte. While spec.devices is read, the capacity and mapping maps decoded
 * are kept, text and decoded entries, as many as a small table holds
 * (below). A map whose text equals one of them byte for byte is the same
 * value (an object ends where its text says, and every one is at the same
 * depth of the same array, so it was validated under the same limits): the
 * device shares the decoded entries after one comparison
 * (jscan_skip_same()) instead of a decode, as an oldObject device shares
 * object's. Entries are never written once
 * decoded: a device's second mapping map (both shapes, which the rules
 * refuse) appends to a private copy of the first (own_mappings()).
 *
 * Finding the earlier map must cost little next to a decode, also in a
 * slice where nothing repeats: a map is looked for only in one set of
 * four, chosen by a hash of the first MEMO_WINDOW bytes of the text from
 * its start (maps of one driver differ mostly in their first values,
 * which fall in there), and only an entry with that same hash is
 * compared, so a miss is one hash and a few integer comparisons. Maps
 * that agree on the window share a set and take turns in its ways; a
 * short map whose window reaches into the text after it may never be
 * found again; either only forgoes a shortcut. A comparison reads no
 * further than the map at hand goes (equal bytes open and close the same
 * objects), so hostile text costs at most four of them per map. The
 * lookup is a call of its own, out of the decoders' way, and a table that
 * keeps finding nothing stops being looked in (MEMO_GIVE_UP). */
#define MEMO_WINDOW 64
#define MEMO_SETS 16            /* a power of two */
#define MEMO_WAYS 4
/* A table that found nothing in this many lookups in a row is not looked
 * in again for the array: its devices do not repeat, and each lookup would
 * cost a hash for nothing. */
#define MEMO_GIVE_UP 32

struct memo_entry {
	struct str raw;                 /* the map's text; ptr NULL for none */
	uint64_t window;                /* the hash of the text at its start */
	void *arr;                      /* its entries, decoded and sorted */
	uint32_t n;
	enum mapping_shape shape;       /* of a mapping map; MAPPING_V136 for capacity */
};

struct memo_set {
	struct memo_entry e[MEMO_WAYS];
	unsigned next;                  /* the way replaced next */
};

struct memo_table {
	unsigned misses;                /* lookups since the last one that found its map */
	uint32_t used;                  /* bit i: set i has been written (the rest are
					 * garbage, so that starting costs no clearing) */
	struct memo_set set[MEMO_SETS];
};

_Static_assert(MEMO_SETS <= 32, "a set is one bit of memo_table.used");

struct map_memo {
	struct memo_table capacity;
	struct memo_table mappings;
};

/* Where a map that starts here is looked for and kept. */
struct memo_spot {
	struct memo_set *set;           /* NULL: no shortcut (less than a window left) */
	uint64_t window;
	size_t at;
};

/* Look for the object here (of shape, for mappings) in t. Returns its
 * entry, the object consumed; or NULL, nothing consumed, with *spot set
 * for memo_put() once it is decoded. */
static __attribute__((noinline)) const struct memo_entry *memo_take(struct dctx *d, struct memo_table *t,
								   enum mapping_shape shape, struct memo_spot *spot)
{
	size_t at = decode_here(d), i;
	const char *p = d->text + at;
	uint64_t h = 0, w;

	spot->set = NULL;
	spot->at = at;
	if (d->text_len - at < MEMO_WINDOW || t->misses >= MEMO_GIVE_UP)
		return NULL;
	t->misses++;
	/* Not hmap_hash_words(): with its finish the bench's 128-device
	 * review took 2.4% more instructions (fewer maps found again). */
	for (i = 0; i < MEMO_WINDOW; i += 8) {
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
	}
	i = (h >> 32) & (MEMO_SETS - 1);
	spot->set = &t->set[i];
	spot->window = h;
	if (!(t->used & (1u << i))) {
		memset(spot->set, 0, sizeof(*spot->set));
		t->used |= 1u << i;
		return NULL;
	}
	for (i = 0; i < MEMO_WAYS; i++) {
		const struct memo_entry *e = &spot->set->e[i];

		if (e->raw.ptr && e->window == h && e->shape == shape && jscan_skip_same(&d->s, e->raw) == 1) {
			t->misses = 0;
			return e;
		}
	}
	return NULL;
}

/* Keep the map just decoded at spot, with its entries. */
static __attribute__((noinline)) void memo_put(struct dctx *d, const struct memo_spot *spot, void *arr,
						uint32_t n, enum mapping_shape shape)
{
	struct memo_set *set = spot->set;
	struct memo_entry *e = &set->e[set->next];

	e->raw.ptr = d->text + spot->at;
	e->raw.len = decode_here(d) - spot->at;
	e->window = spot->window;
	e->arr = arr;
	e->n = n;
	e->shape = shape;
	set->next = (set->next + 1) % MEMO_WAYS;
}

/* requestPolicy.validValues: a list of quantities. */
static int read_quantity_elem(struct dctx *d, void *e)
{
	return decode_read_quantity(d, e);
}

static int decode_valid_values(struct dctx *d, void *obj)
{
	struct capacity_policy *p = obj;
	void *arr = p->valid_values;
	int rc = decode_list(d, &arr, &p->nvalid_values, sizeof(*p->valid_values), "valid values",
			     read_quantity_elem);

	p->valid_values = arr;
	return rc;
}

static const struct field range_fields[] = {
	FQTY("min", struct capacity_policy, min),
	FQTY("max", struct capacity_policy, max),
	FQTY("step", struct capacity_policy, step),
};

static int decode_valid_range(struct dctx *d, void *obj)
{
	struct capacity_policy *p = obj;

	if (jscan_peek(&d->s) == JSCAN_OBJECT)
		p->has_range = true;
	return decode_fields(d, range_fields, COUNT(range_fields), p, NULL);
}

static const struct field policy_fields[] = {
	FQTY("default", struct capacity_policy, default_value),
	FCALL("validValues", decode_valid_values),
	FCALL("validRange", decode_valid_range),
};

static int decode_request_policy(struct dctx *d, void *obj)
{
	struct device_capacity *c = obj;
	size_t start;
	int rc;

	if (jscan_peek(&d->s) != JSCAN_OBJECT)
		return decode_fields(d, policy_fields, COUNT(policy_fields), &c->policy, NULL);
	start = decode_here(d);
	c->policy.present = true;
	if ((rc = decode_fields(d, policy_fields, COUNT(policy_fields), &c->policy, NULL)) != 0)
		return rc;
	/* The cluster view reads it again as text. */
	c->policy_raw.ptr = d->text + start;
	c->policy_raw.len = decode_here(d) - start;
	return 0;
}

static const struct field capacity_fields[] = {
	FQTY("value", struct device_capacity, value),
	FCALL("requestPolicy", decode_request_policy),
};

_Static_assert(offsetof(struct device_capacity, name) == 0, "capacity is sorted by its first member");
_Static_assert(offsetof(struct mapping, resource) == 0, "mappings are sorted by their first member");

/* capacity: name -> DeviceCapacity (value and requestPolicy are read). */
static int decode_capacity(struct dctx *d, void *obj)
{
	struct device *dev = obj;
	const struct memo_entry *e;
	struct memo_spot spot;
	enum jscan_type type;
	struct jscan_str key;
	size_t at;
	int r, rc;

	type = jscan_peek(&d->s);
	at = decode_here(d);
	spot.set = NULL;
	if (type == JSCAN_OBJECT && d->memo && (e = memo_take(d, &d->memo->capacity, MAPPING_V136, &spot))) {
		dev->capacity = e->arr;
		dev->ncapacity = e->n;
		dev->capacity_raw.ptr = d->text + at;
		dev->capacity_raw.len = e->raw.len;
		return 0;
	}
	if ((r = decode_enter_object(d)) <= 0)
		return r;
	while ((r = decode_next_key(d, &key)) == 1) {
		struct device_capacity *c;
		struct str name;
		void *grown = NULL;

		decode_path_push(d, key.ptr, key.len);
		if ((rc = decode_map_entry(d, &key, dev->capacity, 0, dev->ncapacity, sizeof(*c),
					   "capacity entries", &name, &grown)) != 0)
			return rc;
		dev->capacity = grown;
		c = &dev->capacity[dev->ncapacity];
		*c = (struct device_capacity){ .name = name };
		if (jscan_peek(&d->s) != JSCAN_OBJECT && jscan_peek(&d->s) != JSCAN_NULL)
			return decode_type_fail(d, "an object (a DeviceCapacity such as "
						"{\"value\": \"80Gi\"})");
		rc = decode_fields(d, capacity_fields, COUNT(capacity_fields), c, NULL);
		if (rc)
			return rc;
		dev->ncapacity++;
		decode_path_pop(d);
	}
	if (r < 0)
		return r;
	dev->capacity_raw.ptr = d->text + at;
	dev->capacity_raw.len = decode_here(d) - at;
	rc = decode_map_sort(d, dev->capacity, 0, dev->ncapacity, sizeof(*dev->capacity), "key", at);
	if (rc == 0 && spot.set)
		memo_put(d, &spot, dev->capacity, dev->ncapacity, MAPPING_V136);
	return rc;
}

/* nodeAllocatableResourceMappings[key]: {allocationMultiplier, capacityKey} */
static const struct field v136_fields[] = {
	FQTY("allocationMultiplier", struct mapping, multiplier),
	FSTRF("capacityKey", struct mapping, capacity_key, has_capacity_key),
};

/* nodeAllocatableResources[key] (Kubernetes 1.37): {mapping: {deviceMultiplier
 * | capacityKey + capacityMultiplier}, overhead: {perPod, perContainer}} */
static const struct field v137_mapping_fields[] = {
	FQTY("deviceMultiplier", struct mapping, multiplier),
	FSTRF("capacityKey", struct mapping, capacity_key, has_capacity_key),
	FQTY("capacityMultiplier", struct mapping, capacity_multiplier),
};

static const struct field v137_overhead_fields[] = {
	FQTY("perPod", struct mapping, overhead_per_pod),
	FQTY("perContainer", struct mapping, overhead_per_container),
};

static int decode_v137_mapping(struct dctx *d, void *obj)
{
	struct mapping *m = obj;
	struct unknown_note u = { &m->unknown_field, "mapping." };

	return decode_fields(d, v137_mapping_fields, COUNT(v137_mapping_fields), m, &u);
}

static int decode_v137_overhead(struct dctx *d, void *obj)
{
	struct mapping *m = obj;
	struct unknown_note u = { &m->unknown_field, "overhead." };

	return decode_fields(d, v137_overhead_fields, COUNT(v137_overhead_fields), m, &u);
}

static const struct field v137_fields[] = {
	FCALL("mapping", decode_v137_mapping),
	FCALL("overhead", decode_v137_overhead),
};

/* A private copy of dev's mappings, before a second map is appended to
 * them: the first map's entries may be shared with other devices. The copy
 * has the room decode_reserve() expects of an array of that many. */
static int own_mappings(struct dctx *d, struct device *dev)
{
	uint32_t room = 4;
	struct mapping *m;

	while (room < dev->nmappings)
		room *= 2;
	m = arena_alloc(d->a, (size_t)room * sizeof(*m));
	if (!m)
		return decode_mem_fail(d, arena_error(d->a));
	memcpy(m, dev->mappings, (size_t)dev->nmappings * sizeof(*m));
	dev->mappings = m;
	return 0;
}

/* One mapping map of a device. Entries of both shapes go to dev->mappings,
 * one map's entries contiguous and sorted by resource. */
static int decode_mappings(struct dctx *d, struct device *dev, enum mapping_shape shape)
{
	const struct field *f = shape == MAPPING_V136 ? v136_fields : v137_fields;
	int nf = shape == MAPPING_V136 ? COUNT(v136_fields) : COUNT(v137_fields);
	uint32_t first = dev->nmappings;
	const struct memo_entry *e;
	struct memo_spot spot;
	enum jscan_type type;
	struct jscan_str key;
	size_t at;
	int r, rc;

	type = jscan_peek(&d->s);
	at = decode_here(d);
	spot.set = NULL;
	if (type == JSCAN_OBJECT && first == 0 && d->memo && (e = memo_take(d, &d->memo->mappings, shape, &spot))) {
		dev->mappings = e->arr;
		dev->nmappings = e->n;
		if (shape == MAPPING_V136)
			dev->has_v136 = true;
		else
			dev->has_v137 = true;
		return 0;
	}
	if ((r = decode_enter_object(d)) <= 0)
		return r;
	if (first != 0 && (rc = own_mappings(d, dev)) != 0)
		return rc;
	if (shape == MAPPING_V136)
		dev->has_v136 = true;
	else
		dev->has_v137 = true;
	while ((r = decode_next_key(d, &key)) == 1) {
		struct unknown_note u;
		struct mapping *m;
		struct str name;
		void *grown = NULL;

		decode_path_push(d, key.ptr, key.len);
		if ((rc = decode_map_entry(d, &key, dev->mappings, first, dev->nmappings, sizeof(*m),
					   "mappings", &name, &grown)) != 0)
			return rc;
		dev->mappings = grown;
		m = &dev->mappings[dev->nmappings];
		memset(m, 0, sizeof(*m));
		m->resource = name;
		m->shape = shape;
		m->is_null = jscan_peek(&d->s) == JSCAN_NULL;
		u.out = &m->unknown_field;
		u.prefix = "";
		if ((rc = decode_fields(d, f, nf, m, &u)) != 0)
			return rc;
		dev->nmappings++;
		decode_path_pop(d);
	}
	if (r < 0)
		return r;
	rc = decode_map_sort(d, dev->mappings, first, dev->nmappings, sizeof(*dev->mappings), "key", at);
	if (rc == 0 && spot.set)
		memo_put(d, &spot, dev->mappings, dev->nmappings, shape);
	return rc;
}

static int decode_v136_map(struct dctx *d, void *obj)
{
	return decode_mappings(d, obj, MAPPING_V136);
}

static int decode_v137_map(struct dctx *d, void *obj)
{
	return decode_mappings(d, obj, MAPPING_V137);
}

static int decode_attributes(struct dctx *d, void *obj)
{
	return decode_read_raw_object(d, &((struct device *)obj)->attributes_raw);
}

/* The device fields; v1beta1 has all but name under "basic". */
static const struct field device_fields[] = {
	FSTR("name", struct device, name),
	FBOOL("allowMultipleAllocations", struct device, allow_multiple_allocations),
	FCALL("capacity", decode_capacity),
	FCALL("nodeAllocatableResourceMappings", decode_v136_map),
	FCALL("nodeAllocatableResources", decode_v137_map),
	FSTR("nodeName", struct device, node_name),
	FBOOL("allNodes", struct device, all_nodes),
	FPRESENT("nodeSelector", struct device, has_node_selector),
	FCALL("attributes", decode_attributes),
};

static int decode_basic(struct dctx *d, void *obj)
{
	return decode_fields(d, device_fields + 1, COUNT(device_fields) - 1, obj, NULL);
}

static const struct field beta1_device_fields[] = {
	FSTR("name", struct device, name),
	FCALL("basic", decode_basic),
};

static int decode_device(struct dctx *d, struct device *dev, uint32_t index)
{
	size_t start;
	int rc;

	memset(dev, 0, sizeof(*dev));
	dev->index = index;
	jscan_peek(&d->s);
	start = decode_here(d);
	if (d->version == API_V1BETA1)
		rc = decode_fields(d, beta1_device_fields, COUNT(beta1_device_fields), dev, NULL);
	else
		rc = decode_fields(d, device_fields, COUNT(device_fields), dev, NULL);
	if (rc)
		return rc;
	/* Both shapes on one device (a schema violation the rules report):
	 * order the whole array by shape, then resource, for lookups. */
	if (dev->has_v136 && dev->has_v137 && dev->nmappings > 1 && dev->mappings[0].shape != MAPPING_V136)
		model_sort_mappings(dev);
	dev->raw.ptr = d->text + start;
	dev->raw.len = decode_here(d) - start;
	return 0;
}

/* The elements of spec.devices, up to the array's end: *n decoded, *total
 * counted (past the limit they are only validated). */
static int read_devices(struct dctx *d, struct resource_slice *sl, const struct resource_slice *ref,
			uint32_t *n, uint32_t *total)
{
	uint32_t limit = d->lim->max_devices;
	int r, rc;

	decode_path_push_index(d);
	while ((r = decode_next_elem(d)) == 1) {
		struct device *dev;

		decode_path_set_index(d, (*total)++);
		if (*total > limit) {
			/* Count them all for the message; still validated. */
			if ((rc = decode_skip(d)) != 0)
				return rc;
			continue;
		}
		if (!(sl->devices = decode_reserve(d, sl->devices, *n, sizeof(*dev))))
			return d->rc;
		dev = &sl->devices[*n];
		if (ref && *n < ref->ndevices) {
			size_t at;

			jscan_peek(&d->s);
			at = decode_here(d);
			r = jscan_skip_same(&d->s, ref->devices[*n].raw);
			if (r < 0)
				return decode_scan_fail(d);
			if (r == 1) {
				*dev = ref->devices[*n];
				dev->raw.ptr = d->text + at;
				dev->same_as_object = true;
				sl->ndevices = ++*n;
				continue;
			}
		}
		if ((rc = decode_device(d, dev, *n)) != 0)
			return rc;
		sl->ndevices = ++*n;
	}
	decode_path_pop(d);
	return r < 0 ? r : 0;
}

/* spec.devices. While oldObject is decoded, d->ref is object's slice: a
 * device whose text equals ref's device at the same index is copied
 * instead of decoded. */
static int decode_devices(struct dctx *d, void *obj)
{
	struct resource_slice *sl = obj;
	const struct resource_slice *ref = d->ref;
	uint32_t n = 0, total = 0, limit = d->lim->max_devices;
	struct map_memo memo;
	int r, rc;

	if ((r = decode_enter_array(d)) <= 0)
		return r;
	memo.capacity.used = memo.capacity.misses = 0;
	memo.mappings.used = memo.mappings.misses = 0;
	d->memo = &memo;
	rc = read_devices(d, sl, ref, &n, &total);
	d->memo = NULL;
	if (rc)
		return rc;
	if (total > limit)
		return decode_fail(d, d->schema_err, "%u devices exceed the %slimit of %u", total,
				   limit == DECODE_API_MAX_DEVICES ? "API " : "", limit);
	return 0;
}

static const struct field pool_fields[] = {
	FSTR("name", struct resource_slice, pool_name),
	FINTF("generation", struct resource_slice, pool_generation, has_pool_generation),
	FINT("resourceSliceCount", struct resource_slice, resource_slice_count),
};

static int decode_pool(struct dctx *d, void *obj)
{
	return decode_fields(d, pool_fields, COUNT(pool_fields), obj, NULL);
}

const struct field decode_slice_spec_fields[] = {
	FSTR("driver", struct resource_slice, driver),
	FSTR("nodeName", struct resource_slice, node_name),
	FPRESENT("nodeSelector", struct resource_slice, has_node_selector),
	FBOOL("allNodes", struct resource_slice, all_nodes),
	FBOOL("perDeviceNodeSelection", struct resource_slice, per_device_node_selection),
	FCALL("pool", decode_pool),
	FCALL("devices", decode_devices),
};
const int decode_slice_spec_nfields = COUNT(decode_slice_spec_fields);
