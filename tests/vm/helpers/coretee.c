// SPDX-License-Identifier: MIT
/*
 * coretee FILE PROG [ARGS...]: a core_pattern pipe helper that keeps the
 * raw stream the kernel writes in FILE (zero pages as holes, so a 64 GiB
 * sparse stream fits on tmpfs) and passes every byte on to PROG's stdin.
 * The guest compares PROG's stored core with FILE byte for byte.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHUNK (1 << 20)
#define PAGE  4096

static int is_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static unsigned char buf[CHUNK];
	int p[2], out, status;
	off_t pos = 0;
	pid_t child;

	if (argc < 3)
		return 2;
	/* The kernel starts us with only fd 0 open. */
	for (int fd = 1; fd <= 2; fd++)
		if (fcntl(fd, F_GETFD) < 0)
			open("/dev/null", O_WRONLY);
	out = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (out < 0 || pipe(p) < 0)
		return 1;
	child = fork();
	if (child == 0) {
		dup2(p[0], 0);
		close(p[0]);
		close(p[1]);
		close(out);
		/* Give the handler no stdout/stderr, as the kernel would. */
		close(1);
		close(2);
		execv(argv[2], argv + 2);
		_exit(127);
	}
	close(p[0]);
	for (;;) {
		ssize_t n = read(0, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i += PAGE) {
			size_t len = (size_t)(n - i < PAGE ? n - i : PAGE);

			if (!is_zero(buf + i, len) &&
			    pwrite(out, buf + i, len, pos + i) != (ssize_t)len)
				return 1;
		}
		pos += n;
		if (write_all(p[1], buf, (size_t)n) < 0)
			break;
	}
	if (ftruncate(out, pos) < 0)
		return 1;
	close(out);
	close(p[1]);
	waitpid(child, &status, 0);
	return 0;
}
