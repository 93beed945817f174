/* SPDX-License-Identifier: MIT */
/*
 * Atomic output files: written under a temporary name in the target
 * directory (mode 0600), published by link() (never replacing anything)
 * or, with force, by rename(); removed on any failure.  "-" is stdout,
 * refused when it is a terminal.
 */
#ifndef KCOREDUMP_OUTPUT_H
#define KCOREDUMP_OUTPUT_H

#include <stdbool.h>

#include "error.h"

struct kcore_output {
	char *path; /* final name, or NULL for stdout */
	char *tmp;  /* temporary name while writing */
	int dirfd;  /* names are relative to it (AT_FDCWD for paths) */
	int fd;
	bool seekable; /* a regular file we may pwrite and leave sparse */
	bool force;
	bool sync;
};

struct kcore_error *kcore_output_open(const char *path, bool force, bool sync,
				      struct kcore_output **ret);
/*
 * Output named name inside the directory open as dirfd (not closed by
 * us), for callers that must not follow symlinks: the temporary file is
 * created with O_CREAT|O_EXCL|O_NOFOLLOW under a random name, nothing in
 * the directory is followed, and the commit link()s it into place (never
 * replacing a file; KCORE_ERR_EXISTS).  name must not contain '/'.
 */
struct kcore_error *kcore_output_openat(int dirfd, const char *name, bool sync,
					struct kcore_output **ret);
/* Set the final size (sparse tail), fsync if asked, publish. */
struct kcore_error *kcore_output_commit(struct kcore_output *out,
					uint64_t size);
/* Remove the temporary file; safe after commit (then a no-op). */
void kcore_output_abort(struct kcore_output *out);
void kcore_output_destroy(struct kcore_output *out);

#endif
