/* view_file.h - a cluster view from files, for dry-run --view and
 * dra-guard ledger --view: what `kubectl get
 * resourceslices,resourceclaims,pods,nodes -A -o json` prints (decoded as
 * the watcher decodes a LIST, one object at a time), or any manifests the
 * manifest reader reads (YAML, directories, stdin).
 *
 * A dump is one moment (policy/view/view_dump.h): every object counts as seen
 * at now, nothing as restarted or changed just before. */
#ifndef DRA_GUARD_VIEW_FILE_H
#define DRA_GUARD_VIEW_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "view.h"
#include "view_dump.h"

/* Largest dump file read. */
#define VIEW_FILE_MAX ((size_t)2 << 30)

/* Build a view from the paths (files, directories, "-") at now_ns into a
 * new builder (*b) and publish it (*v, released with the builder's
 * view_builder_release()). Objects that cannot be used are counted in st;
 * a path that cannot be read at all is an error: -errno with err (n
 * bytes) naming it. 0 on success. */
int view_file_load(const char *const *paths, size_t npaths, int64_t now_ns, struct view_builder **b,
		   const struct view **v, struct view_dump_stats *st, char *err, size_t n);

/* One line on what a view holds ("5000 slices, 100000 claims, ..."). */
void view_file_describe(const struct view *v, const struct view_dump_stats *st, char *buf, size_t n);

#endif
