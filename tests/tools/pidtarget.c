// SPDX-License-Identifier: MIT
/*
 * A live process for `kcoredump pid` tests and bench/pid.sh: worker
 * threads parked in a known call chain, a stack buffer with known content,
 * a dense anonymous area filled with the test pattern, and a huge
 * MAP_NORESERVE area with a few touched pages.  It prints one "ready"
 * line with the addresses, then reads commands from stdin:
 *   gap   print the longest pause the stamping thread saw (ns), reset it
 *   quit  exit
 *   pidtarget [--dense MIB] [--sparse GIB] [--touched N] [--threads N]
 *             [--stamp] [--seed N]
 * --seed gives the dense area another pattern (default 1): a second
 * process with the same layout, told apart by content.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "pattern.h"

#define SEED_DENSE  1
#define SEED_SPARSE 2
#define SEED_STACK  3

static int park_pipe[2];
static _Atomic uint64_t max_gap;
static _Atomic int stamp_reset;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Workers block here: kc_worker_main -> kc_worker_outer ->
 * kc_worker_inner -> read(). */
__attribute__((noinline)) static void kc_worker_inner(int id)
{
	char c;
	ssize_t n = read(park_pipe[0], &c, 1);

	__asm__ volatile("" ::"r"(id), "r"(n) : "memory");
}

__attribute__((noinline)) static void kc_worker_outer(int id)
{
	kc_worker_inner(id);
	__asm__ volatile("" ::: "memory");
}

static void *kc_worker_main(void *arg)
{
	kc_worker_outer((int)(intptr_t)arg);
	return NULL;
}

/* The stamping thread: how long was it kept from running? */
static void *kc_stamper(void *arg)
{
	uint64_t last = now_ns();

	(void)arg;
	for (;;) {
		uint64_t t = now_ns();

		if (atomic_exchange(&stamp_reset, 0))
			atomic_store(&max_gap, 0);
		else if (t - last > atomic_load(&max_gap))
			atomic_store(&max_gap, t - last);
		last = t;
	}
	return NULL;
}

/* The main thread waits for commands here, a known stack buffer in its
 * frame: main -> kc_command_loop -> read(). */
__attribute__((noinline)) static void kc_command_loop(const char *ready)
{
	uint64_t marker[512];
	char line[64];

	kc_pattern_fill(marker, (uint64_t)(uintptr_t)marker, sizeof(marker),
			SEED_STACK);
	printf("%s stack=%p stack_size=%zu\n", ready, (void *)marker,
	       sizeof(marker));
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		if (strncmp(line, "gap", 3) == 0) {
			printf("gap %llu\n",
			       (unsigned long long)atomic_load(&max_gap));
			fflush(stdout);
			atomic_store(&stamp_reset, 1);
		} else if (strncmp(line, "quit", 4) == 0) {
			break;
		}
	}
	__asm__ volatile("" ::"r"(marker) : "memory");
}

int main(int argc, char **argv)
{
	unsigned long long dense_mib = 256, sparse_gib = 64, touched = 16;
	unsigned threads = 3;
	uint64_t seed = SEED_DENSE;
	bool stamp = false;
	unsigned char *dense, *sparse = NULL;
	uint64_t sparse_size, step;
	char ready[512];
	pthread_t t;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--dense") && i + 1 < argc)
			dense_mib = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--sparse") && i + 1 < argc)
			sparse_gib = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--touched") && i + 1 < argc)
			touched = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = (unsigned)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--stamp"))
			stamp = true;
		else {
			fprintf(stderr, "pidtarget: bad argument '%s'\n",
				argv[i]);
			return 2;
		}
	}
	if (pipe(park_pipe) != 0)
		return 1;
	dense = mmap(NULL, dense_mib << 20, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (dense == MAP_FAILED)
		return 1;
	kc_pattern_fill(dense, (uint64_t)(uintptr_t)dense, dense_mib << 20,
			seed);
	sparse_size = sparse_gib << 30;
	if (sparse_size) {
		sparse = mmap(NULL, sparse_size, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
			      0);
		if (sparse == MAP_FAILED)
			return 1;
		/* Touched pages spread evenly, one page each. */
		step = touched ? sparse_size / touched : 0;
		for (unsigned long long i = 0; i < touched; i++) {
			unsigned char *pg = sparse + i * step;

			kc_pattern_fill(pg, (uint64_t)(uintptr_t)pg, 4096,
					SEED_SPARSE);
		}
	}
	for (unsigned i = 0; i < threads; i++)
		if (pthread_create(&t, NULL, kc_worker_main,
				   (void *)(uintptr_t)i) != 0)
			return 1;
	if (stamp && pthread_create(&t, NULL, kc_stamper, NULL) != 0)
		return 1;
	snprintf(ready, sizeof(ready),
		 "ready pid=%d dense=%p dense_size=%llu sparse=%p "
		 "sparse_size=%llu touched=%llu threads=%u",
		 (int)getpid(), (void *)dense, dense_mib << 20, (void *)sparse,
		 (unsigned long long)sparse_size, touched, threads);
	/* Let the workers reach their read() before saying ready. */
	usleep(100000);
	kc_command_loop(ready);
	return 0;
}
