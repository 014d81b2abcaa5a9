/* version.h - the version string baked into the binary.
 *
 * Defined in a file the Makefile generates ($(BUILD)/gen/version.c) and
 * rewrites only when `git describe` (or VERSION=) changes, so the string is
 * never stale and a new version recompiles one file. */
#ifndef DRA_GUARD_VERSION_H
#define DRA_GUARD_VERSION_H

/* "1fdb4f2", "v0.3.0-4-gabcdef-dirty" or "dev". Static storage. */
extern const char dra_guard_version[];

#endif
