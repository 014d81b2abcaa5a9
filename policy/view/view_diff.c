/* view_diff.c - the records that differ between two snapshots (view_diff.h). */
#include "view_diff.h"

#include "view_impl.h"

/* Every record of the chunk c of dir a whose key has another record (or
 * none) in dir b: reported as (from a, from b) or, swapped, (from b, from
 * a). Keys present in both are reported only on the pass over the new
 * snapshot, so a replaced record is seen once. */
static int pass(const struct vdir *a, const struct vdir *b, unsigned table, bool a_is_new, bool only_missing,
		view_diff_fn fn, void *ctx)
{
	uint32_t c, i;
	int rc;

	for (c = 0; c < a->nchunks; c++) {
		const struct vchunk *ch = a->chunk[c];
		/* A chunk copied to change a few of its slots holds the same
		 * records as before in the others, and a record is in a table
		 * once: the same pointer in the same slot of b is the record b
		 * has under its key, found without the key and the lookup. */
		const struct vchunk *bch = a->nchunks == b->nchunks ? b->chunk[c] : NULL;

		if (bch == ch)
			continue;
		for (i = 0; i < VIEW_CHUNK; i++) {
			const struct view_rec *r = ch->slot[i], *other;
			struct vkey k;

			if (!r || (bch && bch->slot[i] == r))
				continue;
			k = view_record_key(a->ids, table, r);
			other = vt_get(b, table, &k);
			if (other == r || (only_missing && other))
				continue;
			rc = a_is_new ? fn(ctx, other, r) : fn(ctx, r, other);
			if (rc)
				return rc;
		}
	}
	return 0;
}

int view_diff(const struct view *old_v, const struct view *new_v, enum object_kind k, view_diff_fn fn,
	      void *ctx)
{
	const struct vdir *od, *nd;
	int rc;

	if (old_v == new_v || !view_holds_kind(k))
		return 0;
	od = old_v->dir[k];
	nd = new_v->dir[k];
	if (od == nd)
		return 0;
	/* added and replaced, from the new side; then deleted, from the old */
	rc = pass(nd, od, k, true, false, fn, ctx);
	if (rc == 0)
		rc = pass(od, nd, k, false, true, fn, ctx);
	return rc;
}
