// SPDX-License-Identifier: MIT
/*
 * dirtier NPAGES OUT: a known buffer that keeps changing, for the smear
 * case.  NPAGES locked anonymous pages each start with
 * "KCDSMEAR <page> <counter>\n" (the rest of the page is the counter's
 * low byte); their physical addresses (from /proc/self/pagemap, as root)
 * go to OUT as "page PADDR" lines, written to OUT.tmp and renamed, then
 * every page is rewritten with the next counter every millisecond until
 * the process is killed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096u

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void fill(unsigned char *buf, unsigned long n, unsigned long long c)
{
	for (unsigned long p = 0; p < n; p++) {
		unsigned char *pg = buf + p * PAGE;
		int len;

		memset(pg, (int)(c & 0xff), PAGE);
		len = snprintf((char *)pg, 64, "KCDSMEAR %lu %llu\n", p, c);
		pg[len] = '\0';
	}
}

int main(int argc, char **argv)
{
	unsigned long n = argc == 3 ? strtoul(argv[1], NULL, 0) : 0;
	unsigned char *buf;
	char tmp[4096];
	FILE *f;
	int fd;
	struct timespec ms = { 0, 1000000 };

	if (!n || n > 4096) {
		fprintf(stderr, "usage: dirtier NPAGES OUT\n");
		return 2;
	}
	buf = mmap(NULL, n * PAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (buf == MAP_FAILED)
		die("mmap");
	if (mlock(buf, n * PAGE))
		die("mlock");
	fill(buf, n, 0);
	fd = open("/proc/self/pagemap", O_RDONLY);
	if (fd < 0)
		die("/proc/self/pagemap");
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[2]);
	f = fopen(tmp, "w");
	if (!f)
		die(tmp);
	for (unsigned long p = 0; p < n; p++) {
		uint64_t e;
		off_t at = (off_t)((uintptr_t)(buf + p * PAGE) / PAGE * 8);

		if (pread(fd, &e, 8, at) != 8)
			die("pagemap");
		if (!(e >> 63) || !(e & ((1ull << 55) - 1))) {
			fprintf(stderr, "dirtier: page %lu: no PFN (root?)\n",
				p);
			return 1;
		}
		fprintf(f, "page 0x%" PRIx64 "\n",
			(uint64_t)((e & ((1ull << 55) - 1)) * PAGE));
	}
	close(fd);
	if (fclose(f) || rename(tmp, argv[2]))
		die(argv[2]);
	for (unsigned long long c = 1;; c++) {
		fill(buf, n, c);
		nanosleep(&ms, NULL);
	}
}
