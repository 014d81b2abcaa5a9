/* mountdir.h - read files from a directory the kubelet fills from a
 * ConfigMap or Secret, all from one version.
 *
 * The kubelet writes every version of a volume into a fresh timestamped
 * directory (..2026_11_29_10_00_00.123456789), points the ..data symlink at
 * it with an atomic rename, and makes each key a symlink through ..data
 * (policy.yaml -> ..data/policy.yaml). Opening the keys one by one through
 * their symlinks can mix two versions when a swap lands in between, so
 * mountdir_read() opens ..data once and reads every file relative to that
 * directory, then checks that ..data still points where it did, and starts
 * over when it moved. A directory without ..data (a plain directory, a file
 * given by hand) is read directly.
 *
 * Also the stat signature the poll backstop compares: cheap, and different
 * whenever any of the files or the ..data target changed. */
#ifndef DRA_GUARD_MOUNTDIR_H
#define DRA_GUARD_MOUNTDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mountdir_file {
	const char *name;             /* in: a name relative to the directory */
	size_t max;                   /* in: largest size accepted */
	bool optional;                /* in: absence is not an error */
	bool present;                 /* out */
	char *data;                   /* out: malloc'd, NUL-terminated; NULL when absent */
	size_t len;                   /* out */
};

/* Read files[0..n) from dir. Returns 0 with every present file filled;
 * -ENOENT when a file that is not optional is missing, -EFBIG when one is
 * larger than its max, another negative errno for I/O errors; on failure
 * err says which file and why, and nothing is left allocated. */
int mountdir_read(const char *dir, struct mountdir_file *files, size_t n, char *err, size_t errn);

/* Read one file by its path (symlinks followed), as mountdir_read() reads
 * one member: f->name is the path. Same returns. */
int mountdir_read_path(struct mountdir_file *f, char *err, size_t errn);

/* Free what mountdir_read() filled (data zeroed first: keys may be secret). */
void mountdir_release(struct mountdir_file *files, size_t n);

/* A signature of the ..data target and of every file's (device, inode,
 * size, mtime, ctime), following symlinks; absent files count too. Two
 * equal signatures mean nothing observable changed. */
uint64_t mountdir_signature(const char *dir, const char *const *names, size_t n);

/* Split path into its directory ("." for a bare name) and base name.
 * -ENAMETOOLONG when either does not fit. */
int mountdir_split(const char *path, char *dir, size_t dirn, char *base, size_t basen);

#endif
