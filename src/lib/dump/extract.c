// SPDX-License-Identifier: MIT
/*
 * extract: a .zst/.xz dump decompressed into a sparse ELF file (its
 * holes left as holes), and the plain copy of a stored core.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "metanote.h"
#include "plan.h"
#include "source-impl.h"
#include "kcoredump/verify.h"
#include "verify-internal.h"
#include "kcoredump/output.h"
#include "kcoredump/stream.h"

/* Write the pages of buf (at file offset pos) that are not all zero. */
static struct kcore_error *write_nonzero(struct kcore_output *out,
					 const unsigned char *buf, size_t n,
					 uint64_t pos)
{
	struct kcore_error *err = NULL;

	for (size_t p = 0; !err && p < n;) {
		size_t q = p, m = n - p < 4096 ? n - p : 4096;

		if (kcore_is_zero(buf + p, m)) {
			p += m;
			continue;
		}
		while (q < n &&
		       !kcore_is_zero(buf + q, n - q < 4096 ? n - q : 4096))
			q += n - q < 4096 ? n - q : 4096;
		err = kcore_pwrite_all(NULL, out->fd, out->tmp, buf + p, q - p,
				       pos + p);
		p = q;
	}
	return err;
}

/*
 * Bytes [pos, pos + n) of buf to out: a sparse file keeps its zero pages
 * as holes; a pipe gets every byte.
 */
static struct kcore_error *write_out(struct kcore_output *out,
				     const unsigned char *buf, size_t n,
				     uint64_t pos)
{
	if (out->seekable)
		return write_nonzero(out, buf, n, pos);
	return kcore_write_all(NULL, out->fd, "stdout", buf, n);
}

/* n zero bytes at pos: nothing in a sparse file, zeros into a pipe (a
 * signal stops it). */
static struct kcore_error *
write_zeros(struct kcore_output *out, unsigned char *buf, uint64_t n,
	    uint64_t pos, volatile sig_atomic_t *cancel, const char *dump)
{
	struct kcore_error *err = NULL;

	if (out->seekable || !n)
		return NULL;
	memset(buf, 0, n < CHUNK ? (size_t)n : CHUNK);
	while (!err && n) {
		size_t m = n < CHUNK ? (size_t)n : CHUNK;

		err = write_out(out, buf, m, pos);
		if (!err)
			err = kcore_verify_cancelled(cancel, dump);
		n -= m;
		pos += m;
	}
	return err;
}

/* With a hole map: decode the data runs only; zero runs stay holes in a
 * file.  Into a pipe every byte goes in order, the zero runs still
 * answered by the map without decoding. */
static struct kcore_error *
extract_map(struct kcore_istream *is, const char *dump,
	    struct kcore_output *out, unsigned char *buf,
	    volatile sig_atomic_t *cancel, kcore_extract_progress_fn progress,
	    void *arg)
{
	uint64_t size = kcore_istream_size(is), pos = 0;
	struct kcore_error *err = NULL;

	while (!err && pos < size) {
		uint64_t ds, de;

		if (out->seekable) {
			kcore_istream_next_data(is, pos, size, &ds, &de);
		} else {
			ds = pos;
			de = size;
		}
		for (pos = ds; !err && pos < de;) {
			size_t n =
				de - pos < CHUNK ? (size_t)(de - pos) : CHUNK;
			size_t got;

			err = kcore_istream_pread(is, buf, n, pos, &got);
			if (!err && got < n)
				err = kcore_error_create_at(
					KCORE_ERR_FORMAT, 0, dump, pos + got,
					"the stream ends early at "
					"decompressed offset 0x%" PRIx64,
					pos + got);
			if (!err)
				err = write_out(out, buf, n, pos);
			if (!err)
				err = kcore_verify_cancelled(cancel, dump);
			pos += n;
			if (!err && progress)
				progress(arg, pos, size);
		}
		pos = de;
	}
	return err;
}

struct kcore_error *kcore_extract(const char *dump, const char *output,
				  bool force, volatile sig_atomic_t *cancel,
				  uint64_t *ret_size)
{
	return kcore_extract_progress(dump, output, force, cancel, NULL, NULL,
				      ret_size);
}

/*
 * An uncompressed file (a plain core the handler stored) copied extent by
 * extent: its holes stay holes in a file and are zeros in a pipe.
 */
static struct kcore_error *
copy_plain(int fd, const char *dump, struct kcore_output *out,
	   unsigned char *buf, volatile sig_atomic_t *cancel,
	   kcore_extract_progress_fn progress, void *arg, uint64_t *ret_pos)
{
	struct kcore_error *err = NULL;
	struct stat st;
	uint64_t pos = 0, size;

	if (fstat(fd, &st) < 0)
		return kcore_error_create(KCORE_ERR_OS, errno, dump,
					  "cannot stat");
	if (!S_ISREG(st.st_mode))
		return kcore_error_create(KCORE_ERR_INVALID, 0, dump,
					  "not a regular file");
	size = (uint64_t)st.st_size;
	while (!err && pos < size) {
		off_t d = lseek(fd, (off_t)pos, SEEK_DATA), h;

		/* No SEEK_DATA here: all of it is data. */
		if (d < 0 && errno == ENXIO)
			d = (off_t)size;
		else if (d < 0)
			d = (off_t)pos;
		h = lseek(fd, d, SEEK_HOLE);
		if (h < 0 || (uint64_t)h > size)
			h = (off_t)size;
		err = write_zeros(out, buf, (uint64_t)d - pos, pos, cancel,
				  dump);
		for (pos = (uint64_t)d; !err && pos < (uint64_t)h;) {
			uint64_t left = (uint64_t)h - pos;
			size_t n = left < CHUNK ? (size_t)left : CHUNK;
			ssize_t got = pread(fd, buf, n, (off_t)pos);

			if (got < 0 && errno == EINTR)
				continue;
			if (got < 0)
				err = kcore_error_create_at(KCORE_ERR_OS, errno,
							    dump, pos,
							    "cannot read");
			else if (got == 0)
				err = kcore_error_create_at(
					KCORE_ERR_FORMAT, 0, dump, pos,
					"the file shrank while it was read");
			if (!err)
				err = write_out(out, buf, (size_t)got, pos);
			if (!err)
				err = kcore_verify_cancelled(cancel, dump);
			if (!err) {
				pos += (uint64_t)got;
				if (progress)
					progress(arg, pos, size);
			}
		}
	}
	*ret_pos = pos;
	return err;
}

/* The stream is (on fd, open) decoded into output; both are closed. */
static struct kcore_error *extract_stream(int fd, struct kcore_istream *is,
					  const char *dump, const char *output,
					  bool force,
					  volatile sig_atomic_t *cancel,
					  kcore_extract_progress_fn progress,
					  void *arg, uint64_t *ret_size)
{
	struct kcore_output *out = NULL;
	struct kcore_error *err;
	unsigned char *buf = NULL;
	uint64_t pos = 0;

	err = kcore_output_open(
		output, &(struct kcore_output_opts){ .force = force }, &out);
	buf = err ? NULL : malloc(CHUNK);
	if (!err && !buf)
		err = &kcore_error_nomem;
	if (!err && kcore_istream_has_hole_map(is)) {
		err = extract_map(is, dump, out, buf, cancel, progress, arg);
		pos = kcore_istream_size(is);
	}
	while (!err && !kcore_istream_has_hole_map(is)) {
		size_t n;

		err = kcore_istream_read(is, buf, CHUNK, &n);
		if (err || !n)
			break;
		/* Zero pages stay holes in a file. */
		err = write_out(out, buf, n, pos);
		pos += n;
		if (!err)
			err = kcore_verify_cancelled(cancel, dump);
		if (!err && progress)
			progress(arg, pos, kcore_istream_size(is));
	}
	if (!err)
		err = kcore_output_commit(out, pos);
	if (err)
		kcore_output_abort(out);
	else if (ret_size)
		*ret_size = pos;
	kcore_output_destroy(out);
	kcore_istream_destroy(is);
	free(buf);
	close(fd);
	return err;
}

struct kcore_error *kcore_extract_progress(const char *dump, const char *output,
					   bool force,
					   volatile sig_atomic_t *cancel,
					   kcore_extract_progress_fn progress,
					   void *arg, uint64_t *ret_size)
{
	struct kcore_istream *is = NULL;
	struct kcore_error *err;
	int fd = open(dump, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return kcore_explain_open_error(dump, errno, false, NULL);
	err = kcore_istream_open(fd, dump, &is);
	if (err) {
		kcore_istream_destroy(is);
		close(fd);
		return err;
	}
	return extract_stream(fd, is, dump, output, force, cancel, progress,
			      arg, ret_size);
}

struct kcore_error *kcore_copy_core(const char *path, const char *output,
				    bool force, volatile sig_atomic_t *cancel,
				    uint64_t *ret_size)
{
	struct kcore_istream *is = NULL;
	struct kcore_output *out = NULL;
	struct kcore_error *err;
	unsigned char *buf = NULL;
	uint64_t pos = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return kcore_explain_open_error(path, errno, false, NULL);
	err = kcore_istream_open(fd, path, &is);
	/* The file opened here, never its name again. */
	if (!err)
		return extract_stream(fd, is, path, output, force, cancel, NULL,
				      NULL, ret_size);
	kcore_istream_destroy(is);
	if (err->code != KCORE_ERR_FORMAT) {
		close(fd);
		return err;
	}
	/* Not a zstd or xz stream: a plain core. */
	kcore_error_destroy(err);
	err = kcore_output_open(
		output, &(struct kcore_output_opts){ .force = force }, &out);
	buf = err ? NULL : malloc(CHUNK);
	if (!err && !buf)
		err = &kcore_error_nomem;
	if (!err)
		err = copy_plain(fd, path, out, buf, cancel, NULL, NULL, &pos);
	if (!err)
		err = kcore_output_commit(out, pos);
	if (err && out)
		kcore_output_abort(out);
	else if (!err && ret_size)
		*ret_size = pos;
	kcore_output_destroy(out);
	free(buf);
	close(fd);
	return err;
}
