/* SPDX-License-Identifier: MIT */
/*
 * Atomic output files, for destinations others may share (/tmp, a
 * directory root writes into on a user's behalf).
 *
 * A new file is written as an unnamed O_TMPFILE inode of the target
 * directory (mode 0600), or where the file system cannot, under a random
 * temporary name created O_EXCL|O_NOFOLLOW; it is published by linkat()
 * (never replacing anything) or, with force, by rename(), and dropped on
 * any failure: a crash leaves nothing behind (nothing but the named
 * temporary file where O_TMPFILE is missing).
 *
 * "-" is stdout, refused when it is a terminal.  An existing destination
 * that is not a regular file (a FIFO, a device, a socket) is never opened
 * unless asked for (special), and then only when it is owned by us or
 * root; a symbolic link at the destination is never followed.
 */
#ifndef KCOREDUMP_OUTPUT_H
#define KCOREDUMP_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

struct kcore_output {
	char *path; /* final path, or NULL for stdout and special files */
	char *name; /* its last component, in dirfd */
	/*
	 * The name to use in messages while writing: the temporary file's
	 * name, or the final name of an O_TMPFILE file (which has none
	 * yet); NULL for stdout and special files.
	 */
	char *tmp;
	int dirfd; /* names are relative to it */
	int fd;
	bool seekable;	/* a regular file we may pwrite and leave sparse */
	bool anonymous; /* O_TMPFILE: tmp names nothing on disk */
	bool force;
	bool sync;
	bool own_dirfd;
};

struct kcore_output_opts {
	bool force;   /* replace an existing regular file (or link) */
	bool sync;    /* fsync the file and directory when publishing */
	bool special; /* write into an existing FIFO or device */
};

struct kcore_error *kcore_output_open(const char *path,
				      const struct kcore_output_opts *opts,
				      struct kcore_output **ret);
/*
 * Output named name inside the directory open as dirfd (not closed by
 * us), for callers that must not follow symlinks: nothing in the
 * directory is followed, and the commit link()s the file into place
 * (never replacing a file; KCORE_ERR_EXISTS).  name must not contain '/'.
 * A named temporary file (no O_TMPFILE) is flock()ed while it is written,
 * so kcore_output_orphan() can tell a dead writer's file from a live one.
 */
struct kcore_error *kcore_output_openat(int dirfd, const char *name, bool sync,
					struct kcore_output **ret);
/*
 * The checks kcore_output_open() makes that can fail, without creating
 * anything: for callers that must refuse before costly or intrusive work
 * (pid stops its target).  NULL when path looks writable.
 */
struct kcore_error *kcore_output_check(const char *path,
				       const struct kcore_output_opts *opts);
/* Set the final size (sparse tail), fsync if asked, publish. */
struct kcore_error *kcore_output_commit(struct kcore_output *out,
					uint64_t size);
/* Remove the temporary file; safe after commit (then a no-op). */
void kcore_output_abort(struct kcore_output *out);
void kcore_output_destroy(struct kcore_output *out);

/*
 * Whether name in dirfd is a temporary file of kcore_output_openat()
 * ("." + a name + "." + 8 random characters) that nobody writes any
 * more (a regular file whose lock is free).  *ret_size: its allocated
 * bytes.
 */
bool kcore_output_orphan(int dirfd, const char *name, uint64_t *ret_size);

#endif
