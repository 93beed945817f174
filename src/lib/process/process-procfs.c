// SPDX-License-Identifier: MIT
/*
 * A live process's /proc files (process-capture.h): opened through its
 * own /proc directory, read whole, the error for a failed access, and
 * the fields of stat and status that the capture and the notes use,
 * with the ids of the process's own PID namespace.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "process-capture.h"

uint64_t kcore_proc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int kcore_proc_open_file(struct kcore_process *p, const char *name, int flags)
{
	static const char *const mm_files[] = { "smaps", "pagemap", "mem",
						"auxv", "cmdline" };
	char path[512];

	snprintf(path, sizeof(path), "%s", name);
	/* The address space through a live thread when the leader is a
	 * zombie (its own entries are empty then). */
	for (size_t i = 0;
	     p->mm_tid != p->pid && i < sizeof(mm_files) / sizeof(mm_files[0]);
	     i++)
		if (strcmp(name, mm_files[i]) == 0)
			snprintf(path, sizeof(path), "task/%d/%s",
				 (int)p->mm_tid, name);
	return openat(p->dir_fd, path, flags | O_CLOEXEC | O_NOCTTY);
}

bool kcore_proc_exited(struct kcore_process *p)
{
	struct pollfd pfd = { .fd = p->pidfd, .events = POLLIN };

	if (p->pidfd >= 0)
		return poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLIN);
	/* Without a pidfd: a reaped process's directory opens nothing. */
	return faccessat(p->dir_fd, "stat", F_OK, 0) != 0 &&
	       (errno == ENOENT || errno == ESRCH);
}

struct kcore_error *kcore_proc_error(struct kcore_process *p, int errnum,
				     const char *what)
{
	if (errnum == ENOENT || errnum == ESRCH || kcore_proc_exited(p))
		return kcore_error_create(KCORE_ERR_NOT_FOUND, ESRCH, NULL,
					  "process %d exited before it was "
					  "captured (%s)",
					  (int)p->pid, what);
	if (errnum == EACCES || errnum == EPERM)
		return kcore_error_create(
			KCORE_ERR_ACCESS, errnum, NULL,
			"no ptrace access to process %d (%s): reading a "
			"process needs what a debugger needs, the same user "
			"and a dumpable process, or CAP_SYS_PTRACE",
			(int)p->pid, what);
	return kcore_error_create(KCORE_ERR_OS, errnum, NULL, "%s", what);
}

char *kcore_proc_slurp(struct kcore_process *p, const char *name,
		       size_t *ret_len)
{
	int fd = kcore_proc_open_file(p, name, O_RDONLY);
	size_t len = 0, cap = 4096;
	char *buf;

	if (fd < 0)
		return NULL;
	buf = malloc(cap + 1);
	while (buf) {
		ssize_t n = read(fd, buf + len, cap - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			free(buf);
			close(fd);
			errno = e;
			return NULL;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == cap) {
			char *nb = realloc(buf, 2 * cap + 1);

			if (!nb) {
				free(buf);
				buf = NULL;
				errno = ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	close(fd);
	if (!buf)
		return NULL;
	buf[len] = '\0';
	if (ret_len)
		*ret_len = len;
	return buf;
}

bool kcore_proc_read_stat(struct kcore_process *p, const char *name,
			  struct proc_stat *st)
{
	char *text = kcore_proc_slurp(p, name, NULL), *s;
	bool ok;

	memset(st, 0, sizeof(*st));
	if (!text)
		return false;
	/* The command name may hold spaces and ')': skip to the last. */
	s = strrchr(text, ')');
	ok = s && sscanf(s + 1,
			 " %c %d %d %d %*d %*d %lu %*u %*u %*u %*u %llu %llu "
			 "%llu %llu %*d %ld",
			 &st->state, &st->ppid, &st->pgrp, &st->sid, &st->flags,
			 &st->utime, &st->stime, &st->cutime, &st->cstime,
			 &st->nice) == 10;
	free(text);
	return ok;
}

/* "SigPnd:", "SigBlk:" (hex) and the first "Uid:"/"Gid:" (real) value. */
uint64_t kcore_proc_status_field(const char *text, const char *key, int base)
{
	const char *s = strstr(text, key);

	return s ? strtoull(s + strlen(key), NULL, base) : 0;
}

/*
 * The ids the kernel writes in a core are those of the crashing task's
 * own PID namespace (fill_prstatus(), fill_psinfo(): task_pid_vnr() and
 * its cousins), where /proc/PID/stat shows those of the namespace of this
 * /proc.  The "NSpid:", "NSpgid:" and "NSsid:" lines of status (Linux 4.1,
 * commit e4bc33245124) list an id in every namespace from this /proc's
 * down to the task's: the last one is what the kernel writes.  *ret_depth
 * is how many there are (0 without the line: then fallback is returned).
 */
int32_t kcore_proc_ns_id(const char *text, const char *key, int32_t fallback,
			 unsigned *ret_depth)
{
	const char *s = text ? strstr(text, key) : NULL;
	unsigned depth = 0;
	int32_t last = fallback;

	if (s) {
		s += strlen(key);
		for (;;) {
			char *end;
			long v = strtol(s, &end, 10);

			if (end == s || v < 0 || v > INT32_MAX)
				break;
			last = (int32_t)v;
			depth++;
			s = end;
			if (*s == '\n' || !*s)
				break;
		}
	}
	if (ret_depth)
		*ret_depth = depth;
	return depth ? last : fallback;
}

/*
 * The parent's pid as the task sees it: the parent's id at the task's
 * depth (the parent is in the task's namespace or an outer one: an outer
 * one lists fewer ids, and the kernel writes 0 for a parent it cannot see).
 */
int32_t kcore_proc_ns_parent(const struct kcore_process *p, int32_t ppid,
			     unsigned depth)
{
	char path[PATH_MAX], buf[2048];
	const char *s;
	unsigned k = 0;
	ssize_t n;
	int fd;

	if (depth <= 1 || ppid <= 0)
		return ppid;
	snprintf(path, sizeof(path), "%s/%d/status", p->procfs, (int)ppid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	s = strstr(buf, "\nNSpid:");
	if (!s)
		return 0;
	s += strlen("\nNSpid:");
	for (;;) {
		char *end;
		long v = strtol(s, &end, 10);

		if (end == s)
			return 0;
		if (++k == depth)
			return v > 0 && v <= INT32_MAX ? (int32_t)v : 0;
		s = end;
	}
}
