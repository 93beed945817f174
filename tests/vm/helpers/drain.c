// SPDX-License-Identifier: MIT
/*
 * drain [FILE]: a core_pattern pipe helper that discards the core with
 * splice(2) to /dev/null (no copy to user space) and, with FILE, writes
 * the bytes it drained and the seconds it took.  Like the handler it
 * grows the pipe to 1 MiB and, after a small splice, lets the pipe fill
 * for 2 ms (a reader that wakes for every page slows the writer down).
 * With it, the crash's duration is what the kernel needs to write the
 * stream into a pipe: the baseline for the handler's.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int null = open("/dev/null", O_WRONLY);
	long long total = 0;
	struct timespec a, b;
	FILE *f;

	if (null < 0)
		return 1;
	fcntl(0, F_SETPIPE_SZ, 1 << 20);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (;;) {
		ssize_t n = splice(0, NULL, null, NULL, 1 << 20, SPLICE_F_MOVE);

		if (n <= 0)
			break;
		total += n;
		if (n < (256 << 10)) {
			struct timespec ts = { 0, 2000000 };

			nanosleep(&ts, NULL);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	if (argc > 1 && (f = fopen(argv[1], "w"))) {
		fprintf(f, "%lld %.3f\n", total,
			(double)(b.tv_sec - a.tv_sec) +
				(double)(b.tv_nsec - a.tv_nsec) / 1e9);
		fclose(f);
	}
	return 0;
}
