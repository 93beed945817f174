// SPDX-License-Identifier: MIT
/*
 * sparsecp SRC DST: copy a file keeping its holes (SEEK_DATA/SEEK_HOLE), so
 * a process core written by the kernel to tmpfs keeps its holes when copied
 * to the 9p results share.  Busybox cp writes every zero byte.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(const char *what, const char *path)
{
	fprintf(stderr, "sparsecp: '%s': %s: %s\n", path, what,
		strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	static char buf[1 << 20];
	struct stat st;
	int in, out;
	off_t pos = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: sparsecp SRC DST\n");
		return 2;
	}
	in = open(argv[1], O_RDONLY);
	if (in < 0 || fstat(in, &st))
		return fail("open", argv[1]);
	out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out < 0)
		return fail("open", argv[2]);
	while (pos < st.st_size) {
		off_t data = lseek(in, pos, SEEK_DATA);
		off_t hole;

		if (data < 0 && errno == ENXIO)
			break; /* only a hole remains */
		if (data < 0)
			return fail("SEEK_DATA", argv[1]);
		hole = lseek(in, data, SEEK_HOLE);
		if (hole < 0)
			return fail("SEEK_HOLE", argv[1]);
		for (pos = data; pos < hole;) {
			size_t want = (size_t)(hole - pos) < sizeof(buf)
					      ? (size_t)(hole - pos)
					      : sizeof(buf);
			ssize_t n = pread(in, buf, want, pos);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return fail("read", argv[1]);
			for (ssize_t w = 0; w < n;) {
				ssize_t m = pwrite(out, buf + w,
						   (size_t)(n - w), pos + w);

				if (m < 0 && errno == EINTR)
					continue;
				if (m < 0)
					return fail("write", argv[2]);
				w += m;
			}
			pos += n;
		}
	}
	if (ftruncate(out, st.st_size) || fsync(out) || close(out))
		return fail("finish", argv[2]);
	return 0;
}
