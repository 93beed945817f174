/* SPDX-License-Identifier: MIT */
/*
 * I/O operations that fail on purpose, for the unit tests' kcore_io_ops
 * seam: source reads touching [eio_from, eio_to) fail with EIO (a read
 * that starts before stops short there), reads may be cut to short_chunk
 * bytes, and output writes fail with ENOSPC once enospc_after bytes are
 * written (0: never).
 */
#ifndef KCOREDUMP_TESTS_FAULTIO_H
#define KCOREDUMP_TESTS_FAULTIO_H

#include <errno.h>
#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>

#include "kcoredump/io.h"

struct kc_fault {
	uint64_t eio_from, eio_to; /* source reads touching this fail */
	size_t short_chunk;	   /* short reads of at most this (0: none) */
	uint64_t enospc_after;	   /* output bytes before ENOSPC (0: none) */
	uint64_t written;	   /* output bytes so far */
};

static inline ssize_t kc_fault_pread(void *ctx, int fd, void *buf, size_t len,
				     uint64_t off)
{
	struct kc_fault *f = ctx;

	if (off < f->eio_to && off + len > f->eio_from) {
		if (off >= f->eio_from) {
			errno = EIO;
			return -1;
		}
		len = f->eio_from - off;
	}
	if (f->short_chunk && len > f->short_chunk)
		len = f->short_chunk;
	return pread(fd, buf, len, (off_t)off);
}

static inline int kc_fault_out(struct kc_fault *f, size_t len)
{
	if (f->enospc_after && f->written + len > f->enospc_after) {
		errno = ENOSPC;
		return -1;
	}
	f->written += len;
	return 0;
}

static inline ssize_t kc_fault_pwrite(void *ctx, int fd, const void *buf,
				      size_t len, uint64_t off)
{
	return kc_fault_out(ctx, len) ? -1 : pwrite(fd, buf, len, (off_t)off);
}

static inline ssize_t kc_fault_write(void *ctx, int fd, const void *buf,
				     size_t len)
{
	return kc_fault_out(ctx, len) ? -1 : write(fd, buf, len);
}

/* The operations, failing as f says. */
static inline struct kcore_io_ops kc_fault_ops(struct kc_fault *f)
{
	return (struct kcore_io_ops){ .pread = kc_fault_pread,
				      .pwrite = kc_fault_pwrite,
				      .write = kc_fault_write,
				      .ctx = f };
}

#endif
