// SPDX-License-Identifier: MIT
/*
 * A process of a known shape, for bench/core-sizes.sh and the handler's
 * tests: it prints "ready PID" once set up, then waits for a signal (the
 * caller dumps it with `kcoredump pid`, then kills it with SIGABRT for the
 * kernel's core).
 *   crash-shapes small           a small C program: 1 MiB of heap text
 *   crash-shapes threads N       N threads blocked in read(2) (default
 *                                stacks), and the main thread
 *   crash-shapes vmas N          N one-page anonymous mappings, each
 *                                touched, alternately read-only and
 *                                read-write so that none merge
 *   crash-shapes gaps N          N two-page anonymous mappings, only the
 *                                first page of each touched (alternately
 *                                read-only and read-write): a zero run
 *                                between any two pages of data
 *   crash-shapes abort [ARG...]  abort() at once, without the heap: a core
 *                                of a few hundred KiB, smaller than the
 *                                pipe a core_pattern handler may make; the
 *                                ARGs are only its command line
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int park[2];

static void *parked(void *arg)
{
	char c;

	(void)arg;
	while (read(park[0], &c, 1) < 0)
		;
	return NULL;
}

static int usage(void)
{
	fprintf(stderr, "usage: crash-shapes small | threads N | vmas N | "
			"gaps N | abort [ARG...]\n");
	return 2;
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? strtol(argv[2], NULL, 0) : 0;
	char *heap;

	if (argc < 2)
		return usage();
	if (strcmp(argv[1], "abort") == 0) {
		signal(SIGABRT, SIG_DFL);
		abort();
	}
	/* Some heap with text in it, as any program has. */
	heap = malloc(1 << 20);
	if (!heap)
		return 1;
	for (size_t i = 0; i < (1 << 20); i += 64)
		snprintf(heap + i, 64, "heap line %zu of crash-shapes %s\n",
			 i / 64, argv[1]);
	if (strcmp(argv[1], "threads") == 0 && n > 0) {
		if (pipe(park) < 0)
			return 1;
		for (long i = 0; i < n; i++) {
			pthread_t t;

			if (pthread_create(&t, NULL, parked, NULL) != 0) {
				perror("pthread_create");
				return 1;
			}
		}
	} else if ((strcmp(argv[1], "vmas") == 0 ||
		    strcmp(argv[1], "gaps") == 0) &&
		   n > 0) {
		long page = sysconf(_SC_PAGESIZE);
		size_t len = (size_t)page * (argv[1][0] == 'g' ? 2 : 1);

		for (long i = 0; i < n; i++) {
			char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (p == MAP_FAILED) {
				perror("mmap");
				return 1;
			}
			snprintf(p, 64, "mapping %ld", i);
			if (i % 2 && mprotect(p, len, PROT_READ) < 0) {
				perror("mprotect");
				return 1;
			}
		}
	} else if (strcmp(argv[1], "small") != 0) {
		return usage();
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		pause();
}
