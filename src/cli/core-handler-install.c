// SPDX-License-Identifier: MIT
/*
 * core-handler --install and --print-pattern (cmd-core-handler.c builds
 * the pipe pattern from its options): the patterns the kernel may take,
 * best first, written to /proc/sys/kernel/core_pattern and read back, and
 * core_pipe_limit for the pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cli.h"

#define CORE_PATTERN   "/proc/sys/kernel/core_pattern"
#define DEFAULT_SOCKET "/run/kcoredump/coredump.socket"

/* The kernel's release as major * 1000 + minor, 0 if not known. */
static unsigned kernel_version(void)
{
	struct utsname u;
	unsigned major, minor;

	if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2)
		return 0;
	return major * 1000 + minor;
}

/* What core_pattern says now ("" if unreadable); false if unreadable. */
static bool read_pattern(char *out, size_t size)
{
	int fd = open(CORE_PATTERN, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	ssize_t n = -1;

	out[0] = '\0';
	if (fd >= 0) {
		n = read(fd, out, size - 1);
		close(fd);
	}
	if (n < 0)
		return false;
	out[n] = '\0';
	while (n > 0 && out[n - 1] == '\n')
		out[--n] = '\0';
	return true;
}

static int write_pattern(const char *pattern)
{
	int fd = open(CORE_PATTERN, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	size_t len = strlen(pattern);
	int e;

	if (fd < 0)
		return -errno;
	if (write(fd, pattern, len) != (ssize_t)len) {
		e = errno;
		close(fd);
		return -e;
	}
	return close(fd) < 0 ? -errno : 0;
}

/*
 * The patterns to try, best first: the request protocol (Linux 6.17),
 * the plain socket (6.16) when the socket is there, then the pipe.  An
 * older kernel would take "@/run/..." as a file name relative to the
 * crashing process's directory: never written there.  Since Linux 6.17
 * /proc/sys/kernel/core_modes lists "socket" when the kernel has it.
 */
static size_t candidates(const char *sock, const char *pipe_pattern,
			 char out[3][PATH_MAX + 512], char *why, size_t why_len)
{
	unsigned v = kernel_version();
	char modes[256] = "";
	struct stat sb;
	size_t n = 0;
	int fd;

	why[0] = '\0';
	fd = open("/proc/sys/kernel/core_modes", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t k = read(fd, modes, sizeof(modes) - 1);

		modes[k > 0 ? k : 0] = '\0';
		close(fd);
	}
	if (sock) {
		if (stat(sock, &sb) < 0 || !S_ISSOCK(sb.st_mode))
			snprintf(why, why_len,
				 "no socket at %s (start kcoredump "
				 "core-handler --socket %s, or the "
				 "kcoredump-coredump.socket unit)",
				 sock, sock);
		else if (v < 6016 && !strstr(modes, "socket"))
			snprintf(why, why_len,
				 "Linux %u.%u has no coredump socket "
				 "(6.16)",
				 v / 1000, v % 1000);
		else {
			if (v >= 6017)
				snprintf(out[n++], PATH_MAX + 512, "@@%s",
					 sock);
			snprintf(out[n++], PATH_MAX + 512, "@%s", sock);
		}
	}
	snprintf(out[n++], PATH_MAX + 512, "%s", pipe_pattern);
	return n;
}

#define CORE_PIPE_LIMIT "/proc/sys/kernel/core_pipe_limit"

/*
 * With core_pipe_limit 0 (the kernel's default, Debian's without
 * systemd-coredump) the kernel does not wait for a pipe handler: the
 * crashing process ends as soon as its core is in the pipe, and with it
 * what the handler reads of it in /proc.  A limit makes the kernel wait
 * until the handler exits (wait_for_dump_helpers()), for at most that many
 * crashes at once: the handler's own --max-handlers, as systemd sets 16.
 * Says what it was and how to restore it; the value to keep in *ret.
 */
static void install_pipe_limit(unsigned want, unsigned *ret)
{
	char buf[32] = "";
	unsigned long old;
	ssize_t k;
	char *end;
	int fd = open(CORE_PIPE_LIMIT, O_RDONLY | O_CLOEXEC);

	*ret = want;
	k = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[k > 0 ? k : 0] = '\0';
	old = strtoul(buf, &end, 10);
	if (k <= 0 || end == buf) {
		fprintf(stderr,
			"kcoredump core-handler: cannot read " CORE_PIPE_LIMIT
			"%s%s: the crashing process may be gone before its "
			"facts are read\n",
			k < 0 ? ": " : "", k < 0 ? strerror(errno) : "");
		return;
	}
	if (old) {
		*ret = (unsigned)old;
		fprintf(stderr,
			"kcoredump core-handler: kernel.core_pipe_limit is "
			"%lu already (kept)\n",
			old);
		return;
	}
	fd = open(CORE_PIPE_LIMIT, O_WRONLY | O_CLOEXEC);
	snprintf(buf, sizeof(buf), "%u\n", want);
	if (fd < 0 || write(fd, buf, strlen(buf)) != (ssize_t)strlen(buf)) {
		fprintf(stderr,
			"kcoredump core-handler: cannot set "
			"kernel.core_pipe_limit to %u: %s; with 0 the kernel "
			"does not wait for the handler\n",
			want, strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	fprintf(stderr,
		"kcoredump core-handler: kernel.core_pipe_limit was 0, now %u "
		"(the kernel keeps a crashing process until the handler has "
		"read it, for %u crashes at once); to restore it: sysctl -w "
		"kernel.core_pipe_limit=0\n",
		want, want);
}

/* Try each candidate: write, read back, keep the first that stays. */
static int install_best(char cand[3][PATH_MAX + 512], size_t n, const char *why,
			unsigned pipe_limit)
{
	char old[PATH_MAX + 512], now[PATH_MAX + 512];
	int e = 0;

	if (!read_pattern(old, sizeof(old))) {
		fprintf(stderr,
			"kcoredump core-handler: cannot read " CORE_PATTERN
			": %s\n",
			strerror(errno));
		return EXIT_FAILURE_;
	}
	if (why[0])
		fprintf(stderr, "kcoredump core-handler: not a socket: %s\n",
			why);
	for (size_t i = 0; i < n; i++) {
		e = write_pattern(cand[i]);
		if (e == 0 && read_pattern(now, sizeof(now)) &&
		    strcmp(now, cand[i]) == 0) {
			unsigned limit = 0;

			printf("%s\n", cand[i]);
			fprintf(stderr,
				"kcoredump core-handler: replaced '%s'; to "
				"restore it: sysctl -w "
				"kernel.core_pattern='%s'\n",
				old, old);
			if (cand[i][0] == '|')
				install_pipe_limit(pipe_limit, &limit);
			fprintf(stderr,
				"kcoredump core-handler: to keep it across "
				"boots, in /etc/sysctl.d/50-kcoredump-core-"
				"pattern.conf:\n"
				"kernel.core_pattern = %s\n",
				cand[i]);
			if (limit)
				fprintf(stderr, "kernel.core_pipe_limit = %u\n",
					limit);
			return EXIT_OK;
		}
		if (e == -EACCES || e == -EPERM || e == -EROFS)
			break;
		fprintf(stderr,
			"kcoredump core-handler: the kernel did not take '%s'"
			"%s%s\n",
			cand[i], e ? ": " : " (it reads back otherwise)",
			e ? strerror(-e) : "");
	}
	/* Nothing stayed: put back what was there. */
	if (write_pattern(old) < 0 || !read_pattern(now, sizeof(now)) ||
	    strcmp(now, old) != 0)
		fprintf(stderr,
			"kcoredump core-handler: could not restore '%s'\n",
			old);
	if (e) {
		fprintf(stderr,
			"kcoredump core-handler: cannot write " CORE_PATTERN
			": %s\n",
			strerror(-e));
		return e == -EACCES || e == -EPERM || e == -EROFS
			       ? EXIT_ACCESS
			       : EXIT_FAILURE_;
	}
	return EXIT_FAILURE_;
}

int cli_core_pattern(const char *sock, const char *pipe_pattern, bool install,
		     unsigned pipe_limit)
{
	char cand[3][PATH_MAX + 512], why[PATH_MAX + 160];
	struct stat sb;
	size_t n;

	if (!sock && stat(DEFAULT_SOCKET, &sb) == 0 && S_ISSOCK(sb.st_mode))
		sock = DEFAULT_SOCKET;
	n = candidates(sock, pipe_pattern, cand, why, sizeof(why));
	if (install)
		return install_best(cand, n, why, pipe_limit);
	printf("%s\n", cand[0]);
	return EXIT_OK;
}
