/* inputs.h - manifest inputs named on a command line: files, directories
 * and stdin, read into a manifest set.
 *
 * dry-run's INPUTs and --old go through here, as will any command that
 * reads objects from files (a `kubectl get -A -o json` dump). Each input
 * adds its objects to the set, and what cannot be read (a missing file, a
 * directory that cannot be listed, a file over the size limit) is an error
 * entry for that input: nothing is skipped without a trace. */
#ifndef DRA_GUARD_INPUTS_H
#define DRA_GUARD_INPUTS_H

#include <stddef.h>

#include "manifest.h"

/* Most manifest files one directory may hold. */
#define INPUTS_MAX_DIR_FILES 4096

/* Read path into s: "-" is stdin (entries name it "<stdin>"); a directory
 * is every .yaml, .yml and .json file directly in it (hidden files and
 * subdirectories are not read), in byte order of their names; anything
 * else is read as a file. Files over max_file bytes are error entries.
 * Returns 0, or manifest_set_add()'s -E2BIG (the set is full) or -ENOMEM.
 * Reads the file system and stdin; not thread-safe (stdin). */
int inputs_read(struct manifest_set *s, const char *path, size_t max_file);

/* True when path names a manifest by its suffix (.yaml, .yml, .json). */
bool inputs_is_manifest_name(const char *name);

#endif
