// SPDX-License-Identifier: MIT
/*
 * kcore-vread: time reading a window of the vmalloc segment of /proc/kcore,
 * or compare large and page-sized reads of any window.
 *
 *   kcore-vread [--start VADDR] [--len BYTES] [--block BYTES] [--reps N]
 *               [--hash 0|1]
 *   kcore-vread --compare [--segment-of VADDR] [--start VADDR |
 *               --end-minus BYTES] [--len BYTES] [--block BYTES]
 *
 * Reads LEN bytes (default 1 GiB) from VADDR (default: the start of the
 * first PT_LOAD at or above 0xffffc90000000000, x86_64's VMALLOC_START
 * with 4-level paging) with BLOCK-sized preads (default 1 MiB), N times
 * (default 3), and prints per repetition
 *   "vread start 0x... len N block N us N nonzero_pages N fnv 0x..."
 * where, with --hash 1, fnv is an FNV-1a hash of the non-zero words read
 * and their offsets and nonzero_pages counts the pages that are not all
 * zeros (both 0 without --hash: the timing is then of the reads alone).
 *
 * --compare reads the window once in BLOCK-sized preads and once in 4 KiB
 * preads, block by block, and prints "compare start 0x... len N block N
 * same" or the first differing offset; exit 1 if they differ or a read
 * fails.  The window may cross the end of its segment and of the file
 * (file offsets follow vaddrs linearly in /proc/kcore).  --end-minus BYTES
 * starts the window BYTES before the end of the segment: the vmalloc one,
 * or with --segment-of VADDR the PT_LOAD holding VADDR (e.g. an address
 * of module text: x86_64's module area ends 16 MiB below the top of the
 * address space, where start + length wraps).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
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

/* one pread of exactly len bytes, or an error message and -1 */
static int pread_exact(int fd, char *buf, uint64_t len, uint64_t off,
		       uint64_t vaddr)
{
	ssize_t n = pread(fd, buf, len, (off_t)off);

	if (n == (ssize_t)len)
		return 0;
	if (n < 0)
		printf("pread of %llu bytes at vaddr 0x%llx: %s\n",
		       (unsigned long long)len, (unsigned long long)vaddr,
		       strerror(errno));
	else
		printf("pread of %llu bytes at vaddr 0x%llx: %zd bytes\n",
		       (unsigned long long)len, (unsigned long long)vaddr, n);
	return -1;
}

static int compare_reads(int fd, uint64_t start, uint64_t off, uint64_t len,
			 uint64_t block, char *big)
{
	char page[4096];
	uint64_t done;

	for (done = 0; done < len; done += block) {
		uint64_t n = len - done < block ? len - done : block;

		if (pread_exact(fd, big, n, off + done, start + done))
			return 1;
		for (uint64_t p = 0; p < n; p += sizeof(page)) {
			uint64_t m = n - p < sizeof(page) ? n - p : sizeof(page);

			if (pread_exact(fd, page, m, off + done + p,
					start + done + p))
				return 1;
			if (memcmp(page, big + p, m)) {
				printf("compare start 0x%llx len %llu block %llu differ at vaddr 0x%llx\n",
				       (unsigned long long)start,
				       (unsigned long long)len,
				       (unsigned long long)block,
				       (unsigned long long)(start + done + p));
				return 1;
			}
		}
	}
	printf("compare start 0x%llx len %llu block %llu same\n",
	       (unsigned long long)start, (unsigned long long)len,
	       (unsigned long long)block);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t start = 0, len = 1ULL << 30, block = 1 << 20, off = 0;
	uint64_t end_minus = 0, seg_of = 0;
	int reps = 3, hash = 0, compare = 0, fd, i;
	Elf64_Ehdr eh;
	Elf64_Phdr *ph;
	char *buf;

	for (i = 1; i < argc && !strcmp(argv[i], "--compare"); i++)
		compare = 1;
	for (; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--segment-of"))
			seg_of = strtoull(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--end-minus"))
			end_minus = strtoull(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--start"))
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
		fprintf(stderr, "usage: kcore-vread [--compare] [--segment-of VADDR] [--start VADDR | --end-minus N] [--len N] [--block N] [--reps N] [--hash 0|1]\n");
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
		/* the segment: the one holding seg_of, or the vmalloc one */
		int seg = -1;

		for (i = 0; i < eh.e_phnum; i++) {
			if (ph[i].p_type != PT_LOAD)
				continue;
			if (seg_of ? seg_of >= ph[i].p_vaddr &&
				     seg_of - ph[i].p_vaddr < ph[i].p_filesz :
				     ph[i].p_vaddr >= 0xffffc90000000000ULL &&
				     (seg < 0 || ph[i].p_vaddr < ph[seg].p_vaddr))
				seg = i;
		}
		if (seg < 0) {
			fprintf(stderr, "no such PT_LOAD\n");
			return 1;
		}
		start = ph[seg].p_vaddr;
		if (end_minus)
			start += ph[seg].p_filesz - end_minus;
	}
	for (i = 0; i < eh.e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && start >= ph[i].p_vaddr &&
		    start - ph[i].p_vaddr < ph[i].p_filesz &&
		    (compare || len <= ph[i].p_vaddr + ph[i].p_filesz - start))
			off = ph[i].p_offset + (start - ph[i].p_vaddr);
	if (!off) {
		fprintf(stderr, "no PT_LOAD holds 0x%llx + %llu\n",
			(unsigned long long)start, (unsigned long long)len);
		return 1;
	}
	buf = malloc(block);
	if (!buf)
		return 1;
	if (compare)
		return compare_reads(fd, start, off, len, block, buf);
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
