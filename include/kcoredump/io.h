/* SPDX-License-Identifier: MIT */
/*
 * The careful I/O layer.  Every read of a source goes through
 * kcore_pread_all(), which retries EINTR and short reads and reports the
 * offset of a failure.  The system calls sit behind an ops table so tests
 * can inject EIO, short reads and ENOSPC.
 */
#ifndef KCOREDUMP_IO_H
#define KCOREDUMP_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kcore_io_ops {
	ssize_t (*pread)(void *ctx, int fd, void *buf, size_t len,
			 uint64_t offset);
	ssize_t (*pwrite)(void *ctx, int fd, const void *buf, size_t len,
			  uint64_t offset);
	ssize_t (*write)(void *ctx, int fd, const void *buf, size_t len);
	void *ctx;
};

/* The ops that call the real system calls. */
extern const struct kcore_io_ops kcore_io_default;

/*
 * Read exactly len bytes at offset.  On end of file before len bytes,
 * *ret_done (if not NULL) receives the bytes read and a KCORE_ERR_FORMAT
 * error reports the truncation.
 */
struct kcore_error *kcore_pread_all(const struct kcore_io_ops *ops, int fd,
				    const char *path, void *buf, size_t len,
				    uint64_t offset, size_t *ret_done);

struct kcore_error *kcore_pwrite_all(const struct kcore_io_ops *ops, int fd,
				     const char *path, const void *buf,
				     size_t len, uint64_t offset);
struct kcore_error *kcore_write_all(const struct kcore_io_ops *ops, int fd,
				    const char *path, const void *buf,
				    size_t len);

#ifdef __cplusplus
}
#endif

#endif
