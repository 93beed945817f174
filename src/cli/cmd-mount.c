// SPDX-License-Identifier: MIT
/*
 * kcoredump mount DUMP MOUNTPOINT: a read-only FUSE file system (libfuse3)
 * holding one file, "vmcore", the dump as a plain ELF core
 * (kcoredump/view.h), so that crash, drgn, gdb and Volatility open a
 * .zst, .xz, kdump, LiME or AVML dump in place.  The FUSE glue lives here;
 * the view is the library's.  SEEK_DATA/SEEK_HOLE answer from the dump's
 * holes, st_blocks counts its data, and the kernel keeps what was read in
 * its page cache.  Unmounted by fusermount3 -u, or on SIGINT/SIGTERM/SIGHUP.
 */
#define FUSE_USE_VERSION 31

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cli.h"
#include "kcoredump/view.h"

#define FILE_NAME	 "vmcore"
#define MOPT_CACHE	 3000
#define MOPT_NO_PREFETCH 3001

static const struct cli_option mount_options[] = {
	{ "foreground", 'f', CLI_ARG_NONE, NULL,
	  "stay in the foreground (unmount on Ctrl-C)", NULL, 'f' },
	{ "cache-size", 0, CLI_ARG_REQUIRED, "SIZE",
	  "decoded .zst/.xz frames to keep in memory (default: "
	  "every frame with data, 64M..1G)",
	  NULL, MOPT_CACHE },
	{ "no-prefetch", 0, CLI_ARG_NONE, NULL,
	  "do not decode the .zst frames with data in the background "
	  "after mounting",
	  NULL, MOPT_NO_PREFETCH },
	{ 0 },
};

struct mount_state {
	struct kcore_view *view;
	struct stat dump_st;
	bool foreground;
};

static struct mount_state *state(void)
{
	return fuse_get_context()->private_data;
}

static void *mnt_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	/* The file never changes: let the kernel cache pages and attributes. */
	cfg->kernel_cache = 1;
	cfg->entry_timeout = 86400;
	cfg->attr_timeout = 86400;
	cfg->negative_timeout = 86400;
	return fuse_get_context()->private_data;
}

static int mnt_getattr(const char *path, struct stat *st,
		       struct fuse_file_info *fi)
{
	struct mount_state *m = state();

	(void)fi;
	memset(st, 0, sizeof(*st));
	st->st_uid = m->dump_st.st_uid;
	st->st_gid = m->dump_st.st_gid;
	st->st_atim = m->dump_st.st_atim;
	st->st_mtim = m->dump_st.st_mtim;
	st->st_ctim = m->dump_st.st_ctim;
	if (!strcmp(path, "/")) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
		return 0;
	}
	if (strcmp(path, "/" FILE_NAME))
		return -ENOENT;
	st->st_mode = S_IFREG | 0444;
	st->st_nlink = 1;
	st->st_size = (off_t)kcore_view_size(m->view);
	/* st_blocks counts 512-byte units of data, as a sparse file's. */
	st->st_blocks =
		(blkcnt_t)((kcore_view_data_bytes(m->view) + 511) / 512);
	st->st_blksize = 4096;
	return 0;
}

static int mnt_readdir(const char *path, void *buf, fuse_fill_dir_t fill,
		       off_t off, struct fuse_file_info *fi,
		       enum fuse_readdir_flags flags)
{
	(void)off;
	(void)fi;
	(void)flags;
	if (strcmp(path, "/"))
		return -ENOTDIR;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	fill(buf, FILE_NAME, NULL, 0, 0);
	return 0;
}

static int mnt_open(const char *path, struct fuse_file_info *fi)
{
	if (strcmp(path, "/" FILE_NAME))
		return -ENOENT;
	if ((fi->flags & O_ACCMODE) != O_RDONLY)
		return -EROFS;
	fi->keep_cache = 1;
	return 0;
}

/* Log a read error where someone can see it (foreground only). */
static int io_error(struct kcore_error *err)
{
	if (state()->foreground) {
		char *d = kcore_error_describe(err);

		fprintf(stderr, "kcoredump: %s\n", d ? d : "read error");
		free(d);
	}
	kcore_error_destroy(err);
	return -EIO;
}

static int mnt_read(const char *path, char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct kcore_error *err;
	size_t done = 0;

	(void)path;
	(void)fi;
	if (off < 0)
		return -EINVAL;
	if (size > INT_MAX)
		size = INT_MAX;
	err = kcore_view_pread(state()->view, buf, size, (uint64_t)off, &done);
	if (err && !done)
		return io_error(err);
	kcore_error_destroy(err);
	return (int)done;
}

static off_t mnt_lseek(const char *path, off_t off, int whence,
		       struct fuse_file_info *fi)
{
	struct kcore_view *v = state()->view;
	uint64_t size = kcore_view_size(v), d, e;
	struct kcore_error *err;

	(void)path;
	(void)fi;
	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	if (off < 0)
		return -ENXIO;
	if ((uint64_t)off >= size)
		return -ENXIO;
	err = kcore_view_next_data(v, (uint64_t)off, &d, &e);
	if (err)
		return io_error(err);
	if (whence == SEEK_DATA)
		return d >= size ? -ENXIO : (off_t)d;
	return (off_t)(d > (uint64_t)off ? (uint64_t)off : e);
}

static int mnt_statfs(const char *path, struct statvfs *sv)
{
	(void)path;
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = 4096;
	sv->f_frsize = 512;
	sv->f_blocks = (kcore_view_data_bytes(state()->view) + 511) / 512;
	sv->f_files = 2;
	sv->f_namemax = 255;
	return 0;
}

static const struct fuse_operations mount_ops = {
	.init = mnt_init,
	.getattr = mnt_getattr,
	.readdir = mnt_readdir,
	.open = mnt_open,
	.read = mnt_read,
	.lseek = mnt_lseek,
	.statfs = mnt_statfs,
};

/* Whether prog is an executable file in $PATH. */
static bool in_path(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	while (path && *path) {
		const char *end = strchr(path, ':');
		size_t n = end ? (size_t)(end - path) : strlen(path);

		if (n && n < sizeof(buf) - strlen(prog) - 2) {
			snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path,
				 prog);
			if (access(buf, X_OK) == 0)
				return true;
		}
		path = end ? end + 1 : NULL;
	}
	return false;
}

static int mount_error(struct cli_ctx *ctx, const char *subject, int errnum,
		       const char *msg)
{
	return cli_fail(ctx, kcore_error_create(KCORE_ERR_OS, errnum, subject,
						"%s", msg));
}

static volatile sig_atomic_t prefetch_stop;

/* Decodes the frames with data while the file system serves reads, at a
 * lower priority than the thread serving them. */
static void *prefetch(void *arg)
{
	struct kcore_view *v = arg;

	(void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	kcore_error_destroy(kcore_view_prefetch(v, &prefetch_stop));
	return NULL;
}

static int cmd_mount(struct cli_ctx *ctx, int argc, char **argv)
{
	struct cli_parser *p = cli_parser_create(&cli_cmd_mount, argc, argv);
	struct kcore_view_opts vo = { 0 };
	struct mount_state m = { 0 };
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	const char *arg, *dump, *dir;
	struct kcore_error *err;
	struct fuse *f = NULL;
	struct stat st;
	uint64_t v;
	bool want_prefetch = true, prefetching = false;
	pthread_t prefetcher;
	int c, first, status = EXIT_FAILURE_;

	if (!p)
		return cli_fail(ctx, &kcore_error_nomem);
	while ((c = cli_parser_next(p, &arg)) >= 0) {
		if (c == 'f') {
			m.foreground = true;
		} else if (c == MOPT_NO_PREFETCH) {
			want_prefetch = false;
		} else if (c == MOPT_CACHE) {
			if (!cli_parse_size(arg, &v) || v < (1u << 20) ||
			    v > (16ull << 30)) {
				cli_parser_destroy(p);
				return cli_usage_error(ctx, "mount",
						       "cache size '%s' must "
						       "be 1M..16G",
						       arg);
			}
			vo.cache_bytes = (size_t)v;
		}
	}
	int done = cli_parser_end(p, c, &first);

	if (done >= 0)
		return done;
	if (argc - first != 2)
		return cli_usage_error(ctx, "mount",
				       "needs DUMP and MOUNTPOINT");
	dump = argv[first];
	dir = argv[first + 1];
	if (access("/dev/fuse", R_OK | W_OK) != 0)
		return mount_error(ctx, "/dev/fuse", errno,
				   errno == ENOENT
					   ? "missing: FUSE is not available "
					     "here (modprobe fuse, or give "
					     "the container /dev/fuse)"
					   : "not usable: no permission to "
					     "open it");
	if (!in_path("fusermount3"))
		return mount_error(ctx, "fusermount3", 0,
				   "not found in PATH: kcoredump mount needs "
				   "it to mount and unmount (Debian package "
				   "fuse3)");
	if (stat(dir, &st) != 0)
		return mount_error(ctx, dir, errno, "no mount point");
	if (!S_ISDIR(st.st_mode))
		return mount_error(ctx, dir, ENOTDIR,
				   "the mount point is not a directory");
	if (stat(dump, &m.dump_st) != 0)
		return cli_fail(ctx,
				kcore_error_create(KCORE_ERR_NOT_FOUND, errno,
						   dump, "cannot stat"));
	err = kcore_view_open(dump, &vo, &m.view);
	if (err)
		return cli_fail(ctx, err);
	if (fuse_opt_add_arg(&args, "kcoredump") ||
	    fuse_opt_add_arg(&args, "-o") ||
	    fuse_opt_add_arg(&args, "ro,default_permissions,fsname=kcoredump,"
				    "subtype=kcoredump")) {
		status = cli_fail(ctx, &kcore_error_nomem);
		goto out;
	}
	f = fuse_new(&args, &mount_ops, sizeof(mount_ops), &m);
	if (!f) {
		status = mount_error(ctx, dir, 0, "cannot start FUSE");
		goto out;
	}
	if (fuse_mount(f, dir) != 0) {
		status = mount_error(ctx, dir, 0,
				     "cannot mount (is it already a mount "
				     "point, or not allowed?)");
		fuse_destroy(f);
		f = NULL;
		goto out;
	}
	if (fuse_set_signal_handlers(fuse_get_session(f)) != 0) {
		status = mount_error(ctx, dir, 0, "cannot set signal handlers");
		goto unmount;
	}
	/* In the background the caller gets its prompt back once the file
	 * system is there (fuse_daemonize returns in the child). */
	if (fuse_daemonize(m.foreground) != 0) {
		status =
			mount_error(ctx, dir, 0, "cannot go to the background");
		fuse_remove_signal_handlers(fuse_get_session(f));
		goto unmount;
	}
	/* After fuse_daemonize: a fork keeps no thread. */
	prefetch_stop = 0;
	prefetching = want_prefetch &&
		      pthread_create(&prefetcher, NULL, prefetch, m.view) == 0;
	/* fuse_loop: 0, or the signal that ended it (> 0); < 0 errors. */
	status = fuse_loop(f) >= 0 ? EXIT_OK : EXIT_FAILURE_;
	fuse_remove_signal_handlers(fuse_get_session(f));
	if (prefetching) {
		prefetch_stop = 1;
		pthread_join(prefetcher, NULL);
	}
unmount:
	fuse_unmount(f);
	fuse_destroy(f);
out:
	fuse_opt_free_args(&args);
	kcore_view_destroy(m.view);
	return status;
}

const struct cli_command cli_cmd_mount = {
	"mount",
	cmd_mount,
	mount_options,
	"DUMP MOUNTPOINT",
	"@file",
	"serve any dump as a plain ELF core file (FUSE), for crash, drgn, gdb",
	false
};

const char *cli_fuse_version(void)
{
	return fuse_pkgversion();
}
