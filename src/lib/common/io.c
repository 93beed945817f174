// SPDX-License-Identifier: MIT
/* The careful I/O layer: whole reads and writes, EINTR, short transfers. */
#include <errno.h>
#include <inttypes.h>
#include <unistd.h>

#include "kcoredump/io.h"

static ssize_t sys_pread(void *ctx, int fd, void *buf, size_t len,
			 uint64_t offset)
{
	return pread(fd, buf, len, (off_t)offset);
}

static ssize_t sys_pwrite(void *ctx, int fd, const void *buf, size_t len,
			  uint64_t offset)
{
	return pwrite(fd, buf, len, (off_t)offset);
}

static ssize_t sys_write(void *ctx, int fd, const void *buf, size_t len)
{
	return write(fd, buf, len);
}

const struct kcore_io_ops kcore_io_default = {
	.pread = sys_pread,
	.pwrite = sys_pwrite,
	.write = sys_write,
};

/* Offsets past INT64_MAX cannot be passed to pread(2). */
static bool offset_ok(uint64_t offset, size_t len)
{
	return offset <= INT64_MAX && len <= INT64_MAX - offset;
}

struct kcore_error *kcore_pread_all(const struct kcore_io_ops *ops, int fd,
				    const char *path, void *buf, size_t len,
				    uint64_t offset, size_t *ret_done)
{
	size_t done = 0;

	if (!ops)
		ops = &kcore_io_default;
	if (ret_done)
		*ret_done = 0;
	if (!offset_ok(offset, len))
		return kcore_error_create_at(KCORE_ERR_FORMAT, 0, path, offset,
					     "read of 0x%zx bytes beyond the "
					     "largest file offset",
					     len);
	while (done < len) {
		ssize_t n = ops->pread(ops->ctx, fd, (char *)buf + done,
				       len - done, offset + done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (ret_done)
				*ret_done = done;
			return kcore_error_create_at(KCORE_ERR_OS, errno, path,
						     offset + done,
						     "read failed");
		}
		if (n == 0) {
			if (ret_done)
				*ret_done = done;
			return kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, path, offset + done,
				"file ends 0x%zx bytes short of a 0x%zx-byte "
				"read at offset 0x%" PRIx64,
				len - done, len, offset);
		}
		done += (size_t)n;
	}
	if (ret_done)
		*ret_done = done;
	return NULL;
}

struct kcore_error *kcore_pwrite_all(const struct kcore_io_ops *ops, int fd,
				     const char *path, const void *buf,
				     size_t len, uint64_t offset)
{
	size_t done = 0;

	if (!ops)
		ops = &kcore_io_default;
	if (!offset_ok(offset, len))
		return kcore_error_create_at(KCORE_ERR_INVALID, 0, path, offset,
					     "write beyond the largest file "
					     "offset");
	while (done < len) {
		ssize_t n = ops->pwrite(ops->ctx, fd, (const char *)buf + done,
					len - done, offset + done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return kcore_error_create_at(KCORE_ERR_OS, errno, path,
						     offset + done,
						     "write failed");
		}
		if (n == 0)
			return kcore_error_create_at(KCORE_ERR_OS, EIO, path,
						     offset + done,
						     "write made no progress");
		done += (size_t)n;
	}
	return NULL;
}

struct kcore_error *kcore_write_all(const struct kcore_io_ops *ops, int fd,
				    const char *path, const void *buf,
				    size_t len)
{
	size_t done = 0;

	if (!ops)
		ops = &kcore_io_default;
	while (done < len) {
		ssize_t n = ops->write(ops->ctx, fd, (const char *)buf + done,
				       len - done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return kcore_error_create(KCORE_ERR_OS, errno, path,
						  "write failed");
		}
		if (n == 0)
			return kcore_error_create(KCORE_ERR_OS, EIO, path,
						  "write made no progress");
		done += (size_t)n;
	}
	return NULL;
}
