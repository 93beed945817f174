// SPDX-License-Identifier: MIT
/* The careful I/O layer under injected faults: EINTR, short reads, EIO,
 * end of file, and short writes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kcoredump/io.h"
#include "tap.h"

struct fault {
	int eintr_left;	  /* fail this many calls with EINTR first */
	size_t max_chunk; /* return at most this many bytes per call */
	uint64_t eio_at;  /* fail reads touching this offset with EIO */
	uint64_t eof_at;  /* the "file" ends here */
	unsigned calls;
};

static ssize_t fault_pread(void *ctx, int fd, void *buf, size_t len,
			   uint64_t off)
{
	struct fault *f = ctx;

	f->calls++;
	if (f->eintr_left > 0) {
		f->eintr_left--;
		errno = EINTR;
		return -1;
	}
	if (off <= f->eio_at && f->eio_at < off + len) {
		if (off == f->eio_at) {
			errno = EIO;
			return -1;
		}
		len = f->eio_at - off; /* short read up to the bad byte */
	}
	if (off >= f->eof_at)
		return 0;
	if (len > f->eof_at - off)
		len = f->eof_at - off;
	if (len > f->max_chunk)
		len = f->max_chunk;
	for (size_t i = 0; i < len; i++)
		((unsigned char *)buf)[i] = (unsigned char)(off + i);
	return (ssize_t)len;
}

static ssize_t fault_write(void *ctx, int fd, const void *buf, size_t len)
{
	struct fault *f = ctx;

	f->calls++;
	if (f->eintr_left > 0) {
		f->eintr_left--;
		errno = EINTR;
		return -1;
	}
	if (f->calls > 5) {
		errno = ENOSPC;
		return -1;
	}
	return (ssize_t)(len > f->max_chunk ? f->max_chunk : len);
}

int main(void)
{
	struct fault f = { .eintr_left = 3,
			   .max_chunk = 7,
			   .eio_at = UINT64_MAX,
			   .eof_at = 1000 };
	struct kcore_io_ops ops = { .pread = fault_pread,
				    .write = fault_write,
				    .ctx = &f };
	unsigned char buf[256];
	struct kcore_error *err;
	size_t done;
	bool good = true;

	err = kcore_pread_all(&ops, -1, "x", buf, 100, 10, &done);
	ok(!err && done == 100, "EINTR and short reads are retried");
	for (int i = 0; i < 100; i++)
		good &= buf[i] == (unsigned char)(10 + i);
	ok(good, "bytes land in order");

	f.max_chunk = 1000;
	err = kcore_pread_all(&ops, -1, "x", buf, 100, 950, &done);
	ok(err && err->code == KCORE_ERR_FORMAT && done == 50,
	   "end of file is a truncation error after 50 bytes");
	ok(err && err->has_offset && err->offset == 1000,
	   "the error names the offset where data ran out");
	char *msg = err ? kcore_error_describe(err) : NULL;
	ok(msg && strstr(msg, "'x'") && strstr(msg, "0x3b6"),
	   "description names the file and the read offset: %s",
	   msg ? msg : "");
	free(msg);
	kcore_error_destroy(err);

	f.eio_at = 130;
	err = kcore_pread_all(&ops, -1, "x", buf, 100, 100, &done);
	ok(err && err->code == KCORE_ERR_OS && err->errnum == EIO &&
		   err->offset == 130 && done == 30,
	   "EIO reports the failing offset and the bytes before it");
	kcore_error_destroy(err);

	err = kcore_pread_all(&ops, -1, "x", buf, 16, UINT64_MAX - 4, &done);
	ok(err && err->code == KCORE_ERR_FORMAT,
	   "offsets beyond off_t are refused");
	kcore_error_destroy(err);

	f.calls = 0;
	f.eintr_left = 1;
	f.max_chunk = 10;
	err = kcore_write_all(&ops, -1, "out", buf, 40);
	ok(!err, "short writes and EINTR are retried");
	f.calls = 0;
	err = kcore_write_all(&ops, -1, "out", buf, 200);
	ok(err && err->errnum == ENOSPC, "ENOSPC is reported");
	kcore_error_destroy(err);

	/* Real file descriptors through the default ops. */
	char path[] = "/tmp/t-io-XXXXXX";
	int fd = mkstemp(path);
	ok(fd >= 0, "temp file");
	err = kcore_pwrite_all(NULL, fd, path, "hello", 5, 4096);
	ok(!err, "pwrite_all");
	err = kcore_pread_all(NULL, fd, path, buf, 5, 4096, NULL);
	ok(!err && memcmp(buf, "hello", 5) == 0, "pread_all round trip");
	close(fd);
	unlink(path);

	err = kcore_error_create(KCORE_ERR_FORMAT, 0, NULL, "bad %d", 1);
	msg = kcore_error_describe(err);
	is_str(msg, "bad 1", "description without path or offset");
	free(msg);
	kcore_error_destroy(err);
	kcore_error_destroy(NULL);
	kcore_error_destroy(&kcore_error_nomem);
	ok(1, "destroy accepts NULL and the static nomem error");
	return tap_done();
}
