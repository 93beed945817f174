// SPDX-License-Identifier: MIT
/*
 * drain [FILE]: a core_pattern pipe helper that discards the core with
 * splice(2) to /dev/null (no copy to user space) and, with FILE, writes
 * the bytes it drained and the seconds it took.  Like the handler it
 * grows the pipe to 1 MiB and, after a small splice, lets the pipe fill
 * for 2 ms (a reader that wakes for every page slows the writer down).
 * With it, the crash's duration is what the kernel needs to write the
 * stream into a pipe: the baseline for the handler's.  FILE also gets the
 * drain's own user and system CPU seconds: the least any pipe reader
 * spends.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int null = open("/dev/null", O_WRONLY);
	long long total = 0;
	struct timespec a, b;
	struct rusage ru;
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
	getrusage(RUSAGE_SELF, &ru);
	if (argc > 1 && (f = fopen(argv[1], "w"))) {
		fprintf(f, "%lld %.3f %.3f %.3f\n", total,
			(double)(b.tv_sec - a.tv_sec) +
				(double)(b.tv_nsec - a.tv_nsec) / 1e9,
			(double)ru.ru_utime.tv_sec +
				(double)ru.ru_utime.tv_usec / 1e6,
			(double)ru.ru_stime.tv_sec +
				(double)ru.ru_stime.tv_usec / 1e6);
		fclose(f);
	}
	return 0;
}
