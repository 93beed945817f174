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
#define FUSE_USE_VERSION 34

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "kcoredump/dump.h"
#include "kcoredump/view.h"

#define FILE_NAME	 "vmcore"
#define FILE_INO	 2
#define MOPT_CACHE	 3000
#define MOPT_NO_PREFETCH 3001
/* The file never changes: the kernel may keep names and attributes. */
#define TIMEOUT 86400.0

static const struct cli_option mount_options[] = {
	{ "foreground", 'F', CLI_ARG_NONE, NULL,
	  "stay in the foreground (unmount on Ctrl-C)", NULL, 'F' },
	{ "cache-size", 0, CLI_ARG_REQUIRED, "SIZE",
	  "decoded .zst/.xz frames to keep in memory (default: "
	  "every frame with data, 64M..1G)",
	  NULL, MOPT_CACHE },
	{ "no-prefetch", 0, CLI_ARG_NONE, NULL,
	  "do not decode the .zst frames with data in the background "
	  "nor put their pages in the page cache",
	  NULL, MOPT_NO_PREFETCH },
	CLI_OPT_ARCH,
	CLI_OPT_QUIET("in the foreground, show no progress of the first "
		      "prefetch"),
	CLI_OPT_VERBOSE("say what is served (file, size, data) before going "
			"to the background"),
	{ 0 },
};

struct mount_state {
	struct kcore_view *view;
	const char *dump;
	struct fuse_session *se;
	struct stat dump_st;
	bool foreground;
	/* Set at the first lookup of the file: the kernel has its inode,
	 * so pages can be given to its page cache (notify_store).  The
	 * prefetch looks it up itself through file (the mount point's
	 * absolute path + "/vmcore"). */
	char *file;
	/* The first prefetch's progress (in the foreground, on a terminal):
	 * data bytes given to the page cache, of the view's. */
	struct cli_progress ps;
	struct kcore_dump_stats st;
	bool progress;
	uint64_t t0_ns;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool looked_up;
	/* The prefetcher is in its stat() of the file, a request to this
	 * daemon: once the loop has ended, only closing the session's
	 * device ends it. */
	bool in_stat;
	volatile sig_atomic_t stop;
	unsigned char *buf; /* reads (one thread serves requests) */
	size_t buf_cap;
};

static struct mount_state *state(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static void fill_attr(const struct mount_state *m, fuse_ino_t ino,
		      struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = m->dump_st.st_uid;
	st->st_gid = m->dump_st.st_gid;
	st->st_atim = m->dump_st.st_atim;
	st->st_mtim = m->dump_st.st_mtim;
	st->st_ctim = m->dump_st.st_ctim;
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
		return;
	}
	st->st_mode = S_IFREG | 0444;
	st->st_nlink = 1;
	st->st_size = (off_t)kcore_view_size(m->view);
	/* st_blocks counts 512-byte units of data, as a sparse file's. */
	st->st_blocks =
		(blkcnt_t)((kcore_view_data_bytes(m->view) + 511) / 512);
	st->st_blksize = 4096;
}

static void mnt_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mount_state *m = state(req);
	struct fuse_entry_param e = { .ino = FILE_INO,
				      .attr_timeout = TIMEOUT,
				      .entry_timeout = TIMEOUT };

	if (parent != FUSE_ROOT_ID || strcmp(name, FILE_NAME)) {
		/* A negative entry the kernel may keep: ino 0. */
		e.ino = 0;
		fuse_reply_entry(req, &e);
		return;
	}
	fill_attr(m, FILE_INO, &e.attr);
	fuse_reply_entry(req, &e);
	pthread_mutex_lock(&m->lock);
	m->looked_up = true;
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
}

static void mnt_getattr(fuse_req_t req, fuse_ino_t ino,
			struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (ino != FUSE_ROOT_ID && ino != FILE_INO) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(state(req), ino, &st);
	fuse_reply_attr(req, &st, TIMEOUT);
}

static void mnt_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			struct fuse_file_info *fi)
{
	static const char *const names[] = { ".", "..", FILE_NAME };
	static const fuse_ino_t inos[] = { FUSE_ROOT_ID, FUSE_ROOT_ID,
					   FILE_INO };
	char buf[512];
	size_t used = 0;

	(void)fi;
	if (ino != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	/* Entry i is followed by offset i + 1. */
	for (off_t i = off < 0 ? 0 : off; i < 3; i++) {
		struct stat st = { .st_ino = inos[i],
				   .st_mode = i == 2 ? S_IFREG : S_IFDIR };
		size_t n =
			fuse_add_direntry(req, buf + used, sizeof(buf) - used,
					  names[i], &st, i + 1);

		if (n > sizeof(buf) - used || used + n > size)
			break;
		used += n;
	}
	fuse_reply_buf(req, buf, used);
}

static void mnt_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != FILE_INO) {
		fuse_reply_err(req, ino == FUSE_ROOT_ID ? EISDIR : ENOENT);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	/* What the kernel read stays in its page cache across opens. */
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

/* Log a read error where someone can see it: stderr in the foreground,
 * else syslog (the daemon's stderr is /dev/null). */
static int io_error(const struct mount_state *m, struct kcore_error *err)
{
	char *d = kcore_error_describe(err);

	if (m->foreground)
		fprintf(stderr, "kcoredump: %s\n", d ? d : "read error");
	else
		syslog(LOG_ERR, "%s", d ? d : "read error");
	free(d);
	kcore_error_destroy(err);
	return EIO;
}

static void mnt_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct mount_state *m = state(req);
	struct kcore_error *err;
	size_t done = 0;

	(void)fi;
	if (ino != FILE_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (size > m->buf_cap) {
		unsigned char *b = realloc(m->buf, size);

		if (!b) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		m->buf = b;
		m->buf_cap = size;
	}
	err = kcore_view_pread(m->view, m->buf, size, (uint64_t)off, &done);
	/* Any failed part fails the request: FUSE takes a short reply for
	 * the end of the file (and shrinks it). */
	if (!err && done < size &&
	    (uint64_t)off + done < kcore_view_size(m->view))
		err = kcore_error_create_at(KCORE_ERR_OS, EIO, m->dump,
					    (uint64_t)off + done,
					    "the view ended early");
	if (err) {
		fuse_reply_err(req, io_error(m, err));
		return;
	}
	fuse_reply_buf(req, (const char *)m->buf, done);
}

static void mnt_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		      struct fuse_file_info *fi)
{
	struct mount_state *m = state(req);
	uint64_t size = kcore_view_size(m->view), d, e;
	struct kcore_error *err;

	(void)fi;
	if (ino != FILE_INO || (whence != SEEK_DATA && whence != SEEK_HOLE)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (off < 0 || (uint64_t)off >= size) {
		fuse_reply_err(req, ENXIO);
		return;
	}
	err = kcore_view_next_data(m->view, (uint64_t)off, &d, &e);
	if (err) {
		fuse_reply_err(req, io_error(m, err));
		return;
	}
	if (whence == SEEK_DATA && d >= size)
		fuse_reply_err(req, ENXIO);
	else if (whence == SEEK_DATA)
		fuse_reply_lseek(req, (off_t)d);
	else
		fuse_reply_lseek(
			req, (off_t)(d > (uint64_t)off ? (uint64_t)off : e));
}

static void mnt_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;

	(void)ino;
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = 4096;
	sv.f_frsize = 512;
	sv.f_blocks = (kcore_view_data_bytes(state(req)->view) + 511) / 512;
	sv.f_files = 2;
	sv.f_namemax = 255;
	fuse_reply_statfs(req, &sv);
}

static const struct fuse_lowlevel_ops mount_ops = {
	.lookup = mnt_lookup,
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

/*
 * Whether dir is the root of a mount: statx's STATX_ATTR_MOUNT_ROOT
 * (Linux 5.8), else a device that differs from its parent's (which misses
 * a bind mount of the same file system).
 */
static bool is_mount_root(const char *dir, const struct stat *st)
{
	struct statx stx;
	struct stat up;
	char *parent;
	bool ret = false;

	if (statx(AT_FDCWD, dir, 0, STATX_BASIC_STATS, &stx) == 0 &&
	    (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
		return (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
	if (asprintf(&parent, "%s/..", dir) < 0)
		return false;
	if (stat(parent, &up) == 0)
		ret = up.st_dev != st->st_dev && up.st_ino != st->st_ino;
	free(parent);
	return ret;
}

static int mount_error(struct cli_ctx *ctx, const char *subject, int errnum,
		       const char *msg)
{
	return cli_fail(ctx, kcore_error_create(KCORE_ERR_OS, errnum, subject,
						"%s", msg));
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The prefetch's line: how much of the data is in the page cache, how
 * fast, against the dump file's size, and what it is doing. */
static void draw_prefetch(struct cli_progress *ps,
			  const struct kcore_dump_stats *st, double elapsed)
{
	struct cli_progress_line l = { 0 };
	char a[32], b[32];
	double rate = elapsed > 0 ? (double)st->bytes_read / elapsed : 0;

	cli_progress_add(&l, 100, "prefetch: %5.1f%%",
			 st->bytes_total ? 100.0 * (double)st->bytes_done /
						   (double)st->bytes_total
					 : 100.0);
	cli_progress_add(&l, 90, "%s of %s decoded into the page cache",
			 cli_human_size(st->bytes_read, a, sizeof(a)),
			 cli_human_size(st->bytes_to_read, b, sizeof(b)));
	cli_progress_add(&l, 30, "%.1fx the %s file",
			 st->bytes_written ? (double)st->bytes_read /
						     (double)st->bytes_written
					   : 0.0,
			 cli_human_size(st->bytes_written, a, sizeof(a)));
	cli_progress_add(&l, 60, "%s/s",
			 cli_human_size((uint64_t)rate, a, sizeof(a)));
	cli_progress_add(&l, 80, "%s", st->phase ? st->phase : "prefetching");
	cli_progress_add(&l, 50, "elapsed %s", cli_hms(elapsed, a, sizeof(a)));
	cli_progress_print(ps, &l);
}

/* Pages with data the prefetch decoded: into the kernel's page cache, so
 * that reads of them never come here (errors: the kernel keeps fewer). */
static void store_pages(void *arg, uint64_t offset, const void *data,
			size_t len)
{
	struct mount_state *m = arg;
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(len);

	if (m->stop)
		return;
	bv.buf[0].mem = (void *)data;
	(void)fuse_lowlevel_notify_store(m->se, FILE_INO, (off_t)offset, &bv,
					 0);
	if (m->progress) {
		m->st.bytes_read += len;
		m->st.bytes_done = offset + len;
		m->st.elapsed = (double)(mono_ns() - m->t0_ns) / 1e9;
		cli_dump_progress(&m->ps, &m->st);
	}
}

/*
 * Once the file is looked up (by this thread, through the mount, else by
 * the first reader), decodes the frames with data while the file system
 * serves reads, at a lower priority than the thread serving them, and
 * gives their pages to the page cache.  The store of a page a read has
 * locked waits for that read's answer, which never needs this thread.
 */
static void *prefetch(void *arg)
{
	struct mount_state *m = arg;
	struct stat st;
	bool go;

	(void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	pthread_mutex_lock(&m->lock);
	m->in_stat = m->file && !m->stop;
	pthread_mutex_unlock(&m->lock);
	if (m->in_stat)
		(void)stat(m->file, &st);
	pthread_mutex_lock(&m->lock);
	m->in_stat = false;
	while (!m->looked_up && !m->stop)
		pthread_cond_wait(&m->cond, &m->lock);
	go = !m->stop;
	pthread_mutex_unlock(&m->lock);
	if (go && m->progress) {
		m->t0_ns = mono_ns();
		m->st.phase = "prefetching";
		cli_dump_progress(&m->ps, &m->st);
		cli_progress_start(&m->ps);
	}
	if (go)
		kcore_error_destroy(
			kcore_view_prefetch(m->view, &m->stop, store_pages, m));
	if (go && m->progress) {
		cli_progress_stop(&m->ps);
		m->st.phase = m->stop ? "stopped" : "done";
		m->st.elapsed = (double)(mono_ns() - m->t0_ns) / 1e9;
		cli_dump_progress(&m->ps, &m->st);
		if (m->ps.tty)
			fputc('\n', stderr);
	}
	return NULL;
}

static int cmd_mount(struct cli_ctx *ctx, int argc, char **argv)
{
	struct cli_parser *p = cli_parser_create(&cli_cmd_mount, argc, argv);
	struct kcore_view_opts vo = { 0 };
	struct mount_state m = { 0 };
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	const char *arg, *dump, *dir;
	char *abs_dir = NULL;
	struct kcore_error *err;
	struct stat st;
	uint64_t v;
	bool want_prefetch = true, prefetching = false, quiet = false,
	     verbose = false, stuck = false;
	char s1[32], s2[32];
	pthread_t prefetcher;
	int c, first, status = EXIT_FAILURE_;

	if (!p)
		return cli_fail(ctx, &kcore_error_nomem);
	while ((c = cli_parser_next(p, &arg)) >= 0) {
		if (c == 'F') {
			m.foreground = true;
		} else if (c == 'q') {
			quiet = true;
		} else if (c == 'v') {
			verbose = true;
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
		} else if (c == DOPT_ARCH) {
			int r = cli_arch_option(ctx, "mount", arg, &vo.machine);

			if (r) {
				cli_parser_destroy(p);
				return r;
			}
		}
	}
	int done = cli_parser_end(p, c, &first);

	if (done >= 0)
		return done;
	if (argc - first != 2)
		return cli_usage_error(ctx, "mount",
				       "needs DUMP and MOUNTPOINT");
	dump = argv[first];
	m.dump = dump;
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
		return mount_error(ctx, dir, errno,
				   errno == ENOTCONN
					   ? "a FUSE file system whose daemon "
					     "is gone is mounted there "
					     "(fusermount3 -u it)"
					   : "no mount point");
	if (!S_ISDIR(st.st_mode))
		return mount_error(ctx, dir, ENOTDIR,
				   "the mount point is not a directory");
	if (is_mount_root(dir, &st))
		return mount_error(ctx, dir, EBUSY,
				   "something is mounted there already "
				   "(mounting over it would hide it; "
				   "fusermount3 -u or umount it first)");
	if (stat(dump, &m.dump_st) != 0)
		return cli_fail(ctx,
				kcore_error_create(KCORE_ERR_NOT_FOUND, errno,
						   dump, "cannot stat"));
	err = kcore_view_open(dump, &vo, &m.view);
	if (err)
		return cli_fail(ctx, err);
	/* crash refuses EM_NONE ("machine type mismatch"): say what to do. */
	if (kcore_view_machine(m.view) == EM_NONE && !quiet)
		fprintf(stderr,
			"kcoredump mount: warning: '%s' names no machine and "
			"its memory does not tell it (no VMCOREINFO, no kernel "
			"banner): " FILE_NAME " has e_machine EM_NONE, which "
			"crash refuses; mount it with --arch x86_64 or --arch "
			"aarch64\n",
			cli_esc(dump));
	if (verbose)
		fprintf(stderr,
			"kcoredump mount: %s as %s/" FILE_NAME
			": %s, %s of data%s\n",
			cli_esc(dump), cli_esc(dir),
			cli_human_size(kcore_view_size(m.view), s1, sizeof(s1)),
			cli_human_size(kcore_view_data_bytes(m.view), s2,
				       sizeof(s2)),
			want_prefetch ? ", prefetched in the background" : "");
	/* Progress of the prefetch where someone sees it: a terminal in
	 * the foreground (in the background stderr is /dev/null). */
	m.ps.tty = isatty(STDERR_FILENO);
	m.progress = want_prefetch && m.foreground && m.ps.tty && !quiet;
	m.ps.draw = draw_prefetch;
	m.st.bytes_total = kcore_view_size(m.view);
	m.st.bytes_to_read = kcore_view_data_bytes(m.view);
	m.st.bytes_written = (uint64_t)m.dump_st.st_size;
	pthread_mutex_init(&m.lock, NULL);
	pthread_cond_init(&m.cond, NULL);
	if (fuse_opt_add_arg(&args, "kcoredump") ||
	    fuse_opt_add_arg(&args, "-o") ||
	    fuse_opt_add_arg(&args, "ro,default_permissions,fsname=kcoredump,"
				    "subtype=kcoredump")) {
		status = cli_fail(ctx, &kcore_error_nomem);
		goto out;
	}
	m.se = fuse_session_new(&args, &mount_ops, sizeof(mount_ops), &m);
	if (!m.se) {
		status = mount_error(ctx, dir, 0, "cannot start FUSE");
		goto out;
	}
	/* fuse_daemonize changes to / (with -f too): libfuse unmounts by
	 * the path it mounted, which must then still name the mount point. */
	abs_dir = realpath(dir, NULL);
	if (!abs_dir) {
		status = mount_error(ctx, dir, errno, "no mount point");
		goto destroy;
	}
	if (asprintf(&m.file, "%s/" FILE_NAME, abs_dir) < 0)
		m.file = NULL;
	if (fuse_session_mount(m.se, abs_dir) != 0) {
		status = mount_error(ctx, dir, 0,
				     "cannot mount (is it already a mount "
				     "point, or not allowed?)");
		goto destroy;
	}
	if (fuse_set_signal_handlers(m.se) != 0) {
		status = mount_error(ctx, dir, 0, "cannot set signal handlers");
		goto unmount;
	}
	/* In the background the caller gets its prompt back once the file
	 * system is there (fuse_daemonize returns in the child). */
	if (fuse_daemonize(m.foreground) != 0) {
		status =
			mount_error(ctx, dir, 0, "cannot go to the background");
		fuse_remove_signal_handlers(m.se);
		goto unmount;
	}
	/* After fuse_daemonize: a fork keeps no thread. */
	prefetching = want_prefetch &&
		      pthread_create(&prefetcher, NULL, prefetch, &m) == 0;
	/* 0, or the signal that ended it (> 0); < 0 errors. */
	status = fuse_session_loop(m.se) >= 0 ? EXIT_OK : EXIT_FAILURE_;
	fuse_remove_signal_handlers(m.se);
	if (prefetching) {
		pthread_mutex_lock(&m.lock);
		m.stop = 1;
		pthread_cond_broadcast(&m.cond);
		/* A stat() the loop will never answer (a signal ended it
		 * first): it ends when the session's device is closed. */
		stuck = m.in_stat;
		pthread_mutex_unlock(&m.lock);
		if (!stuck)
			pthread_join(prefetcher, NULL);
	}
unmount:
	fuse_session_unmount(m.se);
destroy:
	fuse_session_destroy(m.se);
	if (prefetching && stuck)
		pthread_join(prefetcher, NULL);
out:
	fuse_opt_free_args(&args);
	kcore_view_destroy(m.view);
	free(m.buf);
	free(m.file);
	free(abs_dir);
	pthread_cond_destroy(&m.cond);
	pthread_mutex_destroy(&m.lock);
	return status;
}

const struct cli_command cli_cmd_mount = {
	.name = "mount",
	.run = cmd_mount,
	.options = mount_options,
	.args = "DUMP MOUNTPOINT",
	.args_complete = "@file",
	.summary = "serve any dump as a plain ELF core file (FUSE), for crash, "
		   "drgn, gdb",
};

const char *cli_fuse_version(void)
{
	return fuse_pkgversion();
}
