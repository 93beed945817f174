// SPDX-License-Identifier: MIT
/*
 * verify's entry points: a dump is read through the source layer
 * (verify-plain.c); only a compressed dump that allows no random access
 * (no seek table or index) and is not compared with a source is read as
 * a stream, once (verify-stream.c).  verify-internal.h lists the parts.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metanote.h"
#include "plan.h"
#include "source-impl.h"
#include "kcoredump/verify.h"
#include "verify-internal.h"
#include "kcoredump/stream.h"

static bool is_compressed(int fd)
{
	unsigned char m[6];

	if (pread(fd, m, sizeof(m), 0) != (ssize_t)sizeof(m))
		return false;
	return !memcmp(m, "\x28\xb5\x2f\xfd", 4) || !memcmp(m,
							    "\xfd"
							    "7zXZ\0",
							    6);
}

/* How fd is compressed, and whether it can be read at random. */
static struct kcore_error *stream_kind(int fd, const char *path,
				       enum kcore_compress *ret_method,
				       bool *ret_seekable)
{
	struct kcore_istream *is;
	struct kcore_error *err = kcore_istream_open(fd, path, &is);

	if (err)
		return err;
	*ret_method = kcore_istream_method(is);
	*ret_seekable = kcore_istream_seekable(is);
	kcore_istream_destroy(is);
	return NULL;
}

struct kcore_error *kcore_verify(const char *dump, const char *source,
				 int exclude_level,
				 volatile sig_atomic_t *cancel,
				 struct kcore_verify_result *ret)
{
	return kcore_verify_progress(dump, source, exclude_level, cancel, NULL,
				     NULL, ret);
}

struct kcore_error *kcore_verify_progress(const char *dump, const char *source,
					  int exclude_level,
					  volatile sig_atomic_t *cancel,
					  kcore_verify_progress_fn progress,
					  void *arg,
					  struct kcore_verify_result *ret)
{
	struct vctl vc = { .cancel = cancel, .progress = progress, .arg = arg };
	enum kcore_compress method = KCORE_COMPRESS_NONE;
	bool seekable = true;
	struct kcore_error *err = NULL;
	int fd;

	memset(ret, 0, sizeof(*ret));
	fd = open(dump, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return kcore_explain_open_error(dump, errno, false, NULL);
	if (is_compressed(fd))
		err = stream_kind(fd, dump, &method, &seekable);
	/*
	 * A compressed dump without random access is decoded once, front
	 * to back; with a source to compare it goes through the source
	 * layer all the same (which decodes again from the start when it
	 * has to go back).
	 */
	if (!err && !seekable && !source) {
		err = kcore_verify_stream(fd, dump, &vc, ret);
		close(fd);
		if (err)
			kcore_verify_result_deinit(ret);
		return err;
	}
	close(fd);
	if (err)
		return err;
	ret->method = method;
	err = kcore_verify_plain(dump, source, exclude_level, &vc, ret);
	if (err)
		kcore_verify_result_deinit(ret);
	return err;
}

void kcore_verify_result_deinit(struct kcore_verify_result *res)
{
	free(res->segs);
	free(res->page_compression);
	memset(res, 0, sizeof(*res));
}
