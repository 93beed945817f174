// SPDX-License-Identifier: MIT
/*
 * crash-sparse DESC [GIB [MODE]]: map GIB (default 64) GiB of
 * MAP_NORESERVE anonymous memory, fill four pages at known offsets (for
 * 64 GiB: 0, 1 GiB + 3 pages, 33 GiB, the last page) with the known
 * pattern, describe them in DESC and abort().  The core must hold those
 * pages and be sparse everywhere else.
 *
 * MODE late: a child process waits until the kernel has written 64 MiB of
 * the core (wchar in /proc/PPID/io), then writes a fifth pattern page at
 * 3/4 of the mapping with process_vm_writev(2), where the dump has not
 * come yet, and adds it to DESC: a page that appears during the dump,
 * after a core_pattern handler first looked at the page tables.
 * MODE sharer: a clone(CLONE_VM) child (another process sharing the
 * memory, which the dump does not stop) sleeps until killed.
 *
 * DESC lines:  pid P / threads 1 / exe PATH /
 *              mapping ADDR LEN / region NAME ADDR LEN SEED /
 *              late_wchar BYTES (late) / sharer PID (sharer)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "pattern.h"

#define PAGE 4096ULL
#define SEED 0x2002

/* Bytes the process has written (the kernel's core, while it dumps). */
static long long wchar(pid_t pid)
{
	char path[64], line[128];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/io", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "wchar: %lld", &v) == 1)
			break;
	fclose(f);
	return v;
}

static void late_writer(const char *desc, pid_t parent, unsigned char *addr)
{
	static unsigned char page[PAGE];
	struct iovec local = { page, PAGE }, remote = { addr, PAGE };
	struct timespec ts = { 0, 20000000 };
	long long w = -1;
	FILE *f;

	kc_pattern_fill(page, (uint64_t)(uintptr_t)addr, PAGE, SEED + 4);
	/* Up to 120 s for the kernel to write 64 MiB. */
	for (int i = 0; i < 6000; i++) {
		w = wchar(parent);
		if (w < 0 || w >= 64LL << 20)
			break; /* gone, or far enough */
		nanosleep(&ts, NULL);
	}
	if (w < 64LL << 20 ||
	    process_vm_writev(parent, &local, 1, &remote, 1, 0) != PAGE) {
		perror("late_writer");
		_exit(1);
	}
	f = fopen(desc, "a");
	if (f) {
		fprintf(f, "region late %p %llu %llu\nlate_wchar %lld\n",
			(void *)addr, PAGE, SEED + 4ULL, w);
		fclose(f);
	}
	_exit(0);
}

static int sharer(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return 0;
}

int main(int argc, char **argv)
{
	char exe[4096];
	unsigned char *map;
	ssize_t n;
	FILE *desc;
	unsigned long long map_len =
		(argc >= 3 ? strtoull(argv[2], NULL, 0) : 64) << 30;
	uint64_t offsets[4];

	const char *mode = argc == 4 ? argv[3] : "";
	static char stack[65536];
	pid_t child = 0;

	if (argc < 2 || argc > 4 || map_len < (1ULL << 30) ||
	    (*mode && strcmp(mode, "late") && strcmp(mode, "sharer"))) {
		fprintf(stderr,
			"usage: crash-sparse DESC [GIB [late|sharer]]\n");
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
	if (strcmp(mode, "sharer") == 0) {
		child = clone(sharer, stack + sizeof(stack), CLONE_VM | SIGCHLD,
			      NULL);
		if (child < 0) {
			perror("clone");
			return 1;
		}
		fprintf(desc, "sharer %d\n", (int)child);
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
	if (strcmp(mode, "late") == 0) {
		pid_t parent = getpid();

		child = fork();
		if (child < 0) {
			perror("fork");
			return 1;
		}
		if (child == 0)
			late_writer(argv[1], parent,
				    map + map_len / 4 * 3 + 5 * PAGE);
	}
	abort();
}
