// SPDX-License-Identifier: MIT
/*
 * crash-dense DESC: fill 8 MiB of anonymous memory and a private file
 * mapping with the known pattern (tests/common/pattern.h), start two extra
 * threads parked in kc_thread_park(), describe all of it in DESC, then
 * abort() so the kernel writes a core the host checks.
 *
 * DESC lines:  pid P / threads N / exe PATH / park_func ADDR /
 *              region NAME ADDR LEN SEED [PATH]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pattern.h"

#define ANON_LEN      (8u << 20)
#define FILE_LEN      (1u << 20)
#define ANON_SEED     0x1001
#define FILE_SEED     0x1002
#define EXTRA_THREADS 2

static pthread_barrier_t started;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* The extra threads block here (not static: a named frame in backtraces). */
void *kc_thread_park(void *arg);
__attribute__((noinline)) void *kc_thread_park(void *arg)
{
	int fd = *(int *)arg;
	char c;

	pthread_barrier_wait(&started);
	for (;;)
		if (read(fd, &c, 1) <= 0) /* never written to */
			pause();
	return NULL;
}

int main(int argc, char **argv)
{
	char path[64], exe[4096];
	unsigned char *anon, *fmap, *fbuf;
	pthread_t tid[EXTRA_THREADS];
	int pipefd[2], fd;
	ssize_t n;
	FILE *desc;

	if (argc != 2) {
		fprintf(stderr, "usage: crash-dense DESC\n");
		return 2;
	}

	anon = mmap(NULL, ANON_LEN, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (anon == MAP_FAILED)
		die("mmap anon");
	kc_pattern_fill(anon, (uint64_t)(uintptr_t)anon, ANON_LEN, ANON_SEED);

	/*
	 * Reserve the address first so the file can hold the pattern for the
	 * address it will be mapped at.  One page is then written (same
	 * bytes) so the VMA gets an anon_vma: with the default
	 * coredump_filter (0x33) a private file mapping is dumped whole only
	 * once it has one.
	 */
	fmap = mmap(NULL, FILE_LEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		    0);
	if (fmap == MAP_FAILED)
		die("mmap reserve");
	snprintf(path, sizeof(path), "/tmp/kc-dense-file.%d", (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("open file");
	fbuf = malloc(FILE_LEN);
	if (!fbuf)
		die("malloc");
	kc_pattern_fill(fbuf, (uint64_t)(uintptr_t)fmap, FILE_LEN, FILE_SEED);
	if (write(fd, fbuf, FILE_LEN) != FILE_LEN)
		die("write file");
	if (mmap(fmap, FILE_LEN, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_FIXED, fd, 0) != fmap)
		die("mmap file");
	fmap[FILE_LEN / 2] =
		fbuf[FILE_LEN / 2]; /* COW one page, same content */

	if (pipe(pipefd))
		die("pipe");
	pthread_barrier_init(&started, NULL, EXTRA_THREADS + 1);
	for (int i = 0; i < EXTRA_THREADS; i++)
		if (pthread_create(&tid[i], NULL, kc_thread_park, &pipefd[0]))
			die("pthread_create");
	pthread_barrier_wait(&started);

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		die("readlink");
	exe[n] = 0;
	desc = fopen(argv[1], "w");
	if (!desc)
		die("fopen desc");
	fprintf(desc, "pid %d\nthreads %d\nexe %s\npark_func %p\n",
		(int)getpid(), EXTRA_THREADS + 1, exe, (void *)kc_thread_park);
	fprintf(desc, "region anon %p %u %u\n", (void *)anon, ANON_LEN,
		ANON_SEED);
	fprintf(desc, "region file %p %u %u %s\n", (void *)fmap, FILE_LEN,
		FILE_SEED, path);
	if (fclose(desc))
		die("fclose desc");
	abort();
}
