// SPDX-License-Identifier: MIT
/*
 * kcore-vread: time reading a window of the vmalloc segment of /proc/kcore.
 *
 *   kcore-vread [--start VADDR] [--len BYTES] [--block BYTES] [--reps N]
 *               [--hash 0|1]
 *
 * Reads LEN bytes (default 1 GiB) from VADDR (default: the start of the
 * first PT_LOAD at or above 0xffffc90000000000, x86_64's VMALLOC_START
 * with 4-level paging) with BLOCK-sized preads (default 1 MiB), N times
 * (default 3), and prints per repetition
 *   "vread start 0x... len N block N us N nonzero_pages N fnv 0x..."
 * where, with --hash 1, fnv is an FNV-1a hash of the non-zero words read
 * and their offsets and nonzero_pages counts the pages that are not all
 * zeros (both 0 without --hash: the timing is then of the reads alone).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000ULL + ts.tv_nsec / 1000;
}

int main(int argc, char **argv)
{
	uint64_t start = 0, len = 1ULL << 30, block = 1 << 20, off = 0;
	int reps = 3, hash = 0, fd, i;
	Elf64_Ehdr eh;
	Elf64_Phdr *ph;
	char *buf;

	for (i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--start"))
			start = strtoull(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--len"))
			len = strtoull(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--block"))
			block = strtoull(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--hash"))
			hash = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--reps"))
			reps = atoi(argv[i + 1]);
		else
			break;
	}
	if (i < argc || !block || !len) {
		fprintf(stderr, "usage: kcore-vread [--start VADDR] [--len N] [--block N] [--reps N] [--hash 0|1]\n");
		return 2;
	}
	fd = open("/proc/kcore", O_RDONLY);
	if (fd < 0 || pread(fd, &eh, sizeof(eh), 0) != sizeof(eh)) {
		perror("/proc/kcore");
		return 1;
	}
	ph = calloc(eh.e_phnum, sizeof(*ph));
	if (!ph || pread(fd, ph, eh.e_phnum * sizeof(*ph), eh.e_phoff) !=
			   (ssize_t)(eh.e_phnum * sizeof(*ph))) {
		perror("phdrs");
		return 1;
	}
	if (!start) {
		for (i = 0; i < eh.e_phnum; i++)
			if (ph[i].p_type == PT_LOAD &&
			    ph[i].p_vaddr >= 0xffffc90000000000ULL &&
			    (!start || ph[i].p_vaddr < start))
				start = ph[i].p_vaddr;
	}
	for (i = 0; i < eh.e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && start >= ph[i].p_vaddr &&
		    start + len <= ph[i].p_vaddr + ph[i].p_filesz)
			off = ph[i].p_offset + (start - ph[i].p_vaddr);
	if (!off) {
		fprintf(stderr, "no PT_LOAD holds 0x%llx + %llu\n",
			(unsigned long long)start, (unsigned long long)len);
		return 1;
	}
	buf = malloc(block);
	if (!buf)
		return 1;
	for (int r = 0; r < reps; r++) {
		uint64_t h = 0xcbf29ce484222325ULL, nonzero = 0, t0, t1, done;

		t0 = now_us();
		for (done = 0; done < len;) {
			size_t want = len - done < block ? len - done : block;
			ssize_t n = pread(fd, buf, want, off + done);

			if (n <= 0) {
				perror("pread");
				return 1;
			}
			for (ssize_t p = 0; hash && p < n; p += 4096) {
				const uint64_t *w = (const uint64_t *)(buf + p);
				size_t words = (n - p < 4096 ? n - p : 4096) / 8;
				int nz = 0;

				for (size_t k = 0; k < words; k++) {
					if (w[k]) {
						nz = 1;
						h = (h ^ w[k] ^ (done + p + k * 8)) *
						    0x100000001b3ULL;
					}
				}
				nonzero += nz;
			}
			done += n;
		}
		t1 = now_us();
		printf("vread start 0x%llx len %llu block %llu us %llu nonzero_pages %llu fnv 0x%016llx\n",
		       (unsigned long long)start, (unsigned long long)len,
		       (unsigned long long)block, (unsigned long long)(t1 - t0),
		       (unsigned long long)nonzero, (unsigned long long)h);
	}
	return 0;
}
