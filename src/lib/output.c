// SPDX-License-Identifier: MIT
/* Atomic output: temporary file, then link() or rename() into place. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kcoredump/output.h"

/* The temporary file beside what would be named could not be created:
 * the error, with out (which has no file yet) released. */
static struct kcore_error *temp_failed(struct kcore_output *out,
				       const char *name)
{
	struct kcore_error *err = kcore_error_create(
		errno == EACCES || errno == EPERM ? KCORE_ERR_ACCESS
						  : KCORE_ERR_OS,
		errno, name, "cannot create a temporary file beside");

	free(out->tmp);
	out->tmp = NULL;
	kcore_output_destroy(out);
	return err;
}

struct kcore_error *kcore_output_open(const char *path, bool force, bool sync,
				      struct kcore_output **ret)
{
	struct kcore_output *out = calloc(1, sizeof(*out));
	char *dcopy = NULL, *bcopy = NULL;
	struct stat st;

	if (!out)
		return &kcore_error_nomem;
	out->fd = -1;
	out->dirfd = AT_FDCWD;
	out->force = force;
	out->sync = sync;
	if (strcmp(path, "-") == 0) {
		if (isatty(STDOUT_FILENO)) {
			free(out);
			return kcore_error_create(KCORE_ERR_INVALID, 0,
						  "<stdout>",
						  "refusing to write a binary "
						  "dump to a terminal; "
						  "redirect it or use -o FILE");
		}
		out->fd = STDOUT_FILENO;
		*ret = out;
		return NULL;
	}
	if (stat(path, &st) == 0 &&
	    (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
		/* /dev/null, a FIFO: nothing to replace, write a stream. */
		out->fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
		if (out->fd < 0) {
			int e = errno;

			free(out);
			return kcore_error_create(KCORE_ERR_OS, e, path,
						  "cannot open for writing");
		}
		if (isatty(out->fd)) {
			close(out->fd);
			free(out);
			return kcore_error_create(KCORE_ERR_INVALID, 0, path,
						  "refusing to write a binary "
						  "dump to a terminal");
		}
		*ret = out;
		return NULL;
	}
	if (lstat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode)) {
			free(out);
			return kcore_error_create(KCORE_ERR_INVALID, EISDIR,
						  path,
						  "cannot write the dump");
		}
		if (!force) {
			free(out);
			return kcore_error_create(KCORE_ERR_EXISTS, 0, path,
						  "already exists; use --force "
						  "to replace it");
		}
	}
	out->path = strdup(path);
	dcopy = strdup(path);
	bcopy = strdup(path);
	if (!out->path || !dcopy || !bcopy ||
	    asprintf(&out->tmp, "%s/.%s.XXXXXX", dirname(dcopy),
		     basename(bcopy)) < 0) {
		out->tmp = NULL;
		free(dcopy);
		free(bcopy);
		kcore_output_destroy(out);
		return &kcore_error_nomem;
	}
	free(dcopy);
	free(bcopy);
	/* mkostemp creates the file 0600 with O_EXCL: nothing is followed. */
	out->fd = mkostemp(out->tmp, O_CLOEXEC);
	if (out->fd < 0)
		return temp_failed(out, path);
	out->seekable = true;
	*ret = out;
	return NULL;
}

struct kcore_error *kcore_output_openat(int dirfd, const char *name, bool sync,
					struct kcore_output **ret)
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz"
				       "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	struct kcore_output *out;

	if (!*name || strchr(name, '/') || strcmp(name, ".") == 0 ||
	    strcmp(name, "..") == 0)
		return kcore_error_create(KCORE_ERR_INVALID, 0, name,
					  "not a plain file name");
	out = calloc(1, sizeof(*out));
	if (!out)
		return &kcore_error_nomem;
	out->fd = -1;
	out->dirfd = dirfd;
	out->sync = sync;
	out->path = strdup(name);
	if (!out->path || asprintf(&out->tmp, ".%s.XXXXXXXX", name) < 0) {
		out->tmp = NULL;
		kcore_output_destroy(out);
		return &kcore_error_nomem;
	}
	for (int tries = 0; tries < 100; tries++) {
		unsigned char rnd[8];
		char *x = out->tmp + strlen(out->tmp) - 8;

		if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
			/* Only before the pool is ready: use the clock. */
			uint64_t v = (uint64_t)getpid() * 2654435761u ^
				     (uint64_t)tries << 32 ^
				     (uint64_t)(uintptr_t)out;

			memcpy(rnd, &v, sizeof(rnd));
		}
		for (int i = 0; i < 8; i++)
			x[i] = alphabet[rnd[i] % (sizeof(alphabet) - 1)];
		out->fd = openat(dirfd, out->tmp,
				 O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
					 O_CLOEXEC | O_NOCTTY,
				 0600);
		if (out->fd >= 0 || errno != EEXIST)
			break;
	}
	if (out->fd < 0)
		return temp_failed(out, name);
	out->seekable = true;
	*ret = out;
	return NULL;
}

static void sync_dir(const struct kcore_output *out)
{
	char *copy;
	int fd;

	if (out->dirfd != AT_FDCWD) {
		fsync(out->dirfd);
		return;
	}
	copy = strdup(out->path);
	if (!copy)
		return;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	free(copy);
}

struct kcore_error *kcore_output_commit(struct kcore_output *out, uint64_t size)
{
	if (!out->tmp) { /* stdout */
		if (out->sync && fsync(out->fd) < 0 && errno != EINVAL &&
		    errno != EROFS)
			return kcore_error_create(KCORE_ERR_OS, errno,
						  "<stdout>", "fsync failed");
		return NULL;
	}
	if (ftruncate(out->fd, (off_t)size) < 0)
		return kcore_error_create(KCORE_ERR_OS, errno, out->tmp,
					  "cannot set the file size");
	if (out->sync && fsync(out->fd) < 0)
		return kcore_error_create(KCORE_ERR_OS, errno, out->tmp,
					  "fsync failed");
	if (close(out->fd) < 0) {
		out->fd = -1;
		return kcore_error_create(KCORE_ERR_OS, errno, out->tmp,
					  "close failed");
	}
	out->fd = -1;
	if (out->force) {
		if (renameat(out->dirfd, out->tmp, out->dirfd, out->path) < 0)
			return kcore_error_create(KCORE_ERR_OS, errno,
						  out->path,
						  "cannot move the dump into "
						  "place");
	} else {
		if (linkat(out->dirfd, out->tmp, out->dirfd, out->path, 0) < 0)
			return kcore_error_create(
				errno == EEXIST ? KCORE_ERR_EXISTS
						: KCORE_ERR_OS,
				errno, out->path,
				errno == EEXIST
					? "appeared while dumping; use --force "
					  "to replace it"
					: "cannot link the dump into place");
		unlinkat(out->dirfd, out->tmp, 0);
	}
	free(out->tmp);
	out->tmp = NULL;
	if (out->sync)
		sync_dir(out);
	return NULL;
}

void kcore_output_abort(struct kcore_output *out)
{
	if (!out || !out->tmp)
		return;
	if (out->fd >= 0) {
		close(out->fd);
		out->fd = -1;
	}
	unlinkat(out->dirfd, out->tmp, 0);
	free(out->tmp);
	out->tmp = NULL;
}

void kcore_output_destroy(struct kcore_output *out)
{
	if (!out)
		return;
	kcore_output_abort(out);
	if (out->fd > STDERR_FILENO)
		close(out->fd);
	free(out->path);
	free(out);
}
