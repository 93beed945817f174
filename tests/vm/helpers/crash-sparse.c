// SPDX-License-Identifier: MIT
/*
 * crash-sparse DESC [GIB]: map GIB (default 64) GiB of MAP_NORESERVE
 * anonymous memory, fill four pages at known offsets (for 64 GiB: 0,
 * 1 GiB + 3 pages, 33 GiB, the last page) with the known pattern, describe
 * them in DESC and abort().  The core must hold those pages and be sparse
 * everywhere else.
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

#define PAGE 4096ULL
#define SEED 0x2002

int main(int argc, char **argv)
{
	char exe[4096];
	unsigned char *map;
	ssize_t n;
	FILE *desc;
	unsigned long long map_len =
		(argc == 3 ? strtoull(argv[2], NULL, 0) : 64) << 30;
	uint64_t offsets[4];

	if ((argc != 2 && argc != 3) || map_len < (1ULL << 30)) {
		fprintf(stderr, "usage: crash-sparse DESC [GIB]\n");
		return 2;
	}
	offsets[0] = 0;
	offsets[1] = map_len / 64 + 3 * PAGE;
	offsets[2] = map_len / 64 * 33;
	offsets[3] = map_len - PAGE;
	map = mmap(NULL, map_len, PROT_READ | PROT_WRITE,
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
	fprintf(desc, "mapping %p %llu\n", (void *)map, map_len);
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
