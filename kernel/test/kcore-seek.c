// SPDX-License-Identifier: MIT
/*
 * kcore-seek: enumerate the SEEK_DATA/SEEK_HOLE extents of /proc/kcore.
 *
 *   kcore-seek [--file F] [--check-holes] [--racy]
 *
 * Prints the PT_LOAD segments ("load OFFSET FILESZ VADDR") and every data
 * extent ("data START END VSTART VEND", file offsets, vaddrs through the
 * PT_LOAD holding START; 0 0 in the ELF header area), then
 * "time_us N extents N".  Reads of /proc/kcore past EOF are not done.
 * With --check-holes, samples each hole inside a PT_LOAD (first, middle and
 * last page, at most 3 pages each) and prints "hole-nonzero START" for a
 * sample that is not all zeros.  With --racy (vmalloc areas are freed while
 * it runs), SEEK_HOLE at the offset SEEK_DATA just returned may find that
 * the data has vanished and return the offset itself: that is asked once
 * more (SEEK_DATA, then SEEK_HOLE, from the same offset) and counted as
 * "raced N" when the answer moved; an extent found empty twice in a row is
 * an error.  Exit 1 on errors (or non-zero holes).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static Elf64_Phdr *ph;
static int nph;

static unsigned long long vaddr_of(unsigned long long off)
{
	for (int i = 0; i < nph; i++)
		if (ph[i].p_type == PT_LOAD && off >= ph[i].p_offset &&
		    off < ph[i].p_offset + ph[i].p_filesz)
			return ph[i].p_vaddr + (off - ph[i].p_offset);
	return 0;
}

/* The extent at or after pos: 1 and [*d, *h), 0 past the last one
 * (ENXIO), -1 on an error (printed). */
static int extent_from(int fd, off_t pos, off_t *d, off_t *h)
{
	*d = lseek(fd, pos, SEEK_DATA);
	if (*d < 0) {
		if (errno == ENXIO)
			return 0;
		perror("SEEK_DATA");
		return -1;
	}
	*h = lseek(fd, *d, SEEK_HOLE);
	if (*h < 0) {
		perror("SEEK_HOLE");
		return -1;
	}
	return 1;
}

static int in_load(unsigned long long off)
{
	return vaddr_of(off) != 0;
}

static int check_zero(int fd, unsigned long long off)
{
	static unsigned char buf[4096];
	ssize_t n = pread(fd, buf, sizeof(buf), (off_t)off);

	if (n != (ssize_t)sizeof(buf)) {
		printf("hole-readerr %#llx %zd %s\n", off, n, strerror(errno));
		return 1;
	}
	for (size_t i = 0; i < sizeof(buf); i++)
		if (buf[i]) {
			printf("hole-nonzero %#llx vaddr %#llx\n", off, vaddr_of(off));
			return 1;
		}
	return 0;
}

int main(int argc, char **argv)
{
	const char *path = "/proc/kcore";
	int check = 0, racy = 0, raced = 0, bad = 0, extents = 0;
	Elf64_Ehdr eh;
	struct timespec t0, t1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--file") && i + 1 < argc)
			path = argv[++i];
		else if (!strcmp(argv[i], "--check-holes"))
			check = 1;
		else if (!strcmp(argv[i], "--racy"))
			racy = 1;
		else {
			fprintf(stderr, "usage: kcore-seek [--file F] [--check-holes] [--racy]\n");
			return 2;
		}
	}
	int fd = open(path, O_RDONLY);
	if (fd < 0 || pread(fd, &eh, sizeof(eh), 0) != sizeof(eh)) {
		perror(path);
		return 1;
	}
	nph = eh.e_phnum;
	ph = calloc(nph, sizeof(*ph));
	if (!ph || pread(fd, ph, nph * sizeof(*ph), (off_t)eh.e_phoff) !=
			   (ssize_t)(nph * sizeof(*ph))) {
		perror("phdrs");
		return 1;
	}
	for (int i = 0; i < nph; i++)
		if (ph[i].p_type == PT_LOAD)
			printf("load %#llx %#llx %#llx\n",
			       (unsigned long long)ph[i].p_offset,
			       (unsigned long long)ph[i].p_filesz,
			       (unsigned long long)ph[i].p_vaddr);

	/* Pass 1: the extents, timed. */
	size_t cap = 1024, n = 0;
	unsigned long long (*ext)[2] = malloc(cap * sizeof(*ext));
	off_t pos = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		off_t d, h;
		int r = extent_from(fd, pos, &d, &h);

		if (r > 0 && h == d && racy) {
			/* The data at d vanished, or an empty extent? */
			off_t d2;

			r = extent_from(fd, d, &d2, &h);
			if (r > 0 && d2 > d) {
				raced++;
				pos = d2;
				continue;
			}
			if (r > 0 && h > d)
				raced++;
		}
		if (r <= 0) {
			bad |= r < 0;
			break;
		}
		if (h <= d) {
			printf("error: SEEK_HOLE(%#llx) = %#llx\n",
			       (unsigned long long)d, (unsigned long long)h);
			bad = 1;
			break;
		}
		if (n == cap) {
			cap *= 2;
			ext = realloc(ext, cap * sizeof(*ext));
		}
		ext[n][0] = d;
		ext[n][1] = h;
		n++;
		pos = h;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	extents = (int)n;

	for (size_t i = 0; i < n; i++) {
		unsigned long long vs = vaddr_of(ext[i][0]);
		printf("data %#llx %#llx %#llx %#llx\n", ext[i][0], ext[i][1],
		       vs, vs ? vs + (ext[i][1] - ext[i][0]) : 0);
	}
	printf("time_us %lld extents %d\n",
	       (long long)((t1.tv_sec - t0.tv_sec) * 1000000LL +
			   (t1.tv_nsec - t0.tv_nsec) / 1000), extents);
	if (racy)
		printf("raced %d\n", raced);

	if (check) {
		int holes = 0;
		for (size_t i = 0; i + 1 < n; i++) {
			unsigned long long hs = ext[i][1], he = ext[i + 1][0];
			unsigned long long s[3] = { hs, hs + ((he - hs) / 2 & ~4095ULL),
						    he - 4096 };
			for (int k = 0; k < 3; k++) {
				if (s[k] < hs || s[k] + 4096 > he || !in_load(s[k]))
					continue;
				bad |= check_zero(fd, s[k]);
				holes++;
			}
		}
		printf("hole-samples %d\n", holes);
	}
	return bad;
}
