// SPDX-License-Identifier: MIT
/*
 * The core_pattern handler: one pass over the ELF core stream the kernel
 * writes into our stdin, in this order.
 *
 *   restrict  keep only the capabilities the next steps need
 *   /proc     before a byte of the stream: the crashing process's
 *             directory, if it is the one dumping, and what
 *             systemd-coredump records of it (cmdline, cwd, cgroup,
 *             limits, open fds, namespaces, environ if asked) through it
 *   slot      one of the store's handler slots, or store nothing
 *   headers   ELF header, program headers, then everything up to the first
 *             PT_LOAD's data (the notes), read into memory with bounds
 *   tables    the process's page tables (pagemap) and mapped files
 *             (map_files, O_PATH), then the pipe grows to 1 MiB
 *   helper    the build-ID helper starts and drops everything itself
 *   drop      no capability left, no new privileges
 *   data      1 MiB blocks at stream offsets k MiB; all-zero pages (what
 *             dump_skip() writes on a pipe) are skipped, the rest written
 *             at their stream offset (sparse ELF) or into the .zst stream,
 *             within what the store's limits reserved for us
 *   end       the file is cut to the stream's length; if a limit stopped
 *             the copy, the program headers are rewritten so that nothing
 *             points past the end
 *   build IDs the helper reads the unpublished core (or, for a .zst, the
 *             headers and first page of every PT_LOAD arranged as a small
 *             core) within its own time limit
 *             and unwinds its threads (the backtrace)
 *   packages  the FDO package note in each module's first page
 *   publish   under the store lock: the limits once more, the metadata,
 *             then the core (never visible without its metadata)
 *   journal   the entry systemd-coredump would log, for the caller
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "corehandler-internal.h"

static void close_input(struct ch *ch)
{
	if (ch->o->close_input && !ch->input_closed) {
		/* The kernel ends the dump (and the process) right away. */
		close(ch->o->in_fd);
		ch->input_closed = true;
	}
}

/* A field of /proc/PID/status, or -1. */
static long long status_field(const char *status, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = status; p && *p;
	     p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, name, n) == 0 && p[n] == ':')
			return strtoll(p + n + 1, NULL, 10);
	return -1;
}

/* Up to max bytes of name in dir (a NUL is added); -1 if unreadable. */
static ssize_t read_at(int dir, const char *name, char *buf, size_t max)
{
	size_t got = 0;
	ssize_t n;
	int fd = openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return -1;
	while (got < max) {
		n = read(fd, buf + got, max - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	return (ssize_t)got;
}

/* Why the crashing process was not looked at in /proc (ch->proc_why). */
static void proc_why(struct ch *ch, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void proc_why(struct ch *ch, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ch->proc_why, sizeof(ch->proc_why), fmt, ap);
	va_end(ap);
}

/*
 * Whether /proc/PID is the process dumping this core: the kernel gave
 * its pid, and while it says CoreDumping (Linux 4.15, commit
 * c643401218be) it is that process.  The directory is opened first and
 * status read through it: ch->proc_fd stays that process's (a reused pid
 * is another directory), and every later fact is read relative to it.
 *
 * This is the handler's first step, before a byte of the stream is
 * read: with kernel.core_pipe_limit 0 (the default) the kernel does not
 * wait for the handler once the core is written (wait_for_dump_helpers()
 * runs only with a limit), so the process ends, and its /proc directory
 * with it, as soon as the last bytes fit into the pipe.  Until then the
 * kernel blocks on the pipe, which keeps its own size (64 KiB) until the
 * page tables have been looked at.
 */
static bool process_is_dumping(struct ch *ch)
{
	const char *procfs = ch->o->procfs ? ch->o->procfs : "/proc";
	char path[96], buf[4096];
	int fd;

	if (ch->o->crash.pid <= 0 || ch->o->crash.pid > INT32_MAX) {
		proc_why(ch, "no process id for the core");
		return false;
	}
	snprintf(path, sizeof(path), "%s/%" PRId64, procfs, ch->o->crash.pid);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		proc_why(ch, "cannot open %s: %s%s", path, strerror(errno),
			 errno == ENOENT ? " (the process ended before the "
					   "handler started)"
					 : "");
		return false;
	}
	if (read_at(fd, "status", buf, sizeof(buf) - 1) <= 0) {
		proc_why(ch, "cannot read %s/status: %s", path,
			 strerror(errno));
		close(fd);
		return false;
	}
	if (status_field(buf, "Tgid") != ch->o->crash.pid ||
	    status_field(buf, "CoreDumping") != 1) {
		proc_why(ch,
			 "%s is not dumping core (the process ended, or "
			 "the pid is another's)",
			 path);
		close(fd);
		return false;
	}
	ch->proc_fd = fd;
	return true;
}

/* ---- the crashing process's facts, as systemd-coredump records them ---- */

/* A malloc()ed readlinkat() of name in dir (at most PATH_MAX), or NULL. */
static char *link_at(int dir, const char *name)
{
	char buf[4096];
	ssize_t n = readlinkat(dir, name, buf, sizeof(buf) - 1);

	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	return strdup(buf);
}

/* The file of at most max bytes, malloc()ed with a NUL after it. */
static char *slurp_at(int dir, const char *name, size_t max, size_t *ret_len,
		      bool *ret_truncated)
{
	char *buf = malloc(max + 2);
	ssize_t n;

	if (!buf)
		return NULL;
	n = read_at(dir, name, buf, max + 1);
	if (n < 0) {
		int e = errno;

		free(buf);
		errno = e;
		return NULL;
	}
	if ((size_t)n > max) {
		n = (ssize_t)max;
		buf[n] = '\0';
		if (ret_truncated)
			*ret_truncated = true;
	}
	*ret_len = (size_t)n;
	return buf;
}

static bool ends_with(const char *s, size_t len, const char *tail)
{
	size_t n = strlen(tail);

	return len >= n && memcmp(s + len - n, tail, n) == 0;
}

/* A unit name as systemd's unit-name rules take it: a name, a dot, a
 * known type; an instance after one '@'. */
static bool unit_name_ok(const char *s, size_t len)
{
	static const char *const types[] = { ".service", ".scope",    ".slice",
					     ".socket",	 ".mount",    ".swap",
					     ".device",	 ".target",   ".timer",
					     ".path",	 ".automount" };

	if (len == 0 || len > 255 || s[0] == '.' || s[0] == '@')
		return false;
	for (size_t i = 0; i < len; i++)
		if (!(s[i] >= 'a' && s[i] <= 'z') &&
		    !(s[i] >= 'A' && s[i] <= 'Z') &&
		    !(s[i] >= '0' && s[i] <= '9') && !strchr(":-_.\\@", s[i]))
			return false;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (ends_with(s, len, types[i]) && len > strlen(types[i]))
			return true;
	return false;
}

/*
 * The components of path p while they are slices (the last one in
 * *slice and *slice_len when slice is not NULL), then the component after
 * them if it is a unit name (its length in *ret_len), else NULL.
 */
static const char *after_slices(const char *p, const char **slice,
				size_t *slice_len, size_t *ret_len)
{
	for (;;) {
		size_t len;

		while (*p == '/')
			p++;
		len = strcspn(p, "/");
		if (!len)
			return NULL;
		if (!ends_with(p, len, ".slice") || !unit_name_ok(p, len)) {
			*ret_len = len;
			return unit_name_ok(p, len) ? p : NULL;
		}
		if (slice) {
			*slice = p;
			*slice_len = len;
		}
		p += len;
	}
}

/*
 * From the cgroup path, as systemd reads it: the unit is the first
 * component after the slices (system.slice/foo.service, user.slice/
 * user-1000.slice/session-3.scope); the slice is the last slice before
 * it ("-.slice" if none); a session-N.scope unit names session N; a
 * user-UID.slice slice names the owner uid; below user@UID.service (the
 * user's manager) the same walk gives the user unit.
 */
void ch_cgroup_units(struct ch_facts *f)
{
	const char *slice = NULL, *unit;
	size_t slice_len = 0, unit_len;

	f->owner_uid = -1;
	if (!f->cgroup || *f->cgroup != '/')
		return;
	unit = after_slices(f->cgroup, &slice, &slice_len, &unit_len);
	f->slice = slice ? strndup(slice, slice_len) : strdup("-.slice");
	if (!unit)
		return;
	f->unit = strndup(unit, unit_len);
	if (slice && slice_len > 11 && strncmp(slice, "user-", 5) == 0) {
		char *end;
		long long v = strtoll(slice + 5, &end, 10);

		if (end == slice + slice_len - 6 && v >= 0 && v < 0xffffffffLL)
			f->owner_uid = v;
	}
	if (unit_len > 14 && strncmp(unit, "session-", 8) == 0 &&
	    ends_with(unit, unit_len, ".scope"))
		f->session = strndup(unit + 8, unit_len - 14);
	if (unit_len > 13 && strncmp(unit, "user@", 5) == 0 &&
	    ends_with(unit, unit_len, ".service")) {
		/* The user's manager: its slices, then the user unit. */
		const char *u =
			after_slices(unit + unit_len, NULL, NULL, &unit_len);

		if (u)
			f->user_unit = strndup(u, unit_len);
	}
}

/* "Max open files   1024   4096   files" lines into f->limits. */
static void parse_limits(struct ch_facts *f, char *text)
{
	char *next;

	for (char *line = text; line && f->nlimits < CH_MAX_LIMITS;
	     line = next) {
		struct ch_limit *l = &f->limits[f->nlimits];
		char *v, *save = NULL, *cols[3] = { 0 };
		size_t k = 0;
		int nc = 0;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		/* The name ends at the first run of two spaces. */
		v = strstr(line, "  ");
		if (!v || strncmp(line, "Max ", 4) != 0)
			continue;
		for (const char *q = line + 4; q < v && k + 1 < sizeof(l->name);
		     q++)
			l->name[k++] = *q == ' ' ? '_' : *q;
		l->name[k] = '\0';
		for (char *tok = strtok_r(v, " ", &save); tok && nc < 3;
		     tok = strtok_r(NULL, " ", &save))
			cols[nc++] = tok;
		if (nc >= 2) {
			snprintf(l->soft, sizeof(l->soft), "%s", cols[0]);
			snprintf(l->hard, sizeof(l->hard), "%s", cols[1]);
			snprintf(l->units, sizeof(l->units), "%s",
				 nc > 2 ? cols[2] : "");
			f->nlimits++;
		}
	}
}

static int fd_cmp(const void *a, const void *b)
{
	const struct ch_fd *x = a, *y = b;

	return (x->fd > y->fd) - (x->fd < y->fd);
}

/* /proc/PID/fd: each descriptor's target, position and flags; the
 * errno when the directory cannot be read, or 0. */
static int open_fds(struct ch *ch, struct ch_facts *f)
{
	int dfd = openat(ch->proc_fd, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int derr = dfd < 0 ? errno : 0;
	int ifd = openat(ch->proc_fd, "fdinfo",
			 O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *e;

	if (!d) {
		if (dfd >= 0) {
			derr = errno;
			close(dfd);
		}
		if (ifd >= 0)
			close(ifd);
		return derr ? derr : EIO;
	}
	f->fds = calloc(CH_MAX_FDS, sizeof(*f->fds));
	while (f->fds && (e = readdir(d))) {
		struct ch_fd *x;
		char *end, info[1024];
		long v = strtol(e->d_name, &end, 10);

		if (end == e->d_name || *end || v < 0 || v > INT32_MAX)
			continue;
		if (f->nfds == CH_MAX_FDS) {
			f->fds_truncated = true;
			break;
		}
		x = &f->fds[f->nfds++];
		x->fd = (int)v;
		x->target = link_at(dirfd(d), e->d_name);
		if (ifd >= 0 &&
		    read_at(ifd, e->d_name, info, sizeof(info) - 1) > 0) {
			const char *p;

			x->have_info = true;
			p = strstr(info, "pos:");
			x->pos = p ? strtoull(p + 4, NULL, 10) : 0;
			p = strstr(info, "flags:");
			x->flags = p ? (unsigned)strtoul(p + 6, NULL, 8) : 0;
			p = strstr(info, "mnt_id:");
			x->mnt_id = p ? strtoull(p + 7, NULL, 10) : 0;
		}
	}
	closedir(d);
	if (ifd >= 0)
		close(ifd);
	if (f->fds)
		qsort(f->fds, f->nfds, sizeof(*f->fds), fd_cmp);
	return f->fds ? 0 : ENOMEM;
}

/* A file of one line of at most size - 1 bytes, without the newline;
 * only the bytes ok takes. */
static void one_line(int dir, const char *name, char *out, size_t size,
		     const char *ok)
{
	ssize_t n = read_at(dir, name, out, size - 1);
	size_t len;

	if (n <= 0) {
		out[0] = '\0';
		return;
	}
	len = strcspn(out, "\n");
	out[len] = '\0';
	if (strspn(out, ok) != len)
		out[0] = '\0';
}

static void facts_free(struct ch_facts *f)
{
	free(f->cmdline);
	free(f->cwd);
	free(f->root);
	free(f->cgroup);
	free(f->unit);
	free(f->user_unit);
	free(f->slice);
	free(f->session);
	for (size_t i = 0; i < f->nfds; i++)
		free(f->fds[i].target);
	free(f->fds);
	free(f->environ);
	*f = (struct ch_facts){ .owner_uid = -1 };
}

/* Note that fact what could not be read (err an errno). */
static void unreadable(struct ch_facts *f, const char *what, int err)
{
	if (f->nunreadable < CH_MAX_UNREADABLE)
		f->unreadable[f->nunreadable++] =
			(struct ch_unreadable){ what, err ? err : EIO };
}

/* Whether this process has CAP_SYS_PTRACE in its effective set. */
static bool have_sys_ptrace(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3
	};
	struct __user_cap_data_struct data[2] = { 0 };

	if (syscall(SYS_capget, &hdr, data) != 0)
		return false;
	return data[CAP_SYS_PTRACE / 32].effective &
	       (1u << (CAP_SYS_PTRACE % 32));
}

/*
 * Why the kernel refused facts with EACCES or EPERM: the files of
 * /proc/PID that show where a process is and what it holds (cwd, root,
 * fd, environ, ns) are the kernel's only to a process that may ptrace it
 * (PTRACE_MODE_READ_FSCREDS); another user's process, or a non-dumpable
 * one, needs CAP_SYS_PTRACE, which an unprivileged socket handler (the
 * kcoredump user of kcoredump-coredump@.service) does not have.
 */
static void unreadable_why(struct ch_facts *f)
{
	bool denied = false;

	for (size_t i = 0; i < f->nunreadable; i++)
		denied |= f->unreadable[i].err == EACCES ||
			  f->unreadable[i].err == EPERM;
	if (!denied)
		return;
	snprintf(f->unreadable_why, sizeof(f->unreadable_why),
		 "the kernel shows these only to a process that may ptrace "
		 "the crashing one (same user and dumpable, or "
		 "CAP_SYS_PTRACE); the handler runs as uid %u%s",
		 (unsigned)geteuid(),
		 have_sys_ptrace() ? " with CAP_SYS_PTRACE"
				   : " without CAP_SYS_PTRACE");
}

/*
 * What systemd-coredump records of the process beside its core: read
 * through the directory opened while it dumps (it cannot exit before we
 * close the pipe), never from a path its own data names, every size
 * bounded.  The machine's facts (boot and machine ID, hostname) are the
 * handler's own view.
 */
static void process_facts(struct ch *ch)
{
	static const char hexdash[] = "0123456789abcdef-";
	const char *procfs = ch->o->procfs ? ch->o->procfs : "/proc";
	struct ch_facts *f = &ch->facts;
	char buf[8192], path[128];
	size_t len = 0;
	int fd, n;

	f->owner_uid = -1;
	fd = open("/etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		one_line(fd, "machine-id", f->machine_id, sizeof(f->machine_id),
			 hexdash);
		if (strlen(f->machine_id) != 32)
			f->machine_id[0] = '\0';
		close(fd);
	}
	snprintf(path, sizeof(path), "%s/sys/kernel/random", procfs);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		one_line(fd, "boot_id", f->boot_id, sizeof(f->boot_id),
			 hexdash);
		close(fd);
	}
	if (gethostname(f->hostname, sizeof(f->hostname) - 1) < 0)
		f->hostname[0] = '\0';
	f->hostname[sizeof(f->hostname) - 1] = '\0';
	if (!ch->proc_ok || ch->proc_fd < 0)
		return;
	f->cmdline = slurp_at(ch->proc_fd, "cmdline", CH_MAX_CMDLINE,
			      &f->cmdline_len, &f->cmdline_truncated);
	if (!f->cmdline)
		unreadable(f, "cmdline", errno);
	if (f->cmdline) {
		/* NUL-separated arguments, spaces between them. */
		while (f->cmdline_len && f->cmdline[f->cmdline_len - 1] == '\0')
			f->cmdline_len--;
		for (size_t i = 0; i < f->cmdline_len; i++)
			if (f->cmdline[i] == '\0')
				f->cmdline[i] = ' ';
		f->cmdline[f->cmdline_len] = '\0';
		if (!f->cmdline_len) {
			free(f->cmdline);
			f->cmdline = NULL;
		}
	}
	f->cwd = link_at(ch->proc_fd, "cwd");
	if (!f->cwd)
		unreadable(f, "cwd", errno);
	f->root = link_at(ch->proc_fd, "root");
	if (!f->root)
		unreadable(f, "root", errno);
	n = (int)read_at(ch->proc_fd, "cgroup", buf, sizeof(buf) - 1);
	if (n < 0)
		unreadable(f, "cgroup", errno);
	if (n > 0) {
		/* The unified hierarchy's line, "0::/path". */
		const char *p = strstr(buf, "0::/");

		if (p && (p == buf || p[-1] == '\n')) {
			p += 3;
			len = strcspn(p, "\n");
			f->cgroup = strndup(p, len);
			ch_cgroup_units(f);
		}
	}
	n = (int)read_at(ch->proc_fd, "limits", buf, sizeof(buf) - 1);
	if (n < 0)
		unreadable(f, "rlimits", errno);
	if (n > 0)
		parse_limits(f, buf);
	n = open_fds(ch, f);
	if (n)
		unreadable(f, "open_fds", n);
	if (ch->o->record_environ) {
		f->environ = slurp_at(ch->proc_fd, "environ", CH_MAX_ENVIRON,
				      &f->environ_len, &f->environ_truncated);
		if (!f->environ)
			unreadable(f, "environ", errno);
	}
	if (ch->place.ns_err)
		unreadable(f, "namespaces", ch->place.ns_err);
	unreadable_why(f);
	/* A pid from a socket: the pidfd must still be that process. */
	if (ch->o->peer && ch->o->peer->pidfd >= 0 &&
	    !kcore_ch_peer_alive(ch->o->peer, ch->o->crash.pid)) {
		ch->proc_ok = false;
		facts_free(f);
		proc_why(ch,
			 "the pidfd of the connection's peer no longer "
			 "names pid %" PRId64 " (its facts were dropped)",
			 ch->o->crash.pid);
	}
}

static void facts_deinit(struct ch *ch)
{
	facts_free(&ch->facts);
	if (ch->proc_fd >= 0)
		close(ch->proc_fd);
	ch->proc_fd = -1;
}

/*
 * The first look at the crashing process's page tables, right after the
 * headers: stream bytes it finds empty need not be read when they come.
 */
static struct kcore_error *find_holes(struct ch *ch)
{
	const struct kcore_ch_opts *o = ch->o;
	struct kcore_error *err;
	struct ch_load *loads;
	struct stat sb;
	long queued;
	int n;

	if (o->no_pagemap) {
		ch_drop_holes(ch, "--no-pagemap");
		return NULL;
	}
	if (fstat(o->in_fd, &sb) < 0 ||
	    !(S_ISFIFO(sb.st_mode) || S_ISSOCK(sb.st_mode))) {
		ch_drop_holes(ch, "the core stream is neither a pipe nor a "
				  "socket");
		return NULL;
	}
	if (!ch->proc_ok) {
		/* Its directory was not opened while it dumped. */
		ch_drop_holes(ch, "%s",
			      ch->proc_why[0]
				      ? ch->proc_why
				      : "the process was not looked at");
		return NULL;
	}
	loads = calloc(ch->norder ? ch->norder : 1, sizeof(*loads));
	if (!loads)
		return &kcore_error_nomem;
	for (size_t i = 0; i < ch->norder; i++) {
		const struct ch_phdr *p = &ch->ph[ch->order[i]];

		loads[i] = (struct ch_load){ p->offset, p->vaddr, p->filesz,
					     p->memsz };
	}
	err = ch_holes_create(o->procfs, ch->proc_fd, o->crash.pid, loads,
			      ch->norder, CH_BLOCK, &ch->holes,
			      &ch->res->pagemap_why);
	free(loads);
	if (err || !ch->holes)
		return err;
	if (S_ISSOCK(sb.st_mode)) {
		/* The coredump socket (the kernel writes its zeros as on a
		 * pipe): splice(2) moves them, page references and no
		 * copy, from the socket into a pipe of ours and on to
		 * /dev/null. */
		ch->in_sock = true;
		if (pipe2(ch->drain_pipe, O_CLOEXEC) < 0) {
			ch_drop_holes(ch, "cannot make a pipe: %s",
				      strerror(errno));
			return NULL;
		}
		fcntl(ch->drain_pipe[0], F_SETPIPE_SZ, (int)CH_BLOCK);
		n = fcntl(ch->drain_pipe[0], F_GETPIPE_SZ);
	} else {
		n = fcntl(o->in_fd, F_GETPIPE_SZ);
	}
	ch->pipe_size = n > 0 ? (size_t)n : 65536;
	ch->null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (ch->null_fd < 0) {
		ch_drop_holes(ch, "cannot open /dev/null: %s", strerror(errno));
		return NULL;
	}
	/*
	 * What the kernel wrote before the look ended, and the page it may
	 * be writing now, it decided about before: those bytes are read.
	 * (Holes it decided about but has not written yet are zeros.)
	 */
	queued = ch_pipe_bytes(ch);
	if (queued < 0) {
		ch_drop_holes(ch, "FIONREAD on the stream failed: %s",
			      strerror(errno));
		return NULL;
	}
	ch_holes_set_guard(ch->holes,
			   (ch->res->stream_bytes + (uint64_t)queued + CH_PAGE -
			    1) / CH_PAGE * CH_PAGE +
				   CH_PAGE);
	return NULL;
}

/* The core file as readers will see it: cut headers, sparse tail. */
static struct kcore_error *finish_file(struct ch *ch, uint64_t size)
{
	struct kcore_ch_result *ret = ch->res;
	struct kcore_error *err = NULL;

	if (!ch->os) {
		if (ch->cut != UINT64_MAX)
			err = kcore_pwrite_all(NULL, ch->out->fd, ch->out->tmp,
					       ch->prefix, ch->prefix_len, 0);
		if (!err && ch->xnum && size > ch->cut &&
		    ch->cut != UINT64_MAX) {
			unsigned char sh[sizeof(Elf64_Shdr)];
			size_t n = ch_xnum_shdr(ch, sh);

			err = kcore_pwrite_all(NULL, ch->out->fd, ch->out->tmp,
					       sh, n, size - n);
		}
		if (!err && ftruncate(ch->out->fd, (off_t)size) < 0)
			err = kcore_error_create(KCORE_ERR_OS, errno,
						 ch->out->tmp,
						 "cannot set the file size");
		return err;
	}
	{
		uint64_t end = ch->cut != UINT64_MAX ? ch->cut : size;

		if (end > ch->zpos)
			err = kcore_ostream_write_zeros(ch->os, end - ch->zpos);
		if (!err && size > end) {
			/* PN_XNUM: padding, then section 0. */
			unsigned char sh[8 + sizeof(Elf64_Shdr)] = { 0 };
			size_t shsize = ch->is64 ? sizeof(Elf64_Shdr)
						 : sizeof(Elf32_Shdr);

			ch_xnum_shdr(ch, sh + (size - end) - shsize);
			err = kcore_ostream_write(ch->os, sh, size - end);
		}
		if (!err)
			err = kcore_ostream_finish(ch->os);
		if (!err && ch->cut != UINT64_MAX)
			err = kcore_ostream_rewrite_stored(
				ch->os, ch->stored_header_off, ch->prefix,
				ch->prefix_len);
		if (!err)
			ret->file_size = kcore_ostream_bytes_out(ch->os);
	}
	return err;
}

static void build_ids(struct ch *ch)
{
	unsigned char *img = NULL;
	size_t len = 0;

	if (ch->os) {
		img = ch_store_first_pages_core(ch, &len);
		if (!img) {
			ch->ids.error = strdup("out of memory");
			ch->ids.from = "first pages";
			return;
		}
	}
	ch_priv_build_ids(ch, ch->out->fd, img, len);
	free(img);
	if (ch->os) {
		ch->ids.incomplete = ch->cap_full;
		ch_buildid_add_first_pages(ch);
	}
}

struct kcore_error *kcore_core_handle(const struct kcore_ch_opts *opts,
				      struct kcore_ch_result *ret)
{
	struct ch ch = {
		.o = opts,
		.res = ret,
		.in_name = "<core stream>",
		.null_fd = -1,
		.drain_pipe = { -1, -1 },
		.subdir_fd = -1,
		.proc_fd = -1,
		.facts = { .owner_uid = -1 },
		.store = { .lock_fd = -1, .slot = -1, .slot_fd = -1 },
	};
	uint64_t t0 = opts->start_ns ? opts->start_ns : ch_mono_ns();
	const char *comm = opts->crash.comm ? opts->crash.comm : "?";
	uint64_t size;
	struct kcore_error *err;
	const char *why;
	char *meta = NULL;
	size_t meta_len = 0;
	struct stat sb;

	memset(ret, 0, sizeof(*ret));
	ch.cut = UINT64_MAX;
	if (opts->timeout_ms)
		ch.deadline_ns = t0 + opts->timeout_ms * 1000000u;
	if (opts->compress >= KCORE_COMPRESS_NUM)
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "unknown compression");
	err = opts->keep_privileges ? NULL : ch_priv_restrict(&ch);
	if (err)
		goto out;
	/* The process first, before a byte of the stream is read (see
	 * process_is_dumping()). */
	ch.proc_ok = process_is_dumping(&ch);
	ch_place_facts(&ch);
	process_facts(&ch);
	if (!ch_store_enter(&ch, &why)) {
		/* The kernel waits on us: say why, take nothing. */
		ch_log(&ch, KCORE_CH_LOG_WARNING,
		       "not storing the core of pid %" PRId64 " (%s): %s "
		       "(at most %u handlers store at once)",
		       opts->crash.pid, comm, why,
		       opts->max_handlers ? opts->max_handlers : 16);
		ret->not_stored = true;
		goto out;
	}
	err = ch_read_headers(&ch);
	if (err)
		goto out;
	ch_parse_notes(&ch);
	ch.signal =
		opts->crash.signal > 0 ? opts->crash.signal : ch.note_signal;
	if (!opts->crash.comm || !*opts->crash.comm)
		comm = ch.fname ? ch.fname : "?";
	if (opts->verbose)
		ch_log(&ch, KCORE_CH_LOG_DEBUG,
		       "core of pid %" PRId64 " (%s) via %s: %zu header and "
		       "note bytes, %zu program headers, %" PRIu64
		       " stream bytes announced",
		       opts->crash.pid, comm, kcore_ch_via_name(opts->via),
		       ch.prefix_len, ch.phnum, ch.expected);
	ret->expected_bytes = ch.expected;
	/* While the pipe keeps its size the kernel is at most that far
	 * ahead of us, so a core larger than that keeps the process (and
	 * its page tables, its mapped files) until the look is done. */
	err = find_holes(&ch);
	if (err)
		goto out;
	ch_priv_open_maps(&ch);
	/* Fewer wake-ups per MiB; root may exceed pipe-max-size.  The
	 * holes are drained in parts of the pipe's new size. */
	if (fcntl(opts->in_fd, F_SETPIPE_SZ, (int)CH_BLOCK) > 0 && ch.holes) {
		int n = fcntl(opts->in_fd, F_GETPIPE_SZ);

		if (n > 0)
			ch.pipe_size = (size_t)n;
	}
	if (opts->verbose)
		ch_log(&ch, KCORE_CH_LOG_DEBUG,
		       "pid %" PRId64 " %s%s; page tables %s%s%s",
		       opts->crash.pid,
		       ch.proc_ok ? "is the dumping process in /proc"
				  : "is not looked at in /proc: ",
		       ch.proc_ok ? "" : ch.proc_why,
		       ch.holes ? "used" : "not used",
		       ret->pagemap_why ? ": " : "",
		       ret->pagemap_why ? ret->pagemap_why : "");
	ch_priv_start_helper(&ch);
	err = opts->keep_privileges ? NULL : ch_priv_drop(&ch);
	if (err)
		goto out;
	ch_priv_decide_access(&ch);
	err = ch_store_open(&ch);
	if (err)
		goto out;
	ch_store_plan_stacks(&ch);
	/* The headers and notes are always stored: without them the rest
	 * means nothing.  A .zst keeps them in a frame we can rewrite, with
	 * room for what a cut changes (ch_cut_headers(): program headers
	 * that point to the cut, our note of a few hundred bytes). */
	if (ch.os) {
		err = kcore_ostream_write_stored(ch.os, ch.prefix,
						 ch.prefix_len, CH_HEADER_ROOM,
						 &ch.stored_header_off);
		ch.zpos = ch.prefix_len;
	} else {
		err = kcore_pwrite_all(NULL, ch.out->fd, ch.out->tmp, ch.prefix,
				       ch.prefix_len, 0);
		ch.stored += ch.prefix_len;
	}
	if (!err)
		err = ch_store_copy(&ch);
	close_input(&ch);
	ret->stream_elapsed = (double)(ch_mono_ns() - t0) / 1e9;
	if (err)
		goto out;
	if (ch.cut == UINT64_MAX && ret->stream_bytes < ch.expected)
		ch_store_set_cut(&ch, ret->stream_bytes, KCORE_CH_SHORT);
	size = ret->stream_bytes;
	if (ch.cut != UINT64_MAX) {
		ret->cut_offset = ch.cut;
		ch_cut_headers(&ch, &size);
		ch_log(&ch, KCORE_CH_LOG_WARNING,
		       "core of pid %" PRId64 " (%s) truncated at offset "
		       "0x%" PRIx64 " of 0x%" PRIx64 " (%s): %u segments cut",
		       opts->crash.pid, comm, ch.cut, ch.expected,
		       kcore_ch_reason_name(ret->reason), ret->segments_cut);
	}
	ret->file_size = size;
	err = ch_store_finish_digest(
		&ch, ch.cut != UINT64_MAX ? ch.cut : ret->stream_bytes);
	if (!err)
		err = finish_file(&ch, size);
	if (!err && opts->sync && fsync(ch.out->fd) < 0)
		err = kcore_error_create(KCORE_ERR_OS, errno, ch.out->tmp,
					 "fsync failed");
	if (err)
		goto out;
	if (fstat(ch.out->fd, &sb) == 0)
		ret->allocated_bytes = (uint64_t)sb.st_blocks * 512;
	build_ids(&ch);
	ch_buildid_packages(&ch);
	ret->user_access = ch.user_access;
	ret->elapsed = (double)(ch_mono_ns() - t0) / 1e9;
	err = ch_meta_build(&ch, &meta, &meta_len);
	if (!err)
		err = ch_store_publish(&ch, meta, meta_len);
	if (!err)
		ch_journal_build(&ch);
	if (!err)
		ch_log(&ch, KCORE_CH_LOG_INFO,
		       "stored the core of pid %" PRId64 " (%s, signal %d) as "
		       "'%s/%s%s%s': %" PRIu64 " stream bytes (%" PRIu64
		       " of them zeros left unread where the page tables had "
		       "nothing), %" PRIu64 " allocated%s",
		       opts->crash.pid, comm, ch.signal,
		       opts->dir ? opts->dir : ".",
		       ret->subdir ? ret->subdir : "", ret->subdir ? "/" : "",
		       ret->core_name, ret->stream_bytes, ret->unread_bytes,
		       ret->allocated_bytes,
		       ch.user_access ? ", readable by its user" : "");
out:
	free(meta);
	close_input(&ch);
	facts_deinit(&ch);
	ch_packages_deinit(&ch);
	ch_priv_deinit(&ch);
	ch_store_deinit(&ch);
	ch_stream_deinit(&ch);
	return err;
}

void kcore_ch_result_deinit(struct kcore_ch_result *res)
{
	if (!res)
		return;
	free(res->core_name);
	free(res->meta_name);
	free(res->pagemap_why);
	free(res->subdir);
	for (size_t i = 0; i < res->journal_count; i++)
		free(res->journal[i]);
	free(res->journal);
	res->journal = NULL;
	res->journal_count = 0;
	res->core_name = res->meta_name = res->pagemap_why = res->subdir = NULL;
}
