// SPDX-License-Identifier: MIT
/*
 * crash-sparse DESC: map 64 GiB MAP_NORESERVE anonymous memory, fill four
 * pages at known offsets with the known pattern, describe them in DESC and
 * abort().  The core must hold those pages and be sparse everywhere else.
 *
 * DESC lines:  pid P / threads 1 / exe PATH /
 *              mapping ADDR LEN / region NAME ADDR LEN SEED
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pattern.h"

#define MAP_LEN (64ULL << 30)
#define PAGE	4096ULL
#define SEED	0x2002

static const uint64_t offsets[] = {
	0,
	(1ULL << 30) + 3 * PAGE,
	33ULL << 30,
	MAP_LEN - PAGE,
};

int main(int argc, char **argv)
{
	char exe[4096];
	unsigned char *map;
	ssize_t n;
	FILE *desc;

	if (argc != 2) {
		fprintf(stderr, "usage: crash-sparse DESC\n");
		return 2;
	}
	map = mmap(NULL, MAP_LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (map == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	for (size_t i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++)
		kc_pattern_fill(map + offsets[i],
				(uint64_t)(uintptr_t)(map + offsets[i]), PAGE,
				SEED + i);

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0) {
		perror("readlink");
		return 1;
	}
	exe[n] = 0;
	desc = fopen(argv[1], "w");
	if (!desc) {
		perror("fopen");
		return 1;
	}
	fprintf(desc, "pid %d\nthreads 1\nexe %s\n", (int)getpid(), exe);
	fprintf(desc, "mapping %p %llu\n", (void *)map, MAP_LEN);
	for (size_t i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++)
		fprintf(desc, "region page%zu %p %llu %llu\n", i,
			(void *)(map + offsets[i]), PAGE,
			SEED + (unsigned long long)i);
	if (fclose(desc)) {
		perror("fclose");
		return 1;
	}
	abort();
}
