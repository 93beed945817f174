// SPDX-License-Identifier: MIT
/*
 * Atomic output: an O_TMPFILE inode (or a temporary name), then linkat()
 * or rename() into place.  Existing destinations are looked at with
 * lstat() and O_PATH|O_NOFOLLOW before anything is opened for writing:
 * a FIFO or device someone planted is never opened (opening one can
 * block, or act), a symbolic link is never followed.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "kcoredump/output.h"

static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz"
			       "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

static struct kcore_output *output_new(bool force, bool sync)
{
	struct kcore_output *out = calloc(1, sizeof(*out));

	if (!out)
		return NULL;
	out->fd = -1;
	out->dirfd = AT_FDCWD;
	out->force = force;
	out->sync = sync;
	return out;
}

static struct kcore_error *os_error(int e, const char *name, const char *what)
{
	return kcore_error_create(e == EACCES || e == EPERM ? KCORE_ERR_ACCESS
							    : KCORE_ERR_OS,
				  e, name, "%s", what);
}

/* Fill the last 8 characters of s with random ones. */
static void randomize(char *s, unsigned salt)
{
	unsigned char rnd[8];
	char *x = s + strlen(s) - 8;

	if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd)) {
		/* Only before the pool is ready: use the pid and clock. */
		uint64_t v = (uint64_t)getpid() * 2654435761u ^
			     (uint64_t)salt << 32 ^ (uint64_t)(uintptr_t)s;

		memcpy(rnd, &v, sizeof(rnd));
	}
	for (int i = 0; i < 8; i++)
		x[i] = alphabet[rnd[i] % (sizeof(alphabet) - 1)];
}

static const char *kind_name(mode_t m)
{
	return S_ISFIFO(m)   ? "a FIFO"
	       : S_ISCHR(m)  ? "a character device"
	       : S_ISBLK(m)  ? "a block device"
	       : S_ISSOCK(m) ? "a socket"
	       : S_ISDIR(m)  ? "a directory"
	       : S_ISLNK(m)  ? "a symbolic link"
			     : "not a regular file";
}

/*
 * An existing FIFO or device the caller asked to write into: looked at
 * through an O_PATH descriptor (no open() of the device itself), then
 * opened again through that descriptor, so what is checked is what is
 * written.
 */
static struct kcore_error *
open_special(struct kcore_output *out, const char *path, const struct stat *lst)
{
	struct stat st;
	char proc[64];
	int pfd, e;

	if (!S_ISFIFO(lst->st_mode) && !S_ISCHR(lst->st_mode) &&
	    !S_ISBLK(lst->st_mode))
		return kcore_error_create(KCORE_ERR_INVALID, 0, path,
					  "is %s; cannot write a dump into it",
					  kind_name(lst->st_mode));
	pfd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0)
		return os_error(errno, path, "cannot open");
	if (fstat(pfd, &st) < 0 || st.st_dev != lst->st_dev ||
	    st.st_ino != lst->st_ino || (st.st_mode ^ lst->st_mode) & S_IFMT) {
		close(pfd);
		return kcore_error_create(KCORE_ERR_ACCESS, 0, path,
					  "changed while it was looked at; "
					  "refusing to write");
	}
	/* A FIFO another user made in a shared directory is a trap. */
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		close(pfd);
		return kcore_error_create(KCORE_ERR_ACCESS, 0, path,
					  "is %s owned by uid %u, neither "
					  "root nor us; refusing to write "
					  "into it",
					  kind_name(st.st_mode),
					  (unsigned)st.st_uid);
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	out->fd = open(proc, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	e = errno;
	if (out->fd < 0 && e == ENOENT) {
		/* No /proc: open the name, and check it is the same file. */
		out->fd = open(path,
			       O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
		e = errno;
		if (out->fd >= 0 &&
		    (fstat(out->fd, &st) < 0 || st.st_dev != lst->st_dev ||
		     st.st_ino != lst->st_ino)) {
			close(out->fd);
			out->fd = -1;
			close(pfd);
			return kcore_error_create(KCORE_ERR_ACCESS, 0, path,
						  "changed while it was "
						  "opened; refusing to write");
		}
	}
	close(pfd);
	if (out->fd < 0)
		return os_error(e, path, "cannot open for writing");
	if (isatty(out->fd)) {
		close(out->fd);
		out->fd = -1;
		return kcore_error_create(KCORE_ERR_INVALID, 0, path,
					  "refusing to write a binary dump to "
					  "a terminal");
	}
	return NULL;
}

/* An unnamed file in dirfd, or -1 when the file system has none. */
static int open_tmpfile(int dirfd)
{
	int fd = openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd < 0 && errno != EOPNOTSUPP && errno != EISDIR &&
	    errno != EINVAL && errno != ENOENT)
		return -2; /* a real error: permission, space */
	return fd;
}

/*
 * A named temporary file: "." name "." 8 random characters, created
 * O_EXCL|O_NOFOLLOW and locked while it is written.
 */
static int open_named_tmp(int dirfd, char *tmp)
{
	int fd = -1;

	for (unsigned tries = 0; tries < 100; tries++) {
		randomize(tmp, tries);
		fd = openat(dirfd, tmp,
			    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC |
				    O_NOCTTY,
			    0600);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd >= 0)
		flock(fd, LOCK_EX | LOCK_NB);
	return fd;
}

/* The file of out in out->dirfd, named or not; tmp holds a template. */
static struct kcore_error *create_file(struct kcore_output *out,
				       const char *display)
{
	int fd = open_tmpfile(out->dirfd);

	if (fd == -2)
		return os_error(errno, display,
				"cannot create a temporary file beside");
	if (fd >= 0) {
		out->anonymous = true;
		free(out->tmp);
		out->tmp = strdup(display);
		if (!out->tmp) {
			close(fd);
			return &kcore_error_nomem;
		}
	} else {
		fd = open_named_tmp(out->dirfd, out->tmp);
		if (fd < 0)
			return os_error(errno, display,
					"cannot create a temporary file "
					"beside");
	}
	out->fd = fd;
	out->seekable = true;
	return NULL;
}

/*
 * What kcore_output_open() refuses of an existing destination: a
 * directory, a FIFO or device unless special, a file or link unless force.
 * *ret_exists and *st: what lstat() found.
 */
static struct kcore_error *
check_destination(const char *path, const struct kcore_output_opts *opts,
		  struct stat *st, bool *ret_exists)
{
	bool exists = lstat(path, st) == 0;

	*ret_exists = exists;
	if (exists && S_ISDIR(st->st_mode))
		return kcore_error_create(KCORE_ERR_INVALID, EISDIR, path,
					  "cannot write the dump");
	if (exists && !S_ISREG(st->st_mode) && !S_ISLNK(st->st_mode)) {
		if (!opts->special)
			return kcore_error_create(
				KCORE_ERR_EXISTS, 0, path,
				"is %s; not opened unless asked for with "
				"--special-output (or write to stdout with "
				"-o -)",
				kind_name(st->st_mode));
		return NULL;
	}
	if (exists && !opts->force)
		/* A regular file, or a link we would not follow anyway. */
		return kcore_error_create(KCORE_ERR_EXISTS, 0, path,
					  S_ISLNK(st->st_mode)
						  ? "is a symbolic link; not "
						    "followed (--force "
						    "replaces the link itself)"
						  : "already exists; use "
						    "--force to replace it");
	return NULL;
}

struct kcore_error *kcore_output_check(const char *path,
				       const struct kcore_output_opts *opts)
{
	char *dcopy;
	struct stat st;
	struct kcore_error *err;
	bool exists;
	int e = 0;

	if (strcmp(path, "-") == 0)
		return isatty(STDOUT_FILENO)
			       ? kcore_error_create(
					 KCORE_ERR_INVALID, 0, "<stdout>",
					 "refusing to write a binary "
					 "dump to a terminal; "
					 "redirect it or use -o FILE")
			       : NULL;
	err = check_destination(path, opts, &st, &exists);
	if (err || (exists && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)))
		return err;
	dcopy = strdup(path);
	if (!dcopy)
		return &kcore_error_nomem;
	/* The file is created in its directory: we must be able to write
	 * there (EACCES, EROFS, ENOENT are found now, not after the work). */
	if (faccessat(AT_FDCWD, dirname(dcopy), W_OK | X_OK, AT_EACCESS))
		e = errno;
	free(dcopy);
	return e ? os_error(e, path, "cannot create the dump in its directory")
		 : NULL;
}

struct kcore_error *kcore_output_open(const char *path,
				      const struct kcore_output_opts *opts,
				      struct kcore_output **ret)
{
	struct kcore_output *out = output_new(opts->force, opts->sync);
	char *dcopy = NULL, *bcopy = NULL, *base;
	struct kcore_error *err;
	struct stat st;
	bool exists;

	if (!out)
		return &kcore_error_nomem;
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
	err = check_destination(path, opts, &st, &exists);
	if (err) {
		free(out);
		return err;
	}
	if (exists && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
		err = open_special(out, path, &st);
		if (err) {
			free(out);
			return err;
		}
		*ret = out;
		return NULL;
	}
	out->path = strdup(path);
	dcopy = strdup(path);
	bcopy = strdup(path);
	if (!out->path || !dcopy || !bcopy) {
		free(dcopy);
		free(bcopy);
		kcore_output_destroy(out);
		return &kcore_error_nomem;
	}
	base = basename(bcopy);
	out->dirfd = open(dirname(dcopy), O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (out->dirfd < 0) {
		err = os_error(errno, path, "cannot open the directory of");
		out->dirfd = AT_FDCWD;
		goto fail;
	}
	out->own_dirfd = true;
	out->name = strdup(base);
	if (!out->name || asprintf(&out->tmp, ".%s.XXXXXXXX", base) < 0) {
		out->tmp = NULL;
		err = &kcore_error_nomem;
		goto fail;
	}
	/* Messages name an unnamed file by the path given. */
	err = create_file(out, path);
	if (err)
		goto fail;
	free(dcopy);
	free(bcopy);
	*ret = out;
	return NULL;
fail:
	free(dcopy);
	free(bcopy);
	if (out->tmp && !out->anonymous && out->fd < 0) {
		free(out->tmp);
		out->tmp = NULL;
	}
	kcore_output_destroy(out);
	return err;
}

struct kcore_error *kcore_output_openat(int dirfd, const char *name, bool sync,
					struct kcore_output **ret)
{
	struct kcore_output *out;
	struct kcore_error *err;

	if (!*name || strchr(name, '/') || strcmp(name, ".") == 0 ||
	    strcmp(name, "..") == 0)
		return kcore_error_create(KCORE_ERR_INVALID, 0, name,
					  "not a plain file name");
	out = output_new(false, sync);
	if (!out)
		return &kcore_error_nomem;
	out->dirfd = dirfd;
	out->path = strdup(name);
	out->name = strdup(name);
	if (!out->path || !out->name ||
	    asprintf(&out->tmp, ".%s.XXXXXXXX", name) < 0) {
		out->tmp = NULL;
		kcore_output_destroy(out);
		return &kcore_error_nomem;
	}
	err = create_file(out, name);
	if (err) {
		if (!out->anonymous) {
			free(out->tmp);
			out->tmp = NULL;
		}
		kcore_output_destroy(out);
		return err;
	}
	*ret = out;
	return NULL;
}

static void sync_dir(const struct kcore_output *out)
{
	int fd = openat(out->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

/* Give the unnamed file of out the name name in its directory. */
static int link_anonymous(const struct kcore_output *out, const char *name)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", out->fd);
	if (linkat(AT_FDCWD, proc, out->dirfd, name, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	if (errno != ENOENT)
		return -1;
	/* No /proc: AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH. */
	return linkat(out->fd, "", out->dirfd, name, AT_EMPTY_PATH);
}

static struct kcore_error *publish(struct kcore_output *out)
{
	const char *shown = out->path;

	if (out->anonymous && out->force) {
		/* A name of its own first, then over the old file. */
		char *tmp = NULL;
		int r = -1;

		if (asprintf(&tmp, ".%s.XXXXXXXX", out->name) < 0)
			return &kcore_error_nomem;
		for (unsigned tries = 0; tries < 100; tries++) {
			randomize(tmp, tries);
			r = link_anonymous(out, tmp);
			if (r == 0 || errno != EEXIST)
				break;
		}
		if (r == 0 &&
		    renameat(out->dirfd, tmp, out->dirfd, out->name) < 0) {
			int e = errno;

			unlinkat(out->dirfd, tmp, 0);
			errno = e;
			r = -1;
		}
		free(tmp);
		if (r < 0)
			return os_error(errno, shown,
					"cannot move the dump into place");
		return NULL;
	}
	if (out->anonymous) {
		if (link_anonymous(out, out->name) < 0)
			return kcore_error_create(
				errno == EEXIST ? KCORE_ERR_EXISTS
				: errno == EACCES || errno == EPERM
					? KCORE_ERR_ACCESS
					: KCORE_ERR_OS,
				errno, shown,
				errno == EEXIST
					? "appeared while dumping; use --force "
					  "to replace it"
					: "cannot link the dump into place");
		return NULL;
	}
	if (out->force) {
		if (renameat(out->dirfd, out->tmp, out->dirfd, out->name) < 0)
			return os_error(errno, shown,
					"cannot move the dump into place");
		return NULL;
	}
	if (linkat(out->dirfd, out->tmp, out->dirfd, out->name, 0) < 0)
		return kcore_error_create(
			errno == EEXIST ? KCORE_ERR_EXISTS : KCORE_ERR_OS,
			errno, shown,
			errno == EEXIST ? "appeared while dumping; use --force "
					  "to replace it"
					: "cannot link the dump into place");
	unlinkat(out->dirfd, out->tmp, 0);
	return NULL;
}

struct kcore_error *kcore_output_commit(struct kcore_output *out, uint64_t size)
{
	struct kcore_error *err;

	if (!out->tmp) { /* stdout or a special file */
		if (out->sync && fsync(out->fd) < 0 && errno != EINVAL &&
		    errno != EROFS)
			return kcore_error_create(
				KCORE_ERR_OS, errno,
				out->fd == STDOUT_FILENO ? "<stdout>" : NULL,
				"fsync failed");
		return NULL;
	}
	if (ftruncate(out->fd, (off_t)size) < 0)
		return kcore_error_create(KCORE_ERR_OS, errno, out->tmp,
					  "cannot set the file size");
	if (out->sync && fsync(out->fd) < 0)
		return kcore_error_create(KCORE_ERR_OS, errno, out->tmp,
					  "fsync failed");
	err = publish(out);
	if (err)
		return err;
	if (close(out->fd) < 0) {
		out->fd = -1;
		free(out->tmp);
		out->tmp = NULL;
		return kcore_error_create(KCORE_ERR_OS, errno, out->path,
					  "close failed");
	}
	out->fd = -1;
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
	/* An O_TMPFILE inode goes with its last descriptor. */
	if (!out->anonymous)
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
	if (out->own_dirfd)
		close(out->dirfd);
	free(out->path);
	free(out->name);
	free(out);
}

bool kcore_output_orphan(int dirfd, const char *name, uint64_t *ret_size)
{
	size_t len = strlen(name);
	struct stat st;
	bool orphan;
	int fd;

	*ret_size = 0;
	if (len < 11 || name[0] != '.' || name[len - 9] != '.' ||
	    strspn(name + len - 8, alphabet) != 8)
		return false;
	fd = openat(dirfd, name,
		    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return false;
	orphan = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		 st.st_uid == geteuid() && flock(fd, LOCK_EX | LOCK_NB) == 0;
	if (orphan)
		*ret_size = (uint64_t)st.st_blocks * 512;
	close(fd);
	return orphan;
}

/* ---- file systems that keep their data in this machine's RAM ---- */

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif
#ifndef RAMFS_MAGIC
#define RAMFS_MAGIC 0x858458f6
#endif

const char *kcore_ram_medium_from(unsigned long f_type, const char *blockdev)
{
	if (f_type == TMPFS_MAGIC)
		return "tmpfs";
	if (f_type == RAMFS_MAGIC)
		return "ramfs";
	if (blockdev && strncmp(blockdev, "zram", 4) == 0)
		return "zram";
	/* brd, the RAM disk driver: /dev/ram0... */
	if (blockdev && strncmp(blockdev, "ram", 3) == 0 &&
	    blockdev[3] >= '0' && blockdev[3] <= '9')
		return "a RAM disk (brd)";
	return NULL;
}

/* The name of the block device (or of the disk of the partition) dev
 * is, from sysfs: "zram0", "sda"; into buf, or NULL. */
static const char *block_device_name(dev_t dev, char *buf, size_t len)
{
	char link[64], *real, *name;

	if (!major(dev))
		return NULL; /* anonymous: no block device */
	snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", major(dev),
		 minor(dev));
	real = realpath(link, NULL);
	if (!real)
		return NULL;
	/* .../block/zram0 or .../block/sda/sda1: the disk is what says. */
	name = strstr(real, "/block/");
	if (name) {
		name += 7;
		name[strcspn(name, "/")] = 0;
		snprintf(buf, len, "%s", name);
	}
	free(real);
	return name ? buf : NULL;
}

const char *kcore_output_ram_medium(const char *path, int fd,
				    uint64_t *ret_free)
{
	struct statfs sfs;
	struct statvfs svfs;
	struct stat st;
	char *dcopy = NULL, dev[64];
	const char *dir = NULL, *medium;
	int r;

	if (ret_free)
		*ret_free = UINT64_MAX;
	/*
	 * What the output already is decides first: a pipe, a socket or a
	 * character device (/dev/null, a tty) stores nothing in the file
	 * system it sits on (/dev is a devtmpfs), and a block device is in
	 * RAM only when it is a zram device or a RAM disk itself.
	 */
	if ((path && strcmp(path, "-") != 0 ? stat(path, &st)
					    : fstat(fd, &st)) == 0 &&
	    !S_ISREG(st.st_mode))
		return S_ISBLK(st.st_mode)
			       ? kcore_ram_medium_from(
					 0, block_device_name(st.st_rdev, dev,
							      sizeof(dev)))
			       : NULL;
	if (path && strcmp(path, "-") != 0) {
		dcopy = strdup(path);
		if (!dcopy)
			return NULL;
		dir = dirname(dcopy);
	}
	r = dir ? statfs(dir, &sfs) : fstatfs(fd, &sfs);
	if (r == 0 && ret_free &&
	    (dir ? statvfs(dir, &svfs) : fstatvfs(fd, &svfs)) == 0)
		*ret_free = (uint64_t)svfs.f_bavail * svfs.f_frsize;
	if (r == 0 && (dir ? stat(dir, &st) : fstat(fd, &st)) == 0)
		medium = kcore_ram_medium_from(
			(unsigned long)sfs.f_type,
			block_device_name(st.st_dev, dev, sizeof(dev)));
	else
		medium = NULL;
	free(dcopy);
	return medium;
}
