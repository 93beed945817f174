// SPDX-License-Identifier: MIT
/*
 * The crashing process's facts, as systemd-coredump records them beside
 * its core: whether /proc/PID is the process dumping (the handler's first
 * step), then its cmdline, cwd, root, cgroup and the units it derives,
 * limits, open fds, environ if asked, and the machine's boot ID, machine
 * ID and hostname.  Every fact is read through the directory opened while
 * the process dumps, never from a path its own data names, each size
 * bounded; storing them is corehandler-meta.c's and the journal's.
 */
#include <dirent.h>
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
#include <unistd.h>

#include "corehandler-internal.h"

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
bool ch_facts_dumping(struct ch *ch)
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
void ch_facts_gather(struct ch *ch)
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

void ch_facts_deinit(struct ch *ch)
{
	facts_free(&ch->facts);
	if (ch->proc_fd >= 0)
		close(ch->proc_fd);
	ch->proc_fd = -1;
}
